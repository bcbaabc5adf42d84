//! One ACP session: its agent, the prompt turns waiting for their answer, the mode, the approval
//! memory and the session file.
//!
//! **Ordering:** every update is queued on the connection's one ordered output from the agent's
//! listener (awaited by the loop) or from the approval hook, and a prompt's response is queued
//! only after its run settled — so every `session/update` of a turn precedes its response.
//!
//! **Follow-ups:** a `session/prompt` that arrives while a run is going is given to the run as
//! pi's follow-up. When the run takes it (its user message starts), the prompt before it is
//! answered `end_turn`; the last one is answered when the run ends.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use agent_client_protocol_schema::v1 as acp;
use serde_json::Value;
use tokio::sync::watch;

use crate::acp::chunks::Updates;
use crate::acp::client::SessionLink;
use crate::acp::updates::{self, ToolLook, Translator};
use crate::agent::event::AgentEvent;
use crate::agent::hooks::{BeforeToolCallHook, PrepareRunHook};
use crate::agent::message::{
    AgentMessage, ContentBlock, MessageContent, StopReason, UserMessage, now_ms,
};
use crate::agent::{Agent, AgentHooks, RunHandle, RunOutcome};
use crate::model_registry::EnvSource;
use crate::rpc::jsonrpc::{Id, Response, ResponseError};
use crate::rpc::outgoing::Outgoing;
use crate::session::SessionFile;
use crate::session_setup::{
    ApprovalGate, AssembledSession, Compactor, LoopGuard, SessionCommands, SessionControls,
    SessionTools, SharedRecord,
};
use crate::tools::Workspace;

/// The session modes (ACP's legacy modes, with the names Zed users know).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Edits and commands ask.
    Default,
    /// Edits are allowed, commands ask.
    AcceptEdits,
    /// Read-only: mutating tools are refused.
    Plan,
    /// Everything is allowed.
    BypassPermissions,
}

impl Mode {
    pub const ALL: [Mode; 4] = [
        Mode::Default,
        Mode::AcceptEdits,
        Mode::Plan,
        Mode::BypassPermissions,
    ];

    pub fn id(self) -> &'static str {
        match self {
            Mode::Default => "default",
            Mode::AcceptEdits => "acceptEdits",
            Mode::Plan => "plan",
            Mode::BypassPermissions => "bypassPermissions",
        }
    }

    pub fn parse(id: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.id() == id)
    }

    pub fn describe(self) -> (&'static str, &'static str) {
        match self {
            Mode::Default => ("Default", "Edits and commands ask for permission"),
            Mode::AcceptEdits => ("Accept edits", "Edits run without asking; commands ask"),
            Mode::Plan => ("Plan", "Read-only: the agent plans and changes nothing"),
            Mode::BypassPermissions => ("Bypass permissions", "Everything runs without asking"),
        }
    }
}

/// What the model is told with every prompt sent in plan mode.
const PLAN_NOTE: &str = "[agent-lsp: the session is in plan mode. You may read and search but \
not change anything: tools that edit, write or run commands are refused. Present a plan.]";

#[derive(Default)]
struct Turn {
    running: bool,
    /// The prompt the run is answering now.
    current: Option<Id>,
    /// Prompts given to the run as follow-ups, not yet taken by it, in order.
    waiting: VecDeque<Id>,
    /// A `/compact` is running (prompts are refused until it answered).
    compacting: bool,
}

/// What a prompt gets while a `/compact` runs.
const COMPACTING: &str =
    "a compaction (/compact) is running in this session: send the prompt after its answer";

/// What `/compact` gets while a turn runs.
const COMPACT_BUSY: &str =
    "cannot compact while a turn is running: cancel it or wait for its answer";

