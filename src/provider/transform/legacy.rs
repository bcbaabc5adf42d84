//! The request pipeline as it was before bodies were serialised from borrowed messages:
//! history cloned by `transform_messages`, tools cloned by the replay. Test-only: the
//! reference the borrowed pipeline is compared with, byte for byte.

use std::collections::HashMap;

use crate::agent::message::{
    AgentMessage, AssistantMessage, ContentBlock, StopReason, ToolDeclaration, ToolResultMessage,
};
use crate::agent::transcript::{ToolSet, current_tools};
use crate::provider::Model;
use crate::provider::tool_fold::ToolStrategy;
use crate::provider::transform::same_model;

/// The cleaned history (system messages kept in place for the tool-folding step).
pub fn transform_messages(
    messages: &[AgentMessage],
    model: &Model,
    normalize_id: impl Fn(&str) -> String,
) -> Vec<AgentMessage> {
    let mut out = Vec::with_capacity(messages.len());
    let mut ids: HashMap<String, String> = HashMap::new();
    let mut pending: Vec<(String, String)> = Vec::new();
    for message in messages {
        match message {
            AgentMessage::Custom(_) => {}
            AgentMessage::System(_) => out.push(message.clone()),
            AgentMessage::Assistant(a) if a.stop_reason.is_hard_exit() => {}
            AgentMessage::Assistant(a) => {
                close_orphans(&mut out, &mut pending);
                let converted = convert_assistant(a, model, &normalize_id, &mut ids);
                pending = converted
                    .tool_calls()
                    .map(|c| (c.id.clone(), c.name.clone()))
                    .collect();
                out.push(AgentMessage::Assistant(converted));
            }
            AgentMessage::ToolResult(r) => {
                let id = ids
                    .get(&r.tool_call_id)
                    .cloned()
                    .unwrap_or_else(|| r.tool_call_id.clone());
                if let Some(pos) = pending.iter().position(|(p, _)| *p == id) {
                    pending.remove(pos);
                    let mut result = r.clone();
                    result.tool_call_id = id;
                    out.push(AgentMessage::ToolResult(result));
                }
            }
            AgentMessage::User(_) => {
                close_orphans(&mut out, &mut pending);
                out.push(message.clone());
            }
        }
    }
    close_orphans(&mut out, &mut pending);
    out
}

fn close_orphans(out: &mut Vec<AgentMessage>, pending: &mut Vec<(String, String)>) {
    for (id, name) in pending.drain(..) {
        out.push(AgentMessage::ToolResult(ToolResultMessage {
            tool_call_id: id,
            tool_name: name,
            content: vec![ContentBlock::text("No result provided")],
            is_error: true,
            ..ToolResultMessage::default()
        }));
    }
}

fn convert_assistant(
    message: &AssistantMessage,
    model: &Model,
    normalize_id: &impl Fn(&str) -> String,
    ids: &mut HashMap<String, String>,
) -> AssistantMessage {
    let same = same_model(message, model);
    let mut converted = message.clone();
    converted.content = Vec::with_capacity(message.content.len());
    for block in &message.content {
        match block {
            ContentBlock::Thinking(t) if !same => {
                if t.redacted != Some(true) && !t.thinking.trim().is_empty() {
                    converted
                        .content
                        .push(ContentBlock::text(t.thinking.clone()));
                }
            }
            ContentBlock::ToolCall(call) => {
                let mut call = call.clone();
                let id = normalize_id(&call.id);
                ids.insert(call.id.clone(), id.clone());
                call.id = id;
                if !same {
                    call.thought_signature = None;
                }
                converted.content.push(ContentBlock::ToolCall(call));
            }
            other => converted.content.push(other.clone()),
        }
    }
    if converted.stop_reason == StopReason::Pending {
        converted.stop_reason = StopReason::Stop;
    }
    converted
}

/// True when no system message after the first removes or re-declares a tool.
pub fn history_is_additive(messages: &[AgentMessage]) -> bool {
    let mut seen = ToolSet::default();
    let mut first = true;
    for system in messages.iter().filter_map(AgentMessage::as_system) {
        if !first {
            if system.tools_removed.as_ref().is_some_and(|r| !r.is_empty()) {
                return false;
            }
            let redeclared = system
                .tools_added
                .iter()
                .flatten()
                .any(|t| seen.as_slice().iter().any(|s| s.name == t.name));
            if redeclared {
                return false;
            }
        }
        first = false;
        seen.apply(system);
    }
    true
}

/// The strategy actually usable for this history (falls back to `None` when not additive).
pub fn effective_strategy(wanted: ToolStrategy, messages: &[AgentMessage]) -> ToolStrategy {
    match wanted {
        ToolStrategy::Additions if !history_is_additive(messages) => ToolStrategy::None,
        other => other,
    }
}

/// The top-level tool list for a strategy: everything current for `None`, else the tools of
/// the initial system message (later ones are rendered in place).
pub fn request_tools(strategy: ToolStrategy, messages: &[AgentMessage]) -> Vec<ToolDeclaration> {
    match strategy {
        ToolStrategy::None => current_tools(messages),
        ToolStrategy::Additions | ToolStrategy::Changes => messages
            .iter()
            .find_map(AgentMessage::as_system)
            .and_then(|s| s.tools_added.clone())
            .unwrap_or_default(),
    }
}
