//! The one approval gate: whether a tool call runs, for every front end.
//!
//! In order: a call its tool would refuse anyway (a `web_fetch` of a `file:` URL) is refused
//! before anyone is asked; then the permission rules (`core::permissions`): a `deny` rule
//! refuses the call; then the front end's standing policy (the daemon's
//! `initializationOptions.approval`, an ACP session's mode, `agent-lsp run --approve`): a block
//! refuses it; then an `ask` rule makes it ask whatever the policy says, the sandbox makes it ask
//! (an escalation, or a command that would run sandboxed where the sandbox is unavailable)
//! whatever the policy or the rules say, and otherwise `allow` rules or the policy let it run;
//! and only then the user, asked through the front end ([`Asker`]). An "always" answer saves
//! the narrowest rule that covers the call, for the session, the project or the user
//! ([`crate::core::permissions::Scope`]). The words the model reads about it are here, once; a
//! front end words only its own policy and why it could not ask. A `PreToolUse` hook's `allow`
//! ([`HookPermission`]) turns the policy's ask into allow (a deny rule, an ask rule and the
//! sandbox still hold); its `ask` makes the call ask as an ask rule does.
//!
//! Every failure to get an answer blocks the call with a reason saying why: a tool that must
//! ask is never silently allowed.

use std::collections::HashMap;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::agent::hooks::{BeforeToolCallContext, BeforeToolCallResult};
use crate::core::permissions::{Behavior, Permissions, Proposals, Scope, Subject, Verdict};
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
    /// Where an "always" answer is kept; `None`: for the session.
    pub scope: Option<Scope>,
}

