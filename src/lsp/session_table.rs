//! The session table: the live sessions of one connection and the agent methods on them.
//!
//! Handlers here validate, take short locks and answer: runs live in their own tasks.

use crate::sandbox::SandboxSetting;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use ls_types::{CodeActionOrCommand, CodeActionParams, ExecuteCommandParams};
use serde_json::{Value, json};

use crate::agent::message::ContentBlock;
use crate::core::permissions::PermissionSpec;
use crate::core::session::Session;
use crate::core::{
    CompactError, LoopLimits, McpSource, McpSpec, ModelChoice, RecordChoice, SessionSpec,
    SetupError, assemble,
};
use crate::lsp::approval::ask_project_trust_again;
use crate::lsp::commands::{Delivered, Delivery, Prepared, prepare};
use crate::lsp::config::ConnConfig;
use crate::lsp::conn::{ConnCtx, resolve_model};
use crate::lsp::documents::DocStore;
use crate::lsp::live_session::{LiveSession, LspView, QueueKind, compact_refusal, prompt_refusal};
use crate::lsp::protocol::{
    AbortResult, CompactParams, Decision, Disposition, JobOutputResult, JobParams, ListJobsResult,
    McpAskTrustResult, McpStatusResult, MessagesResult, ModelRef, NewSessionParams,
    NewSessionResult, PromptMessage, PromptParams, PromptReply, PromptResult, QueueResult, Queues,
    RemoveQueuedParams, RemoveQueuedResult, StateResult, StreamingBehavior, code, command,
};
use crate::mcp::McpHub;
use crate::model_registry::EnvSource;
use crate::rpc::jsonrpc::{Id, Response, ResponseError};
use crate::rpc::outgoing::Outgoing;
use crate::rpc::output::Output;
use crate::store::{SessionFile, SessionStore};
use ls_types::MessageType;

/// All sessions of the connection.
pub struct SessionTable {
    ctx: Arc<ConnCtx>,
    warnings: Vec<String>,
    map: Mutex<HashMap<String, Arc<LiveSession>>>,
    default_session: Mutex<Option<String>>,
}

type Result<T> = std::result::Result<T, ResponseError>;

/// Answers request `id` once `finish` is done with what `started` gave (on a task of its own,
/// so the loop reads on); a refusal in `started` is answered at once.
fn answer_when_done<T, F>(id: Id, output: Output, started: Result<T>, finish: impl FnOnce(T) -> F)
where
    F: std::future::Future<Output = std::result::Result<Value, ResponseError>> + Send + 'static,
{
    let work = match started {
        Ok(started) => finish(started),
        Err(e) => return output.send(&Response::new(Some(&id), Err(e))),
    };
    tokio::spawn(async move { output.send(&Response::new(Some(&id), work.await)) });
}

fn invalid_params(message: impl Into<String>) -> ResponseError {
    ResponseError::invalid_params(message)
}

impl SessionTable {
    /// `agent/listCommands`.
    pub fn list_commands(
        &self,
        session_id: &str,
    ) -> Result<crate::lsp::protocol::ListCommandsResult> {
        Ok(crate::lsp::protocol::ListCommandsResult {
            commands: crate::lsp::commands::commands_of(&*self.get(session_id)?),
        })
    }
}

/// The user's session store; `None` when there is no directory for it (sessions stay in memory).
pub(super) fn store() -> Option<SessionStore> {
    SessionStore::default_dir(&EnvSource::from_process()).map(SessionStore::new)
}

/// A stored session (by id, unique id prefix or file path), to continue it.
pub(super) fn stored_record(id: &str) -> Result<SessionFile> {
    let store =
        store().ok_or_else(|| invalid_params("there is no session directory to resume from"))?;
    store
        .open(id)
        .map_err(|e| invalid_params(format!("cannot resume session {id:?}: {e}")))
}

impl SessionTable {
    pub fn new(
        out: Outgoing,
        docs: DocStore,
        config: ConnConfig,
        mut warnings: Vec<String>,
    ) -> Self {
        let model = resolve_model(&config);
        if let Err(e) = &model {
            warnings.push(format!("agent-lsp: {e}"));
        }
        let ctx = ConnCtx {
            out,
            docs,
            config,
            model,
            stream_fn: crate::provider::default_stream_fn(),
            mcp: McpHub::new(),
            pending_approvals: Mutex::default(),
            language: Default::default(),
        };
        SessionTable {
            ctx: Arc::new(ctx),
            warnings,
            map: Mutex::default(),
            default_session: Mutex::default(),
        }
    }

