//! The ACP connection: one loop reads every message in wire order and handles it to the end
//! before the next (a prompt's run goes on in its own task and answers when it settles); every
//! frame out goes through the one ordered writer (`rpc::output`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use agent_client_protocol_schema::ProtocolVersion;
use agent_client_protocol_schema::v1 as acp;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::io::AsyncRead;

use crate::acp::auth::{self, WithMessage, acp_error};
use crate::acp::client::{AcpFrontEnd, ClientCaps, SessionLink};
use crate::acp::content::to_pi_blocks;
use crate::acp::options::{self, MODEL, THOUGHT_LEVEL};
use crate::acp::session::{AcpSession, AcpView, Mode};
use crate::acp::updates::{self};
use crate::agent::message::ThinkingLevel;
use crate::agent::stream_contract::StreamFn;
use crate::core::journal::review;
use crate::core::journal::review::RevertRequest;
use crate::core::permissions::PermissionSpec;
use crate::core::session::Session;
use crate::core::{
    LoopLimits, McpSource, McpSpec, ModelChoice, RecordChoice, SessionSpec, SetupError, assemble,
};
use crate::mcp::McpHub;
use crate::model_registry::EnvSource;
use crate::rpc::Framing;
use crate::rpc::jsonrpc::{Id, Incoming, Reader, Response, ResponseError, code};
use crate::rpc::outgoing::{CancelNotice, Outgoing, Replies};
use crate::rpc::output::DEFAULT_DELTA_INTERVAL;
use crate::rpc::output::Output;
use crate::store::SessionStore;
use crate::tools::jobs::END_WITHIN as JOBS_END;

/// The extension method for steering a running turn (advertised in `agentCapabilities._meta`).
pub const STEER: &str = "_agent-lsp/steer";

/// The extension method taking back a turn's file changes (protocol.md §3.16, §9.1).
pub const REVERT: &str = "_agent-lsp/revert";

/// What `session/new` answers when no model resolves: ACP's auth-required error names exactly
/// what to set, and the client can offer the advertised auth methods (`acp/auth.rs`).
const NO_MODEL: &str = "agent-lsp has no model: run `agent-lsp login` to store a provider's \
key, or set AGENT_LSP_MODEL=provider/id (e.g. \
anthropic/claude-sonnet-4-5) with that provider's key in the agent's environment \
(ANTHROPIC_API_KEY or OPENAI_API_KEY; OPENAI_BASE_URL for another OpenAI-compatible server), \
or ollama/<name> for a local Ollama, or add providers to $XDG_CONFIG_HOME/agent-lsp/models.json; \
`agent-lsp doctor` shows what it finds, `agent-lsp demo` runs without a model";

pub struct Conn {
    pub out: Outgoing,
    replies: Replies,
    env: EnvSource,
    stream_fn: Arc<dyn StreamFn>,
    hub: McpHub,
    client: Mutex<ClientCaps>,
    sessions: Mutex<HashMap<String, Arc<AcpSession>>>,
}

/// A handler's answer: now, or later from the run (`session/prompt`), or now followed by the
/// session's `available_commands_update` (`session/new`, `load`, `resume`).
enum Reply {
    Now(Result<Value, ResponseError>),
    Later,
    Opened(Opened),
}

/// An opened session's answer, with the session.
type Opened = Result<(Value, Arc<AcpSession>), ResponseError>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// `_meta["agent-lsp"].deltaIntervalMs` of `initialize`: how often a streaming message's chunks
/// are written (as the daemon's `deltaIntervalMs`; 0 writes every delta as it comes).
fn delta_interval(meta: Option<&acp::Meta>) -> Option<Duration> {
    let ms = meta?.get("agent-lsp")?.get("deltaIntervalMs")?.as_u64()?;
    Some(Duration::from_millis(ms))
}

fn to_value<T: Serialize>(value: T) -> Result<Value, ResponseError> {
    serde_json::to_value(value).map_err(|e| ResponseError::internal(e.to_string()))
}

fn params<T: DeserializeOwned>(params: Value) -> Result<T, ResponseError> {
    let params = if params.is_null() { json!({}) } else { params };
    serde_json::from_value(params).map_err(|e| ResponseError::invalid_params(e.to_string()))
}

impl Conn {
    pub fn new(output: Output, env: EnvSource, stream_fn: Arc<dyn StreamFn>) -> Arc<Conn> {
        let replies = Replies::default();
        output.set_delta_interval(DEFAULT_DELTA_INTERVAL);
        Arc::new(Conn {
            out: Outgoing::with_cancel(output, replies.clone(), CancelNotice::Acp),
            replies,
            env,
            stream_fn,
            hub: McpHub::new(),
            client: Mutex::default(),
            sessions: Mutex::default(),
        })
    }

