//! The session core every front end drives: one agent, its record and persistence, the run
//! lifecycle and queues, compaction, the loop guard, the journal and the approval gate.
//!
//! A front end implements [`View`] — its standing approval policy, how it asks the user, how it
//! shows each [`Event`] — and translates its protocol into the calls here; nothing else. The
//! daemon (`lsp::`), ACP (`acp::`) and `agent-lsp run` (`cli::`) each have one view.
//!
//! **Invariant:** a session has at most one active run; `active` is set before the loop starts
//! and cleared only after the run's [`Event::Settled`] was shown, under the same lock, so a
//! prompt never races a finishing run. A message queued as the run ends (after its last poll)
//! starts a run of its own right after, unless the run was aborted.

use std::collections::VecDeque;
use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::agent::event::AgentEvent;
use crate::agent::hooks::{
    BeforeToolCallContext, BeforeToolCallHook, BeforeToolCallResult, PrepareRunHook,
};
use crate::agent::message::{AgentMessage, ContentBlock, MessageContent, UserMessage, now_ms};
use crate::agent::{Agent, AgentError, AgentHooks, CallbackError, RunHandle, RunOutcome};
use crate::compaction::CompactionResult;
use crate::core::approval::{Answer, Asker, Policy, blocked};
use crate::core::compaction::{CompactError, CompactionEvent};
use crate::core::hooks::HookRun;
use crate::core::hooks::lifecycle::{ELICITATION_DIALOG, PERMISSION_PROMPT};
use crate::core::subagent::{ChildEvent, Parent, SubagentStop};
use crate::core::{AssembledSession, GuardEvent, PlanUpdate, SessionParts};
use crate::sandbox::MustAsk;
use crate::store::{EntryKind, SessionFile};
use crate::tools::JobInfo;
use crate::tools::{Question, UserAnswer, UserChannel};

/// A message waiting in a queue.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueuedMessage {
    pub message_id: String,
    pub text: String,
}

/// Both queues of a session (also the daemon's `queue_update` event body).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Queues {
    pub steering: Vec<QueuedMessage>,
    pub follow_up: Vec<QueuedMessage>,
}

/// Which queue a message goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueKind {
    Steer,
    FollowUp,
}

/// Why the session refused to start a run or a compaction; front ends word these their way.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// A run is active.
    #[error("{}", crate::agent::handle::BUSY_PROMPT)]
    Running,
    /// A compaction is running.
    #[error("a compaction is running")]
    Compacting,
    /// The agent refused (its own words).
    #[error("{0}")]
    Agent(String),
}

/// How a run ended.
pub struct RunEnd {
    pub outcome: RunOutcome,
    /// The loop guard's stop, when it ended the run.
    pub stop: Option<GuardEvent>,
}

