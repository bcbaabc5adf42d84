//! `bash {command, timeout?, background?}`: runs a shell command in the workspace root, in its
//! own process group, streaming merged stdout+stderr; abort and timeout kill the whole group
//! (SIGTERM, then SIGKILL after a grace). With `background: true` the command becomes one of the
//! session's jobs (`bash_jobs.rs`) and the call returns at once.

use std::time::Duration;

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

use super::args::number;
use super::bash_jobs::{BACKGROUND_ARG, BACKGROUND_NOTE, start_background};
use super::bash_output::OutputBuffer;
use super::common::{self, BashSettings, Call, ToolArgs, ToolContext};
use super::process::{check_cwd, sleep_until, spawn};
use crate::agent::message::ToolDeclaration;
use crate::agent::tool::{AgentToolResult, ExecutionMode, ToolError, ToolUpdater};
use crate::sandbox::jail::SETUP_FAILED_PREFIX;
use crate::sandbox::{self, CallMode, SandboxPolicy};

const DESCRIPTION: &str = "Run a shell command (bash) in the workspace root. stdout and stderr are merged; only the last 2000 lines or 50KB \
are returned, and when output is cut the full output is saved to a file whose path is given (read it with read, or filter it with grep/tail). \
A non-zero exit code is reported as an error together with the output. There is no default timeout: pass timeout (seconds) for commands \
that could hang, and never start interactive programs (stdin is closed). Use it for builds, tests, git and file management; \
prefer read/edit/write/grep/find/ls for reading and changing files.";

const SANDBOX_NOTE: &str = "Commands may run in a sandbox: then they can read everything, but write only inside the \
workspace and $TMPDIR, and network access may be off. When the sandbox refuses something the command needs, the result says so; \
then you may call bash again with sandbox: false and a justification, which asks the user to approve running it unsandboxed.";
const SANDBOX_ARG: &str = "false: ask the user to approve running this command outside the sandbox (only after the sandbox refused it)";

/// Minimum spacing of streamed updates.
pub const UPDATE_INTERVAL: Duration = Duration::from_millis(100);
const MAX_TIMEOUT_SECS: f64 = 2_147_483.647;

/// A `bash` call's arguments.
#[derive(Deserialize)]
pub struct BashArgs {
    pub command: String,
    #[serde(default, deserialize_with = "number")]
    pub timeout: Option<f64>,
    /// Run as a background job of the session; the call returns once it started.
    #[serde(default)]
    pub background: Option<bool>,
    /// Any value, not only a boolean: it is declared only in sandboxed sessions (elsewhere
    /// nothing checks it), and only `false` asks to run outside the sandbox.
    sandbox: Option<Value>,
    /// Shown in the user's approval prompt (`sandbox::Sandbox` reads it from the call); any
    /// value, as for `sandbox`.
    #[serde(rename = "justification")]
    _justification: Option<IgnoredAny>,
}

/// Whether commands run confined (then the model may ask to leave the sandbox).
fn sandboxed(ctx: &ToolContext) -> bool {
    ctx.bash.sandbox.as_ref().is_some_and(|s| s.confines())
}

/// The schema, with the arguments to leave the sandbox when commands run in one.
pub(super) fn parameters(sandboxed: bool) -> Value {
    let mut params = json!({
        "type": "object",
        "required": ["command"],
        "properties": {
            "command": {"type": "string", "description": "The command to run (bash syntax; pipes, &&, redirections allowed)"},
            "timeout": {"type": "number", "description": "Optional timeout in seconds; the command and its children are killed when it expires"},
            "background": {"type": "boolean", "description": BACKGROUND_ARG}
        }
    });
    if sandboxed && let Some(props) = params["properties"].as_object_mut() {
        props.insert(
            "sandbox".into(),
            json!({"type": "boolean", "description": SANDBOX_ARG}),
        );
        props.insert("justification".into(), json!({"type": "string", "description": "With sandbox: false, why the command must run outside the sandbox (shown to the user)"}));
    }
    params
}

impl ToolArgs for BashArgs {
    const NAME: &str = "bash";
    const DESCRIPTION: &str = DESCRIPTION;
    type State = ToolContext;
    /// `None`: the loop's configuration decides.
    const MODE: Option<ExecutionMode> = None;
    /// A cancelled command reports `Command aborted` itself.
    const ABORTS_BEFORE_START: bool = false;