    pub fn client(&self) -> ClientCaps {
        *lock(&self.client)
    }

    /// Serves `input` until it ends; then aborts the runs and stops the MCP servers.
    pub async fn serve(self: &Arc<Self>, input: impl AsyncRead + Unpin) {
        let mut reader = Reader::new(input, Framing::Lines);
        while let Some(message) = reader.next().await {
            match message {
                Incoming::Request { id, method, params } => {
                    match self.request(&id, &method, params).await {
                        Reply::Now(result) => {
                            self.out.output().send(&Response::new(Some(&id), result));
                        }
                        Reply::Later => {}
                        Reply::Opened(opened) => self.opened(&id, opened),
                    }
                }
                Incoming::Notification { method, params } => self.notification(&method, params),
                Incoming::Response { id, result } => {
                    self.replies.deliver(&id, result);
                }
                Incoming::Malformed { id, error } => {
                    self.out
                        .output()
                        .send(&Response::new(id.as_ref(), Err(error)));
                }
            }
        }
        self.replies.close();
        let sessions: Vec<_> = lock(&self.sessions).values().cloned().collect();
        for session in &sessions {
            session.abort();
        }
        for session in &sessions {
            let _ = tokio::time::timeout(Duration::from_secs(3), session.wait_idle()).await;
        }
        // Nothing a session started outlives the agent.
        let ending = sessions.iter().map(|session| session.end_jobs());
        let _ = tokio::time::timeout(JOBS_END, futures_util::future::join_all(ending)).await;
        self.hub.shutdown().await;
        // The process exits right after (no destructors): close the session files now.
        for session in &sessions {
            session.record().close();
        }
    }

    /// Answers an opened session, then lists its commands (the client knows the session by
    /// then).
    fn opened(&self, id: &Id, opened: Opened) {
        let (result, session) = match opened {
            Ok((value, session)) => (Ok(value), Some(session)),
            Err(e) => (Err(e), None),
        };
        self.out.output().send(&Response::new(Some(id), result));
        if let Some(session) = session {
            session.announce_commands();
        }
    }

    async fn request(self: &Arc<Self>, id: &Id, method: &str, p: Value) -> Reply {
        let now = |result| Reply::Now(result);
        match method {
            "initialize" => now(params(p).and_then(|p| self.initialize(p))),
            "authenticate" => now(params::<acp::AuthenticateRequest>(p)
                .and_then(|p| auth::authenticate(&p.method_id.0, &self.env))),
            "logout" => now(params::<acp::LogoutRequest>(p).and_then(|_| auth::logout(&self.env))),
            "session/new" => Reply::Opened(params(p).and_then(|p| self.new_session(p))),
            "session/load" => Reply::Opened(match params(p) {
                Ok(p) => self.load_session(p).await,
                Err(e) => Err(e),
            }),
            "session/resume" => Reply::Opened(params(p).and_then(|p| self.resume_session(p))),
            "session/list" => now(params(p).and_then(|p| self.list_sessions(p))),
            "session/close" => match params(p).and_then(|p| self.close_session(id, p)) {
                Ok(()) => Reply::Later,
                Err(e) => now(Err(e)),
            },
            "session/prompt" => match params(p).and_then(|p| self.prompt(id, p)) {
                Ok(()) => Reply::Later,
                Err(e) => now(Err(e)),
            },
            "session/set_mode" => now(params(p).and_then(|p| self.set_mode(p))),
            "session/set_config_option" => now(params(p).and_then(|p| self.set_config(p))),
            STEER => now(params(p).and_then(|p| self.steer(p))),
            REVERT => match params(p).and_then(|p| self.revert(id, p)) {
                Ok(()) => Reply::Later,
                Err(e) => now(Err(e)),
            },
            _ => now(Err(ResponseError::new(
                code::METHOD_NOT_FOUND,
                format!("method not found: {method}"),
            ))),
        }
    }

    /// Unknown notifications (custom `_…` ones included) are ignored, as ACP says.
    fn notification(&self, method: &str, p: Value) {
        if method == "session/cancel"
            && let Ok(cancel) = params::<acp::CancelNotification>(p)
            && let Some(session) = lock(&self.sessions).get(&*cancel.session_id.0)
        {
            session.abort();
        }
    }

    fn session(&self, id: &acp::SessionId) -> Result<Arc<AcpSession>, ResponseError> {
        lock(&self.sessions)
            .get(&*id.0)
            .cloned()
            .ok_or_else(|| acp_error(acp::Error::session_not_found(id.clone())))
    }