    pub fn startup_warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<LiveSession>>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn get(&self, id: &str) -> Result<Arc<LiveSession>> {
        self.map()
            .get(id)
            .cloned()
            .ok_or_else(|| invalid_params(format!("unknown sessionId {id:?}")))
    }

    /// Creates a session rooted at `cwd` (default: the connection's).
    pub fn create(&self, cwd: Option<PathBuf>) -> Result<Arc<LiveSession>> {
        self.create_with(cwd, None, None)
    }

    /// A live session continuing this stored session (a fork, just made).
    pub(super) fn resume_record(&self, record: SessionFile) -> Result<Arc<LiveSession>> {
        self.create_with(None, Some(record), None)
    }

    /// Creates a session; with `resume`, it continues that stored session (its cwd, messages,
    /// model and file) instead of starting a new one.
    fn create_with(
        &self,
        cwd: Option<PathBuf>,
        resume: Option<SessionFile>,
        max_turns: Option<usize>,
    ) -> Result<Arc<LiveSession>> {
        let options = &self.ctx.config.options;
        // `initializationOptions.model` is the default of new sessions; a resumed one keeps its own.
        let model = match &resume {
            Some(_) => ModelChoice::Default(options.model.clone()),
            None => ModelChoice::Given(Box::new(
                (self.ctx.model.clone()).map_err(|e| ResponseError::new(code::NO_MODEL, e))?,
            )),
        };
        let extra_roots = &options.extra_roots;
        let defaults = LoopLimits::default();
        let spec = SessionSpec {
            cwd_is_explicit: cwd.is_some(),
            cwd: cwd.unwrap_or_else(|| self.ctx.config.cwd.clone()),
            extra_roots: extra_roots.iter().map(PathBuf::from).collect(),
            model,
            thinking: None,
            record: match resume {
                Some(record) => RecordChoice::Resume(record),
                None => RecordChoice::New(store()),
            },
            stream_fn: self.ctx.stream_fn.clone(),
            env: EnvSource::from_process(),
            mcp: McpSpec {
                hub: Some(self.ctx.mcp.clone()),
                sources: (self.ctx.config.options.mcp_servers.clone())
                    .map(McpSource::Editor)
                    .into_iter()
                    .collect(),
                trust_project: false,
            },
            limits: LoopLimits {
                max_turns: max_turns.or(options.max_turns),
                warn_at: options.loop_guard.warn_at.unwrap_or(defaults.warn_at),
                stop_at: options.loop_guard.stop_at.unwrap_or(defaults.stop_at),
            },
            context_files: options.context_files.unwrap_or(true),
            compaction: options.compaction.clone(),
            sandbox: SandboxSetting {
                mode: options.sandbox,
                network: options.sandbox_network.clone(),
                pass_env: options.sandbox_env.clone(),
                protected: options.sandbox_protected_paths.clone(),
            },
            permissions: PermissionSpec::with_files(options.permissions.clone()),
        };
        let session = assemble(spec, &*self.ctx).map_err(|e| match e {
            SetupError::Workspace { cwd, source } => invalid_params(format!(
                "cannot use {} as the session's cwd (with initializationOptions.extraRoots \
                 {extra_roots:?}): {source}",
                cwd.display()
            )),
            SetupError::Model(e) => ResponseError::new(code::NO_MODEL, e.to_string()),
            SetupError::Record(e) => {
                ResponseError::internal(format!("cannot write the session file: {e}"))
            }
        })?;
        let id = (session.parts.record.lock())
            .map_or_else(|e| e.into_inner().id().to_owned(), |r| r.id().to_owned());
        for warning in &session.warnings {
            tracing::warn!("{warning}");
            self.ctx
                .show(MessageType::WARNING, format!("agent-lsp: {warning}"));
        }
        for error in &session.mcp_errors {
            self.ctx
                .show(MessageType::ERROR, format!("agent-lsp: {error}"));
        }
        let view = LspView::new(self.ctx.clone(), &id);
        let live = Session::create(session, view);
        self.ctx.language.connect(&live);
        self.map().insert(id, live.clone());
        crate::lsp::view::watch_mcp(&live);
        crate::lsp::approval::ask_hooks_trust_if_needed(&live);
        crate::lsp::approval::ask_rules_trust(&live);
        live.watch_commands();
        Ok(live)
    }

    fn session_or_default(&self, id: Option<&str>) -> Result<Arc<LiveSession>> {
        if let Some(id) = id {
            return self.get(id);
        }
        let mut default = self
            .default_session
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(id) = default.as_deref() {
            return self.get(id);
        }
        let session = self.create(None)?;
        *default = Some(session.id.clone());
        Ok(session)
    }

