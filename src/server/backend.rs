//! The LSP backend: lifecycle, capabilities and the table of agent methods.
//!
//! **Invariant:** no handler waits on the client or on a run. Handlers validate, change state
//! under short locks and answer; runs live in their own tasks (see `sessions.rs`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use serde_json::{Value, json};
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};
use tower_lsp_server::ls_types::{
    CodeActionParams, CodeActionProviderCapability, CodeActionResponse,
    DidChangeTextDocumentParams, DidCloseTextDocumentParams, DidOpenTextDocumentParams,
    DidSaveTextDocumentParams, ExecuteCommandOptions, ExecuteCommandParams, InitializeParams,
    InitializeResult, InitializedParams, MessageType, SaveOptions, ServerCapabilities, ServerInfo,
    TextDocumentSyncCapability, TextDocumentSyncKind, TextDocumentSyncOptions,
    TextDocumentSyncSaveOptions,
};
use tower_lsp_server::{Client, LanguageServer};

use crate::server::config::ConnConfig;
use crate::server::documents::DocStore;
use crate::server::outgoing::{Outgoing, Replies};
use crate::server::output::Output;
use crate::server::protocol::{PROTOCOL_VERSION, command};
use crate::server::sessions::Sessions;

/// Shared by the backend, the shim and `serve_stdio`.
#[derive(Clone)]
pub struct Shared {
    /// Everything written to the client.
    pub output: Output,
    /// Reply slots of our requests to the client, filled by the stdin reader.
    pub replies: Replies,
    pub docs: DocStore,
    pub config: Arc<OnceLock<ConnConfig>>,
    pub shutdown_requested: Arc<AtomicBool>,
    pub sessions: Arc<OnceLock<Sessions>>,
}

impl Shared {
    pub fn new(output: Output, replies: Replies) -> Self {
        Shared {
            output,
            replies,
            docs: DocStore::default(),
            config: Arc::default(),
            shutdown_requested: Arc::default(),
            sessions: Arc::default(),
        }
    }
}

pub struct Backend {
    pub(crate) client: Client,
    pub(crate) shared: Shared,
}

/// A JSON-RPC error with a code and a message.
pub fn rpc_error(code: i64, message: impl Into<String>) -> Error {
    Error {
        code: ErrorCode::from(code),
        message: message.into().into(),
        data: None,
    }
}

pub fn invalid_params(message: impl Into<String>) -> Error {
    rpc_error(-32602, message)
}

impl Backend {
    pub fn new(client: Client, shared: Shared) -> Self {
        Backend { client, shared }
    }

    /// The agent side of the connection, available after `initialize`.
    pub(crate) fn sessions(&self) -> Result<&Sessions> {
        self.shared
            .sessions
            .get()
            .ok_or_else(|| rpc_error(-32002, "the server is not initialized"))
    }

    /// Answers a malformed client message (rewritten by `sanitize.rs`) with its error.
    pub async fn malformed(&self, params: Value) -> Result<Value> {
        Err(crate::server::sanitize::malformed_error(params))
    }

    /// `agent/getDocument`: what the server mirrors for one URI (for resync checks and tests).
    pub async fn get_document(&self, params: Value) -> Result<Value> {
        let uri = params
            .get("uri")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid_params("agent/getDocument needs params {uri: string}"))?;
        let doc = self
            .shared
            .docs
            .get(uri)
            .ok_or_else(|| invalid_params(format!("document {uri} is not open")))?;
        Ok(json!({"uri": uri, "version": doc.version, "text": doc.rope.to_string()}))
    }
}

fn capabilities(config: &ConnConfig) -> ServerCapabilities {
    let commands = command::ALL.iter().map(|c| (*c).to_owned()).collect();
    ServerCapabilities {
        position_encoding: Some(config.encoding.kind()),
        text_document_sync: Some(TextDocumentSyncCapability::Options(
            TextDocumentSyncOptions {
                open_close: Some(true),
                change: Some(TextDocumentSyncKind::INCREMENTAL),
                save: Some(TextDocumentSyncSaveOptions::SaveOptions(SaveOptions {
                    include_text: Some(false),
                })),
                ..Default::default()
            },
        )),
        execute_command_provider: Some(ExecuteCommandOptions {
            commands,
            ..Default::default()
        }),
        code_action_provider: Some(CodeActionProviderCapability::Simple(true)),
        experimental: Some(json!({"agent": {"protocolVersion": PROTOCOL_VERSION}})),
        ..Default::default()
    }
}

impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        let (config, warnings) = ConnConfig::from_initialize(&params);
        for warning in &warnings {
            tracing::warn!("{warning}");
        }
        self.shared.docs.set_encoding(config.encoding);
        let caps = capabilities(&config);
        let sessions = Sessions::new(
            Outgoing::new(
                self.client.clone(),
                self.shared.output.clone(),
                self.shared.replies.clone(),
            ),
            self.shared.docs.clone(),
            config.clone(),
            warnings,
        );
        let _ = self.shared.sessions.set(sessions);
        let _ = self.shared.config.set(config);
        Ok(InitializeResult {
            capabilities: caps,
            server_info: Some(ServerInfo {
                name: "agent-lsp".into(),
                version: Some(env!("CARGO_PKG_VERSION").into()),
            }),
            ..Default::default()
        })
    }

    async fn initialized(&self, _: InitializedParams) {
        let Ok(sessions) = self.sessions() else {
            return;
        };
        for warning in sessions.startup_warnings() {
            // Sent from a task: notifications must not delay the handler pool.
            let client = self.client.clone();
            tokio::spawn(async move { client.show_message(MessageType::WARNING, warning).await });
        }
    }

    async fn shutdown(&self) -> Result<()> {
        self.shared.shutdown_requested.store(true, Ordering::SeqCst);
        if let Ok(sessions) = self.sessions() {
            sessions.abort_all();
        }
        Ok(())
    }

    // Document sync is applied in wire order by the shim (`ordered.rs`); these are no-ops.
    async fn did_open(&self, _: DidOpenTextDocumentParams) {}
    async fn did_change(&self, _: DidChangeTextDocumentParams) {}
    async fn did_close(&self, _: DidCloseTextDocumentParams) {}
    async fn did_save(&self, _: DidSaveTextDocumentParams) {}

    async fn execute_command(&self, params: ExecuteCommandParams) -> Result<Option<Value>> {
        self.sessions()?.execute_command(params).await.map(Some)
    }

    async fn code_action(&self, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
        Ok(Some(self.sessions()?.code_actions(&params)))
    }
}