    fn initialize(&self, request: acp::InitializeRequest) -> Result<Value, ResponseError> {
        if let Some(interval) = delta_interval(request.meta.as_ref()) {
            self.out.output().set_delta_interval(interval);
        }
        let caps = &request.client_capabilities;
        let runs_terminals = caps.auth.terminal;
        *lock(&self.client) = ClientCaps {
            read_text_file: caps.fs.read_text_file,
            write_text_file: caps.fs.write_text_file,
            terminal: caps.terminal,
            elicitation_form: (caps.elicitation.as_ref()).is_some_and(|e| e.supports_form()),
        };
        let session_caps = acp::SessionCapabilities::new()
            .list(acp::SessionListCapabilities::new())
            .resume(acp::SessionResumeCapabilities::new())
            .close(acp::SessionCloseCapabilities::new())
            .additional_directories(acp::SessionAdditionalDirectoriesCapabilities::new());
        let meta = json!({"agent-lsp": {"steer": STEER, "revert": REVERT}});
        let capabilities = acp::AgentCapabilities::new()
            .load_session(true)
            .prompt_capabilities(
                acp::PromptCapabilities::new()
                    .image(true)
                    .embedded_context(true),
            )
            .mcp_capabilities(acp::McpCapabilities::new().http(true))
            .session_capabilities(session_caps)
            .auth(acp::AgentAuthCapabilities::new().logout(acp::LogoutCapabilities::new()))
            .meta(meta.as_object().cloned());
        let info = acp::Implementation::new("agent-lsp", env!("CARGO_PKG_VERSION"))
            .title("agent-lsp".to_owned());
        // v1 is the only version we speak: any request gets it, and a client that cannot
        // speak it disconnects (ACP's negotiation).
        let mut response = to_value(
            acp::InitializeResponse::new(ProtocolVersion::V1)
                .agent_capabilities(capabilities)
                .agent_info(info),
        )?;
        // Written as JSON: the `env_var` type is ACP's draft, beyond the v1 schema's types.
        response["authMethods"] = auth::methods(runs_terminals);
        Ok(response)
    }

    fn store(&self) -> Option<SessionStore> {
        SessionStore::default_dir(&self.env).map(SessionStore::new)
    }

    /// Assembles a session (new or resumed) and registers it; `None` when it was open already.
    fn open(
        &self,
        cwd: PathBuf,
        extra_roots: Vec<PathBuf>,
        servers: &[acp::McpServer],
        record: RecordChoice,
    ) -> Result<Arc<AcpSession>, ResponseError> {
        if !cwd.is_absolute() {
            return Err(ResponseError::invalid_params(format!(
                "cwd must be an absolute path, got {}",
                cwd.display()
            )));
        }
        let spec = SessionSpec {
            cwd,
            cwd_is_explicit: true,
            extra_roots,
            model: ModelChoice::Default(None),
            thinking: None,
            record,
            stream_fn: self.stream_fn.clone(),
            env: self.env.clone(),
            mcp: McpSpec {
                hub: Some(self.hub.clone()),
                sources: vec![McpSource::Client(mcp_servers(servers))],
                trust_project: false,
            },
            limits: LoopLimits::default(),
            compaction: Default::default(),
            sandbox: Default::default(),
            context_files: true,
            permissions: PermissionSpec::with_files(Default::default()),
        };
        let link = SessionLink::new(self.out.clone(), self.client());
        let front_end = AcpFrontEnd(link.clone());
        let assembled = assemble(spec, &front_end).map_err(|e| match e {
            SetupError::Model(e) => {
                acp_error(acp::Error::auth_required().data(json!({"reason": e.to_string()})))
                    .with_message(NO_MODEL)
            }
            SetupError::Workspace { cwd, source } => ResponseError::invalid_params(format!(
                "cannot use {} (or an additional directory) as the session's directory: {source}",
                cwd.display()
            )),
            SetupError::Record(e) => ResponseError::internal(e.to_string()),
        })?;
        for error in &assembled.mcp_errors {
            tracing::warn!("{error}");
        }
        for warning in &assembled.warnings {
            tracing::warn!("{warning}");
        }
        let id = lock(&assembled.parts.record).id().to_owned();
        let _ = link.session_id.set(id.clone());
        let view = AcpView::new(link, &id, self.env.clone());
        let session = Session::create(assembled, view);
        lock(&self.sessions).insert(session.id.clone(), session.clone());
        Ok(session)
    }

    fn session_state(&self, session: &AcpSession) -> Value {
        json!({
            "modes": options::modes(session.mode()),
            "configOptions": options::config_options(session, &self.env),
        })
    }

