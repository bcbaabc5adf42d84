//! One live session of the daemon: an [`Agent`], its run state, queues (with message ids),
//! approval memory and the [`SessionFile`] it is recorded in.
//!
//! **Invariant:** a session has at most one active run; `active` is set before the loop starts
//! and cleared only after `agent_settled` was queued, so a prompt never races a finishing run.
//! Every event goes through [`Emitter`], which numbers it.

use std::collections::VecDeque;
use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::agent::event::AgentEvent;
use crate::agent::message::{AgentMessage, ContentBlock, MessageContent, UserMessage, now_ms};
use futures_util::future::BoxFuture;

use crate::agent::hooks::BeforeToolCallHook;
use crate::agent::{Agent, AgentError, AgentHooks, RunHandle, RunOutcome};
use crate::compaction::CompactionResult;
use crate::mcp::server::State;
use crate::rpc::jsonrpc::{ResponseError, code};
use crate::server::conn::ConnCtx;
use crate::server::events::Emitter;
use crate::server::protocol::{EventBody, QueuedMessage, Queues, SessionEvent};
use crate::session::{EntryKind, SessionFile};
use crate::session_setup::journal::review::{self, Selection};
use crate::session_setup::{
    ApprovalGate, AssembledSession, CompactError, Compactor, Journal, LoopGuard, SessionCommands,
    SessionControls, SessionTools, SharedRecord,
};
use crate::tools::Workspace;

/// Why a session refused a request.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// pi's busy text.
    #[error("{0}")]
    Busy(String),
    #[error("{0}")]
    Agent(String),
}

#[derive(Default)]
struct RunState {
    /// The active run's id.
    active: Option<String>,
    last_run: Option<String>,
    steering: VecDeque<QueuedMessage>,
    follow_up: VecDeque<QueuedMessage>,
    /// The ids of user messages given to the agent and not yet recorded, in delivery order:
    /// each is recorded under the `messageId` its request was answered with.
    unrecorded: VecDeque<String>,
}

impl From<SessionError> for ResponseError {
    fn from(e: SessionError) -> ResponseError {
        match e {
            SessionError::Busy(text) => ResponseError::new(code::AGENT_BUSY, text),
            SessionError::Agent(text) => ResponseError::internal(text),
        }
    }
}

/// Which queue a message goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueKind {
    Steer,
    FollowUp,
}

/// What the session is given by the modules above it, which `session_table` wires: its
/// approval hook and the question about the project's MCP servers (`ask`), and what generic
/// clients are shown of its runs (`generic`).
#[derive(Clone, Copy)]
pub struct SessionHooks {
    pub before_tool_call: fn(Weak<LiveSession>) -> BeforeToolCallHook,
    /// Each loop event of a run.
    pub on_event: for<'a> fn(&'a LiveSession, &'a str, &'a AgentEvent) -> BoxFuture<'a, ()>,
    /// A run's end, before its `changes_update` and `agent_settled`.
    pub run_finished: for<'a> fn(&'a LiveSession, &'a str, &'a RunOutcome) -> BoxFuture<'a, ()>,
    /// Asks whether the project's MCP servers may start.
    pub ask_trust: fn(Arc<LiveSession>) -> BoxFuture<'static, ()>,
}

pub struct LiveSession {
    pub id: String,
    pub cwd: PathBuf,
    pub agent: Agent,
    pub emitter: Emitter,
    pub ctx: Arc<ConnCtx>,
    pub workspace: Arc<dyn Workspace>,
    /// The session's tools, its MCP servers' included.
    pub tools: Arc<SessionTools>,
    /// The live model and thinking level.
    pub controls: Arc<SessionControls>,
    pub guard: Arc<LoopGuard>,
    /// The session's slash commands (MCP prompts come from `tools`).
    pub commands: SessionCommands,
    /// The context files in its system prompt.
    pub context_files: Vec<PathBuf>,
    /// The approval gate of its tool calls.
    pub gate: Arc<ApprovalGate>,
    /// The persisted transcript (pi's JSONL v3), appended at every `message_end`.
    pub record: SharedRecord,
    pub compactor: Arc<Compactor>,
    /// The effect journal of its tools, told each run's id.
    pub journal: Arc<Journal>,
    /// The commands' sandbox (issue 19): the approval gate asks through it.
    pub sandbox: Arc<crate::sandbox::Sandbox>,
    hooks: SessionHooks,
    state: Mutex<RunState>,
    idle: watch::Sender<bool>,
}

