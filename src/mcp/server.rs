//! One MCP server: its connection (the rmcp client), its state and tools, calls, restarts.
//!
//! A stdio server is a child process in its own process group (so a terminal's Ctrl-C does not
//! reach it and stopping it stops the whole tree `npx` starts), its stderr copied to our log. A
//! remote server is reached over streamable HTTP on the crate's reqwest client.
//!
//! A server that exits is marked failed; its next use (a request that needs its tools, or a call)
//! starts it again after a backoff, at most [`MAX_RESTARTS`] times in a row.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CancelledNotificationParam, ClientCapabilities, ClientRequest,
    ElicitRequestParams, ElicitResult, ElicitationCapability, FormElicitationCapability,
    GetPromptRequestParams, Implementation, InitializeRequestParams, ProgressNotificationParam,
    Prompt, ServerResult, Tool,
};
use rmcp::service::{
    InboundStreamOrigin, NotificationContext, Peer, PeerRequestOptions, RequestContext, RoleClient,
    RunningService, ServiceError,
};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ErrorData, ServiceExt};
use serde_json::Value;
use tokio::io::AsyncBufReadExt;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::agent::tool::{AgentToolResult, ToolUpdater};
use crate::mcp::config::{ServerConfig, Transport};
use crate::mcp::elicit::{self, Caller, InFlight};

/// Restarts in a row before a server stays failed.
pub const MAX_RESTARTS: u32 = 3;
/// The wait before the first restart; doubled for each further one.
const BACKOFF: Duration = Duration::from_millis(500);

/// What a server is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Starting,
    Ready,
    Failed,
    Disabled,
    Untrusted,
}

/// A server's state as clients see it (`agent/mcpStatus`).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ServerStatus {
    pub name: String,
    pub state: State,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The server's own tool names.
    pub tools: Vec<String>,
}

struct Inner {
    state: State,
    error: Option<String>,
    tools: Vec<Tool>,
    /// The server's prompts (slash commands), when it offers any.
    prompts: Vec<Prompt>,
    peer: Option<Peer<RoleClient>>,
    /// Stops the running connection (and the child).
    stop: Option<CancellationToken>,
    /// Bumped per connection, so a stale connection's exit is not taken for the current one's.
    generation: u64,
    failures_in_a_row: u32,
    failed_at: Option<Instant>,
    /// The stdio child's process group.
    group: Option<i32>,
    /// The server announced a changed tool list that is not listed yet.
    refreshing: bool,
}

/// One configured server (shared by the sessions that use it).
pub struct Server {
    pub config: ServerConfig,
    /// The working directory a stdio server starts in when its entry names none.
    cwd: std::path::PathBuf,
    /// For a remote server: the HTTP client, or why there is none.
    http: Option<Result<reqwest::Client, String>>,
    inner: Mutex<Inner>,
    /// Bumped on every change of state or tools.
    changed: watch::Sender<u64>,
    handler: Handler,
    /// One start at a time.
    starting: tokio::sync::Mutex<()>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Server {
    /// A server in its initial state: `starting` (call [`Server::start`]), or `disabled` /
    /// `untrusted`, which never start.
    pub fn new(
        config: ServerConfig,
        cwd: &std::path::Path,
        http: Option<Result<reqwest::Client, String>>,
        initial: State,
    ) -> Arc<Server> {
        Arc::new_cyclic(|weak| Server {
            handler: Handler {
                server: weak.clone(),
                progress: Arc::default(),
                calls: InFlight::default(),
            },
            config,
            cwd: cwd.to_path_buf(),
            http,
            inner: Mutex::new(Inner {
                state: initial,
                error: None,
                tools: Vec::new(),
                prompts: Vec::new(),
                peer: None,
                stop: None,
                generation: 0,
                failures_in_a_row: 0,
                failed_at: None,
                group: None,
                refreshing: false,
            }),
            changed: watch::channel(0).0,
            starting: tokio::sync::Mutex::new(()),
        })
    }

    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// Subscribes to changes of state or tools.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    pub fn status(&self) -> ServerStatus {
        let inner = lock(&self.inner);
        ServerStatus {
            name: self.config.name.clone(),
            state: inner.state,
            error: inner.error.clone(),
            tools: inner.tools.iter().map(|t| t.name.to_string()).collect(),
        }
    }

