//! What every session of a connection shares: the client, the mirrors, the settled
//! configuration, the event hub, the model and the generic-client approval slots.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use crate::provider::{Model, StreamFn};
use crate::server::config::ConnConfig;
use crate::server::documents::DocStore;
use crate::server::events::EventHub;
use crate::server::outgoing::Outgoing;
use crate::server::protocol::Decision;

/// The model sessions use, or why there is none (reported on `agent/prompt`).
pub type ModelChoice = Result<(Model, Option<String>), String>;

pub struct ConnCtx {
    pub out: Outgoing,
    pub docs: DocStore,
    pub config: ConnConfig,
    pub hub: EventHub,
    pub model: ModelChoice,
    pub stream_fn: Arc<dyn StreamFn>,
    /// Generic-client approvals waiting for `agent.approve` / `agent.reject`, by approval id.
    pub pending_approvals: Mutex<HashMap<String, PendingApproval>>,
}

/// An approval shown to a generic client as a diagnostic with code actions.
pub struct PendingApproval {
    pub uri: String,
    pub line: u32,
    pub title: String,
    pub reply: oneshot::Sender<Decision>,
}

impl ConnCtx {
    pub fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<String, PendingApproval>> {
        self.pending_approvals
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }
}

/// Picks the model: `initializationOptions.model`, else `AGENT_LSP_MODEL`, else an
/// OpenAI-compatible endpoint from `OPENAI_BASE_URL` (model id `AGENT_LSP_MODEL_ID` or
/// `gpt-4.1-mini`). The key comes from `OPENAI_API_KEY`.
pub fn resolve_model(config: &ConnConfig) -> ModelChoice {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let spec = config
        .options
        .model
        .clone()
        .or_else(|| env("AGENT_LSP_MODEL"));
    let base_url = env("OPENAI_BASE_URL");
    let (provider, id) = match &spec {
        Some(spec) => match spec.split_once('/') {
            Some((p, i)) => (p.to_owned(), i.to_owned()),
            None => ("openai".to_owned(), spec.clone()),
        },
        None if base_url.is_some() => ("openai".to_owned(), "gpt-4.1-mini".to_owned()),
        None => {
            return Err(
                "No model is configured. Set initializationOptions.model (\"provider/id\") \
                        or AGENT_LSP_MODEL, or OPENAI_BASE_URL for an OpenAI-compatible endpoint."
                    .into(),
            );
        }
    };
    if provider != "openai" {
        return Err(format!(
            "provider {provider:?} is not supported by this daemon build; use openai/<id>"
        ));
    }
    let model = Model {
        id: id.clone(),
        name: id,
        api: "openai-completions".into(),
        provider,
        base_url: base_url.unwrap_or_else(|| "https://api.openai.com/v1".into()),
        context_window: 128_000,
        max_tokens: 16_384,
        ..Model::default()
    };
    Ok((model, env("OPENAI_API_KEY")))
}
