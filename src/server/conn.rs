//! What every session of a connection shares: the client, the mirrors, the settled
//! configuration, the model and the generic-client approval slots.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use crate::agent::model::Model;
use crate::agent::stream_contract::StreamFn;
use crate::model_registry::EnvSource;
use crate::server::config::ConnConfig;
use crate::server::documents::DocStore;
use crate::server::outgoing::Outgoing;
use crate::server::protocol::Decision;

/// The model sessions use, or why there is none (reported on `agent/prompt`).
pub type ModelChoice = Result<(Model, Option<String>), String>;

pub struct ConnCtx {
    pub out: Outgoing,
    pub docs: DocStore,
    pub config: ConnConfig,
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

/// Picks the model as the CLI does (`model_registry::resolve_model`): `initializationOptions.model`
/// ("provider/id"), else `AGENT_LSP_MODEL`, else the default for the configured keys or
/// `OPENAI_BASE_URL`.
pub fn resolve_model(config: &ConnConfig) -> ModelChoice {
    let env = EnvSource::from_process();
    crate::model_registry::resolve_model(config.options.model.as_deref(), &env)
        .map(|r| (r.model, r.api_key))
        .map_err(|e| e.to_string())
}
