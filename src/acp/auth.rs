//! ACP authentication (protocol.md §9.4): the methods `initialize` advertises, `authenticate`
//! and `logout`.
//!
//! agent-lsp needs a provider's key, from its environment or from `agent-lsp login`'s store:
//! - one `env_var` method per main provider (ACP's draft type: `vars` name the variable, which a
//!   client that knows the type asks for and sets when it starts the agent). A v1 client reads it
//!   as an `agent` method (the schema's default) and calls `authenticate`, which succeeds once a
//!   model resolves — the key set, or stored in the meantime;
//! - a `terminal` method, only for a client that said it can run one
//!   (`clientCapabilities.auth.terminal`): the client runs the agent's own command with `login`
//!   appended (`agent-lsp acp login`) in a terminal, and then retries or reconnects.
//!
//! `logout` forgets the stored keys; keys in the environment are the client's to remove.

use agent_client_protocol_schema::v1 as acp;
use serde_json::{Value, json};

use crate::credentials::Credentials;
use crate::model_registry::{EnvSource, resolve_model};
use crate::rpc::jsonrpc::ResponseError;

/// The `terminal` method's id.
pub const LOGIN: &str = "agent-lsp-login";

/// The `env_var` methods: id, provider, variable, where to get a key.
const KEY_METHODS: [(&str, &str, &str, &str); 2] = [
    (
        "anthropic-api-key",
        "Anthropic",
        "ANTHROPIC_API_KEY",
        "https://console.anthropic.com/settings/keys",
    ),
    (
        "openai-api-key",
        "OpenAI",
        "OPENAI_API_KEY",
        "https://platform.openai.com/api-keys",
    ),
];

/// `initialize`'s `authMethods`.
pub fn methods(client_runs_terminals: bool) -> Value {
    let mut methods: Vec<Value> = KEY_METHODS
        .iter()
        .map(|(id, provider, var, link)| {
            json!({
                "type": "env_var",
                "id": id,
                "name": format!("{provider} API key"),
                "description": format!(
                    "Set {var} in the agent's environment (or store it with `agent-lsp login`), \
                     then authenticate."
                ),
                "vars": [{"name": var}],
                "link": link,
            })
        })
        .collect();
    if client_runs_terminals {
        methods.push(json!({
            "type": "terminal",
            "id": LOGIN,
            "name": "Log in with agent-lsp login",
            "description": "Choose a provider and paste its key in a terminal; it is stored \
                            for you (readable only by you, hidden from sandboxed commands).",
            "args": ["login"],
        }));
    }
    Value::Array(methods)
}

/// `authenticate`: succeeds when a model resolves now.
pub fn authenticate(method_id: &str, env: &EnvSource) -> Result<Value, ResponseError> {
    if method_id == LOGIN {
        return Err(ResponseError::invalid_params(format!(
            "{LOGIN} is a terminal method: run `agent-lsp acp login` in a terminal (the client \
             does, with the args it was given), then retry"
        )));
    }
    let Some((_, _, var, _)) = KEY_METHODS.iter().find(|(id, ..)| *id == method_id) else {
        return Err(ResponseError::invalid_params(format!(
            "unknown authentication method {method_id:?}"
        )));
    };
    match resolve_model(None, env) {
        Ok(_) => Ok(json!({})),
        Err(e) => Err(auth_required(&format!(
            "{var} is neither set in the agent's environment nor stored: set it in this agent's \
             environment in the client's settings, or run `agent-lsp login` ({e})"
        ))),
    }
}

/// `logout`: forgets every stored key.
pub fn logout(env: &EnvSource) -> Result<Value, ResponseError> {
    let store =
        Credentials::of(env.config_dir()).map_err(|e| ResponseError::internal(e.to_string()))?;
    store
        .remove(None)
        .map_err(|e| ResponseError::internal(e.to_string()))?;
    Ok(json!({}))
}

/// ACP's auth-required error with `message`.
pub(super) fn auth_required(message: &str) -> ResponseError {
    acp_error(acp::Error::auth_required()).with_message(message)
}

/// ACP's own errors (auth required, resource not found) in the loop's error type.
pub(super) fn acp_error(error: acp::Error) -> ResponseError {
    serde_json::to_value(&error)
        .ok()
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_else(|| ResponseError::internal(error.message.clone()))
}

/// A replaced message on an error of ACP's.
pub(super) trait WithMessage {
    fn with_message(self, message: &str) -> Self;
}

impl WithMessage for ResponseError {
    fn with_message(mut self, message: &str) -> Self {
        self.message = message.to_owned();
        self
    }
}
