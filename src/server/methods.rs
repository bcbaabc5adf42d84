//! The agent methods of the backend: thin adapters from JSON-RPC to [`Sessions`].
//!
//! [`Sessions`]: crate::server::sessions::Sessions

use tower_lsp_server::jsonrpc::Result;

use crate::server::backend::Backend;
use crate::server::protocol::{
    AbortResult, MessagesResult, NewSessionParams, NewSessionResult, PromptParams, PromptResult,
    QueueParams, QueueResult, Queues, SessionParams, StateResult,
};
use crate::server::session::QueueKind;

impl Backend {
    pub async fn prompt(&self, p: PromptParams) -> Result<PromptResult> {
        self.sessions()?.prompt(p)
    }

    pub async fn steer(&self, p: QueueParams) -> Result<QueueResult> {
        self.sessions()?
            .enqueue(&p.session_id, p.message, QueueKind::Steer)
    }

    pub async fn follow_up(&self, p: QueueParams) -> Result<QueueResult> {
        self.sessions()?
            .enqueue(&p.session_id, p.message, QueueKind::FollowUp)
    }

    pub async fn abort(&self, p: SessionParams) -> Result<AbortResult> {
        self.sessions()?.abort(&p.session_id)
    }

    pub async fn clear_queue(&self, p: SessionParams) -> Result<Queues> {
        self.sessions()?.clear_queue(&p.session_id)
    }

    pub async fn new_session(&self, p: NewSessionParams) -> Result<NewSessionResult> {
        self.sessions()?.new_session(p.cwd, p.resume)
    }

    pub async fn get_state(&self, p: SessionParams) -> Result<StateResult> {
        self.sessions()?.state(&p.session_id)
    }

    /// `window/workDoneProgress/cancel` (a notification): the user cancelled a run's progress.
    pub async fn progress_cancel(&self, params: serde_json::Value) {
        let token = params.get("token").and_then(serde_json::Value::as_str);
        let run_id = token.and_then(|t| t.strip_prefix(crate::server::generic::TOKEN_PREFIX));
        if let (Some(run_id), Ok(sessions)) = (run_id, self.sessions()) {
            sessions.abort_run(run_id);
        }
    }

    pub async fn get_messages(&self, p: SessionParams) -> Result<MessagesResult> {
        self.sessions()?.messages(&p.session_id)
    }
}