    async fn run(self, ctx: ToolContext, call: Call) -> Result<AgentToolResult, ToolError> {
        let timeout = parse_timeout(self.timeout)?;
        let asks_unsandboxed = self.sandbox == Some(Value::Bool(false));
        let cwd = ctx.ws.root().to_path_buf();
        let mut settings = ctx.bash.clone();
        let mode = match &settings.sandbox {
            Some(sb) => sb
                .call_mode(&call.id, asks_unsandboxed)
                .map_err(ToolError::new)?,
            None => CallMode::Unconfined,
        };
        if !matches!(mode, CallMode::Confined(_)) {
            settings.sandbox = None;
        }
        if self.background == Some(true) {
            if call.cancel.is_cancelled() {
                return Err(ToolError::new("Command aborted"));
            }
            let jobs = &ctx.jobs;
            let (result, policy) =
                start_background(jobs, &settings, &self.command, &cwd, timeout, &call.id)?;
            return Ok(match (mode, policy) {
                (CallMode::Approved, _) => mark_unsandboxed(Ok(result)),
                (_, Some(policy)) => mark_sandboxed(Ok(result), &policy),
                (_, None) => result,
            });
        }
        let result = run_command(
            &settings,
            &self.command,
            &cwd,
            timeout,
            call.cancel,
            call.on_update,
        )
        .await;
        match mode {
            CallMode::Approved => Ok(mark_unsandboxed(result)),
            CallMode::Confined(_) | CallMode::Unconfined => result,
        }
    }

    fn parameters(ctx: &ToolContext) -> Value {
        parameters(sandboxed(ctx))
    }

    /// A sandboxed session's `bash` also says what the sandbox allows.
    fn declaration(ctx: &ToolContext) -> ToolDeclaration {
        let description = if sandboxed(ctx) {
            format!("{DESCRIPTION} {BACKGROUND_NOTE} {SANDBOX_NOTE}")
        } else {
            format!("{DESCRIPTION} {BACKGROUND_NOTE}")
        };
        common::declaration(Self::NAME, &description, Self::parameters(ctx))
    }
}

/// A `timeout` argument, checked: `None` when not given.
pub fn parse_timeout(t: Option<f64>) -> Result<Option<f64>, ToolError> {
    match t {
        None => Ok(None),
        Some(s) if s.is_finite() && s > 0.0 && s <= MAX_TIMEOUT_SECS => Ok(Some(s)),
        Some(s) => Err(ToolError::new(format!(
            "Invalid timeout: {s}. It must be a positive number of seconds, at most {MAX_TIMEOUT_SECS}."
        ))),
    }
}

/// How a run ended.
enum End {
    Exited(std::process::ExitStatus),
    Aborted,
    TimedOut(f64),
}

/// Runs `command` under `settings` in `cwd`: the executor shared by the tool and user `!cmd`.
pub async fn run_command(
    settings: &BashSettings,
    command: &str,
    cwd: &std::path::Path,
    timeout: Option<f64>,
    cancel: CancellationToken,
    on_update: ToolUpdater,
) -> Result<AgentToolResult, ToolError> {
    check_cwd(cwd)?;
    if cancel.is_cancelled() {
        return Err(ToolError::new("Command aborted"));
    }
    let mut spawned = spawn(settings, command, cwd)?;
    let policy = spawned.policy.take();
    let mut buf = vec![0u8; 64 * 1024];

    let spill_dir = settings
        .spill_dir
        .clone()
        .unwrap_or_else(std::env::temp_dir);
    let mut out = OutputBuffer::new(spill_dir);
    let deadline = timeout.map(|s| tokio::time::Instant::now() + Duration::from_secs_f64(s));
    // Updates go out at most every UPDATE_INTERVAL; output that arrived inside a window is sent
    // when the window closes, so a burst followed by silence is still shown.
    let mut last_update: Option<tokio::time::Instant> = None;
    let mut dirty = false;
    let mut open = true;
    let end = loop {
        let flush_at = last_update.map(|t| t + UPDATE_INTERVAL);
        tokio::select! {
            read = spawned.rx.read(&mut buf), if open => match read {
                Ok(n) if n > 0 => {
                    out.push(&buf[..n]);
                    dirty = true;
                    if flush_at.is_none_or(|t| tokio::time::Instant::now() >= t) {
                        send_update(&on_update, &mut out);
                        (last_update, dirty) = (Some(tokio::time::Instant::now()), false);
                    }
                }
                Ok(_) | Err(_) => open = false,
            },
            _ = sleep_until(flush_at), if dirty => {
                send_update(&on_update, &mut out);
                (last_update, dirty) = (Some(tokio::time::Instant::now()), false);
            },
            status = spawned.child.wait() => break match status {
                Ok(s) => End::Exited(s),
                Err(e) => return Err(ToolError::new(format!("Failed to wait for the shell: {e}"))),
            },
            _ = cancel.cancelled() => break End::Aborted,
            _ = sleep_until(deadline) => break End::TimedOut(timeout.unwrap_or_default()),
        }
    };
    let exited = matches!(end, End::Exited(_));
    (spawned.wind_down(exited, &mut buf, open, |chunk| out.push(chunk))).await;
    let result = finish(end, &mut out);
    match policy {
        Some(policy) => Ok(mark_sandboxed(result, &policy)),
        None => result,
    }
}

