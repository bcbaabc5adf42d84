//! The one approval gate: whether a tool call runs, for every front end.
//!
//! In order: the front end's standing policy for the call (the daemon's
//! `initializationOptions.approval`, an ACP session's mode, `agent-lsp run --approve`), then the
//! sandbox (an escalation, or a command that would run sandboxed where the sandbox is
//! unavailable, is asked about whatever the policy or an "always" answer says), then the
//! session's "always" answers, and only then the user, asked through the front end ([`Asker`]);
//! the answer is remembered. The words the model reads about it are here, once; a front end
//! words only its own policy and why it could not ask. A `PreToolUse` hook's `allow` or `ask`
//! ([`HookPermission`]) turns the policy's ask into allow, or its allow into ask.
//!
//! "Always" answers are kept per session: per tool name, for `bash` per command prefix, and for
//! `web_fetch` per site (the URL's host, with its port when not the default). A remembered allow
//! never covers a bash command with shell control operators, which could chain anything after
//! an allowed prefix. A call its tool would refuse anyway (a `web_fetch` of a `file:` URL) is
//! refused before anyone is asked. Every failure to get an answer blocks the call with a reason
//! saying why: a tool that must ask is never silently allowed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::agent::hooks::{BeforeToolCallContext, BeforeToolCallResult};
use crate::mcp::config::Policy as McpPolicy;
use crate::mcp::tool::McpToolInfo;
use crate::sandbox::{MustAsk, Sandbox};
use crate::tools;

/// A per-tool policy value (`initializationOptions.approval`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ApprovalPolicy {
    Allow,
    Ask,
    Block,
}

/// The user's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Decision {
    Allow,
    AllowAlways,
    Block,
    BlockAlways,
}

/// What a front end's standing policy says of a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Policy {
    Allow,
    /// Refused, and the words why.
    Block(String),
    Ask,
}

/// What the session's `PreToolUse` hooks said of a call (`core::hooks`): `Allow` skips the
/// question (not a refusal by the policy or a remembered "always" block, nor the sandbox's
/// must-ask); `Ask` asks even where the policy or an "always" answer would allow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HookPermission {
    #[default]
    None,
    Allow,
    Ask,
}

/// The user's answer as the front end got it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub decision: Decision,
    /// Why the user refused; `None` or empty: pi's "Tool execution was blocked".
    pub reason: Option<String>,
    /// End the run after this call.
    pub terminate: bool,
}

impl Answer {
    pub fn of(decision: Decision) -> Answer {
        Answer {
            decision,
            reason: None,
            terminate: false,
        }
    }
}

/// What a front end does for the gate.
pub trait Asker: Send + Sync {
    /// Its standing policy for `tool` with `args`.
    fn policy(&self, tool: &str, args: &Value) -> Policy;

    /// Asks the user about the call (`must_ask`: the sandbox's reason it must); `Err` says why
    /// no answer could be had (no one to ask, a timeout, a disconnect, a cancelled run).
    fn ask<'a>(
        &'a self,
        ctx: &'a BeforeToolCallContext,
        must_ask: Option<&'a MustAsk>,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Answer, String>>;
}

/// A session's approval gate: its "always" answers and its sandbox.
pub struct ApprovalGate {
    memory: Mutex<ApprovalMemory>,
    sandbox: Arc<Sandbox>,
}

impl ApprovalGate {
    pub fn new(sandbox: Arc<Sandbox>) -> ApprovalGate {
        ApprovalGate {
            memory: Mutex::default(),
            sandbox,
        }
    }

    /// Whether the call runs: `None` it does; else the result that blocks it.
    pub async fn decide(
        &self,
        asker: &dyn Asker,
        ctx: &BeforeToolCallContext,
        cancel: &CancellationToken,
    ) -> Option<BeforeToolCallResult> {
        self.decide_with(asker, ctx, cancel, HookPermission::None)
            .await
    }

