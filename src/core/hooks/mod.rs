//! A session's hooks: which of the configured hooks run (`hooks::config`, the project's only once
//! trusted), running the matching ones of an event in parallel, and telling what each did.
//!
//! Each event is fired from where it happens, and its answer acts there: `tool.rs`
//! (`PreToolUse` before the approval gate, `PostToolUse` after a call), `prompt.rs`
//! (`UserPromptSubmit` before a prompt reaches the agent, `SessionStart`'s context),
//! `turn.rs` (`Stop`: the agent goes on with the hook's reason), `lifecycle.rs` (`SessionEnd`,
//! `PreCompact`, `Notification`, `SubagentStop`) and `trust.rs` (the project's hooks). Every
//! hook that ran is shown as a [`HookRun`] (the front ends' `hook` event), and one that decided
//! something (blocked, denied, allowed, asked, added context, failed, timed out) is recorded in
//! the session file as a pi `custom` entry `agent-lsp.hook`.
//!
//! A hook's input is Claude Code's: `session_id`, `transcript_path` (the session file, pi's
//! JSONL; `null` when kept in memory), `cwd`, `hook_event_name`, then the event's own fields.
//! Identical commands of one event run once; each has its own timeout; a failing, hanging or
//! missing hook is an `error` or `timeout` event and the work goes on.

pub mod lifecycle;
mod prompt;
pub mod tool;
pub mod trust;
mod turn;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use futures_util::future::join_all;
use serde::Serialize;
use serde_json::{Map, Value, json};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::agent::handle::WeakAgent;
use crate::agent::hooks::{CallbackError, HookFuture};
use crate::agent::message::UserMessage;
use crate::core::compaction::SharedRecord;
use crate::core::controls::SessionControls;
use crate::core::mcp::SessionTools;
use crate::hooks::command::{self, Invocation, Ran};
use crate::hooks::config::{self, HookCommand, HookEvent, SettingsHooks};
use crate::hooks::output::{Outcome, Said, interpret};
use crate::hooks::trust::ProjectTrust;
use crate::mcp::trust::{SessionTrust, Trust};
use crate::model_registry::EnvSource;
use crate::store::EntryKind;

/// The session file's `customType` of a hook's record.
pub const HOOK_ENTRY: &str = "agent-lsp.hook";

/// One hook that ran (the `hook` event; its record in the session file).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HookRun {
    pub event: HookEvent,
    /// The command as configured.
    pub hook: String,
    pub outcome: Outcome,
    /// Its reason, error or `systemMessage`, for the user.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    pub duration_ms: u64,
    /// The tool call it was about (`PreToolUse`, `PostToolUse`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// The context it gave the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub additional_context: Option<String>,
}

impl HookRun {
    /// Whether it decided something worth a record (anything but a plain, silent run).
    pub fn decided(&self) -> bool {
        self.outcome != Outcome::Continue
            || self.message.is_some()
            || self.additional_context.is_some()
    }

    /// One line for people: `PreToolUse hook `check.sh` denied: no rm -rf`.
    pub fn summary(&self) -> String {
        let did = match self.outcome {
            Outcome::Allow => "allowed the call",
            Outcome::Deny => "denied the call",
            Outcome::Ask => "asks the user",
            Outcome::Block => "blocked",
            Outcome::Continue if self.additional_context.is_some() => "added context",
            Outcome::Continue => "ran",
            Outcome::Error => "failed",
            Outcome::Timeout => "timed out",
        };
        let mut line = format!("{} hook `{}` {did}", self.event, self.hook);
        if let Some(message) = &self.message {
            line.push_str(": ");
            line.push_str(message);
        }
        line
    }
}

type Observer = Arc<dyn Fn(&HookRun) + Send + Sync>;

/// What a session's hooks need of it.
pub struct HookParts<'a> {
    pub cwd: PathBuf,
    pub session_id: String,
    pub record: SharedRecord,
    pub env: &'a EnvSource,
    pub tools: Arc<SessionTools>,
    pub controls: Arc<SessionControls>,
    /// A resumed (or forked) session: `SessionStart`'s `source` is `resume`.
    pub resumed: bool,
}

/// One event firing: what the hooks' matchers see and what they get besides the common fields.
struct Firing<'a> {
    event: HookEvent,
    /// The names a matcher is tried on (a tool's Claude Code name and ours, a source, a type).
    names: Vec<&'a str>,
    fields: Map<String, Value>,
    tool_call_id: Option<&'a str>,
    /// Appended to the message of a hook that blocks (why its block is not honoured).
    note: Option<String>,
}