/// A prompt while `agent/compact` runs.
const COMPACTING: &str = "A compaction is running; prompt again after its compaction_end";
/// `agent/compact` while a run is active.
const COMPACT_BUSY: &str =
    "Cannot compact while a run is active; abort it or wait for agent_settled";

pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

fn user_message(blocks: Vec<ContentBlock>) -> AgentMessage {
    AgentMessage::from(UserMessage {
        content: MessageContent::Blocks(blocks),
        timestamp: now_ms(),
    })
}

fn text_of(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .filter_map(ContentBlock::as_text)
        .collect::<Vec<_>>()
        .join("\n")
}

impl LiveSession {
    /// Builds the session's agent with the daemon's approval hook; the agent forwards events
    /// to `emitter`.
    pub fn create(
        ctx: Arc<ConnCtx>,
        session: AssembledSession,
        hooks: SessionHooks,
    ) -> Arc<LiveSession> {
        let AssembledSession {
            options,
            record,
            cwd,
            workspace,
            tools,
            controls,
            guard,
            commands,
            context_files,
            compactor,
            journal,
            sandbox,
            gate,
            ..
        } = session;
        let id = record.lock().map(|r| r.id().to_owned()).unwrap_or_default();
        Arc::new_cyclic(|weak: &Weak<LiveSession>| {
            let mut options = options;
            options.hooks = AgentHooks {
                before_tool_call: Some((hooks.before_tool_call)(weak.clone())),
                ..options.hooks
            };
            let agent = Agent::new(options);
            compactor.attach(&agent);
            let compaction_session = weak.clone();
            compactor.observe(move |event| {
                if let Some(session) = compaction_session.upgrade() {
                    let run = session.active_run();
                    let event = SessionEvent::from(event.clone());
                    session
                        .emitter
                        .emit(run.as_deref(), EventBody::Session(event));
                }
            });
            let guard_session = weak.clone();
            guard.observe(move |event| {
                if let Some(session) = guard_session.upgrade() {
                    let run = session.active_run();
                    let event = SessionEvent::LoopGuard(event.clone());
                    session
                        .emitter
                        .emit(run.as_deref(), EventBody::Session(event));
                }
            });
            let listener_session = weak.clone();
            agent.subscribe(Arc::new(move |event, _cancel| {
                let session = listener_session.clone();
                Box::pin(async move {
                    if let Some(session) = session.upgrade() {
                        session.forward(&event).await;
                    }
                    Ok(())
                })
            }));
            LiveSession {
                emitter: Emitter::new(ctx.out.output().clone(), &id, ctx.config.events()),
                id,
                cwd,
                agent,
                ctx,
                workspace,
                tools,
                controls,
                guard,
                commands,
                context_files,
                gate,
                record,
                compactor,
                journal,
                sandbox,
                hooks,
                state: Mutex::default(),
                idle: watch::channel(true).0,
            }
        })
    }

    fn lock(&self) -> MutexGuard<'_, RunState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The active run's id, if any.
    pub fn active_run(&self) -> Option<String> {
        self.lock().active.clone()
    }

    /// Starts a run with a user message; returns `(runId, messageId)`.
    pub fn start_run(
        self: &Arc<Self>,
        blocks: Vec<ContentBlock>,
    ) -> Result<(String, String), SessionError> {
        let message_id = self.reserve_id();
        let mut st = self.lock();
        if st.active.is_some() {
            return Err(SessionError::Busy(crate::agent::handle::BUSY_PROMPT.into()));
        }
        if self.compactor.is_running() {
            return Err(SessionError::Busy(COMPACTING.into()));
        }
        let run_id = self.begin(&mut st);
        st.unrecorded.push_back(message_id.clone());
        match self.agent.prompt(vec![user_message(blocks)]) {
            Ok(handle) => {
                drop(st);
                self.spawn_finish(handle, run_id.clone());
                Ok((run_id, message_id))
            }
            Err(e) => {
                st.active = None;
                st.unrecorded.pop_back();
                Err(agent_error(e))
            }
        }
    }

    /// A message id: the session file entry id the message will be recorded under.
    fn reserve_id(&self) -> String {
        self.record().reserve_id()
    }