    fn new_session(&self, request: acp::NewSessionRequest) -> Opened {
        let record = RecordChoice::New(self.store());
        let session = self.open(
            request.cwd,
            request.additional_directories,
            &request.mcp_servers,
            record,
        )?;
        let mut answer = self.session_state(&session);
        answer["sessionId"] = Value::from(session.id.clone());
        Ok((answer, session))
    }

    /// Opens a stored session by id (already open: the live one).
    fn reopen(
        &self,
        id: &acp::SessionId,
        cwd: PathBuf,
        extra_roots: Vec<PathBuf>,
        servers: &[acp::McpServer],
    ) -> Result<Arc<AcpSession>, ResponseError> {
        if let Ok(open) = self.session(id) {
            return Ok(open);
        }
        let store = self.store().ok_or_else(|| {
            ResponseError::internal("no session directory: set HOME or XDG_DATA_HOME")
        })?;
        let file = store
            .open(&id.0)
            .map_err(|_| acp_error(acp::Error::session_not_found(id.clone())))?;
        self.open(cwd, extra_roots, servers, RecordChoice::Resume(file))
    }

    /// `session/load`: the session resumed, its conversation replayed as updates before the
    /// answer.
    async fn load_session(&self, request: acp::LoadSessionRequest) -> Opened {
        let resume = acp::ResumeSessionRequest::new(request.session_id, request.cwd)
            .additional_directories(request.additional_directories)
            .mcp_servers(request.mcp_servers);
        let (state, session) = self.resume_session(resume)?;
        let messages = session.record().messages();
        for update in updates::replay(&messages, &session.look()) {
            session.notify(update);
        }
        let plan = session.plan.todos();
        if !plan.is_empty() {
            session.show_plan(&plan);
        }
        Ok((state, session))
    }

    /// `session/resume`: the session again, without replay.
    fn resume_session(&self, request: acp::ResumeSessionRequest) -> Opened {
        let session = self.reopen(
            &request.session_id,
            request.cwd,
            request.additional_directories,
            &request.mcp_servers,
        )?;
        Ok((self.session_state(&session), session))
    }

    fn list_sessions(&self, request: acp::ListSessionsRequest) -> Result<Value, ResponseError> {
        let Some(store) = self.store() else {
            return to_value(acp::ListSessionsResponse::new(Vec::new()));
        };
        let listed = match &request.cwd {
            Some(cwd) => store.list_for_cwd(cwd),
            None => store.list(),
        }
        .map_err(|e| ResponseError::internal(e.to_string()))?;
        let sessions = listed
            .into_iter()
            .map(|s| {
                let updated = crate::store::time::iso_from_ms(s.updated_ms);
                let title = s.title();
                acp::SessionInfo::new(s.id, PathBuf::from(s.cwd))
                    .title(Some(title).filter(|t| !t.is_empty()))
                    .updated_at(updated)
            })
            .collect();
        to_value(acp::ListSessionsResponse::new(sessions))
    }

    /// `session/close`: cancels its work, stops its background jobs and frees it; the file stays
    /// (load or resume it).
    /// Answered from a task of its own once the session is idle (at most 5 s), so the loop keeps
    /// reading meanwhile: the session may need the client's answer to a request to stop.
    fn close_session(
        self: &Arc<Self>,
        id: &Id,
        request: acp::CloseSessionRequest,
    ) -> Result<(), ResponseError> {
        let session = self.session(&request.session_id)?;
        session.abort();
        let (conn, id) = (self.clone(), id.clone());
        tokio::spawn(async move {
            let _ = tokio::time::timeout(Duration::from_secs(5), session.wait_idle()).await;
            let _ = tokio::time::timeout(JOBS_END, session.end_jobs()).await;
            lock(&conn.sessions).remove(&session.id);
            drop(session);
            conn.out
                .output()
                .send(&Response::new(Some(&id), Ok(json!({}))));
        });
        Ok(())
    }

    fn prompt(&self, id: &Id, request: acp::PromptRequest) -> Result<(), ResponseError> {
        let session = self.session(&request.session_id)?;
        let blocks = to_pi_blocks(&request.prompt);
        if blocks.is_empty() {
            return Err(ResponseError::invalid_params("the prompt has no content"));
        }
        session.submit(id.clone(), blocks);
        Ok(())
    }

    fn steer(&self, request: acp::PromptRequest) -> Result<Value, ResponseError> {
        let session = self.session(&request.session_id)?;
        if session.steer(to_pi_blocks(&request.prompt)) {
            Ok(json!({}))
        } else {
            Err(ResponseError::invalid_params(
                "nothing is running in this session to steer: send session/prompt",
            ))
        }
    }