    pub fn prompt(&self, p: PromptParams) -> Result<PromptReply<PromptResult>> {
        let blocks = p.message.into_user_blocks().map_err(invalid_params)?;
        let session = self.session_or_default(p.session_id.as_deref())?;
        let delivery = Delivery::Prompt(p.streaming_behavior);
        let blocks = match prepare(&session, blocks, delivery, deliver)? {
            Prepared::Send(blocks) => blocks,
            Prepared::Answered(answer) => return Ok(PromptReply::Answered(answer)),
        };
        let (run_id, message_id, disposition) = deliver(&session, delivery, blocks)?;
        Ok(PromptReply::Sent(PromptResult {
            session_id: session.id.clone(),
            run_id,
            message_id,
            disposition,
        }))
    }

    pub fn enqueue(
        &self,
        session_id: &str,
        message: PromptMessage,
        kind: QueueKind,
    ) -> Result<PromptReply<QueueResult>> {
        let blocks = message.into_user_blocks().map_err(invalid_params)?;
        let session = self.get(session_id)?;
        let delivery = Delivery::Queue(kind);
        let blocks = match prepare(&session, blocks, delivery, deliver)? {
            Prepared::Send(blocks) => blocks,
            Prepared::Answered(answer) => return Ok(PromptReply::Answered(answer)),
        };
        let (run_id, message_id, disposition) = deliver(&session, delivery, blocks)?;
        Ok(PromptReply::Sent(QueueResult {
            session_id: session.id.clone(),
            run_id,
            message_id,
            disposition,
            queues: session.queues(),
        }))
    }

    pub fn abort(&self, session_id: &str) -> Result<AbortResult> {
        Ok(AbortResult {
            aborted: self.get(session_id)?.abort(),
        })
    }

    pub fn clear_queue(&self, session_id: &str) -> Result<Queues> {
        Ok(self.get(session_id)?.clear_queues())
    }

    pub fn remove_queued(&self, p: RemoveQueuedParams) -> Result<RemoveQueuedResult> {
        let (removed, queues) = self.get(&p.session_id)?.remove_queued(&p.message_id);
        Ok(RemoveQueuedResult { removed, queues })
    }

    pub fn new_session(&self, p: NewSessionParams) -> Result<NewSessionResult> {
        let session = match p.resume {
            None => self.create_with(p.cwd.map(PathBuf::from), None, p.max_turns)?,
            Some(id) => match self.get(&id) {
                Ok(loaded) => loaded,
                Err(_) => self.create_with(None, Some(stored_record(&id)?), p.max_turns)?,
            },
        };
        Ok(NewSessionResult {
            session_id: session.id.clone(),
            cwd: session.cwd.display().to_string(),
        })
    }

    pub fn state(&self, session_id: &str) -> Result<StateResult> {
        let session = self.get(session_id)?;
        // Counted as `agent/listSessions` counts them (the session's message entries), not as
        // the agent's context holds them (with the system prompt, and after a compaction only a
        // summary of the older messages). Taken before the agent's state lock.
        let message_count = session.record().message_count();
        let state = session.agent.state();
        let (steering_mode, follow_up_mode) = session.agent.queue_modes();
        Ok(StateResult {
            session_id: session.id.clone(),
            cwd: session.cwd.display().to_string(),
            model: Some(ModelRef {
                provider: state.model.provider.clone(),
                id: state.model.id.clone(),
            }),
            thinking_level: state.thinking_level,
            steering_mode,
            follow_up_mode,
            is_streaming: session.active_run().is_some(),
            run_id: session.last_run(),
            queues: session.queues(),
            message_count,
            last_seq: session.view.emitter.last_seq(),
            session_file: session.record_path().map(|p| p.display().to_string()),
            context_files: (session.context_files.iter())
                .map(|p| p.display().to_string())
                .collect(),
            sandbox: session.sandbox.status_json(),
            plan: session.plan.todos(),
            jobs: session.jobs.list(),
            hooks: session.hooks.list(),
            permissions: session.gate.permissions().state(),
        })
    }

    /// `agent/listJobs`.
    pub fn list_jobs(&self, session_id: &str) -> Result<ListJobsResult> {
        Ok(ListJobsResult {
            jobs: self.get(session_id)?.jobs.list(),
        })
    }