    pub fn record(&self) -> MutexGuard<'_, SessionFile> {
        self.record.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn begin(&self, st: &mut RunState) -> String {
        let run_id = new_id();
        st.active = Some(run_id.clone());
        st.last_run = Some(run_id.clone());
        self.journal.set_run(Some(run_id.clone()));
        self.idle.send_replace(false);
        run_id
    }

    fn spawn_finish(self: &Arc<Self>, handle: RunHandle, run_id: String) {
        let session = self.clone();
        tokio::spawn(async move { session.finish_run(handle, run_id).await });
    }

    /// After the loop's `agent_end`: settle the run, then deliver messages that arrived too late
    /// for it (a steer racing the run's end becomes a run of its own, never a silent queue).
    async fn finish_run(self: Arc<Self>, handle: RunHandle, run_id: String) {
        let outcome = handle.wait().await;
        (self.hooks.run_finished)(&self, &run_id, &outcome).await;
        self.tell_changes(&run_id).await;
        let mut st = self.lock();
        self.sync_queues(&mut st, Some(&run_id));
        let stopped = self.guard.take_stop();
        if let Some(stop) = stopped.as_ref().filter(|_| self.ctx.config.is_generic()) {
            let text = format!("agent-lsp: {}", stop.message);
            self.ctx.show(ls_types::MessageType::WARNING, text);
        }
        let settled = SessionEvent::AgentSettled {
            aborted: outcome.aborted,
            stop_reason: stopped.map(|s| s.guard),
        };
        self.emitter
            .emit(Some(&run_id), EventBody::Session(settled));
        st.active = None;
        if !outcome.aborted && self.agent.has_queued_messages() {
            let next = self.begin(&mut st);
            match self.agent.continue_run() {
                Ok(handle) => {
                    drop(st);
                    self.spawn_finish(handle, next);
                    return;
                }
                Err(e) => {
                    tracing::warn!(session = self.id, %e, "could not deliver queued messages");
                    st.active = None;
                }
            }
        }
        drop(st);
        self.idle.send_replace(true);
    }

    /// After a run: `changes_update` when it changed files (the diffs left out;
    /// `agent/runChanges` has them).
    async fn tell_changes(&self, run_id: &str) {
        self.journal.settled().await;
        let selection = Selection::Run(Some(run_id.to_string()));
        let changes = review::run_changes(&self.record, &self.workspace, &selection, false);
        let Ok(changes) = changes.await else {
            return;
        };
        if changes.files.is_empty() {
            return;
        }
        let event = SessionEvent::ChangesUpdate(changes);
        self.emitter.emit(Some(run_id), EventBody::Session(event));
    }

    /// Queues a steering or follow-up message, or starts a run when idle.
    pub fn enqueue(
        self: &Arc<Self>,
        kind: QueueKind,
        blocks: Vec<ContentBlock>,
    ) -> Result<(String, String, bool), SessionError> {
        let message_id = self.reserve_id();
        let mut st = self.lock();
        let Some(run_id) = st.active.clone() else {
            drop(st);
            let (run_id, message_id) = self.start_run(blocks)?;
            return Ok((run_id, message_id, true));
        };
        let item = QueuedMessage {
            message_id: message_id.clone(),
            text: text_of(&blocks),
        };
        let message = user_message(blocks);
        match kind {
            QueueKind::Steer => {
                self.agent.steer(message);
                st.steering.push_back(item);
            }
            QueueKind::FollowUp => {
                self.agent.follow_up(message);
                st.follow_up.push_back(item);
            }
        }
        self.emitter.emit(Some(&run_id), queue_event(&st));
        Ok((run_id, message_id, false))
    }

    pub fn queues(&self) -> Queues {
        queues_of(&self.lock())
    }

    /// Drops both queues; returns what was removed.
    pub fn clear_queues(&self) -> Queues {
        let mut st = self.lock();
        self.agent.clear_all_queues();
        let removed = Queues {
            steering: st.steering.drain(..).collect(),
            follow_up: st.follow_up.drain(..).collect(),
        };
        let run = st.active.clone().or(st.last_run.clone());
        self.emitter.emit(run.as_deref(), queue_event(&st));
        removed
    }

