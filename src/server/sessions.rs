//! Sessions and runs of one connection (placeholder until the agent loop lands).

use serde_json::Value;
use tower_lsp_server::Client;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::{CodeActionParams, CodeActionResponse, ExecuteCommandParams};

use crate::server::backend::rpc_error;
use crate::server::config::ConnConfig;
use crate::server::documents::DocStore;
use crate::server::protocol::code;

pub struct Sessions {
    warnings: Vec<String>,
}

impl Sessions {
    pub fn new(
        _client: Client,
        _docs: DocStore,
        _config: ConnConfig,
        warnings: Vec<String>,
    ) -> Self {
        Sessions { warnings }
    }

    pub fn startup_warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }

    pub fn abort_all(&self) {}

    pub async fn wait_all_idle(&self) {}

    pub async fn execute_command(&self, _params: ExecuteCommandParams) -> Result<Value> {
        Err(rpc_error(code::NO_MODEL, "the agent is not available yet"))
    }

    pub fn code_actions(&self, _params: &CodeActionParams) -> CodeActionResponse {
        Vec::new()
    }
}