impl Answer {
    pub fn of(decision: Decision) -> Answer {
        Answer {
            decision,
            reason: None,
            terminate: false,
            scope: None,
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

    /// What the session knows of `tool` when it is an MCP server's (for `mcp__…` rules).
    fn mcp_info(&self, _tool: &str) -> Option<McpToolInfo> {
        None
    }
}

/// A session's approval gate: its permission rules (its "always" answers among them) and its
/// sandbox.
pub struct ApprovalGate {
    permissions: Arc<Permissions>,
    sandbox: Arc<Sandbox>,
}

impl ApprovalGate {
    pub fn new(sandbox: Arc<Sandbox>, permissions: Arc<Permissions>) -> ApprovalGate {
        ApprovalGate {
            permissions,
            sandbox,
        }
    }

    /// The session's permission rules.
    pub fn permissions(&self) -> &Arc<Permissions> {
        &self.permissions
    }

    /// The rules an "always" answer about the call would save, per scope; `None` when it
    /// cannot be remembered (an escalation out of the sandbox, a command no rule can cover).
    pub fn always_rules(
        &self,
        tool: &str,
        args: &Value,
        mcp: Option<&McpToolInfo>,
    ) -> Option<Proposals> {
        if !self.sandbox.may_remember(tool, args) {
            return None;
        }
        self.permissions
            .proposals(&self.permissions.subject(tool, args, mcp))
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
        let subject = (self.permissions).subject(tool, &ctx.args, asker.mcp_info(tool).as_ref());
        let verdict = self.permissions.check(&subject);
        let said = |behavior| {
            verdict
                .as_ref()
                .filter(|v: &&Verdict| v.behavior == behavior)
        };
        if let Some(deny) = said(Behavior::Deny) {
            return Some(blocked(deny.refusal(tool)));
        }
        let must_ask = self.sandbox.must_ask(tool, &ctx.args);
        let forced = said(Behavior::Ask);
        let policy = match (asker.policy(tool, &ctx.args), hook) {
            (Policy::Ask, HookPermission::Allow) => Policy::Allow,
            (policy, _) => policy,
        };
        match policy {
            Policy::Block(reason) => return Some(blocked(reason)),
            _ if forced.is_some() || must_ask.is_some() || hook == HookPermission::Ask => {}
            Policy::Allow => return None,
            Policy::Ask if said(Behavior::Allow).is_some() => return None,
            Policy::Ask => {}
        }
        let answer = match asker.ask(ctx, must_ask.as_ref(), cancel).await {
            Ok(answer) => answer,
            Err(reason) => return Some(blocked(with_rule(reason, forced))),
        };
        if self.sandbox.may_remember(tool, &ctx.args) {
            self.remember(&subject, &answer);
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

    /// Saves an "always" answer as rules in its scope (the session's when it has none).
    fn remember(&self, subject: &Subject, answer: &Answer) {
        let allow = match answer.decision {
            Decision::AllowAlways => true,
            Decision::BlockAlways => false,
            Decision::Allow | Decision::Block => return,
        };
        let scope = answer.scope.unwrap_or(Scope::Session);
        match self.permissions.remember(subject, allow, scope) {
            Ok(rules) => tracing::info!(?scope, ?rules, "saved an \"always\" answer"),
            Err(e) => tracing::warn!(%e, "an \"always\" answer was kept for this session only"),
        }
    }
}

/// Why a question an `ask` rule forced could not be asked, naming the rule.
fn with_rule(reason: String, forced: Option<&Verdict>) -> String {
    match forced.and_then(|v| v.rules.first()) {
        Some(rule) => format!(
            "{reason} (The permission rule {} asks first.)",
            rule.describe()
        ),
        None => reason,
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

/// [`policy_for`] for one call, whose kind and default may depend on its arguments (an
/// `lsp_rename` that applies its edits is an edit, and asks).
pub fn policy_for_call(
    config: &HashMap<String, ApprovalPolicy>,
    tool: &str,
    args: &serde_json::Value,
) -> ApprovalPolicy {
    config
        .get(tool)
        .or_else(|| config.get(tools::call_kind(tool, args).as_str()))
        .or_else(|| config.get("default"))
        .copied()
        .unwrap_or(if tools::call_allowed_by_default(tool, args) {
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
    fn an_applying_rename_is_an_edit_and_asks() {
        let none = HashMap::new();
        let plain = json!({"path": "a.ts", "line": 1, "newName": "b"});
        let applying = json!({"path": "a.ts", "line": 1, "newName": "b", "apply": true});
        let config: HashMap<String, ApprovalPolicy> =
            serde_json::from_value(json!({"edit": "allow", "read": "block"})).unwrap();
        let cases = [
            (&none, "lsp_rename", &plain, ApprovalPolicy::Allow),
            (&none, "lsp_rename", &applying, ApprovalPolicy::Ask),
            (&none, "lsp_definition", &json!({}), ApprovalPolicy::Allow),
            (&config, "lsp_rename", &applying, ApprovalPolicy::Allow),
            (&config, "lsp_rename", &plain, ApprovalPolicy::Block),
        ];
        for (config, tool, args, policy) in cases {
            let call = format!("{tool} {args} under {config:?}");
            assert_eq!(policy_for_call(config, tool, args), policy, "{call}");
        }
    }

    #[test]
    fn always_for_web_fetch_is_per_site() {
        use crate::core::permissions::{PermissionSpec, Permissions};
        let env = crate::model_registry::EnvSource::default();
        let project = std::path::Path::new("/p");
        let (rules, _) = Permissions::load(&PermissionSpec::default(), project, &env);
        let fetch = |url: &str| rules.subject("web_fetch", &json!({"url": url}), None);
        let allowed = |url: &str| rules.check(&fetch(url)).map(|v| v.behavior);
        rules
            .remember(&fetch("https://docs.rs/serde"), true, Scope::Session)
            .unwrap();
        assert_eq!(allowed("http://DOCS.rs/tokio"), Some(Behavior::Allow));
        assert_eq!(allowed("https://docs.rs.evil.example/"), None);
        assert_eq!(allowed("https://docs.rs:8443/"), None);
        rules
            .remember(&fetch("http://127.0.0.1:8000/a"), true, Scope::Session)
            .unwrap();
        assert_eq!(allowed("http://127.0.0.1:8000/b"), Some(Behavior::Allow));
        assert_eq!(allowed("http://127.0.0.1:2375/"), None);
        assert_eq!(
            policy_for(&HashMap::new(), "web_fetch"),
            ApprovalPolicy::Ask
        );
        let config: HashMap<String, ApprovalPolicy> =
            serde_json::from_value(json!({"network": "allow"})).unwrap();
        assert_eq!(policy_for(&config, "web_search"), ApprovalPolicy::Allow);
    }
}