/// Everything a session shows its front end, in the order it happens.
#[derive(Clone, Copy)]
pub enum Event<'a> {
    /// A loop event, after its message (at `message_end`) was recorded and after the queues
    /// it changed were shown.
    Agent(&'a Arc<AgentEvent>),
    /// The queues changed (a message queued, delivered to the run, removed).
    Queues(&'a Queues),
    /// The run took the user message recorded under this id (its first, or one from a queue).
    Delivered(&'a str),
    Compaction(&'a CompactionEvent),
    Guard(&'a GuardEvent),
    /// The model replaced the plan (`todo_write`).
    Plan(&'a PlanUpdate),
    /// A background job started or ended (by itself, or stopped).
    Job(&'a JobInfo),
    /// A hook ran (what it decided, or how it failed).
    Hook(&'a HookRun),
    /// A subagent's loop event, under the `task` call that runs it.
    Child(&'a ChildEvent),
    /// The approval gate let a tool call through ([`View::follow`] only).
    Allowed(&'a BeforeToolCallContext),
    /// The run ended; the session is still busy with it ([`View::follow`] only).
    RunEnded(&'a RunEnd),
    /// The run is over and the session accepts a prompt again ([`View::show`] only).
    Settled(&'a RunEnd),
}

/// A front end: how it decides, asks and shows.
pub trait View: Send + Sync + Sized + 'static {
    /// Its standing approval policy for `tool` with `args` (the approval gate's first step).
    fn policy(&self, session: &Session<Self>, tool: &str, args: &Value) -> Policy;

    /// Asks the user about a call (`must_ask`: the sandbox's reason it must); `Err` says why no
    /// answer could be had.
    fn ask<'a>(
        &'a self,
        session: &'a Arc<Session<Self>>,
        ctx: &'a BeforeToolCallContext,
        must_ask: Option<&'a MustAsk>,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Answer, String>>;

    /// Asks the user a question (the `ask_user` tool, an MCP server's elicitation); `cancel`
    /// withdraws it. By default no one can answer.
    fn ask_user<'a>(
        &'a self,
        _session: &'a Arc<Session<Self>>,
        _question: &'a Question,
        _cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, UserAnswer> {
        let why = "this front end cannot ask the user questions".to_owned();
        Box::pin(std::future::ready(UserAnswer::Unavailable(why)))
    }

    /// Shows one event as it happens. It must not wait, nor call back into the session's run
    /// methods (a settled run is shown under the session's lock).
    fn show(&self, session: &Session<Self>, run: Option<&str>, event: Event<'_>);

    /// What an agent event (but a streamed delta, `message_update`), an allowed call or a run's
    /// end needs done before the session goes on (after [`View::show`], for an agent event):
    /// nothing by default.
    fn follow<'a>(
        &'a self,
        _session: &'a Arc<Session<Self>>,
        _run: Option<&'a str>,
        _event: Event<'a>,
    ) -> BoxFuture<'a, ()> {
        Box::pin(std::future::ready(()))
    }

    /// The front end's preparation of each run, after the session's own (`inner`).
    fn prepare_run(
        _session: Weak<Session<Self>>,
        inner: Option<PrepareRunHook>,
    ) -> Option<PrepareRunHook> {
        inner
    }

    /// A finished message could not be recorded: `Err` fails the run (a script's record is its
    /// output), `Ok` goes on (an editor's session must not go down with its file).
    fn record_failed(&self, session_id: &str, error: String) -> Result<(), String> {
        tracing::warn!(session = session_id, %error, "cannot record the session");
        Ok(())
    }

    /// Whether queued messages outlive an aborted run (the daemon's: the next prompt delivers
    /// them); `false` drops them as the run settles (an ACP follow-up is a prompt that ends).
    fn keeps_queues_on_abort(&self) -> bool {
        true
    }
}

#[derive(Default)]
struct RunState {
    /// The active run's id (shared: every event of the run reads it).
    active: Option<Arc<str>>,
    last_run: Option<Arc<str>>,
    steering: VecDeque<QueuedMessage>,
    follow_up: VecDeque<QueuedMessage>,
    /// The ids of user messages given to the agent and not yet recorded, in delivery order:
    /// each is recorded under the id its request was answered with.
    unrecorded: VecDeque<String>,
    /// A run whose prompt is with the `UserPromptSubmit` hooks: aborting it cancels them.
    submitting: Option<CancellationToken>,
}

pub struct Session<V: View> {
    pub id: String,
    pub agent: Agent,
    /// What it was assembled from (read through `Deref`).
    parts: SessionParts,
    /// The front end's own part.
    pub view: V,
    state: Mutex<RunState>,
    /// No run and no compaction.
    idle: watch::Sender<bool>,
}

/// The parts are the session's ingredients, shared with its assembly: the front ends read them
/// as the session's own fields (`session.tools`, `session.gate`), one list of them kept in
/// [`SessionParts`].
impl<V: View> std::ops::Deref for Session<V> {
    type Target = SessionParts;

    fn deref(&self) -> &SessionParts {
        &self.parts
    }
}

pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

fn user_message(content: MessageContent) -> AgentMessage {
    AgentMessage::from(UserMessage {
        content,
        timestamp: now_ms(),
    })
}

impl<V: View> Session<V> {
    /// Builds the session's agent with the approval gate asking through `view`, and the
    /// listener that records and shows its events.
    pub fn create(session: AssembledSession, view: V) -> Arc<Session<V>> {
        let AssembledSession {
            mut options,
            parts,
            ask,
            children,
            ..
        } = session;
        let id = (parts.record.lock())
            .map(|r| r.id().to_owned())
            .unwrap_or_default();
        let session = Arc::new_cyclic(|weak: &Weak<Session<V>>| {
            ask.connect(Arc::new(ViewChannel(weak.clone())));
            children.connect(Arc::new(SessionParent(weak.clone())));
            let prepare_run = V::prepare_run(weak.clone(), options.hooks.prepare_run.take());
            options.hooks = AgentHooks {
                before_tool_call: Some(approval_hook(weak.clone())),
                prepare_run,
                ..options.hooks
            };
            let agent = Agent::new(options);
            let SessionParts {
                compactor,
                guard,
                plan,
                jobs,
                hooks,
                ..
            } = &parts;
            compactor.attach(&agent);
            compactor.observe(observer(weak.clone(), |e| Event::Compaction(e)));
            guard.observe(observer(weak.clone(), |e| Event::Guard(e)));
            plan.observe(observer(weak.clone(), |e| Event::Plan(e)));
            jobs.observe(observer(weak.clone(), |j| Event::Job(j)));
            hooks.attach(&agent);
            hooks.observe(observer(weak.clone(), |r| Event::Hook(r)));
            let listener = weak.clone();
            agent.subscribe(Arc::new(move |event, _cancel| {
                let session = listener.clone();
                Box::pin(async move {
                    match session.upgrade() {
                        Some(session) => session.forward(&event).await,
                        None => Ok(()),
                    }
                })
            }));
            Session {
                id,
                agent,
                parts,
                view,
                state: Mutex::default(),
                idle: watch::channel(true).0,
            }
        });
        session.hooks.session_started();
        session
    }

    fn lock(&self) -> MutexGuard<'_, RunState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Shows an event of the active run (or of none).
    fn show_now(&self, event: Event<'_>) {
        let run = self.active_run();
        self.view.show(self, run.as_deref(), event);
    }

    /// The active run's id, if any.
    pub fn active_run(&self) -> Option<String> {
        self.lock().active.as_deref().map(str::to_owned)
    }

    pub fn last_run(&self) -> Option<String> {
        self.lock().last_run.as_deref().map(str::to_owned)
    }

    pub fn record(&self) -> MutexGuard<'_, SessionFile> {
        self.record.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The session file, if it is stored on disk.
    pub fn record_path(&self) -> Option<PathBuf> {
        self.record().path().map(PathBuf::from)
    }

    /// An id for a user message: the session file entry id it will be recorded under.
    pub fn reserve_id(&self) -> String {
        self.record().reserve_id()
    }

    /// Starts a run with a user message; returns `(runId, messageId)`, the message recorded
    /// under that id.
    pub fn start_run(
        self: &Arc<Self>,
        blocks: Vec<ContentBlock>,
    ) -> Result<(String, String), Refusal> {
        self.start_run_as(
            user_message(MessageContent::Blocks(blocks)),
            self.reserve_id(),
        )
    }

    /// [`Session::start_run`] with a message of the front end's making.
    pub fn start_run_with(
        self: &Arc<Self>,
        message: AgentMessage,
    ) -> Result<(String, String), Refusal> {
        self.start_run_as(message, self.reserve_id())
    }

    fn start_run_as(
        self: &Arc<Self>,
        message: AgentMessage,
        message_id: String,
    ) -> Result<(String, String), Refusal> {
        self.start_locked(self.lock(), message, message_id)
    }

    /// Starts a run under the lock that found the session idle (`st`), so nothing can start
    /// another between the look and the start.
    fn start_locked(
        self: &Arc<Self>,
        mut st: MutexGuard<'_, RunState>,
        message: AgentMessage,
        message_id: String,
    ) -> Result<(String, String), Refusal> {
        if st.active.is_some() {
            return Err(Refusal::Running);
        }
        if self.compactor.is_running() {
            return Err(Refusal::Compacting);
        }
        let run_id = self.begin(&mut st);
        st.unrecorded.push_back(message_id.clone());
        if self.hooks.intercepts_prompts() {
            let cancel = CancellationToken::new();
            st.submitting = Some(cancel.clone());
            drop(st);
            let (session, run) = (self.clone(), run_id.clone());
            let id = message_id.clone();
            tokio::spawn(async move { session.submit_prompt(message, id, run, cancel).await });
            return Ok((run_id, message_id));
        }
        match self.agent.prompt(vec![message]) {
            Ok(handle) => {
                let event = Event::Delivered(&message_id);
                self.view.show(self, Some(&run_id), event);
                drop(st);
                self.spawn_finish(handle, run_id.clone());
                Ok((run_id, message_id))
            }
            Err(e) => {
                st.active = None;
                st.unrecorded.pop_back();
                drop(st);
                self.idle.send_replace(true);
                Err(match e {
                    AgentError::Busy(_) => Refusal::Running,
                    other => Refusal::Agent(other.to_string()),
                })
            }
        }
    }

    /// A prompt through the `UserPromptSubmit` hooks, then to the agent; one they refuse ends
    /// its run at once (its loop events only `agent_start` and an empty `agent_end`, the
    /// hook's event between them), unrecorded.
    async fn submit_prompt(
        self: Arc<Self>,
        message: AgentMessage,
        message_id: String,
        run_id: String,
        cancel: CancellationToken,
    ) {
        let submitted = self.hooks.submit(message, &cancel).await;
        let refused = match self.deliver(submitted, &message_id, &run_id, &cancel) {
            Ok(handle) => return self.spawn_finish(handle, run_id),
            Err(refused) => refused,
        };
        let run = Some(run_id.as_str());
        let ends = [
            AgentEvent::AgentStart,
            AgentEvent::AgentEnd {
                messages: Vec::new(),
            },
        ];
        for event in ends.map(Arc::new) {
            self.view.show(&self, run, Event::Agent(&event));
            self.view.follow(&self, run, Event::Agent(&event)).await;
        }
        self.settle(refused, run_id).await;
    }

    /// Gives the agent a prompt the hooks let through; `Err` is how the run ends when they did
    /// not (or the agent refused it, or the run was aborted meanwhile). Either way the prompt
    /// was taken (`Delivered`); a refused one is not recorded.
    fn deliver(
        &self,
        submitted: Result<AgentMessage, String>,
        message_id: &str,
        run_id: &str,
        cancel: &CancellationToken,
    ) -> Result<RunHandle, RunOutcome> {
        let mut st = self.lock();
        st.submitting = None;
        let started = match submitted {
            _ if cancel.is_cancelled() => Err(RunOutcome {
                aborted: true,
                ..RunOutcome::default()
            }),
            Ok(message) => self.agent.prompt(vec![message]).map_err(|e| RunOutcome {
                error: Some(e.to_string()),
                ..RunOutcome::default()
            }),
            Err(why) => Err(RunOutcome {
                error: Some(why),
                ..RunOutcome::default()
            }),
        };
        if started.is_err() {
            st.unrecorded.retain(|id| id != message_id);
        }
        self.view
            .show(self, Some(run_id), Event::Delivered(message_id));
        started
    }

    fn begin(&self, st: &mut RunState) -> String {
        let run_id = new_id();
        let shared: Arc<str> = Arc::from(run_id.as_str());
        st.active = Some(shared.clone());
        st.last_run = Some(shared);
        self.journal.set_run(Some(run_id.clone()));
        self.hooks.run_started();
        self.idle.send_replace(false);
        run_id
    }

    fn spawn_finish(self: &Arc<Self>, handle: RunHandle, run_id: String) {
        let session = self.clone();
        tokio::spawn(async move { session.finish_run(handle, run_id).await });
    }

    /// After the loop's `agent_end`: the front end's follow-up of the run, then it settles, then
    /// messages that arrived too late for it are delivered (a steer racing the run's end becomes
    /// a run of its own, never a silent queue).
    async fn finish_run(self: Arc<Self>, handle: RunHandle, run_id: String) {
        let outcome = handle.wait().await;
        self.settle(outcome, run_id).await;
    }

    /// The run is over: its end is followed, then shown settled; queued messages start the
    /// next run.
    async fn settle(self: Arc<Self>, outcome: RunOutcome, run_id: String) {
        let end = RunEnd {
            stop: self.guard.take_stop(),
            outcome,
        };
        let run = Some(run_id.as_str());
        self.view.follow(&self, run, Event::RunEnded(&end)).await;
        let mut st = self.lock();
        self.sync_queues(&mut st, run);
        if end.outcome.aborted && !self.view.keeps_queues_on_abort() {
            self.drop_queues(&mut st, run);
        }
        self.view.show(&self, run, Event::Settled(&end));
        st.active = None;
        if !end.outcome.aborted && self.agent.has_queued_messages() {
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
        self.settle_idle();
    }

    /// Idle once no run goes on: called as a run settles or a manual compaction ends (neither
    /// starts while the other goes on, and an automatic compaction runs inside a run).
    fn settle_idle(&self) {
        if self.lock().active.is_none() {
            self.idle.send_replace(true);
        }
    }

    /// Queues a steering or follow-up message, or starts a run when idle:
    /// `(runId, messageId, started)`.
    pub fn enqueue(
        self: &Arc<Self>,
        kind: QueueKind,
        blocks: Vec<ContentBlock>,
    ) -> Result<(String, String, bool), Refusal> {
        self.enqueue_as(kind, blocks, self.reserve_id())
    }

    /// [`Session::enqueue`] of a message under an id from [`Session::reserve_id`].
    pub fn enqueue_as(
        self: &Arc<Self>,
        kind: QueueKind,
        blocks: Vec<ContentBlock>,
        message_id: String,
    ) -> Result<(String, String, bool), Refusal> {
        let st = self.lock();
        if st.active.is_none() {
            // Started under the lock that found the session idle: an enqueue racing this one
            // queues behind the new run instead of finding the session busy.
            let (run_id, message_id) =
                self.start_locked(st, user_message(MessageContent::Blocks(blocks)), message_id)?;
            return Ok((run_id, message_id, true));
        }
        let (run_id, message_id) = self.queue_locked(st, kind, blocks, message_id);
        Ok((run_id, message_id, false))
    }

    /// Queues `blocks` on the active run only: `None`, and nothing started, when no run is
    /// active (ACP's steer: a run that ended meanwhile must not become a run no prompt waits on).
    pub fn enqueue_on_run(
        self: &Arc<Self>,
        kind: QueueKind,
        blocks: Vec<ContentBlock>,
    ) -> Option<(String, String)> {
        let message_id = self.reserve_id();
        let st = self.lock();
        st.active.as_ref()?;
        Some(self.queue_locked(st, kind, blocks, message_id))
    }

    /// Queues a message on the active run (`st.active` is set); `(runId, messageId)`.
    fn queue_locked(
        &self,
        mut st: MutexGuard<'_, RunState>,
        kind: QueueKind,
        blocks: Vec<ContentBlock>,
        message_id: String,
    ) -> (String, String) {
        let run_id = st.active.as_deref().map(str::to_owned).unwrap_or_default();
        let content = MessageContent::Blocks(blocks);
        let item = QueuedMessage {
            message_id: message_id.clone(),
            text: content.to_text(),
        };
        let message = user_message(content);
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
        self.show_queues(&st, Some(&run_id));
        (run_id, message_id)
    }

    pub fn queues(&self) -> Queues {
        queues_of(&self.lock())
    }

    /// Drops both queues; returns what was removed.
    pub fn clear_queues(&self) -> Queues {
        let mut st = self.lock();
        let run = st.active.clone().or(st.last_run.clone());
        self.drop_queues(&mut st, run.as_deref())
    }

    fn drop_queues(&self, st: &mut RunState, run: Option<&str>) -> Queues {
        self.agent.clear_all_queues();
        let removed = Queues {
            steering: st.steering.drain(..).collect(),
            follow_up: st.follow_up.drain(..).collect(),
        };
        self.show_queues(st, run);
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
            self.show_queues(&st, run.as_deref());
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
        let active = {
            let st = self.lock();
            if let Some(submitting) = &st.submitting {
                submitting.cancel();
            }
            st.active.is_some()
        };
        self.agent.abort();
        let compacting = self.compactor.abort();
        active || compacting
    }

    /// A manual compaction: refused while a run or another compaction is going; reserved now
    /// (prompts are refused until it ends), run when the returned future is polled.
    pub fn compact(
        self: &Arc<Self>,
        instructions: Option<String>,
    ) -> Result<impl Future<Output = Result<CompactionResult, CompactError>> + Send + use<V>, Refusal>
    {
        let st = self.lock();
        if st.active.is_some() {
            return Err(Refusal::Running);
        }
        if self.compactor.is_running() {
            return Err(Refusal::Compacting);
        }
        let compaction = crate::core::commands::compact(
            &self.compactor,
            instructions,
            &CancellationToken::new(),
        );
        self.idle.send_replace(false);
        drop(st);
        let ended = IdleOnDrop(Arc::downgrade(self));
        Ok(async move {
            let result = compaction.await;
            drop(ended);
            result
        })
    }

    /// Stops every background job of the session and waits until each ended and the journal
    /// recorded it: the session is closing (each end is shown as a job event).
    pub async fn end_jobs(&self) {
        let jobs = async {
            self.jobs.end_all().await;
            self.journal.settled().await;
        };
        tokio::join!(jobs, self.hooks.session_end());
    }

    /// Waits until neither a run nor a compaction goes on.
    pub async fn wait_idle(&self) {
        let mut rx = self.idle.subscribe();
        let _ = rx.wait_for(|idle| *idle).await;
    }

    /// The listener: records a finished message, shows the queues it changed (a delivered steer
    /// leaves its queue before its `message_start`), then the event, then the view's follow-up.
    async fn forward(self: Arc<Self>, event: &Arc<AgentEvent>) -> Result<(), CallbackError> {
        if let AgentEvent::MessageEnd { message } = event.as_ref()
            && let Err(e) = self.persist(message)
        {
            self.view.record_failed(&self.id, e)?;
        }
        // A streamed delta neither changes the queues (the loop takes queued messages between
        // turns) nor needs following: one lock and one `show` per delta.
        let delta = matches!(event.as_ref(), AgentEvent::MessageUpdate { .. });
        let run = {
            let mut st = self.lock();
            let run = st.active.clone();
            if !delta {
                self.sync_queues(&mut st, run.as_deref());
            }
            self.view.show(&self, run.as_deref(), Event::Agent(event));
            run
        };
        if !delta {
            (self.view)
                .follow(&self, run.as_deref(), Event::Agent(event))
                .await;
        }
        Ok(())
    }

    /// Appends a finished message to the session file, priced by the model that wrote it (the
    /// session may have switched since); a user message under the id it was answered with.
    fn persist(&self, message: &AgentMessage) -> Result<(), String> {
        let message = crate::model_registry::priced(message, |a| self.controls.model_of(a));
        let named = match &message {
            AgentMessage::User(user) if !self.hooks.made(user) => {
                self.lock().unrecorded.pop_front()
            }
            _ => None,
        };
        let mut record = self.record();
        let appended = match named {
            Some(id) => record.append_as(id, EntryKind::Message { message }),
            None => record.append_message(&message),
        };
        appended
            .map(drop)
            .map_err(|e| format!("cannot record the session: {e}"))
    }

    /// Trims the id mirrors to the agent's queue lengths (queues drain from the front) and
    /// shows the queues when anything changed.
    fn sync_queues(&self, st: &mut RunState, run: Option<&str>) {
        let (steering, follow_up) = self.agent.queued_lens();
        let changed = st.steering.len() > steering || st.follow_up.len() > follow_up;
        // Dropped from the front: delivered to the run, to be recorded under their ids.
        let delivered = (st.steering.keep_last(steering).into_iter())
            .chain(st.follow_up.keep_last(follow_up))
            .map(|m| m.message_id);
        let delivered: Vec<String> = delivered.collect();
        if changed {
            self.show_queues(st, run);
        }
        for message_id in &delivered {
            self.view.show(self, run, Event::Delivered(message_id));
        }
        st.unrecorded.extend(delivered);
    }

    fn show_queues(&self, st: &RunState, run: Option<&str>) {
        self.view.show(self, run, Event::Queues(&queues_of(st)));
    }

    /// The messages, and for each the id of its session file entry when it is a user message
    /// the file holds (`None` for other roles, or one the file does not hold as such, such as a
    /// compaction summary): the ids a fork or a revert takes, for a client that did not send
    /// these messages itself (a resumed session, a fork).
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

/// An observer showing what it observes as an event of the session.
fn observer<V: View, T: 'static>(
    session: Weak<Session<V>>,
    event: for<'e> fn(&'e T) -> Event<'e>,
) -> impl Fn(&T) + Send + Sync + 'static {
    move |value| {
        if let Some(session) = session.upgrade() {
            session.show_now(event(value));
        }
    }
}

/// Marks the session idle again when a manual compaction ends, also when it is dropped unpolled.
struct IdleOnDrop<V: View>(Weak<Session<V>>);

impl<V: View> Drop for IdleOnDrop<V> {
    fn drop(&mut self) {
        if let Some(session) = self.0.upgrade() {
            session.settle_idle();
        }
    }
}

/// The loop's approval hook: the session's one gate, asking through the view; a call let
/// through is followed by the view (ACP marks it running and keeps the file's text).
fn approval_hook<V: View>(session: Weak<Session<V>>) -> BeforeToolCallHook {
    Arc::new(
        move |ctx: BeforeToolCallContext, cancel: CancellationToken| {
            let session = session.clone();
            Box::pin(async move {
                let Some(session) = session.upgrade() else {
                    return Ok(Some(blocked("The session is closed".into())));
                };
                let hooked = session.hooks.pre_tool_use(&ctx, &cancel).await;
                if hooked.blocked.is_some() {
                    return Ok(hooked.blocked);
                }
                let ctx = match &hooked.args {
                    Some(args) => BeforeToolCallContext {
                        args: args.clone(),
                        ..ctx
                    },
                    None => ctx,
                };
                let verdict = (session.gate)
                    .decide_with(&ViewAsker(&session), &ctx, &cancel, hooked.permission)
                    .await;
                if verdict.is_none() {
                    let run = session.active_run();
                    (session.view)
                        .follow(&session, run.as_deref(), Event::Allowed(&ctx))
                        .await;
                }
                // Arguments a hook replaced run as it gave them.
                Ok(verdict.or(hooked.args.map(|args| BeforeToolCallResult {
                    args: Some(args),
                    ..BeforeToolCallResult::default()
                })))
            })
        },
    )
}

/// The view as the approval gate's [`Asker`].
struct ViewAsker<'s, V: View>(&'s Arc<Session<V>>);

impl<V: View> Asker for ViewAsker<'_, V> {
    fn policy(&self, tool: &str, args: &Value) -> Policy {
        self.0.view.policy(self.0, tool, args)
    }

    fn ask<'a>(
        &'a self,
        ctx: &'a BeforeToolCallContext,
        must_ask: Option<&'a MustAsk>,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Answer, String>> {
        let tool = &ctx.tool_call.name;
        let message = format!("agent-lsp needs your permission to use {tool}");
        self.0.hooks.notify(PERMISSION_PROMPT, message);
        self.0.view.ask(self.0, ctx, must_ask, cancel)
    }

    fn mcp_info(&self, tool: &str) -> Option<crate::mcp::tool::McpToolInfo> {
        self.0.tools.mcp_info(tool)
    }
}

/// The view as the tools' way to the user (`ask_user`, MCP elicitations).
struct ViewChannel<V: View>(Weak<Session<V>>);

impl<V: View> UserChannel for ViewChannel<V> {
    fn ask<'a>(
        &'a self,
        question: &'a Question,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, UserAnswer> {
        Box::pin(async move {
            let Some(session) = self.0.upgrade() else {
                return UserAnswer::Unavailable("the session is closed".into());
            };
            let message = format!("agent-lsp has a question for you: {}", question.text);
            session.hooks.notify(ELICITATION_DIALOG, message);
            session.view.ask_user(&session, question, cancel).await
        })
    }
}

/// The session as its subagents' parent: their calls through its gate, their events shown.
struct SessionParent<V: View>(Weak<Session<V>>);

impl<V: View> Parent for SessionParent<V> {
    fn decide<'a>(
        &'a self,
        ctx: &'a BeforeToolCallContext,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Option<BeforeToolCallResult>> {
        Box::pin(async move {
            let Some(session) = self.0.upgrade() else {
                return Some(blocked("The session is closed".into()));
            };
            session.gate.decide(&ViewAsker(&session), ctx, cancel).await
        })
    }

    fn show(&self, event: &ChildEvent) {
        if let Some(session) = self.0.upgrade() {
            session.show_now(Event::Child(event));
        }
    }

    fn subagent_stop<'a>(
        &'a self,
        stop: SubagentStop<'a>,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move {
            let session = self.0.upgrade()?;
            (session.hooks)
                .subagent_stop(
                    stop.agent,
                    stop.agent_id,
                    stop.stop_hook_active,
                    stop.last_message,
                    cancel,
                )
                .await
        })
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