    /// `agent/jobOutput`: the end of what a job printed (the model's read position stays).
    pub fn job_output(&self, p: JobParams) -> Result<JobOutputResult> {
        let session = self.get(&p.session_id)?;
        let job = (session.jobs.get(&p.job_id)).map_err(|e| invalid_params(e.to_string()))?;
        let (output, truncated) = job.recent();
        Ok(JobOutputResult {
            job_id: job.id.clone(),
            output,
            truncated,
        })
    }

    /// `agent/killJob`: answered once the job ended (its `job_update` first); an unknown
    /// session or job at once.
    pub fn kill_job(&self, id: Id, params: Value, output: Output) {
        let found = crate::rpc::jsonrpc::parse_params::<JobParams>(params).and_then(|p| {
            let session = self.get(&p.session_id)?;
            session
                .jobs
                .get(&p.job_id)
                .map_err(|e| invalid_params(e.to_string()))?;
            Ok((session, p.job_id))
        });
        answer_when_done(id, output, found, |(session, job)| async move {
            let killed = session.jobs.kill(&job).await;
            killed
                .map(|job| json!({"job": job.info()}))
                .map_err(|e| invalid_params(e.to_string()))
        });
    }

    /// Stops every session's background jobs and waits until they ended (at most
    /// [`crate::tools::jobs::END_WITHIN`]): the daemon is ending.
    pub async fn end_jobs(&self) {
        let sessions: Vec<Arc<LiveSession>> = self.map().values().cloned().collect();
        let ending = sessions.iter().map(|session| session.end_jobs());
        let bound = crate::tools::jobs::END_WITHIN;
        let _ = tokio::time::timeout(bound, futures_util::future::join_all(ending)).await;
    }

    /// `agent/mcpStatus`: the session's MCP servers.
    pub fn mcp_status(&self, session_id: &str) -> Result<McpStatusResult> {
        let session = self.get(session_id)?;
        Ok(McpStatusResult {
            session_id: session.id.clone(),
            servers: session.tools.mcp.status(),
        })
    }

    /// `agent/mcpAskTrust`: asks the user again whether the project's `.mcp.json` may start
    /// its servers (after a "no", remembered or not); the question is the one a new session
    /// asks, and its answer is remembered the same way.
    pub fn mcp_ask_trust(&self, session_id: &str) -> Result<McpAskTrustResult> {
        let session = self.get(session_id)?;
        Ok(McpAskTrustResult {
            session_id: session.id.clone(),
            asked: ask_project_trust_again(&session),
        })
    }

    /// Stops the connection's MCP servers (shutdown, stdin closed).
    pub async fn stop_mcp(&self) {
        self.ctx.mcp.shutdown().await;
    }

    pub fn messages(&self, session_id: &str) -> Result<MessagesResult> {
        let session = self.get(session_id)?;
        let (messages, message_ids) = session.messages_with_ids();
        Ok(MessagesResult {
            session_id: session.id.clone(),
            messages,
            message_ids,
        })
    }

    /// `agent/compact`: answered when the compaction ends, after its `compaction_start` and
    /// `compaction_end` (pi's RPC order); refusals are answered at once.
    pub fn compact(&self, id: Id, params: Value, output: Output) {
        let started = crate::rpc::jsonrpc::parse_params::<CompactParams>(params).and_then(|p| {
            let session = self.get(&p.session_id)?;
            session.compact(p.instructions).map_err(compact_refusal)
        });
        answer_when_done(id, output, started, |compaction| async move {
            match compaction.await {
                Ok(result) => {
                    serde_json::to_value(result).map_err(|e| ResponseError::internal(e.to_string()))
                }
                Err(CompactError::Busy) => Err(ResponseError::new(
                    code::AGENT_BUSY,
                    CompactError::Busy.to_string(),
                )),
                Err(e) => Err(ResponseError::new(code::COMPACTION_FAILED, e.to_string())),
            }
        });
    }

    /// Aborts the run with this id, wherever it is; `false` when no such run is active.
    pub fn abort_run(&self, run_id: &str) -> bool {
        let sessions: Vec<Arc<LiveSession>> = self.map().values().cloned().collect();
        sessions
            .iter()
            .find(|s| s.active_run().as_deref() == Some(run_id))
            .is_some_and(|s| s.abort())
    }

    pub fn abort_all(&self) {
        for session in self.map().values() {
            session.abort();
        }
    }

    /// Closes every session's file (last sync, lock released): the daemon is ending.
    pub fn close_all(&self) {
        for session in self.map().values() {
            session.record().close();
        }
    }