    /// The tools of a ready server (none otherwise).
    pub fn tools(&self) -> Vec<Tool> {
        let inner = lock(&self.inner);
        match inner.state {
            State::Ready => inner.tools.clone(),
            _ => Vec::new(),
        }
    }

    /// The prompts of a ready server (none otherwise).
    pub fn prompts(&self) -> Vec<Prompt> {
        let inner = lock(&self.inner);
        match inner.state {
            State::Ready => inner.prompts.clone(),
            _ => Vec::new(),
        }
    }

    /// `prompts/get`: the prompt's messages as JSON (`GetPromptResult`).
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: serde_json::Map<String, Value>,
    ) -> Result<Value, String> {
        let peer = lock(&self.inner).peer.clone();
        let peer = peer.ok_or_else(|| "the MCP server is not running".to_string())?;
        let mut params = GetPromptRequestParams::new(name);
        params.arguments = Some(arguments);
        let timeout = self.config.tool_timeout;
        let result = tokio::time::timeout(timeout, peer.get_prompt(params))
            .await
            .map_err(|_| format!("no answer within {} ms", timeout.as_millis()))?
            .map_err(|e| format!("prompts/get failed: {e}"))?;
        serde_json::to_value(result).map_err(|e| e.to_string())
    }

    /// Connects unless connected; on failure the server is `failed` with the reason.
    pub async fn start(self: &Arc<Self>) {
        let _one = self.starting.lock().await;
        let generation = {
            let mut inner = lock(&self.inner);
            if inner.peer.is_some() || matches!(inner.state, State::Disabled | State::Untrusted) {
                return;
            }
            inner.state = State::Starting;
            inner.generation += 1;
            inner.generation
        };
        self.bump();
        let timeout = self.config.startup_timeout;
        let outcome = match tokio::time::timeout(timeout, self.connect(generation)).await {
            Ok(outcome) => outcome,
            Err(_) => Err(format!("did not start within {} ms", timeout.as_millis())),
        };
        match outcome {
            Ok((peer, tools, stop)) => {
                let prompts = list_prompts(&peer, self.name()).await;
                let mut inner = lock(&self.inner);
                inner.state = State::Ready;
                inner.error = None;
                inner.tools = tools;
                inner.prompts = prompts;
                inner.peer = Some(peer);
                inner.stop = Some(stop);
            }
            Err(error) => {
                tracing::warn!(server = self.name(), %error, "MCP server failed to start");
                self.fail(generation, error);
            }
        }
        self.bump();
    }

    /// The user trusted the project: an untrusted server starts now.
    pub fn trust(self: &Arc<Self>) {
        {
            let mut inner = lock(&self.inner);
            if inner.state != State::Untrusted {
                return;
            }
            inner.state = State::Starting;
        }
        self.bump();
        let server = self.clone();
        tokio::spawn(async move { server.start().await });
    }

    /// Starts a stopped server again when its backoff allows (the "next use"); returns once it
    /// is ready or failed.
    pub async fn ensure_started(self: &Arc<Self>) {
        let due = {
            let inner = lock(&self.inner);
            match inner.state {
                State::Ready | State::Starting | State::Disabled | State::Untrusted => return,
                State::Failed if inner.failures_in_a_row > MAX_RESTARTS => return,
                State::Failed => inner
                    .failed_at
                    .map(|at| at + BACKOFF * 2u32.pow(inner.failures_in_a_row.saturating_sub(1))),
            }
        };
        if due.is_some_and(|due| due > Instant::now()) {
            return;
        }
        self.start().await;
    }

    /// Waits until the server is no longer starting and its tool list is current.
    pub async fn settled(&self) {
        let mut changes = self.subscribe();
        loop {
            let busy = {
                let inner = lock(&self.inner);
                inner.state == State::Starting || inner.refreshing
            };
            if !busy {
                return;
            }
            if changes.changed().await.is_err() {
                return;
            }
        }
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n += 1);
    }

    /// Marks the connection of `generation` failed (a later connection is left alone).
    fn fail(&self, generation: u64, error: String) {
        let mut inner = lock(&self.inner);
        if inner.generation != generation {
            return;
        }
        inner.state = State::Failed;
        inner.error = Some(error);
        inner.tools.clear();
        inner.peer = None;
        if let Some(stop) = inner.stop.take() {
            stop.cancel();
        }
        inner.failures_in_a_row += 1;
        inner.failed_at = Some(Instant::now());
    }

    async fn connect(
        self: &Arc<Self>,
        generation: u64,
    ) -> Result<(Peer<RoleClient>, Vec<Tool>, CancellationToken), String> {
        let service = match &self.config.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args)
                    .envs(env)
                    .current_dir(cwd.as_deref().unwrap_or(&self.cwd))
                    .process_group(0);
                let (transport, stderr) = TokioChildProcess::builder(cmd)
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|e| format!("cannot start `{command}`: {e}"))?;
                lock(&self.inner).group = transport.id().and_then(|id| i32::try_from(id).ok());
                if let Some(stderr) = stderr {
                    tokio::spawn(log_stderr(self.config.name.clone(), stderr));
                }
                self.handler
                    .clone()
                    .serve(transport)
                    .await
                    .map_err(|e| format!("the MCP handshake failed: {e}"))?
            }
            Transport::Http { url, headers } => {
                let headers = headers
                    .iter()
                    .map(|(k, v)| {
                        let name = http::HeaderName::try_from(k.as_str())
                            .map_err(|e| format!("header {k}: {e}"))?;
                        let value = http::HeaderValue::try_from(v.as_str())
                            .map_err(|e| format!("header {k}: {e}"))?;
                        Ok((name, value))
                    })
                    .collect::<Result<HashMap<_, _>, String>>()?;
                let config = StreamableHttpClientTransportConfig::with_uri(url.clone())
                    .custom_headers(headers);
                let client = match &self.http {
                    Some(Ok(client)) => client.clone(),
                    Some(Err(e)) => return Err(e.clone()),
                    None => return Err("no HTTP client".into()),
                };
                let transport = StreamableHttpClientTransport::with_client(client, config);
                self.handler
                    .clone()
                    .serve(transport)
                    .await
                    .map_err(|e| format!("cannot reach {url}: {e}"))?
            }
        };
        let tools = service
            .peer()
            .list_all_tools()
            .await
            .map_err(|e| format!("tools/list failed: {e}"))?;
        let peer = service.peer().clone();
        let stop = CancellationToken::new();
        tokio::spawn(self.clone().watch(service, generation, stop.clone()));
        Ok((peer, tools, stop))
    }

    /// Owns the running connection until it ends (the server exited) or `stop` fires.
    async fn watch(
        self: Arc<Self>,
        service: RunningService<RoleClient, Handler>,
        generation: u64,
        stop: CancellationToken,
    ) {
        let server = Arc::downgrade(&self);
        drop(self);
        let stopper = service.cancellation_token();
        tokio::select! {
            ended = service.waiting() => {
                tracing::warn!(?ended, "MCP server connection ended");
                if let Some(server) = server.upgrade() {
                    server.fail(generation, "the server exited".into());
                    server.bump();
                }
            }
            () = stop.cancelled() => stopper.cancel(),
        }
    }

    /// Lists the tools again (after `notifications/tools/list_changed`); until then the server
    /// is not [`Server::settled`], so the next request waits for the new list.
    async fn refresh_tools(self: Arc<Self>) {
        let peer = lock(&self.inner).peer.clone();
        let listed = match peer {
            Some(peer) => peer.list_all_tools().await.map_err(|e| e.to_string()),
            None => Err("not connected".into()),
        };
        {
            let mut inner = lock(&self.inner);
            inner.refreshing = false;
            match listed {
                Ok(tools) => inner.tools = tools,
                Err(e) => tracing::warn!(server = self.config.name, %e, "tools/list failed"),
            }
        }
        self.bump();
    }

    /// Lists the prompts again (after `notifications/prompts/list_changed`).
    async fn refresh_prompts(self: Arc<Self>) {
        let peer = lock(&self.inner).peer.clone();
        if let Some(peer) = peer {
            let prompts = list_prompts(&peer, self.name()).await;
            lock(&self.inner).prompts = prompts;
        }
        self.bump();
    }

    /// Calls `tool` with `args`; `Ok` is the server's `CallToolResult` as JSON. `cancel` (an
    /// abort) sends `notifications/cancelled`; the entry's `toolTimeoutMs` ends the call too.
    /// While it runs, the server's elicitations ask the user through `caller`'s session.
    pub async fn call(
        self: &Arc<Self>,
        tool: &str,
        args: Value,
        cancel: &CancellationToken,
        updates: ToolUpdater,
        caller: Option<Caller>,
    ) -> Result<Value, CallError> {
        self.ensure_started().await;
        let peer = lock(&self.inner).peer.clone();
        let Some(peer) = peer else {
            let error = self.status().error;
            return Err(CallError::Unavailable(
                error.unwrap_or_else(|| "not running".into()),
            ));
        };
        let arguments = match args {
            Value::Object(map) => map,
            Value::Null => Default::default(),
            other => {
                return Err(CallError::Failed(format!(
                    "arguments must be an object, not {other}"
                )));
            }
        };
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        let request = ClientRequest::CallToolRequest(rmcp::model::Request::new(params));
        // Registered before the request goes out: the server may ask before `send` returns.
        let in_flight = caller.map(|c| self.handler.calls.enter(c, cancel));
        let mut handle = peer
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await
            .map_err(|e| CallError::Failed(e.to_string()))?;
        if let Some(in_flight) = &in_flight {
            in_flight.sent(handle.id.clone());
        }
        let token = handle.progress_token.clone();
        lock(&self.handler.progress).insert(token.clone(), updates);
        let timeout = self.config.tool_timeout;
        let outcome = tokio::select! {
            reply = &mut handle.rx => Ok(reply),
            () = cancel.cancelled() => Err(CallError::Aborted),
            () = tokio::time::sleep(timeout) => Err(CallError::TimedOut(timeout)),
        };
        lock(&self.handler.progress).remove(&token);
        let reply = match outcome {
            Ok(reply) => reply,
            Err(error) => {
                let reason = error.to_string();
                let params = CancelledNotificationParam::new(Some(handle.id.clone()), Some(reason));
                let _ = peer.notify_cancelled(params).await;
                return Err(error);
            }
        };
        match reply {
            Ok(Ok(ServerResult::CallToolResult(result))) => {
                lock(&self.inner).failures_in_a_row = 0;
                serde_json::to_value(result).map_err(|e| CallError::Failed(e.to_string()))
            }
            Ok(Ok(other)) => Err(CallError::Failed(format!(
                "an unexpected answer: {other:?}"
            ))),
            Ok(Err(ServiceError::McpError(e))) => Err(CallError::Failed(format!(
                "the server answered with an error: {} ({})",
                e.message, e.code.0
            ))),
            Ok(Err(e)) => Err(CallError::Failed(e.to_string())),
            // The connection went away mid-call: the server exited or broke its stream.
            Err(_) => Err(CallError::Failed(
                "the server exited during the call".into(),
            )),
        }
    }

    /// Stops the server: the connection closes (a stdio child gets EOF, then SIGTERM, as MCP
    /// asks), in the background.
    pub fn stop(&self) {
        let mut inner = lock(&self.inner);
        inner.peer = None;
        if let Some(stop) = inner.stop.take() {
            stop.cancel();
        }
    }

    /// Whether the stdio child's process group still has a process.
    pub fn running_group(&self) -> Option<i32> {
        let group = lock(&self.inner).group?;
        let alive = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(group), None).is_ok();
        alive.then_some(group)
    }

    /// Ends the stdio child's whole process group at once (what `npx` started with it).
    pub fn kill_group(&self, signal: nix::sys::signal::Signal) {
        if let Some(group) = self.running_group() {
            let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(group), signal);
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // The last session using it is gone, perhaps with the runtime: do not leave it behind.
        self.stop();
        self.kill_group(nix::sys::signal::Signal::SIGTERM);
    }
}

