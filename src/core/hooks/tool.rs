//! `PreToolUse` and `PostToolUse`.
//!
//! `PreToolUse` runs before the approval gate: `deny` (or exit 2) blocks the call with the
//! hook's reason, which the model reads; `allow` skips the question (not a refusal by the front
//! end's policy or a remembered "always" block, nor the sandbox's must-ask); `ask` asks even
//! where the policy would allow; `updatedInput` replaces the arguments (checked against the
//! tool's schema); `continue: false` blocks the call and ends the run. `PostToolUse` runs after
//! a call that succeeded: a block's reason, exit 2's stderr and `additionalContext` are added
//! to the result the model reads, `updatedMCPToolOutput` replaces an MCP tool's output, and
//! `continue: false` ends the run after the batch.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{Firing, SessionHooks, reasons};
use crate::agent::hooks::{
    AfterToolCallContext, AfterToolCallHook, AfterToolCallResult, BeforeToolCallContext,
    BeforeToolCallResult,
};
use crate::agent::message::{ContentBlock, ToolCall};
use crate::agent::validate::validate_tool_arguments;
use crate::core::approval::{HookPermission, blocked};
use crate::hooks::config::HookEvent;
use crate::hooks::names::{claude_name, from_hook_input, hook_input};
use crate::hooks::output::{Outcome, Said};

/// What the `PreToolUse` hooks said of a call.
#[derive(Debug, Default)]
pub struct PreToolUse {
    /// Refused (and why, for the model); the gate is not asked.
    pub blocked: Option<BeforeToolCallResult>,
    /// For the gate.
    pub permission: HookPermission,
    /// The arguments a hook gave instead (`updatedInput`), checked against the tool's schema.
    pub args: Option<Value>,
}

impl SessionHooks {
    /// The names a tool's matcher is tried on: Claude Code's, then ours.
    fn tool_names(&self, tool: &str) -> (String, Option<String>) {
        let info = self.tools.mcp_info(tool);
        let mcp = info.as_ref().map(|i| (i.server.as_str(), i.tool.as_str()));
        (tool.to_owned(), claude_name(tool, mcp))
    }