    /// [`ApprovalGate::decide`] after the session's `PreToolUse` hooks said `hook`.
    pub async fn decide_with(
        &self,
        asker: &dyn Asker,
        ctx: &BeforeToolCallContext,
        cancel: &CancellationToken,
        hook: HookPermission,
    ) -> Option<BeforeToolCallResult> {
        let tool = ctx.tool_call.name.as_str();
        if let Some(reason) = tools::web::refusal(tool, &ctx.args) {
            return Some(blocked(reason));
        }
        let must_ask = self.sandbox.must_ask(tool, &ctx.args);
        let policy = match (asker.policy(tool, &ctx.args), hook) {
            (Policy::Ask, HookPermission::Allow) => Policy::Allow,
            (Policy::Allow, HookPermission::Ask) => Policy::Ask,
            (policy, _) => policy,
        };
        match policy {
            Policy::Allow if must_ask.is_none() => return None,
            Policy::Block(reason) => return Some(blocked(reason)),
            Policy::Allow | Policy::Ask => {}
        }
        match self.memory().recall(tool, &ctx.args) {
            Some(true) if must_ask.is_none() && hook != HookPermission::Ask => return None,
            Some(false) => {
                return Some(blocked(format!(
                    "Tool \"{tool}\" was rejected for this session by the user (an \"always\" \
                     answer): it stays blocked for this session"
                )));
            }
            Some(true) | None => {}
        }
        let answer = match asker.ask(ctx, must_ask.as_ref(), cancel).await {
            Ok(answer) => answer,
            Err(reason) => return Some(blocked(reason)),
        };
        if self.sandbox.may_remember(tool, &ctx.args) {
            self.memory().remember(tool, &ctx.args, answer.decision);
        }
        match answer.decision {
            Decision::Allow | Decision::AllowAlways => {
                self.sandbox.approved(&ctx.tool_call.id, tool, &ctx.args);
                None
            }
            Decision::Block | Decision::BlockAlways => Some(BeforeToolCallResult {
                block: true,
                reason: answer.reason.filter(|r| !r.is_empty()),
                terminate: answer.terminate,
                args: None,
            }),
        }
    }

    fn memory(&self) -> MutexGuard<'_, ApprovalMemory> {
        self.memory.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A call refused with `reason`.
pub fn blocked(reason: String) -> BeforeToolCallResult {
    BeforeToolCallResult {
        block: true,
        reason: Some(reason),
        terminate: false,
        args: None,
    }
}

/// What a policy map (`initializationOptions.approval`: by tool name, then kind, then
/// `default`) says for `tool`; without an entry, read-only tools (and `bash_kill`) are allowed
/// and everything else asks.
pub fn policy_for(config: &HashMap<String, ApprovalPolicy>, tool: &str) -> ApprovalPolicy {
    config
        .get(tool)
        .or_else(|| config.get(tools::tool_kind(tool).as_str()))
        .or_else(|| config.get("default"))
        .copied()
        .unwrap_or(if tools::allowed_by_default(tool) {
            ApprovalPolicy::Allow
        } else {
            ApprovalPolicy::Ask
        })
}

/// An MCP tool's policy: its server entry's `approval`, else the policy map naming the tool,
/// else ask (read-only hints included: they are the server's claim).
pub fn mcp_policy(
    info: &McpToolInfo,
    config: &HashMap<String, ApprovalPolicy>,
    tool: &str,
) -> ApprovalPolicy {
    match info.policy {
        Some(McpPolicy::Allow) => ApprovalPolicy::Allow,
        Some(McpPolicy::Block) => ApprovalPolicy::Block,
        Some(McpPolicy::Ask) => ApprovalPolicy::Ask,
        None => config.get(tool).copied().unwrap_or(ApprovalPolicy::Ask),
    }
}

/// The program plus its first argument unless that is an option: `cargo test`, `ls`.
pub fn command_prefix(command: &str) -> String {
    let mut words = command.split_whitespace();
    let program = words.next().unwrap_or_default();
    match words.next() {
        Some(arg) if !arg.starts_with('-') && is_plain_word(arg) => format!("{program} {arg}"),
        _ => program.to_owned(),
    }
}

fn is_plain_word(word: &str) -> bool {
    word.chars()
        .all(|c| c.is_alphanumeric() || "-_./:=@+".contains(c))
}

/// True when a command chains, pipes, redirects or substitutes.
pub fn has_control_operators(command: &str) -> bool {
    ["&", ";", "|", ">", "<", "`", "$(", "\n"]
        .iter()
        .any(|op| command.contains(op))
}

/// The key "always" answers are stored under.
fn memory_key(tool: &str, args: &Value) -> String {
    match (tool, args.get("command").and_then(|c| c.as_str())) {
        ("bash", Some(command)) => format!("bash:{}", command_prefix(command)),
        (tools::web::WEB_FETCH, _) => {
            let url = args.get("url").and_then(Value::as_str).unwrap_or_default();
            let site = tools::web::site_of(url).unwrap_or_else(|| url.to_owned());
            format!("{tool}:{site}")
        }
        _ => tool.to_owned(),
    }
}

/// A session's remembered "always" answers.
#[derive(Debug, Default)]
pub struct ApprovalMemory {
    remembered: HashMap<String, bool>,
}

impl ApprovalMemory {
    /// `Some(true)` allowed, `Some(false)` blocked, `None` ask.
    pub fn recall(&self, tool: &str, args: &Value) -> Option<bool> {
        let allowed = *self.remembered.get(&memory_key(tool, args))?;
        let chained = args
            .get("command")
            .and_then(|c| c.as_str())
            .is_some_and(has_control_operators);
        if allowed && tool == "bash" && chained {
            return None;
        }
        Some(allowed)
    }