/// Why a call produced no result.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("the MCP server is not available: {0}")]
    Unavailable(String),
    #[error("Operation aborted")]
    Aborted,
    #[error("no answer within {} ms (toolTimeoutMs)", .0.as_millis())]
    TimedOut(Duration),
    #[error("{0}")]
    Failed(String),
}

/// The server's prompts, when its capabilities offer them; a failed listing is logged.
async fn list_prompts(peer: &Peer<RoleClient>, name: &str) -> Vec<Prompt> {
    let offers = peer
        .peer_info()
        .is_some_and(|i| i.capabilities.prompts.is_some());
    if !offers {
        return Vec::new();
    }
    peer.list_all_prompts().await.unwrap_or_else(|e| {
        tracing::warn!(server = name, %e, "prompts/list failed");
        Vec::new()
    })
}

async fn log_stderr(name: String, stderr: tokio::process::ChildStderr) {
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::info!(target: "agent_lsp::mcp::stderr", server = name, "{line}");
    }
}

/// The client side of one connection: progress routing, list changes, and elicitations asked
/// of the user through the session whose call is in flight (`elicit.rs`); the requests we do
/// not support (sampling) are answered with an error, never left hanging.
#[derive(Clone)]
struct Handler {
    server: std::sync::Weak<Server>,
    progress: Arc<Mutex<HashMap<rmcp::model::ProgressToken, ToolUpdater>>>,
    calls: InFlight,
}