pub struct AcpSession {
    pub id: String,
    pub agent: Agent,
    pub out: Outgoing,
    link: Arc<SessionLink>,
    pub workspace: Arc<dyn Workspace>,
    pub tools: Arc<SessionTools>,
    pub controls: Arc<SessionControls>,
    pub guard: Arc<LoopGuard>,
    /// The session's slash commands (templates, skills, built-ins).
    pub commands: SessionCommands,
    pub compactor: Arc<Compactor>,
    /// The commands' sandbox; the permission gate asks through it.
    pub sandbox: Arc<crate::sandbox::Sandbox>,
    /// Where the model list of the config options comes from.
    pub env: EnvSource,
    /// Whether its MCP servers' prompts are followed already (once per session).
    pub(super) following_commands: std::sync::atomic::AtomicBool,
    /// The approval gate of its tool calls.
    pub gate: Arc<ApprovalGate>,
    mode: Mutex<Mode>,
    record: SharedRecord,
    turn: Mutex<Turn>,
    translator: Mutex<Translator>,
    /// Where its updates are queued (chunks merged).
    updates: Updates,
    /// The text of the file an allowed `edit`/`write` is about to change, by tool call id.
    before: Mutex<HashMap<String, (PathBuf, Option<String>)>>,
    idle: watch::Sender<bool>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What the session's loop is given by the modules above it: the approval gate's hook
/// (`acp::permission`) and the run's preparation (`acp::trust`), made for the session being built.
pub struct SessionHooks {
    pub before_tool_call: fn(Weak<AcpSession>) -> BeforeToolCallHook,
    /// Made with the preparation the session already has, to run after it.
    pub prepare_run: fn(Weak<AcpSession>, Option<PrepareRunHook>) -> PrepareRunHook,
}

impl AcpSession {
    /// Builds the session's agent with the ACP approval hook and the listener that shows its
    /// events as `session/update`s.
    pub fn create(
        link: Arc<SessionLink>,
        session: AssembledSession,
        env: EnvSource,
        hooks: SessionHooks,
    ) -> Arc<AcpSession> {
        let AssembledSession {
            options,
            record,
            workspace,
            tools,
            controls,
            guard,
            compactor,
            commands,
            sandbox,
            gate,
            ..
        } = session;
        let id = lock(&record).id().to_owned();
        Arc::new_cyclic(|weak: &Weak<AcpSession>| {
            let mut options = options;
            let prepare_run = (hooks.prepare_run)(weak.clone(), options.hooks.prepare_run.take());
            options.hooks = AgentHooks {
                before_tool_call: Some((hooks.before_tool_call)(weak.clone())),
                prepare_run: Some(prepare_run),
                ..options.hooks
            };
            let agent = Agent::new(options);
            // Threshold and overflow compactions replace this agent's transcript; ACP v1 has
            // no compaction update, so each one that ends is told as an agent message of its own.
            compactor.attach(&agent);
            let shown = weak.clone();
            compactor.observe(move |event| {
                tracing::info!(?event, "compaction");
                if let Some(session) = shown.upgrade() {
                    session.show_compaction(event);
                }
            });
            let listener = weak.clone();
            agent.subscribe(Arc::new(move |event, _cancel| {
                let session = listener.clone();
                Box::pin(async move {
                    if let Some(session) = session.upgrade() {
                        session.forward(&event).await;
                    }
                    Ok(())
                })
            }));
            let updates = Updates::new(link.out.output().clone(), &id);
            AcpSession {
                id,
                agent,
                out: link.out.clone(),
                link,
                workspace,
                tools,
                controls,
                guard,
                commands,
                compactor,
                sandbox,
                env,
                following_commands: Default::default(),
                gate,
                mode: Mutex::new(Mode::Default),
                record,
                turn: Mutex::default(),
                translator: Mutex::default(),
                updates,
                before: Mutex::default(),
                idle: watch::channel(true).0,
            }
        })
    }

    pub fn look(&self) -> ToolLook<'_> {
        ToolLook {
            tools: &self.tools,
            workspace: &*self.workspace,
        }
    }

    pub fn mode(&self) -> Mode {
        *lock(&self.mode)
    }

    pub fn set_mode(&self, mode: Mode) {
        *lock(&self.mode) = mode;
    }

    /// The session file as the journal's review reads and appends to it.
    pub fn shared_record(&self) -> SharedRecord {
        self.record.clone()
    }

    /// A turn is running.
    pub fn is_running(&self) -> bool {
        lock(&self.turn).running
    }