/// A run the user approved outside the sandbox says so in its details.
fn mark_unsandboxed(result: Result<AgentToolResult, ToolError>) -> AgentToolResult {
    let info = json!({"mode": "off", "approvedByUser": true});
    let mut r = match result {
        Ok(ok) => ok,
        Err(e) => AgentToolResult::error(e.message),
    };
    match r.details.as_mut() {
        Some(Value::Object(map)) => {
            map.insert("sandbox".into(), info);
        }
        _ => r.details = Some(json!({"sandbox": info})),
    }
    r
}

/// A sandboxed run's result says so: `details.sandbox` on every outcome, failures kept as soft
/// errors (so the details reach `tool_execution_end`) with the refusal note when one applies.
fn mark_sandboxed(
    result: Result<AgentToolResult, ToolError>,
    policy: &SandboxPolicy,
) -> AgentToolResult {
    let info = policy.details();
    match result {
        Ok(mut ok) => {
            if let Some(Value::Object(map)) = ok.details.as_mut() {
                map.insert("sandbox".into(), info);
            } else {
                ok.details = Some(json!({"sandbox": info}));
            }
            ok
        }
        Err(e) => {
            let text = match sandbox::refusal_note(policy, &e.message) {
                _ if e.message.contains(SETUP_FAILED_PREFIX) => format!(
                    "{}\n\n(The sandbox could not start the command, so nothing ran.)",
                    e.message
                ),
                Some(note) => format!("{}\n\n{note}", e.message),
                None => format!("{}\n\n(The command ran {}.)", e.message, policy.describe()),
            };
            AgentToolResult {
                details: Some(json!({"sandbox": info})),
                ..AgentToolResult::error(text)
            }
        }
    }
}

fn send_update(on_update: &ToolUpdater, out: &mut OutputBuffer) {
    let (text, details) = out.render();
    on_update.update(AgentToolResult {
        details: Some(details),
        ..AgentToolResult::text(text)
    });
}

fn finish(end: End, out: &mut OutputBuffer) -> Result<AgentToolResult, ToolError> {
    let (text, details) = out.render();
    let with = |suffix: String| {
        if out.total_bytes() == 0 {
            suffix
        } else {
            format!("{text}\n\n{suffix}")
        }
    };
    match end {
        End::Aborted => Err(ToolError::new(with("Command aborted".into()))),
        End::TimedOut(s) => Err(ToolError::new(with(format!(
            "Command timed out after {s} seconds"
        )))),
        End::Exited(status) => match status.code() {
            Some(0) => Ok(AgentToolResult {
                details: Some(details),
                ..AgentToolResult::text(text)
            }),
            Some(code) => Err(ToolError::new(format!(
                "{text}\n\nCommand exited with code {code}"
            ))),
            None => {
                use std::os::unix::process::ExitStatusExt;
                let sig = status.signal().unwrap_or_default();
                Err(ToolError::new(format!(
                    "{text}\n\nCommand was killed by signal {sig}"
                )))
            }
        },
    }
}
