//! What every session of a connection shares: the client, the mirrors, the settled
//! configuration, the model and the generic-client approval slots; and what the daemon adds to
//! every session it sets up ([`FrontEnd`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use crate::agent::stream_contract::StreamFn;
use crate::agent::tool::ToolRef;
use crate::core::FrontEnd;
use crate::lsp::buffers::BufferWorkspace;
use crate::lsp::config::ConnConfig;
use crate::lsp::diagnostics::DiagnosticsTool;
use crate::lsp::documents::DocStore;
use crate::lsp::language::{Lang, LanguageSessions};
use crate::lsp::protocol::Decision;
use crate::mcp::McpHub;
use crate::model_registry::{EnvSource, ResolvedModel};
use crate::rpc::outgoing::Outgoing;
use crate::tools::{DiskWorkspace, ToolOptions, Workspace};

pub struct ConnCtx {
    pub out: Outgoing,
    pub docs: DocStore,
    pub config: ConnConfig,
    /// The model sessions use, or why there is none (reported on `agent/prompt`).
    pub model: Result<ResolvedModel, String>,
    pub stream_fn: Arc<dyn StreamFn>,
    /// The connection's MCP servers, shared by its sessions.
    pub mcp: McpHub,
    /// Generic-client approvals waiting for `agent.approve` / `agent.reject`, by approval id.
    pub pending_approvals: Mutex<HashMap<String, PendingApproval>>,
    /// The sessions' `lsp_*` tools (the client's `languageFeatures`).
    pub language: LanguageSessions,
}

impl ConnCtx {
    /// A `window/showMessage` to the client (any client: generic ones have no other channel).
    pub fn show(&self, typ: ls_types::MessageType, message: String) {
        let params = ls_types::ShowMessageParams { typ, message };
        self.out.notify("window/showMessage", params);
    }
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

impl ConnCtx {
    /// The `lsp_*` tools of the methods the client answers (`languageFeatures`).
    fn language_tools(
        &self,
        workspace: &Arc<dyn Workspace>,
        options: &ToolOptions,
    ) -> Vec<ToolRef> {
        let features = self.config.language_features();
        if features.is_empty() {
            return Vec::new();
        }
        // The session's id, as `core::assemble` hands it to commands: the session itself is
        // connected once it exists (`LanguageSessions::connect`).
        let session_id = (options.env.iter())
            .find(|(name, _)| name == "AGENT_LSP_SESSION_ID")
            .map(|(_, id)| id.clone())
            .unwrap_or_default();
        let lang = Lang {
            ws: workspace.clone(),
            docs: self.docs.clone(),
            out: self.out.clone(),
            encoding: self.config.encoding,
            timeout: self.config.language_timeout(),
            session_id,
            recorder: options.recorder.clone(),
            shared: Default::default(),
        };
        self.language.tools(features, lang)
    }
}

/// Picks the model as the CLI does (`model_registry::resolve_model`): `initializationOptions.model`
/// ("provider/id"), else `AGENT_LSP_MODEL`, else the default for the configured keys or
/// `OPENAI_BASE_URL`.
pub fn resolve_model(config: &ConnConfig) -> Result<ResolvedModel, String> {
    let env = EnvSource::from_process();
    crate::model_registry::resolve_model(config.options.model.as_deref(), &env)
        .map_err(|e| e.to_string())
}

/// What the model is told about the editor, after the system prompt.
const EDITOR_NOTE: &str = "You run inside the user's editor. Open files show the editor's \
unsaved text, and your edits land in the editor's buffers (then saved to disk).";

/// The daemon's part of every session: the tools see and edit the editor's buffers, the model
/// is told so, and the editor's diagnostics are a tool.
impl FrontEnd for ConnCtx {
    fn workspace(&self, disk: DiskWorkspace) -> Arc<dyn Workspace> {
        let (docs, out, config) = (self.docs.clone(), self.out.clone(), self.config.clone());
        Arc::new(BufferWorkspace::new(disk, docs, out, config))
    }

    fn prompt_note(&self) -> Option<&str> {
        Some(EDITOR_NOTE)
    }

    fn extra_tools(&self, workspace: &Arc<dyn Workspace>, options: &ToolOptions) -> Vec<ToolRef> {
        let mut tools: Vec<ToolRef> = Vec::new();
        if self.config.diagnostics() {
            let sources = (workspace.clone(), self.docs.clone());
            tools.push(Arc::new(DiagnosticsTool::new(sources)));
        }
        tools.extend(self.language_tools(workspace, options));
        tools
    }
}
