//! One ACP session: the core [`Session`] with ACP's part ([`AcpView`]): the prompts waiting for
//! their answer, the mode, the translator of loop events into `session/update`s and the files
//! allowed edits are about to change. How ACP decides, asks and shows is in `view.rs`.
//!
//! **Ordering:** every update is queued on the connection's one ordered output as the session
//! shows its events, and a prompt is answered as the session shows its run settled — so every
//! `session/update` of a turn precedes its response.
//!
//! **Follow-ups:** a `session/prompt` that arrives while a run is going is given to the run as
//! pi's follow-up. When the run takes it, the prompt before it is answered `end_turn`; the last
//! one is answered when the run settles.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use agent_client_protocol_schema::v1 as acp;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::acp::chunks::Updates;
use crate::acp::client::SessionLink;
use crate::acp::updates::{self, ToolLook, Translator};
use crate::agent::RunOutcome;
use crate::agent::message::{AgentMessage, ContentBlock, MessageContent, StopReason};
use crate::core::session::{QueueKind, Refusal, Session};
use crate::core::{TodoItem, TodoStatus};
use crate::model_registry::EnvSource;
use crate::rpc::jsonrpc::{Id, Response, ResponseError};
use crate::rpc::outgoing::{Outgoing, RequestError};

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

/// An unanswered `session/prompt`.
struct Prompt {
    /// The id its message is recorded under.
    message_id: String,
    id: Id,
    /// The run took its message (it is the one answered next).
    delivered: bool,
}

/// How long a permission request or a question waits for the user.
pub(super) const ASK_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

/// What a prompt gets while a `/compact` runs.
pub(super) const COMPACTING: &str =
    "a compaction (/compact) is running in this session: send the prompt after its answer";

/// What `/compact` gets while a turn runs.
pub(super) const COMPACT_BUSY: &str =
    "cannot compact while a turn is running: cancel it or wait for its answer";

/// An ACP session.
pub type AcpSession = Session<AcpView>;