    /// Removes one queued message by id, from the agent's queue and the id mirror; returns
    /// whether it was still queued (a message already delivered to the run is not removed).
    pub fn remove_queued(&self, message_id: &str) -> (bool, Queues) {
        let mut st = self.lock();
        let run = st.active.clone().or(st.last_run.clone());
        // Trim first: the mirror then equals the agent's queues, so positions agree.
        self.sync_queues(&mut st, run.as_deref());
        let removed = self.remove_from(&mut st, message_id, QueueKind::Steer)
            || self.remove_from(&mut st, message_id, QueueKind::FollowUp);
        if !removed {
            // The loop may have taken it between the trim and the removal: report fresh queues.
            self.sync_queues(&mut st, run.as_deref());
        } else {
            self.emitter.emit(run.as_deref(), queue_event(&st));
        }
        (removed, queues_of(&st))
    }

    fn remove_from(&self, st: &mut RunState, message_id: &str, kind: QueueKind) -> bool {
        let mirror = match kind {
            QueueKind::Steer => &mut st.steering,
            QueueKind::FollowUp => &mut st.follow_up,
        };
        let Some(index) = mirror.iter().position(|m| m.message_id == message_id) else {
            return false;
        };
        let distance = mirror.len() - 1 - index;
        let taken = match kind {
            QueueKind::Steer => self.agent.remove_steering_from_end(distance),
            QueueKind::FollowUp => self.agent.remove_follow_up_from_end(distance),
        };
        // Not in the agent's queue any more: the loop took it since the trim.
        if taken.is_some() {
            mirror.remove(index);
        }
        taken.is_some()
    }

    /// Aborts the active run (its pending approvals are cancelled through the run's token) and
    /// a compaction; whether there was either.
    pub fn abort(&self) -> bool {
        let active = self.lock().active.is_some();
        self.agent.abort();
        let compacting = self.compactor.abort();
        active || compacting
    }

    /// `agent/compact`: refused while a run is active; the compaction is reserved now (prompts
    /// are refused until it ends) and runs when the returned future is polled.
    pub fn compact(
        &self,
        instructions: Option<String>,
    ) -> Result<impl Future<Output = Result<CompactionResult, CompactError>> + use<>, SessionError>
    {
        let st = self.lock();
        if st.active.is_some() {
            return Err(SessionError::Busy(COMPACT_BUSY.into()));
        }
        let compaction = crate::session_setup::commands::compact(
            &self.compactor,
            instructions,
            &CancellationToken::new(),
        );
        drop(st);
        Ok(compaction)
    }

    pub fn last_run(&self) -> Option<String> {
        self.lock().last_run.clone()
    }

    pub async fn wait_idle(&self) {
        let mut rx = self.idle.subscribe();
        let _ = rx.wait_for(|idle| *idle).await;
    }

    /// The listener: queue changes first (a delivered steer leaves its queue before its
    /// `message_start`), then the event itself, then the generic-client surface.
    async fn forward(&self, event: &Arc<AgentEvent>) {
        if let AgentEvent::MessageEnd { message } = event.as_ref() {
            self.persist(message);
        }
        let run_id = {
            let mut st = self.lock();
            let run_id = st.active.clone();
            self.sync_queues(&mut st, run_id.as_deref());
            self.emitter
                .emit(run_id.as_deref(), EventBody::Agent(event.clone()));
            run_id
        };
        if let Some(run_id) = run_id {
            (self.hooks.on_event)(self, &run_id, event).await;
        }
    }

    /// Appends a finished message to the session file; a failure is logged, not fatal: losing
    /// the file must not take the editor's session down.
    fn persist(&self, message: &AgentMessage) {
        // Priced by the model that wrote it (the session may have switched since).
        let message = crate::model_registry::priced(message, |a| self.controls.model_of(a));
        let named = match message {
            AgentMessage::User(_) => self.lock().unrecorded.pop_front(),
            _ => None,
        };
        let mut record = self.record();
        let appended = match named {
            Some(id) => record.append_as(id, EntryKind::Message { message }),
            None => record.append_message(&message),
        };
        if let Err(e) = appended {
            tracing::warn!(session = self.id, %e, "cannot record the session");
        }
    }

    /// The session file, if it is stored on disk.
    pub fn record_path(&self) -> Option<PathBuf> {
        self.record().path().map(PathBuf::from)
    }