impl ClientHandler for Handler {
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let name = self.server.upgrade().map(|s| s.config.name.clone());
        let origin = match context.extensions.get::<InboundStreamOrigin>() {
            Some(InboundStreamOrigin::OutboundRequest(id)) => Some(id.clone()),
            _ => None,
        };
        let server = name.as_deref().unwrap_or("?");
        let answered = elicit::answer(&self.calls, server, request, origin.as_ref(), &context.ct);
        Ok(answered.await)
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let updater = lock(&self.progress).get(&params.progress_token).cloned();
        if let Some(updater) = updater {
            let text = match (params.total, &params.message) {
                (Some(total), Some(m)) => format!("{m} ({}/{total})", params.progress),
                (Some(total), None) => format!("{}/{total}", params.progress),
                (None, Some(m)) => m.clone(),
                (None, None) => format!("{}", params.progress),
            };
            let mut partial = AgentToolResult::text(text);
            partial.details = Some(serde_json::json!({
                "progress": params.progress, "total": params.total, "message": params.message
            }));
            updater.update(partial);
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(server) = self.server.upgrade() {
            // Marked before the listing starts: a request about to go out waits for it.
            lock(&server.inner).refreshing = true;
            tokio::spawn(server.refresh_tools());
        }
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(server) = self.server.upgrade() {
            tokio::spawn(server.refresh_prompts());
        }
    }

    fn get_info(&self) -> InitializeRequestParams {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation =
            Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
        InitializeRequestParams::new(
            capabilities,
            Implementation::new("agent-lsp", env!("CARGO_PKG_VERSION")),
        )
    }
}