    /// `_agent-lsp/revert`: answered from its own task, since restoring a file may go through
    /// the client's `fs/write_text_file`, whose answer this loop must keep reading.
    fn revert(&self, id: &Id, p: RevertRequest) -> Result<(), ResponseError> {
        let session = self.session(&acp::SessionId::new(p.session_id.clone()))?;
        if session.active_run().is_some() {
            return Err(ResponseError::new(
                code::AGENT_BUSY,
                "Cannot revert while a turn is running; cancel it or wait for its answer",
            ));
        }
        if p.fork {
            return Err(ResponseError::invalid_params(
                "fork is not offered over ACP: load the session and fork it with agent-lsp sessions fork",
            ));
        }
        let selection = p.selection().map_err(ResponseError::invalid_params)?;
        let output = self.out.output().clone();
        let id = id.clone();
        tokio::spawn(async move {
            let record = session.record.clone();
            let reverted = review::revert(
                &record,
                &session.workspace,
                &selection,
                p.paths.as_deref(),
                p.force,
            )
            .await;
            let result = match reverted {
                Ok(reverted) => serde_json::to_value(reverted)
                    .map_err(|e| ResponseError::internal(e.to_string())),
                Err(e) => Err(ResponseError::invalid_params(e.to_string())),
            };
            output.send(&Response::new(Some(&id), result));
        });
        Ok(())
    }

    fn set_mode(&self, request: acp::SetSessionModeRequest) -> Result<Value, ResponseError> {
        let session = self.session(&request.session_id)?;
        let mode = Mode::parse(&request.mode_id.0).ok_or_else(|| {
            ResponseError::invalid_params(format!(
                "unknown mode {:?}: use default, acceptEdits, plan or bypassPermissions",
                request.mode_id.0
            ))
        })?;
        session.set_mode(mode);
        let update = acp::CurrentModeUpdate::new(mode.id());
        session.notify(acp::SessionUpdate::CurrentModeUpdate(update));
        Ok(json!({}))
    }

    fn set_config(
        &self,
        request: acp::SetSessionConfigOptionRequest,
    ) -> Result<Value, ResponseError> {
        let session = self.session(&request.session_id)?;
        let value = match &request.value {
            acp::SessionConfigOptionValue::ValueId { value } => value.0.to_string(),
            _ => return Err(ResponseError::invalid_params("expected a value id")),
        };
        let switched = match &*request.config_id.0 {
            MODEL => session
                .controls
                .set_model(&session.agent, &mut session.record(), &value),
            THOUGHT_LEVEL => {
                let level = ThinkingLevel::parse(&value).ok_or_else(|| {
                    ResponseError::invalid_params(format!(
                        "unknown thought level {value:?}: use off, minimal, low, medium, high \
                         or xhigh"
                    ))
                })?;
                session
                    .controls
                    .set_thinking_level(&session.agent, &mut session.record(), level)
            }
            other => {
                return Err(ResponseError::invalid_params(format!(
                    "unknown config option {other:?}: use model or thought_level"
                )));
            }
        };
        switched.map_err(|e| ResponseError::invalid_params(e.to_string()))?;
        let config = options::config_options(&session, &self.env);
        let update = acp::ConfigOptionUpdate::new(config.clone());
        session.notify(acp::SessionUpdate::ConfigOptionUpdate(update));
        to_value(acp::SetSessionConfigOptionResponse::new(config))
    }
}

/// ACP's `mcpServers` list as the `{"name": {command, args, env} | {url, headers}}` map the
/// MCP configuration reads (issue 8), merged after the user's and the project's by name.
fn mcp_servers(servers: &[acp::McpServer]) -> Value {
    let pairs = |items: Vec<(String, String)>| -> Value {
        Value::Object(
            items
                .into_iter()
                .map(|(k, v)| (k, Value::from(v)))
                .collect(),
        )
    };
    let mut map = serde_json::Map::new();
    for server in servers {
        match server {
            acp::McpServer::Stdio(s) => {
                let env = s.env.iter().map(|e| (e.name.clone(), e.value.clone()));
                map.insert(
                    s.name.clone(),
                    json!({"command": s.command, "args": s.args, "env": pairs(env.collect())}),
                );
            }
            acp::McpServer::Http(s) => {
                let headers = s.headers.iter().map(|h| (h.name.clone(), h.value.clone()));
                map.insert(
                    s.name.clone(),
                    json!({"url": s.url, "headers": pairs(headers.collect())}),
                );
            }
            _ => tracing::warn!("an MCP server of a transport agent-lsp does not offer is ignored"),
        }
    }
    Value::Object(map)
}