    pub async fn wait_all_idle(&self) {
        let sessions: Vec<Arc<LiveSession>> = self.map().values().cloned().collect();
        for session in sessions {
            session.wait_idle().await;
        }
    }

    /// `workspace/executeCommand` for generic clients.
    pub fn execute_command(&self, params: ExecuteCommandParams) -> Result<Value> {
        let arg = params.arguments.first().cloned().unwrap_or(Value::Null);
        let field = |name: &str| arg.get(name).and_then(Value::as_str).map(str::to_owned);
        let message = || -> Result<PromptMessage> {
            match &arg {
                Value::String(text) => Ok(PromptMessage::Text(text.clone())),
                Value::Object(o) => o
                    .get("message")
                    .cloned()
                    .and_then(|m| serde_json::from_value(m).ok())
                    .ok_or_else(|| {
                        invalid_params(
                            "the command needs a message: [\"text\"] or [{\"message\": …}]",
                        )
                    }),
                _ => Err(invalid_params(
                    "the command needs a message: [\"text\"] or [{\"message\": …}]",
                )),
            }
        };
        let to_value = |v: std::result::Result<Value, serde_json::Error>| {
            v.map_err(|e| ResponseError::internal(e.to_string()))
        };
        match params.command.as_str() {
            command::PROMPT => {
                let p = PromptParams {
                    session_id: field("sessionId"),
                    message: message()?,
                    streaming_behavior: None,
                };
                to_value(serde_json::to_value(self.prompt(p)?))
            }
            command::STEER | command::FOLLOW_UP => {
                let kind = if params.command == command::STEER {
                    QueueKind::Steer
                } else {
                    QueueKind::FollowUp
                };
                let session = self.session_or_default(field("sessionId").as_deref())?;
                to_value(serde_json::to_value(self.enqueue(
                    &session.id,
                    message()?,
                    kind,
                )?))
            }
            command::ABORT => {
                let session = self.session_or_default(field("sessionId").as_deref())?;
                to_value(serde_json::to_value(self.abort(&session.id)?))
            }
            command::NEW_SESSION => to_value(serde_json::to_value(self.new_session(
                NewSessionParams {
                    cwd: field("cwd"),
                    resume: field("resume"),
                    max_turns: None,
                },
            )?)),
            command::MCP_ASK_TRUST => {
                let session = self.session_or_default(field("sessionId").as_deref())?;
                to_value(serde_json::to_value(self.mcp_ask_trust(&session.id)?))
            }
            command::APPROVE | command::REJECT => {
                let id = arg
                    .as_str()
                    .ok_or_else(|| invalid_params("the command needs the approval id"))?;
                let decision = if params.command == command::APPROVE {
                    Decision::Allow
                } else {
                    Decision::Block
                };
                Ok(
                    json!({"resolved": crate::lsp::generic_client::resolve(&self.ctx, id, decision)}),
                )
            }
            other => Err(invalid_params(format!("unknown command {other:?}"))),
        }
    }

    pub fn code_actions(&self, params: &CodeActionParams) -> Vec<CodeActionOrCommand> {
        crate::lsp::generic_client::code_actions(&self.ctx, params.text_document.uri.as_str())
    }
}

/// Delivers a message as its request asked: a run when idle, else the queue it names (a prompt
/// without `streamingBehavior` while a run is active is refused as busy).
fn deliver(
    session: &Arc<LiveSession>,
    delivery: Delivery,
    blocks: Vec<ContentBlock>,
) -> Result<Delivered> {
    let kind = match (session.active_run(), delivery) {
        (_, Delivery::Queue(kind)) => Some(kind),
        (Some(_), Delivery::Prompt(Some(StreamingBehavior::Steer))) => Some(QueueKind::Steer),
        (Some(_), Delivery::Prompt(Some(StreamingBehavior::FollowUp))) => Some(QueueKind::FollowUp),
        _ => None,
    };
    match kind {
        Some(kind) => {
            let (run_id, message_id, started) =
                session.enqueue(kind, blocks).map_err(prompt_refusal)?;
            Ok((run_id, message_id, disposition(kind, started)))
        }
        None => {
            let (run_id, message_id) = session.start_run(blocks).map_err(prompt_refusal)?;
            Ok((run_id, message_id, Disposition::Started))
        }
    }
}

fn disposition(kind: QueueKind, started: bool) -> Disposition {
    match (started, kind) {
        (true, _) => Disposition::Started,
        (false, QueueKind::Steer) => Disposition::Steered,
        (false, QueueKind::FollowUp) => Disposition::FollowUp,
    }
}