impl<'a> Firing<'a> {
    /// `event`, matched on `names`, with `fields` besides the common ones (in this order): not
    /// about a tool call, no note.
    fn new(
        event: HookEvent,
        names: &[&'a str],
        fields: impl IntoIterator<Item = (&'static str, Value)>,
    ) -> Firing<'a> {
        Firing {
            event,
            names: names.to_vec(),
            fields: (fields.into_iter())
                .map(|(name, value)| (name.to_owned(), value))
                .collect(),
            tool_call_id: None,
            note: None,
        }
    }
}

/// A session's hooks.
pub struct SessionHooks {
    /// Every configured hook, the user's and the project's.
    hooks: Vec<HookCommand>,
    /// `disableAllHooks` in a settings file.
    disabled: bool,
    problems: Vec<String>,
    project: ProjectTrust,
    /// What is remembered for the project's hooks, and whether the question is open.
    trust: SessionTrust,
    /// `agent-lsp run --trust-project-hooks`: trusted for this session, not remembered.
    trusted_now: AtomicBool,
    cwd: PathBuf,
    session_id: String,
    record: SharedRecord,
    tools: Arc<SessionTools>,
    controls: Arc<SessionControls>,
    resumed: bool,
    observer: Mutex<Option<Observer>>,
    agent: OnceLock<WeakAgent>,
    /// Context for the model that waits for the next prompt (`SessionStart`'s).
    pending: Mutex<Vec<String>>,
    /// `true` while no `SessionStart` hook runs.
    started: watch::Sender<bool>,
    /// The run's continuations for `Stop` hooks in a row.
    stop_streak: AtomicUsize,
    /// The message a `Stop` hook's block gives the agent at its next turn.
    continuation: Mutex<Option<Arc<UserMessage>>>,
    /// The user messages hooks made (not the user's: recorded without a reserved id).
    made: Mutex<Vec<Arc<UserMessage>>>,
    /// `SessionEnd` ran (or runs: a second closing waits for the first's hooks).
    ended: tokio::sync::OnceCell<()>,
}

/// A hook of the agent loop that may decide something (`afterToolCall`, `finishTurn`,
/// `prepareNextTurn`): its input and the cancel token in, `None` when it decides nothing.
type LoopHook<C, R> = Arc<dyn Fn(C, CancellationToken) -> HookFuture<Option<R>> + Send + Sync>;

impl SessionHooks {
    /// The loop hook that runs `inner` (the one already there) first, then `then` with the same
    /// input and what `inner` decided; `inner` alone when no hook of `event` is configured.
    fn after_inner<C, R, Then, Fut>(
        self: &Arc<Self>,
        event: HookEvent,
        inner: Option<LoopHook<C, R>>,
        then: Then,
    ) -> Option<LoopHook<C, R>>
    where
        C: Clone + Send + 'static,
        R: Send + 'static,
        Then: Fn(Arc<SessionHooks>, C, Option<R>, CancellationToken) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Option<R>, CallbackError>> + Send + 'static,
    {
        if !self.configured(event) {
            return inner;
        }
        let hooks = self.clone();
        let then = Arc::new(then);
        Some(Arc::new(move |input: C, cancel: CancellationToken| {
            let (hooks, inner, then) = (hooks.clone(), inner.clone(), then.clone());
            Box::pin(async move {
                let decided = match &inner {
                    Some(inner) => inner(input.clone(), cancel.clone()).await?,
                    None => None,
                };
                then(hooks, input, decided, cancel).await
            })
        }))
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl SessionHooks {
    /// The hooks configured for the session's directory (none for a session of the tests and
    /// the demo: no configuration folder, and a project whose trust nobody can remember).
    pub fn new(parts: HookParts<'_>) -> SessionHooks {
        let config_dir = parts.env.config_dir();
        let (files, problems) = config::load(&parts.cwd, config_dir.as_deref());
        SessionHooks::of(parts, files, problems)
    }

    fn of(parts: HookParts<'_>, files: Vec<SettingsHooks>, problems: Vec<String>) -> Self {
        let project = ProjectTrust::new(parts.env, &parts.cwd, &files);
        let remembered = project.remembered();
        SessionHooks {
            disabled: files.iter().any(|f| f.disable_all),
            hooks: files.into_iter().flat_map(|f| f.hooks).collect(),
            problems,
            project,
            trust: SessionTrust::new(remembered),
            trusted_now: AtomicBool::new(false),
            cwd: parts.cwd,
            session_id: parts.session_id,
            record: parts.record,
            tools: parts.tools,
            controls: parts.controls,
            resumed: parts.resumed,
            observer: Mutex::new(None),
            agent: OnceLock::new(),
            pending: Mutex::new(Vec::new()),
            started: watch::channel(true).0,
            stop_streak: AtomicUsize::new(0),
            continuation: Mutex::new(None),
            made: Mutex::new(Vec::new()),
            ended: tokio::sync::OnceCell::new(),
        }
    }

    /// What could not be used in the settings files, one line each.
    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    /// Tells `observer` of every hook that ran (the front end's event).
    pub fn observe(&self, observer: impl Fn(&HookRun) + Send + Sync + 'static) {
        *lock(&self.observer) = Some(Arc::new(observer));
    }

    /// The session's agent (whether messages wait in its queues, at `Stop`).
    pub fn attach(&self, agent: &crate::agent::Agent) {
        let _ = self.agent.set(agent.downgrade());
    }

    /// Whether any hook is configured for `event` (trusted or not): where none is, the
    /// session's path stays as it is without hooks.
    fn configured(&self, event: HookEvent) -> bool {
        !self.disabled && self.hooks.iter().any(|h| h.event == event)
    }

    /// The hooks of `event` that run now and match `names`, identical commands once.
    fn matching(&self, event: HookEvent, names: &[&str]) -> Vec<&HookCommand> {
        if self.disabled {
            return Vec::new();
        }
        let trusted = self.project_trusted();
        let mut chosen: Vec<&HookCommand> = Vec::new();
        for hook in &self.hooks {
            let runs = hook.event == event
                && (trusted || !hook.source.is_project())
                && hook.matcher.matches(names)
                && !chosen.iter().any(|c| c.command == hook.command);
            if runs {
                chosen.push(hook);
            }
        }
        chosen
    }

    /// The input every hook of an event gets: the common fields, then the event's.
    fn input(&self, event: HookEvent, fields: Map<String, Value>) -> Vec<u8> {
        let transcript = lock(&self.record).path().map(|p| p.display().to_string());
        let mut input = json!({
            "session_id": self.session_id,
            "transcript_path": transcript,
            "cwd": self.cwd.display().to_string(),
            "hook_event_name": event.name(),
        });
        if let Value::Object(input) = &mut input {
            input.extend(fields);
        }
        input.to_string().into_bytes()
    }

    /// Runs the matching hooks of an event in parallel (each to its end or its timeout, or
    /// until `cancel`), tells and records each, and returns what they said in the order they
    /// are configured.
    async fn fire(&self, firing: Firing<'_>, cancel: &CancellationToken) -> Vec<Said> {
        let hooks = self.matching(firing.event, &firing.names);
        if hooks.is_empty() {
            return Vec::new();
        }
        let input = self.input(firing.event, firing.fields.clone());
        let env = [("AGENT_LSP_SESSION_ID".to_owned(), self.session_id.clone())];
        let runs = hooks.iter().map(|hook| {
            let invocation = Invocation {
                command: &hook.command,
                input: &input,
                project: &self.cwd,
                env: &env,
                timeout: hook.timeout,
            };
            command::run(invocation, cancel)
        });
        let ran: Vec<Ran> = join_all(runs).await;
        (hooks.iter().zip(ran))
            .map(|(hook, ran)| {
                let said = interpret(firing.event, &ran);
                self.tell(&firing, hook, &said, &ran);
                said
            })
            .collect()
    }

    /// Shows and (when it decided something) records one hook's run.
    fn tell(&self, firing: &Firing<'_>, hook: &HookCommand, said: &Said, ran: &Ran) {
        let note = firing.note.as_deref().filter(|_| said.blocks());
        let message = [said.reason.as_deref(), said.system_message.as_deref(), note]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join("\n");
        let run = HookRun {
            event: firing.event,
            hook: hook.command.clone(),
            outcome: said.outcome,
            message: (!message.is_empty()).then_some(message),
            duration_ms: ran.duration.as_millis() as u64,
            tool_call_id: firing.tool_call_id.map(str::to_owned),
            additional_context: said.context.clone(),
        };
        if run.outcome == Outcome::Error || run.outcome == Outcome::Timeout {
            tracing::warn!(event = %run.event, hook = run.hook, message = ?run.message, "a hook failed");
        }
        if run.decided() {
            let entry = EntryKind::Custom {
                custom_type: HOOK_ENTRY.into(),
                data: serde_json::to_value(&run).ok(),
            };
            if let Err(e) = lock(&self.record).append(entry) {
                tracing::warn!(%e, "cannot record a hook's decision");
            }
        }
        let observer = lock(&self.observer).clone();
        if let Some(observer) = observer {
            observer(&run);
        }
    }

    /// Whether the project's hooks run: allowed (remembered) or trusted for this session.
    fn project_trusted(&self) -> bool {
        self.trusted_now.load(std::sync::atomic::Ordering::Acquire)
            || self.trust.trust() == Trust::Allowed
    }
}

/// The blocks' reasons, one per line.
fn reasons(said: &[Said], blocking: impl Fn(&Said) -> bool) -> Option<String> {
    let reasons: Vec<&str> = (said.iter())
        .filter(|s| blocking(s))
        .map(|s| s.reason.as_deref().unwrap_or("(no reason given)"))
        .collect();
    (!reasons.is_empty()).then(|| reasons.join("\n"))
}