    pub fn record(&self) -> MutexGuard<'_, SessionFile> {
        lock(&self.record)
    }

    /// Queues one `session/update` of this session.
    pub fn notify(&self, update: acp::SessionUpdate) {
        self.updates.send(update);
    }

    pub(super) fn answer(&self, id: &Id, result: Result<Value, ResponseError>) {
        self.out.output().send(&Response::new(Some(id), result));
    }

    /// `session/prompt`: starts a run, or gives the prompt to the running one as a follow-up.
    /// The response is sent when the turn ends.
    pub fn prompt(self: &Arc<Self>, id: Id, blocks: Vec<ContentBlock>) {
        let message = self.user_message(blocks);
        let mut turn = lock(&self.turn);
        if turn.compacting {
            return self.answer(&id, Err(ResponseError::invalid_params(COMPACTING)));
        }
        if turn.running {
            self.agent.follow_up(message);
            turn.waiting.push_back(id);
            return;
        }
        match self.agent.prompt(vec![message]) {
            Ok(handle) => {
                turn.running = true;
                turn.current = Some(id);
                self.idle.send_replace(false);
                drop(turn);
                self.spawn_finish(handle);
            }
            Err(e) => self.answer(&id, Err(ResponseError::internal(e.to_string()))),
        }
    }

    /// `_agent-lsp/steer`: a message for the running turn, delivered after its current tool
    /// calls. `false` when nothing runs.
    pub fn steer(&self, blocks: Vec<ContentBlock>) -> bool {
        let turn = lock(&self.turn);
        if !turn.running {
            return false;
        }
        self.agent.steer(self.user_message(blocks));
        true
    }

    fn user_message(&self, mut blocks: Vec<ContentBlock>) -> AgentMessage {
        // After the user's words: the session's title stays their first line.
        if self.mode() == Mode::Plan {
            blocks.push(ContentBlock::text(PLAN_NOTE));
        }
        AgentMessage::from(UserMessage {
            content: MessageContent::Blocks(blocks),
            timestamp: now_ms(),
        })
    }

    /// `session/cancel`: aborts the run; its prompts are answered `cancelled` once it settled.
    pub fn cancel(&self) {
        self.agent.abort();
        self.compactor.abort();
    }

    /// Reserves the session for a `/compact`: refused while a turn or another compaction runs.
    pub(super) fn begin_compaction(&self) -> Result<(), ResponseError> {
        let mut turn = lock(&self.turn);
        if turn.running || turn.compacting {
            let busy = if turn.running {
                COMPACT_BUSY
            } else {
                COMPACTING
            };
            return Err(ResponseError::invalid_params(busy));
        }
        turn.compacting = true;
        self.idle.send_replace(false);
        Ok(())
    }

    pub(super) fn end_compaction(&self) {
        lock(&self.turn).compacting = false;
        self.idle.send_replace(true);
    }

    pub async fn wait_idle(&self) {
        let mut rx = self.idle.subscribe();
        let _ = rx.wait_for(|idle| *idle).await;
    }

    fn spawn_finish(self: &Arc<Self>, handle: RunHandle) {
        let session = self.clone();
        tokio::spawn(async move { session.finish(handle).await });
    }

    /// After the run's `agent_end` (every update already queued): answers its prompt, then
    /// delivers follow-ups that came too late for it as a run of their own.
    async fn finish(self: Arc<Self>, handle: RunHandle) {
        let outcome = handle.wait().await;
        // A call that never reached its end event (the run failed around it) keeps no view.
        self.link.views.close_all();
        let stopped_by_guard = self.guard.take_stop().is_some();
        let result = stop_result(&outcome, stopped_by_guard);
        let mut turn = lock(&self.turn);
        if let Some(id) = turn.current.take() {
            self.answer(&id, result.clone());
        }
        if outcome.aborted {
            self.agent.clear_all_queues();
            for id in std::mem::take(&mut turn.waiting) {
                self.answer(&id, result.clone());
            }
        } else if !turn.waiting.is_empty() && self.agent.has_queued_messages() {
            match self.agent.continue_run() {
                Ok(handle) => {
                    drop(turn);
                    self.spawn_finish(handle);
                    return;
                }
                Err(e) => {
                    for id in std::mem::take(&mut turn.waiting) {
                        self.answer(&id, Err(ResponseError::internal(e.to_string())));
                    }
                }
            }
        }
        turn.running = false;
        drop(turn);
        self.idle.send_replace(true);
    }

    /// The listener: persist, hand over to a follow-up the run took, then show the event.
    async fn forward(&self, event: &Arc<AgentEvent>) {
        match event.as_ref() {
            AgentEvent::MessageEnd { message } => self.persist(message),
            AgentEvent::MessageStart {
                message: AgentMessage::User(_),
            } => {
                self.take_follow_ups();
            }
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                result,
                is_error,
                ..
            } => {
                let diff = self.diff_of(tool_call_id, *is_error).await;
                let terminal = self.link.terminal_of(tool_call_id);
                let update = updates::finished(tool_call_id, &result.content, *is_error, diff);
                self.notify(updates::with_terminal(update, terminal));
                return;
            }
            _ => {}
        }
        let model = match event.as_ref() {
            AgentEvent::MessageEnd {
                message: AgentMessage::Assistant(a),
            } => self.controls.model_of(a),
            _ => self.controls.model(),
        };
        let shown = lock(&self.translator).updates(event, &self.look(), &model);
        for update in shown {
            self.notify(update);
        }
    }

    /// Follow-ups the run took since the last look: each answers the prompt before it.
    fn take_follow_ups(&self) {
        let mut turn = lock(&self.turn);
        let (_, queued) = self.agent.queued_lens();
        while turn.waiting.len() > queued {
            if let Some(id) = turn.current.take() {
                self.answer(&id, Ok(stop_value(acp::StopReason::EndTurn)));
            }
            turn.current = turn.waiting.pop_front();
        }
    }

    /// Before an allowed `edit`/`write` runs: the file's text now, for the diff after it. The
    /// call sees the file through one view from here to its end ([`CallViews`]).
    ///
    /// [`CallViews`]: crate::acp::client::CallViews
    pub async fn remember_before(&self, id: &str, tool: &str, args: &Value) {
        let path =
            (args.get("path").and_then(Value::as_str)).and_then(|p| self.workspace.resolve(p).ok());
        if let (Some(path), true) = (path, tool == "edit" || tool == "write") {
            self.link.views.open(id, &path);
        }
        if let Some(before) = crate::acp::texts::current_text(&*self.workspace, tool, args).await {
            lock(&self.before).insert(id.to_owned(), before);
        }
    }

    async fn diff_of(&self, id: &str, is_error: bool) -> Option<acp::Diff> {
        let before = lock(&self.before).remove(id);
        let now = match (&before, is_error) {
            (Some((path, _)), false) => self.workspace.read(path.clone()).await.ok(),
            _ => None,
        };
        self.link.views.close(id);
        let ((path, old), now) = (before?, now?);
        Some(updates::diff(
            &path,
            old,
            crate::acp::texts::lf_text(&now.bytes),
        ))
    }

    /// Appends a finished message to the session file (an assistant's priced by its model); a
    /// failure is logged, not fatal.
    fn persist(&self, message: &AgentMessage) {
        let priced = crate::model_registry::priced(message, |a| self.controls.model_of(a));
        let appended = self.record().append_message(&priced);
        if matches!(message, AgentMessage::User(_)) {
            self.announce_title();
        }
        if let Err(e) = appended {
            tracing::warn!(session = self.id, %e, "cannot record the session");
        }
    }
}