    /// Stores `allowAlways` / `blockAlways`; other decisions are not remembered.
    pub fn remember(&mut self, tool: &str, args: &Value, decision: Decision) {
        let allow = match decision {
            Decision::AllowAlways => true,
            Decision::BlockAlways => false,
            Decision::Allow | Decision::Block => return,
        };
        self.remembered.insert(memory_key(tool, args), allow);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn default_policy_allows_read_only_tools_only() {
        let none = HashMap::new();
        assert_eq!(policy_for(&none, "read"), ApprovalPolicy::Allow);
        assert_eq!(policy_for(&none, "grep"), ApprovalPolicy::Allow);
        assert_eq!(policy_for(&none, tools::DIAGNOSTICS), ApprovalPolicy::Allow);
        assert_eq!(policy_for(&none, "edit"), ApprovalPolicy::Ask);
        assert_eq!(policy_for(&none, "bash"), ApprovalPolicy::Ask);
        assert_eq!(policy_for(&none, "bash_output"), ApprovalPolicy::Allow);
        assert_eq!(policy_for(&none, "bash_kill"), ApprovalPolicy::Allow);
        let config: HashMap<String, ApprovalPolicy> =
            serde_json::from_value(json!({"edit": "allow", "execute": "block", "default": "ask"}))
                .unwrap();
        assert_eq!(policy_for(&config, "edit"), ApprovalPolicy::Allow);
        assert_eq!(policy_for(&config, "bash"), ApprovalPolicy::Block);
        assert_eq!(policy_for(&config, "read"), ApprovalPolicy::Ask);
    }

    #[test]
    fn prefixes() {
        assert_eq!(command_prefix("cargo test --lib"), "cargo test");
        assert_eq!(command_prefix("ls -la"), "ls");
        assert_eq!(command_prefix("  git status"), "git status");
        assert_eq!(command_prefix("echo \"hi\""), "echo");
    }

    #[test]
    fn always_is_per_prefix_and_never_covers_chains() {
        let mut memory = ApprovalMemory::default();
        memory.remember(
            "bash",
            &json!({"command": "cargo test"}),
            Decision::AllowAlways,
        );
        assert_eq!(
            memory.recall("bash", &json!({"command": "cargo test -q"})),
            Some(true)
        );
        assert_eq!(
            memory.recall("bash", &json!({"command": "cargo build"})),
            None
        );
        assert_eq!(
            memory.recall("bash", &json!({"command": "cargo test; rm -rf /"})),
            None
        );
        memory.remember("edit", &json!({"path": "a"}), Decision::BlockAlways);
        assert_eq!(memory.recall("edit", &json!({"path": "b"})), Some(false));
        memory.remember("write", &json!({}), Decision::Allow);
        assert_eq!(memory.recall("write", &json!({})), None);
    }

    #[test]
    fn always_for_web_fetch_is_per_site() {
        let mut memory = ApprovalMemory::default();
        let fetch = |url: &str| json!({"url": url});
        memory.remember(
            "web_fetch",
            &fetch("https://docs.rs/serde"),
            Decision::AllowAlways,
        );
        assert_eq!(
            memory.recall("web_fetch", &fetch("http://DOCS.rs/tokio")),
            Some(true)
        );
        assert_eq!(
            memory.recall("web_fetch", &fetch("https://docs.rs.evil.example/")),
            None
        );
        assert_eq!(
            memory.recall("web_fetch", &fetch("https://docs.rs:8443/")),
            None
        );
        memory.remember(
            "web_fetch",
            &fetch("http://127.0.0.1:8000/a"),
            Decision::AllowAlways,
        );
        assert_eq!(
            memory.recall("web_fetch", &fetch("http://127.0.0.1:8000/b")),
            Some(true)
        );
        assert_eq!(
            memory.recall("web_fetch", &fetch("http://127.0.0.1:2375/")),
            None
        );
        assert_eq!(
            policy_for(&HashMap::new(), "web_fetch"),
            ApprovalPolicy::Ask
        );
        let config: HashMap<String, ApprovalPolicy> =
            serde_json::from_value(json!({"network": "allow"})).unwrap();
        assert_eq!(policy_for(&config, "web_search"), ApprovalPolicy::Allow);
    }
}
