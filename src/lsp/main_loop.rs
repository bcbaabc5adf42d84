//! The daemon's main loop: one task reads every message in wire order and handles it to the end
//! before it looks at the next one.
//!
//! So document sync is applied before any later message is read, and a request's response takes
//! its place in the output ([`Output::reply_slot`]) before anything the request starts can queue
//! an event. Handlers never wait on the client or on a run: runs and their server → client round
//! trips live in their own tasks and report through the output.

use std::sync::Arc;
use std::time::Duration;

use ls_types::{
    CodeActionProviderCapability, ExecuteCommandOptions, InitializeParams, InitializeResult,
    MessageType, SaveOptions, ServerCapabilities, ServerInfo, ShowMessageParams,
    TextDocumentSyncCapability, TextDocumentSyncKind, TextDocumentSyncOptions,
    TextDocumentSyncSaveOptions,
};
use serde_json::{Value, json};
use tokio::io::AsyncRead;

use crate::lsp::config::ConnConfig;
use crate::lsp::dispatch::{self, Handling, Request};
use crate::lsp::documents::Documents;
use crate::lsp::protocol::{PROTOCOL_VERSION, command, method};
use crate::lsp::session_table::SessionTable;
use crate::rpc::jsonrpc::{Incoming, Reader, Response, ResponseError, code, parse_params as parse};
use crate::rpc::outgoing::{Outgoing, Replies};
use crate::rpc::output::Output;

/// How the loop ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// `exit` after `shutdown`: exit code 0.
    Clean,
    /// `exit` without `shutdown`, stdin closed or the editor died: exit code 1.
    Unclean,
}

enum Phase {
    Uninitialized,
    Running(Arc<SessionTable>),
    ShutDown(Arc<SessionTable>),
}

/// The connection's state, owned by the main loop.
pub struct Server {
    pub output: Output,
    replies: Replies,
    docs: Documents,
    phase: Phase,
    process_id: Option<u32>,
}

impl Server {
    pub fn new(output: Output) -> Self {
        Server {
            output,
            replies: Replies::default(),
            docs: Documents::default(),
            phase: Phase::Uninitialized,
            process_id: None,
        }
    }

    /// The sessions, once `initialize` created them.
    pub fn sessions(&self) -> Option<&Arc<SessionTable>> {
        match &self.phase {
            Phase::Uninitialized => None,
            Phase::Running(s) | Phase::ShutDown(s) => Some(s),
        }
    }

    /// Serves messages from `input` until `exit`, the end of input or the editor's death.
    pub async fn serve(&mut self, input: impl AsyncRead + Unpin, framing: super::Framing) -> Exit {
        let mut reader = Reader::new(input, framing);
        let mut parent_check = tokio::time::interval(Duration::from_secs(1));
        let exit = loop {
            let message = tokio::select! {
                message = reader.next() => message,
                _ = parent_check.tick() => {
                    if self.process_id.is_some_and(|pid| !process_alive(pid)) {
                        tracing::warn!("the editor process is gone; exiting");
                        break Exit::Unclean;
                    }
                    continue;
                }
            };
            let Some(message) = message else {
                break Exit::Unclean;
            };
            if let Some(exit) = self.handle(message) {
                break exit;
            }
        };
        // Nothing more can arrive: requests waiting for the client fail now.
        self.replies.close();
        exit
    }

    /// Handles one message completely; `Some` when it ends the connection (`exit`).
    fn handle(&mut self, message: Incoming) -> Option<Exit> {
        match message {
            Incoming::Request { id, method, params } => {
                let request = Request::of(&method);
                if let (Some(request), Phase::Running(sessions)) = (request, &self.phase)
                    && request.handling() == Handling::Task
                {
                    dispatch::spawn(sessions, request, id, params, self.output.clone());
                    return None;
                }
                let slot = self.output.reply_slot();
                let result = self.request(&method, request, params);
                if let Err(e) = &result {
                    tracing::debug!(method, %e, "request failed");
                }
                slot.fill(&Response::new(Some(&id), result));
            }
            Incoming::Notification { method, params } => return self.notification(&method, params),
            Incoming::Response { id, result } => {
                if !self.replies.deliver(&id, result) {
                    tracing::debug!(?id, "a reply to no pending request; ignored");
                }
            }
            Incoming::Malformed { id, error } => {
                tracing::warn!(%error, "malformed message from the client answered with an error");
                self.output.send(&Response::new(id.as_ref(), Err(error)));
            }
        }
        None
    }

