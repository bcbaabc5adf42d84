//! What a hook's exit code and output say, as Claude Code reads them.
//!
//! - Exit 0: stdout may be a JSON object deciding (below); plain text is context for the model
//!   at `UserPromptSubmit` and `SessionStart`, and ignored elsewhere.
//! - Exit 2: blocks (a tool call, a prompt, the agent's stopping), its stderr the reason given
//!   to the model (to the user, for a prompt); where nothing can be blocked it is only shown.
//! - Any other exit, a signal, a timeout, a hook that cannot start: an error, shown, never a
//!   block: a failing hook does not stop the work.
//!
//! JSON fields: `continue: false` (stop: the run ends, `stopReason` shown to the user),
//! `systemMessage` (shown to the user), `suppressOutput` (accepted; stdout is never shown
//! anyway), `decision: "block"` with `reason` (`PostToolUse`, `UserPromptSubmit`, `Stop`,
//! `SubagentStop`; `"approve"`/`"block"` as the old form of `PreToolUse`'s decision), and
//! `hookSpecificOutput` with `permissionDecision` (`allow` | `deny` | `ask`; `defer` is taken as
//! `ask`), `permissionDecisionReason` and `updatedInput` (`PreToolUse`), `additionalContext`
//! (`UserPromptSubmit`, `SessionStart`, `PostToolUse`) and `updatedMCPToolOutput` (`PostToolUse`
//! of an MCP tool).

use serde::Serialize;
use serde_json::Value;

use crate::hooks::command::{End, Ran};
use crate::hooks::config::HookEvent;

/// At most this much of a hook's context reaches the model (Claude Code's bound).
pub const CONTEXT_LIMIT: usize = 10_000;

/// What a hook decided, as the `hook` event names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Outcome {
    /// `PreToolUse`: run the call without asking.
    Allow,
    /// `PreToolUse`: refuse the call.
    Deny,
    /// `PreToolUse`: ask the user, whatever the policy says.
    Ask,
    /// Exit code 2, `decision: "block"` or `continue: false`.
    Block,
    /// Nothing decided (context may have been added).
    Continue,
    Error,
    Timeout,
}

/// What one hook said.
#[derive(Clone, Debug, PartialEq)]
pub struct Said {
    pub outcome: Outcome,
    /// Why: for the model (deny, block) or the user (ask, error, timeout).
    pub reason: Option<String>,
    /// Context for the model.
    pub context: Option<String>,
    /// `continue: false`: stop, with the hook's `stopReason` (possibly empty).
    pub stop: Option<String>,
    /// `PreToolUse`'s `updatedInput`.
    pub updated_input: Option<Value>,
    /// `PostToolUse`'s `updatedMCPToolOutput`.
    pub mcp_output: Option<Value>,
    /// `systemMessage`: for the user.
    pub system_message: Option<String>,
}

impl Said {
    fn of(outcome: Outcome, reason: Option<String>) -> Said {
        Said {
            outcome,
            reason,
            context: None,
            stop: None,
            updated_input: None,
            mcp_output: None,
            system_message: None,
        }
    }

    /// Whether it blocks (a call, a prompt, the agent's stopping).
    pub fn blocks(&self) -> bool {
        matches!(self.outcome, Outcome::Deny | Outcome::Block)
    }
}

fn trimmed(text: &str) -> Option<String> {
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

/// At most [`CONTEXT_LIMIT`] characters.
fn bounded(text: String) -> String {
    match text.char_indices().nth(CONTEXT_LIMIT) {
        Some((at, _)) => format!("{}\n[… cut]", &text[..at]),
        None => text,
    }
}

/// What `ran` says at `event`.
pub fn interpret(event: HookEvent, ran: &Ran) -> Said {
    match &ran.end {
        End::Exited(0) => from_stdout(event, &ran.stdout),
        End::Exited(2) if event.can_block() => {
            let reason = trimmed(&ran.stderr).unwrap_or_else(|| "(the hook gave no reason)".into());
            Said::of(Outcome::Block, Some(reason))
        }
        End::Exited(code) => {
            let why = trimmed(&ran.stderr).unwrap_or_else(|| format!("exit code {code}"));
            Said::of(Outcome::Error, Some(why))
        }
        End::Signalled => Said::of(Outcome::Error, Some("killed by a signal".into())),
        End::Cancelled => Said::of(Outcome::Error, Some("stopped: the run was aborted".into())),
        End::Failed(why) => Said::of(Outcome::Error, Some(why.clone())),
        End::TimedOut => {
            let seconds = ran.duration.as_secs_f64();
            let why = format!("timed out after {seconds:.1} s; its process group was killed");
            Said::of(Outcome::Timeout, Some(why))
        }
    }
}

fn from_stdout(event: HookEvent, stdout: &str) -> Said {
    let text = stdout.trim();
    if !text.starts_with('{') {
        let mut said = Said::of(Outcome::Continue, None);
        if matches!(event, HookEvent::UserPromptSubmit | HookEvent::SessionStart) {
            said.context = trimmed(text).map(bounded);
        }
        return said;
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(json)) => from_json(event, &Value::Object(json)),
        Ok(_) | Err(_) => Said::of(
            Outcome::Error,
            Some("its output starts with `{` but is not a JSON object".into()),
        ),
    }
}