    /// Trims the id mirrors to the agent's queue lengths (queues drain from the front) and
    /// emits `queue_update` when anything changed.
    fn sync_queues(&self, st: &mut RunState, run_id: Option<&str>) {
        let (steering, follow_up) = self.agent.queued_lens();
        let changed = st.steering.len() > steering || st.follow_up.len() > follow_up;
        // Dropped from the front: delivered to the run, to be recorded under their ids.
        let delivered = (st.steering.keep_last(steering).into_iter())
            .chain(st.follow_up.keep_last(follow_up))
            .map(|m| m.message_id);
        let delivered: Vec<String> = delivered.collect();
        st.unrecorded.extend(delivered);
        if changed {
            self.emitter.emit(run_id, queue_event(st));
        }
    }

    /// The transcript as pi's JSON messages.
    /// The messages, and for each the id of its session file entry when it is a user message
    /// the file holds (`None` for other roles, or one the file does not hold as such, such as a
    /// compaction summary): the `messageId`s `agent/forkSession` and `agent/revert` take, for a
    /// client that did not send these messages itself (a resumed session, a fork).
    pub fn messages_with_ids(&self) -> (Vec<Value>, Vec<Option<String>>) {
        // The record's lock is taken and released before the agent's state is locked.
        let entries: Vec<(String, String)> = (self.record().branch_path().into_iter())
            .filter_map(|e| match e.kind.message() {
                Some(AgentMessage::User(user)) => Some((e.id.clone(), user.content.to_text())),
                _ => None,
            })
            .collect();
        let state = self.agent.state();
        let mut ids = vec![None; state.messages.len()];
        // Paired from the end: the live messages are the file's branch, its older part perhaps
        // compacted away.
        let mut unpaired = entries.len();
        for (i, message) in state.messages.iter().enumerate().rev() {
            let AgentMessage::User(user) = message else {
                continue;
            };
            let text = user.content.to_text();
            if let Some(at) = entries[..unpaired].iter().rposition(|(_, t)| *t == text) {
                ids[i] = Some(entries[at].0.clone());
                unpaired = at;
            }
        }
        let messages = (state.messages.iter())
            .map(|m| serde_json::to_value(m).unwrap_or(Value::Null))
            .collect();
        (messages, ids)
    }
}

/// Drops items from the front until `len` remain; returns them.
trait TruncateFront<T> {
    fn keep_last(&mut self, len: usize) -> Vec<T>;
}

impl<T> TruncateFront<T> for VecDeque<T> {
    fn keep_last(&mut self, len: usize) -> Vec<T> {
        let excess = self.len().saturating_sub(len);
        self.drain(..excess).collect()
    }
}

fn queues_of(st: &RunState) -> Queues {
    Queues {
        steering: st.steering.iter().cloned().collect(),
        follow_up: st.follow_up.iter().cloned().collect(),
    }
}

fn queue_event(st: &RunState) -> EventBody {
    EventBody::Session(SessionEvent::QueueUpdate(queues_of(st)))
}

fn agent_error(e: AgentError) -> SessionError {
    match e {
        AgentError::Busy(text) => SessionError::Busy(text),
        other => SessionError::Agent(other.to_string()),
    }
}

impl LiveSession {
    /// Follows the session's MCP servers: an `mcp_update` event at every change (and one now),
    /// a generic client's message when a server fails, and the question whether the project's
    /// `.mcp.json` may start its servers.
    pub fn watch_mcp(self: &Arc<Self>) {
        if self.tools.mcp.is_empty() {
            return;
        }
        let weak = Arc::downgrade(self);
        let mut watch = self.tools.mcp.watch();
        tokio::spawn(async move {
            let mut failed = std::collections::HashSet::new();
            loop {
                let Some(session) = weak.upgrade() else {
                    return;
                };
                let servers = session.tools.mcp.status();
                for server in &servers {
                    if server.state != State::Failed {
                        failed.remove(&server.name);
                    } else if failed.insert(server.name.clone()) && session.ctx.config.is_generic()
                    {
                        let why = server.error.as_deref().unwrap_or("it stopped");
                        let text = format!("agent-lsp: MCP server {} failed: {why}", server.name);
                        session.ctx.show(ls_types::MessageType::ERROR, text);
                    }
                }
                // A session's servers belong to no run: `runId` is null.
                let update = SessionEvent::McpUpdate { servers };
                session.emitter.emit(None, EventBody::Session(update));
                drop(session);
                watch.changed().await;
            }
        });
        if self.tools.needs_trust() {
            tokio::spawn((self.hooks.ask_trust)(self.clone()));
        }
    }
}