    fn request(
        &mut self,
        method: &str,
        request: Option<Request>,
        params: Value,
    ) -> Result<Value, ResponseError> {
        match (&self.phase, method) {
            (Phase::Uninitialized, "initialize") => self.initialize(params),
            (Phase::Uninitialized, _) => Err(ResponseError::new(
                code::SERVER_NOT_INITIALIZED,
                "the server is not initialized",
            )),
            (Phase::ShutDown(_), _) => Err(ResponseError::new(
                code::INVALID_REQUEST,
                "the server is shutting down",
            )),
            (Phase::Running(_), "initialize") => Err(ResponseError::new(
                code::INVALID_REQUEST,
                "initialize was already called",
            )),
            (Phase::Running(sessions), "shutdown") => {
                let sessions = sessions.clone();
                sessions.abort_all();
                let stopping = sessions.clone();
                tokio::spawn(async move {
                    stopping.end_jobs().await;
                    stopping.stop_mcp().await
                });
                self.phase = Phase::ShutDown(sessions);
                Ok(Value::Null)
            }
            (Phase::Running(sessions), _) => match request {
                Some(request) => dispatch::request(sessions, self.docs.store(), request, params),
                None => Err(ResponseError::new(
                    code::METHOD_NOT_FOUND,
                    format!("method not found: {method}"),
                )),
            },
        }
    }

    fn initialize(&mut self, params: Value) -> Result<Value, ResponseError> {
        let params: InitializeParams = parse(params)?;
        let (config, mut warnings) = ConnConfig::from_initialize(&params);
        let env = crate::model_registry::EnvSource::from_process();
        warnings.extend(crate::sandbox::startup_warning(
            config.options.sandbox,
            &env,
        ));
        for warning in &warnings {
            tracing::warn!("{warning}");
        }
        self.docs.set_encoding(config.encoding);
        self.output.set_delta_interval(config.delta_interval());
        self.process_id = config.process_id;
        let result = InitializeResult {
            capabilities: capabilities(&config),
            server_info: Some(ServerInfo {
                name: "agent-lsp".into(),
                version: Some(env!("CARGO_PKG_VERSION").into()),
            }),
            ..Default::default()
        };
        let out = Outgoing::new(self.output.clone(), self.replies.clone());
        let sessions = SessionTable::new(out, self.docs.store().clone(), config, warnings);
        self.phase = Phase::Running(Arc::new(sessions));
        serde_json::to_value(result).map_err(|e| ResponseError::internal(e.to_string()))
    }

    fn notification(&mut self, method: &str, params: Value) -> Option<Exit> {
        if method == "exit" {
            return Some(match self.phase {
                Phase::ShutDown(_) => Exit::Clean,
                _ => Exit::Unclean,
            });
        }
        let Some(sessions) = self.sessions().cloned() else {
            tracing::debug!(method, "notification before initialize; ignored");
            return None;
        };
        let applied = match method {
            "initialized" => {
                for warning in sessions.startup_warnings() {
                    let params = ShowMessageParams {
                        typ: MessageType::WARNING,
                        message: warning,
                    };
                    self.output.notify("window/showMessage", params);
                }
                Ok(())
            }
            "textDocument/didOpen" => parse(params).map(|p| self.docs.open(p)),
            "textDocument/didChange" => parse(params).map(|p| self.docs.change(p)),
            "textDocument/didClose" => parse(params).map(|p| self.docs.close(p)),
            method::DIAGNOSTICS => parse(params).map(|p| self.docs.set_diagnostics(p)),
            "window/workDoneProgress/cancel" => {
                let token = params.get("token").and_then(Value::as_str);
                let run =
                    token.and_then(|t| t.strip_prefix(crate::lsp::generic_client::TOKEN_PREFIX));
                if let Some(run) = run {
                    sessions.abort_run(run);
                }
                Ok(())
            }
            // Every request is answered before the next message is read: nothing to cancel.
            "$/cancelRequest" | "textDocument/didSave" => Ok(()),
            m if dispatch::is_request(m) => {
                tracing::warn!(method, "a request sent as a notification; ignored");
                Ok(())
            }
            _ => {
                tracing::debug!(method, "unknown notification; ignored");
                Ok(())
            }
        };
        if let Err(e) = applied {
            tracing::warn!(method, %e, "malformed notification ignored");
        }
        None
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

/// Whether the process `pid` still exists.
fn process_alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return true;
    };
    let probe = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None);
    !matches!(probe, Err(nix::errno::Errno::ESRCH))
}