fn from_json(event: HookEvent, json: &Value) -> Said {
    let str_of = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
    let specific = json.get("hookSpecificOutput").unwrap_or(&Value::Null);
    let mut said = Said::of(Outcome::Continue, None);
    said.system_message = str_of(json, "systemMessage").and_then(|m| trimmed(&m));
    let decision = str_of(json, "decision");
    let reason = str_of(json, "reason").and_then(|r| trimmed(&r));
    match event {
        HookEvent::PreToolUse => {
            let permission = str_of(specific, "permissionDecision");
            let (outcome, why) = match (permission.as_deref(), decision.as_deref()) {
                (Some("allow"), _) | (None, Some("approve")) => (Outcome::Allow, None),
                (Some("deny"), _) | (None, Some("block")) => (Outcome::Deny, None),
                (Some("ask" | "defer"), _) => (Outcome::Ask, None),
                (Some(other), _) => (
                    Outcome::Error,
                    Some(format!("unknown permissionDecision \"{other}\"")),
                ),
                (None, _) => (Outcome::Continue, None),
            };
            said.outcome = outcome;
            said.reason = why.or_else(|| {
                str_of(specific, "permissionDecisionReason")
                    .and_then(|r| trimmed(&r))
                    .or(reason.clone())
            });
            said.updated_input = specific
                .get("updatedInput")
                .filter(|v| v.is_object())
                .cloned();
        }
        HookEvent::PostToolUse
        | HookEvent::UserPromptSubmit
        | HookEvent::Stop
        | HookEvent::SubagentStop => {
            if decision.as_deref() == Some("block") {
                said.outcome = Outcome::Block;
                said.reason = reason;
            }
        }
        HookEvent::SessionStart
        | HookEvent::SessionEnd
        | HookEvent::PreCompact
        | HookEvent::Notification => {}
    }
    if matches!(
        event,
        HookEvent::UserPromptSubmit | HookEvent::SessionStart | HookEvent::PostToolUse
    ) {
        said.context = str_of(specific, "additionalContext")
            .and_then(|c| trimmed(&c))
            .map(bounded);
    }
    if event == HookEvent::PostToolUse {
        said.mcp_output = specific.get("updatedMCPToolOutput").cloned();
    }
    if json.get("continue").and_then(Value::as_bool) == Some(false) {
        let why = str_of(json, "stopReason").and_then(|r| trimmed(&r));
        said.stop = Some(why.clone().unwrap_or_default());
        said.outcome = Outcome::Block;
        said.reason = why.or(said.reason);
    }
    said
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    fn ran(code: i32, stdout: &str, stderr: &str) -> Ran {
        Ran {
            end: End::Exited(code),
            stdout: stdout.into(),
            stderr: stderr.into(),
            duration: Duration::from_millis(5),
        }
    }

    #[test]
    fn exit_codes() {
        let blocked = interpret(HookEvent::PreToolUse, &ran(2, "", "no rm -rf\n"));
        assert_eq!(
            (blocked.outcome, blocked.reason.as_deref()),
            (Outcome::Block, Some("no rm -rf"))
        );
        let shown = interpret(HookEvent::Notification, &ran(2, "", "beep"));
        assert_eq!(shown.outcome, Outcome::Error);
        let failed = interpret(HookEvent::PreToolUse, &ran(1, "", ""));
        assert_eq!(
            (failed.outcome, failed.reason.as_deref()),
            (Outcome::Error, Some("exit code 1"))
        );
        let plain = interpret(HookEvent::PreToolUse, &ran(0, "hello", ""));
        assert_eq!((plain.outcome, plain.context), (Outcome::Continue, None));
        let context = interpret(HookEvent::UserPromptSubmit, &ran(0, "it is Tuesday\n", ""));
        assert_eq!(context.context.as_deref(), Some("it is Tuesday"));
        let broken = interpret(HookEvent::Stop, &ran(0, "{nope", ""));
        assert_eq!(broken.outcome, Outcome::Error);
    }

    #[test]
    fn json_decisions() {
        let out = |event, value: Value| interpret(event, &ran(0, &value.to_string(), ""));
        let deny = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
            "permissionDecision": "deny", "permissionDecisionReason": "not here"}});
        let old = json!({"decision": "block", "reason": "old form"});
        let stop = json!({"decision": "block", "reason": "run the tests"});
        for (event, value, outcome, reason) in [
            (HookEvent::PreToolUse, deny, Outcome::Deny, "not here"),
            (HookEvent::PreToolUse, old, Outcome::Deny, "old form"),
            (HookEvent::Stop, stop, Outcome::Block, "run the tests"),
        ] {
            let said = out(event, value);
            assert_eq!(
                (said.outcome, said.reason.as_deref()),
                (outcome, Some(reason))
            );
        }
        let allow = out(
            HookEvent::PreToolUse,
            json!({"hookSpecificOutput": {"permissionDecision": "allow",
            "updatedInput": {"command": "ls -a"}}}),
        );
        assert_eq!(allow.outcome, Outcome::Allow);
        assert_eq!(allow.updated_input, Some(json!({"command": "ls -a"})));
        let ask = out(
            HookEvent::PreToolUse,
            json!({"hookSpecificOutput": {"permissionDecision": "ask"}}),
        );
        assert_eq!(ask.outcome, Outcome::Ask);
        let context = out(
            HookEvent::SessionStart,
            json!({"hookSpecificOutput": {
            "hookEventName": "SessionStart", "additionalContext": "branch main"}, "systemMessage": "hi"}),
        );
        assert_eq!(context.context.as_deref(), Some("branch main"));
        assert_eq!(context.system_message.as_deref(), Some("hi"));
        let halt = out(
            HookEvent::PostToolUse,
            json!({"continue": false, "stopReason": "enough"}),
        );
        assert_eq!(
            (halt.outcome, halt.stop.as_deref()),
            (Outcome::Block, Some("enough"))
        );
        let long = out(
            HookEvent::UserPromptSubmit,
            json!({"hookSpecificOutput": {"additionalContext": "x".repeat(20_000)}}),
        );
        assert!(long.context.unwrap().len() < 10_100);
    }
}
