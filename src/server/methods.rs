//! The agent methods of the backend: thin adapters from JSON-RPC to `Sessions`.

use tower_lsp_server::jsonrpc::Result;

use crate::server::backend::{Backend, rpc_error};
use crate::server::protocol::{
    AbortResult, MessagesResult, NewSessionParams, NewSessionResult, PromptParams, PromptResult,
    QueueParams, QueueResult, Queues, SessionParams, StateResult, code,
};

fn unavailable<T>() -> Result<T> {
    Err(rpc_error(code::NO_MODEL, "the agent is not available yet"))
}

impl Backend {
    pub async fn prompt(&self, _p: PromptParams) -> Result<PromptResult> {
        self.sessions()?;
        unavailable()
    }
    pub async fn steer(&self, _p: QueueParams) -> Result<QueueResult> {
        unavailable()
    }
    pub async fn follow_up(&self, _p: QueueParams) -> Result<QueueResult> {
        unavailable()
    }
    pub async fn abort(&self, _p: SessionParams) -> Result<AbortResult> {
        unavailable()
    }
    pub async fn clear_queue(&self, _p: SessionParams) -> Result<Queues> {
        unavailable()
    }
    pub async fn new_session(&self, _p: NewSessionParams) -> Result<NewSessionResult> {
        unavailable()
    }
    pub async fn get_state(&self, _p: SessionParams) -> Result<StateResult> {
        unavailable()
    }
    pub async fn get_messages(&self, _p: SessionParams) -> Result<MessagesResult> {
        unavailable()
    }
}