/// What ACP keeps of a session besides the core.
pub struct AcpView {
    pub out: Outgoing,
    pub(super) link: Arc<SessionLink>,
    /// Where the model list of the config options comes from.
    pub env: EnvSource,
    /// Whether its MCP servers' prompts are followed already (once per session).
    pub(super) following_commands: AtomicBool,
    mode: Mutex<Mode>,
    /// Unanswered prompts, in order.
    prompts: Mutex<VecDeque<Prompt>>,
    pub(super) translator: Mutex<Translator>,
    /// Where its updates are queued (chunks merged).
    updates: Updates,
    /// The text of the file an allowed `edit`/`write` is about to change, by tool call id.
    before: Mutex<HashMap<String, (PathBuf, Option<String>)>>,
    /// The last update of each background job that changed between turns, by job id: sent when
    /// the next turn opens (an update belongs to a request of its session).
    held_jobs: Mutex<Vec<(String, acp::SessionUpdate)>>,
    /// The steps of each running `task` call's subagent.
    pub(super) children: crate::acp::subagent::ChildSteps,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl AcpView {
    pub fn new(link: Arc<SessionLink>, session_id: &str, env: EnvSource) -> AcpView {
        AcpView {
            out: link.out.clone(),
            updates: Updates::new(link.out.output().clone(), session_id),
            link,
            env,
            following_commands: AtomicBool::default(),
            mode: Mutex::new(Mode::Default),
            prompts: Mutex::default(),
            translator: Mutex::default(),
            before: Mutex::default(),
            held_jobs: Mutex::default(),
            children: Default::default(),
        }
    }

    /// Queues one `session/update` of this session.
    pub fn notify(&self, update: acp::SessionUpdate) {
        self.updates.send(update);
    }

    pub(super) fn answer(&self, id: &Id, result: Result<Value, ResponseError>) {
        self.out.output().send(&Response::new(Some(id), result));
    }

    /// Whether a turn is open: an update belongs to a request of its session.
    pub(super) fn in_turn(&self) -> bool {
        !lock(&self.prompts).is_empty()
    }

    /// A background job's update: sent while a turn is open, else held for the next one (only
    /// its latest is kept). Decided under the prompts' lock, which a prompt's opening takes too.
    pub(super) fn job_update(&self, job_id: &str, update: acp::SessionUpdate) {
        let prompts = lock(&self.prompts);
        if !prompts.is_empty() {
            self.notify(update);
            return;
        }
        let mut held = lock(&self.held_jobs);
        held.retain(|(id, _)| id != job_id);
        held.push((job_id.to_owned(), update));
    }

    /// The run took the message `message_id`: the prompts it took before are answered
    /// `end_turn`.
    pub(super) fn delivered(&self, message_id: &str) {
        let mut prompts = lock(&self.prompts);
        let Some(at) = prompts.iter().position(|p| p.message_id == message_id) else {
            return;
        };
        let mut kept = VecDeque::new();
        for (i, prompt) in prompts.drain(..).enumerate() {
            if i < at && prompt.delivered {
                self.answer(&prompt.id, Ok(stop_value(acp::StopReason::EndTurn)));
            } else {
                kept.push_back(prompt);
            }
        }
        kept.iter_mut()
            .filter(|p| p.message_id == message_id)
            .for_each(|p| p.delivered = true);
        *prompts = kept;
    }

    /// The run settled: the prompt it answered gets its stop reason, and after an abort so do
    /// the ones still queued (dropped with their queue).
    pub(super) fn settled(&self, outcome: &RunOutcome, stopped_by_guard: bool) {
        let result = stop_result(outcome, stopped_by_guard);
        let mut prompts = lock(&self.prompts);
        prompts.retain(|prompt| {
            let answered = prompt.delivered || outcome.aborted;
            if answered {
                self.answer(&prompt.id, result.clone());
            }
            !answered
        });
    }

    /// Before an allowed `edit`/`write` runs: the file's text now, for the diff after it. The
    /// call sees the file through one view from here to its end ([`CallViews`]).
    ///
    /// [`CallViews`]: crate::acp::client::CallViews
    pub async fn remember_before(&self, session: &AcpSession, id: &str, tool: &str, args: &Value) {
        let workspace = &session.workspace;
        let path =
            (args.get("path").and_then(Value::as_str)).and_then(|p| workspace.resolve(p).ok());
        if let (Some(path), true) = (path, tool == "edit" || tool == "write") {
            self.link.views.open(id, &path);
        }
        if let Some(before) = crate::acp::texts::current_text(&**workspace, tool, args).await {
            lock(&self.before).insert(id.to_owned(), before);
        }
    }

    /// After an `edit`/`write`: the whole-file diff from the text kept before it.
    pub(super) async fn diff_of(
        &self,
        session: &AcpSession,
        id: &str,
        is_error: bool,
    ) -> Option<acp::Diff> {
        let before = lock(&self.before).remove(id);
        let now = match (&before, is_error) {
            (Some((path, _)), false) => session.workspace.read(path.clone()).await.ok(),
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
}

impl AcpSession {
    pub fn look(&self) -> ToolLook<'_> {
        ToolLook {
            tools: &self.tools,
            workspace: &*self.workspace,
        }
    }

    pub fn mode(&self) -> Mode {
        *lock(&self.view.mode)
    }

    pub fn set_mode(&self, mode: Mode) {
        *lock(&self.view.mode) = mode;
    }

    /// Queues one `session/update` of this session.
    pub fn notify(&self, update: acp::SessionUpdate) {
        self.view.notify(update);
    }

    /// The model's plan as ACP's `plan` update (every entry, as the spec asks; priority is not
    /// something `todo_write` knows, so each is `medium`).
    pub fn show_plan(&self, todos: &[TodoItem]) {
        let entries = (todos.iter())
            .map(|item| {
                let status = match item.status {
                    TodoStatus::Pending => acp::PlanEntryStatus::Pending,
                    TodoStatus::InProgress => acp::PlanEntryStatus::InProgress,
                    TodoStatus::Completed => acp::PlanEntryStatus::Completed,
                };
                acp::PlanEntry::new(&item.content, acp::PlanEntryPriority::Medium, status)
            })
            .collect();
        self.notify(acp::SessionUpdate::Plan(acp::Plan::new(entries)));
    }

    pub(super) fn answer(&self, id: &Id, result: Result<Value, ResponseError>) {
        self.view.answer(id, result);
    }

    /// `session/request_permission` about `call`, waiting as long as a user may take.
    pub(super) async fn request_permission(
        &self,
        call: acp::ToolCallUpdate,
        options: Vec<acp::PermissionOption>,
        cancel: &CancellationToken,
    ) -> Result<acp::RequestPermissionResponse, RequestError> {
        let request = acp::RequestPermissionRequest::new(self.id.clone(), call, options);
        let method = "session/request_permission";
        (self.view.out)
            .request(method, request, ASK_TIMEOUT, cancel)
            .await
    }

    /// `session/prompt`: starts a run, or gives the prompt to the running one as a follow-up.
    /// The response is sent when the turn ends.
    pub fn prompt(self: &Arc<Self>, id: Id, blocks: Vec<ContentBlock>) {
        let blocks = self.with_mode_note(blocks);
        // Waiting before the session can take it: its answer never races its registration.
        let message_id = self.reserve_id();
        {
            let mut prompts = lock(&self.view.prompts);
            prompts.push_back(Prompt {
                message_id: message_id.clone(),
                id: id.clone(),
                delivered: false,
            });
            // What the session's jobs did between turns, first in this one.
            for (_, update) in lock(&self.view.held_jobs).drain(..) {
                self.view.notify(update);
            }
        }
        if let Err(e) = self.enqueue_as(QueueKind::FollowUp, blocks, message_id.clone()) {
            lock(&self.view.prompts).retain(|p| p.message_id != message_id);
            let error = match e {
                Refusal::Compacting => ResponseError::invalid_params(COMPACTING),
                other => ResponseError::internal(other.to_string()),
            };
            self.answer(&id, Err(error));
        }
    }

    /// `_agent-lsp/steer`: a message for the running turn, delivered after its current tool
    /// calls. `false` when nothing runs.
    /// Steers the running turn; false, and nothing started, when no turn runs (also one that
    /// ended while this was on its way).
    pub fn steer(self: &Arc<Self>, blocks: Vec<ContentBlock>) -> bool {
        let blocks = self.with_mode_note(blocks);
        self.enqueue_on_run(QueueKind::Steer, blocks).is_some()
    }

    fn with_mode_note(&self, mut blocks: Vec<ContentBlock>) -> Vec<ContentBlock> {
        // After the user's words: the session's title stays their first line.
        if self.mode() == Mode::Plan {
            blocks.push(ContentBlock::text(PLAN_NOTE));
        }
        blocks
    }

    /// `session_info_update` with the title once the first prompt is recorded (the session's
    /// name, else that prompt's first line, as `session/list` shows it).
    pub(super) fn announce_title(&self) {
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
pub(super) fn stop_result(
    outcome: &RunOutcome,
    stopped_by_guard: bool,
) -> Result<Value, ResponseError> {
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