    /// Fires `event`'s hooks for a tool call, matched by our tool name and by Claude Code's:
    /// the fields of a tool event (`tool_name`, Claude Code's where it has one, `tool_input`,
    /// `tool_use_id`, and `agent_lsp_tool_name`, ours), then `more`.
    async fn fire_for_call(
        &self,
        event: HookEvent,
        (call, args): (&ToolCall, &Value),
        more: Option<(&'static str, Value)>,
        cancel: &CancellationToken,
    ) -> Vec<Said> {
        let (ours, claude) = self.tool_names(&call.name);
        let names: Vec<&str> = [Some(ours.as_str()), claude.as_deref()]
            .into_iter()
            .flatten()
            .collect();
        let name = claude.clone().unwrap_or_else(|| call.name.clone());
        let fields = [
            ("tool_name", json!(name)),
            ("tool_input", hook_input(&call.name, args, &self.cwd)),
            ("tool_use_id", json!(call.id)),
            ("agent_lsp_tool_name", json!(call.name)),
        ];
        let firing = Firing {
            tool_call_id: Some(&call.id),
            ..Firing::new(event, &names, fields.into_iter().chain(more))
        };
        self.fire(firing, cancel).await
    }

    /// Runs the `PreToolUse` hooks of a call.
    pub async fn pre_tool_use(
        &self,
        ctx: &BeforeToolCallContext,
        cancel: &CancellationToken,
    ) -> PreToolUse {
        if !self.configured(HookEvent::PreToolUse) {
            return PreToolUse::default();
        }
        let call = (&ctx.tool_call, &ctx.args);
        let said = (self.fire_for_call(HookEvent::PreToolUse, call, None, cancel)).await;
        decide(&said, ctx)
    }

    /// `afterToolCall`: `inner` (the loop guard's note) first, then the `PostToolUse` hooks of a
    /// call that succeeded.
    pub fn after_tool_call_hook(
        self: &Arc<Self>,
        inner: Option<AfterToolCallHook>,
    ) -> Option<AfterToolCallHook> {
        self.after_inner(
            HookEvent::PostToolUse,
            inner,
            |hooks, ctx: AfterToolCallContext, before, cancel| async move {
                if ctx.is_error {
                    return Ok(before);
                }
                Ok(hooks.post_tool_use(&ctx, before, &cancel).await)
            },
        )
    }

    async fn post_tool_use(
        &self,
        ctx: &AfterToolCallContext,
        before: Option<AfterToolCallResult>,
        cancel: &CancellationToken,
    ) -> Option<AfterToolCallResult> {
        let response = json!({"content": ctx.result.content, "details": ctx.result.details});
        let more = Some(("tool_response", response));
        let call = (&ctx.tool_call, &ctx.args);
        let said = (self.fire_for_call(HookEvent::PostToolUse, call, more, cancel)).await;
        let is_mcp = self.tools.mcp_info(&ctx.tool_call.name).is_some();
        amend(&said, ctx, before, is_mcp)
    }
}

/// The `PreToolUse` hooks' joint answer: a stop or a block wins, then `ask`, then `allow`.
fn decide(said: &[Said], ctx: &BeforeToolCallContext) -> PreToolUse {
    if let Some(stop) = said.iter().find_map(|s| s.stop.as_ref()) {
        let why = if stop.is_empty() {
            "(no reason given)"
        } else {
            stop
        };
        return PreToolUse {
            blocked: Some(BeforeToolCallResult {
                terminate: true,
                ..blocked(format!("Stopped by a PreToolUse hook: {why}"))
            }),
            ..PreToolUse::default()
        };
    }
    if let Some(why) = reasons(said, Said::blocks) {
        let reason = format!("Blocked by a PreToolUse hook: {why}");
        return PreToolUse {
            blocked: Some(blocked(reason)),
            ..PreToolUse::default()
        };
    }
    let has = |outcome| said.iter().any(|s| s.outcome == outcome);
    let permission = match (has(Outcome::Ask), has(Outcome::Allow)) {
        (true, _) => HookPermission::Ask,
        (false, true) => HookPermission::Allow,
        _ => HookPermission::None,
    };
    let updated = said.iter().find_map(|s| s.updated_input.as_ref());
    let args = match updated.map(|u| from_hook_input(&ctx.tool_call.name, u)) {
        None => None,
        Some(args) => match checked(ctx, args) {
            Ok(args) => Some(args),
            Err(why) => {
                return PreToolUse {
                    blocked: Some(blocked(why)),
                    ..PreToolUse::default()
                };
            }
        },
    };
    PreToolUse {
        blocked: None,
        permission,
        args,
    }
}

/// A hook's arguments checked against the tool's schema, as the model's are.
fn checked(ctx: &BeforeToolCallContext, args: Value) -> Result<Value, String> {
    let Some(tool) = ctx.context.tool(&ctx.tool_call.name) else {
        return Ok(args);
    };
    let call = ToolCall {
        arguments: args,
        ..ctx.tool_call.clone()
    };
    validate_tool_arguments(&tool.declaration().parameters, &call)
        .map_err(|e| format!("A PreToolUse hook's updatedInput was refused: {e}"))
}

/// The result with what the `PostToolUse` hooks said added.
fn amend(
    said: &[Said],
    ctx: &AfterToolCallContext,
    before: Option<AfterToolCallResult>,
    is_mcp: bool,
) -> Option<AfterToolCallResult> {
    let mut notes = Vec::new();
    for s in said {
        if s.blocks() && s.stop.is_none() {
            let why = s.reason.as_deref().unwrap_or("(no reason given)");
            notes.push(format!("[PostToolUse hook] {why}"));
        }
        if let Some(context) = &s.context {
            notes.push(format!("[PostToolUse hook context] {context}"));
        }
        if let Some(stop) = &s.stop {
            notes.push(format!("[PostToolUse hook stopped the run] {stop}"));
        }
    }
    let output = said
        .iter()
        .find_map(|s| s.mcp_output.as_ref())
        .filter(|_| is_mcp);
    let stop = said.iter().any(|s| s.stop.is_some());
    if notes.is_empty() && output.is_none() {
        return before;
    }
    let mut result = before.unwrap_or_default();
    let mut content = match output {
        Some(Value::String(text)) => vec![ContentBlock::text(text.clone())],
        Some(other) => vec![ContentBlock::text(other.to_string())],
        None => result
            .content
            .take()
            .unwrap_or_else(|| ctx.result.content.clone()),
    };
    content.extend(notes.into_iter().map(ContentBlock::text));
    result.content = Some(content);
    if stop {
        result.terminate = Some(true);
    }
    Some(result)
}