impl AcpSession {
    /// `session_info_update` with the title once the first prompt is recorded (the session's
    /// name, else that prompt's first line, as `session/list` shows it).
    fn announce_title(&self) {
        let title = {
            let record = self.record();
            if record.message_count() != 1 {
                return;
            }
            record.name().or_else(|| {
                record.messages().iter().find_map(|m| match m {
                    AgentMessage::User(u) => first_line(&u.content),
                    _ => None,
                })
            })
        };
        if let Some(title) = title {
            self.notify(acp::SessionUpdate::SessionInfoUpdate(
                acp::SessionInfoUpdate::new().title(title),
            ));
        }
    }
}

/// As `session/list` titles a session without a name.
fn first_line(content: &MessageContent) -> Option<String> {
    let text = content.to_text();
    text.lines()
        .next()
        .map(str::to_owned)
        .filter(|l| !l.is_empty())
}

pub(super) fn stop_value(reason: acp::StopReason) -> Value {
    serde_json::to_value(acp::PromptResponse::new(reason)).unwrap_or_default()
}

/// The prompt's answer: the stop reason of the run, or its error.
fn stop_result(outcome: &RunOutcome, stopped_by_guard: bool) -> Result<Value, ResponseError> {
    let last = outcome.new_messages.iter().rev().find_map(|m| match m {
        AgentMessage::Assistant(a) => Some(a),
        _ => None,
    });
    let refused = last.is_some_and(|a| {
        a.stop_reason == StopReason::Error
            && matches!(
                a.raw_stop_reason.as_deref(),
                Some("refusal" | "content_filter" | "sensitive")
            )
    });
    let reason = if outcome.aborted {
        acp::StopReason::Cancelled
    } else if stopped_by_guard {
        acp::StopReason::MaxTurnRequests
    } else if refused {
        acp::StopReason::Refusal
    } else if let Some(error) = &outcome.error {
        return Err(ResponseError::internal(error.clone()));
    } else if last.is_some_and(|a| a.stop_reason == StopReason::Length) {
        acp::StopReason::MaxTokens
    } else {
        acp::StopReason::EndTurn
    };
    Ok(stop_value(reason))
}
