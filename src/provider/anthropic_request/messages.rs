//! Anthropic Messages content (§A4, §A13): user/assistant blocks, consecutive tool results
//! merged into one user message, in-place tool changes (strategy "changes") and the cache
//! breakpoint on the last user block.

use std::borrow::Borrow;

use serde_json::{Value, json};

use crate::agent::message::{
    AgentMessage, AssistantMessage, ContentBlock, MessageContent, SystemMessage, ToolDeclaration,
};
use crate::agent::transcript::{ToolSet, system_message_text};
use crate::provider::tool_fold::ToolStrategy;

/// Only `properties` and `required` of the schema are sent, as pi does.
pub fn tool_json(tool: &ToolDeclaration) -> Value {
    let mut schema = json!({"type": "object", "properties": tool.parameters.get("properties").cloned().unwrap_or(json!({}))});
    if let Some(required) = tool.parameters.get("required") {
        schema["required"] = required.clone();
    }
    json!({"name": tool.name, "description": tool.description, "input_schema": schema})
}

pub fn convert_messages<M: Borrow<AgentMessage>>(
    history: &[M],
    strategy: ToolStrategy,
    cache: &Value,
) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::with_capacity(history.len());
    let mut tools = ToolSet::default();
    let mut first_system = true;
    for message in history.iter().map(Borrow::borrow) {
        match message {
            AgentMessage::System(system) => {
                if !first_system && strategy == ToolStrategy::Changes {
                    out.push(system_change(system, tools.as_slice()));
                }
                first_system = false;
                tools.apply(system);
            }
            AgentMessage::User(user) => {
                let blocks = user_blocks(&user.content);
                if !blocks.is_empty() {
                    out.push(json!({"role": "user", "content": blocks}));
                }
            }
            AgentMessage::Assistant(a) => {
                let blocks = assistant_blocks(a);
                if !blocks.is_empty() {
                    out.push(json!({"role": "assistant", "content": blocks}));
                }
            }
            AgentMessage::ToolResult(r) => {
                let content: Vec<Value> = r.content.iter().filter_map(content_block).collect();
                let content = if content.is_empty() {
                    json!("(no tool output)")
                } else {
                    Value::Array(content)
                };
                let block = json!({"type": "tool_result", "tool_use_id": r.tool_call_id,
                                   "content": content, "is_error": r.is_error});
                append_tool_result(&mut out, block);
            }
            AgentMessage::Custom(_) => {}
        }
    }
    mark_last_user_block(&mut out, cache);
    out
}

/// A mid-conversation system message rendering tool changes in place (strategy "changes").
fn system_change(system: &SystemMessage, before: &[ToolDeclaration]) -> Value {
    let mut content = Vec::new();
    let text = system_message_text(system);
    if !text.is_empty() {
        content.push(json!({"type": "text", "text": text}));
    }
    let added = system.tools_added.iter().flatten();
    for removed in system.tools_removed.iter().flatten() {
        // A re-declaration replaces in place: no removal block for it.
        if !added.clone().any(|t| t.name == removed.name)
            && before.iter().any(|t| t.name == removed.name)
        {
            content.push(json!({"type": "tool_removal", "tool": {"type": "tool_reference", "name": removed.name}}));
        }
    }
    for tool in added {
        content.push(json!({"type": "tool_addition", "tool": {"type": "tool_definition", "definition": tool_json(tool)}}));
    }
    json!({"role": "system", "content": content})
}

/// Consecutive tool results share one user message.
fn append_tool_result(out: &mut Vec<Value>, block: Value) {
    if let Some(last) = out.last_mut()
        && last["role"] == "user"
        && last["content"]
            .as_array()
            .is_some_and(|c| c.iter().all(|b| b["type"] == "tool_result"))
        && let Some(content) = last["content"].as_array_mut()
    {
        content.push(block);
        return;
    }
    out.push(json!({"role": "user", "content": [block]}));
}

/// Cache breakpoint on the last block of the last user message.
fn mark_last_user_block(out: &mut [Value], cache: &Value) {
    let last_user = out.iter_mut().rev().find(|m| m["role"] == "user");
    if let Some(block) = last_user
        .and_then(|m| m["content"].as_array_mut())
        .and_then(|c| c.last_mut())
    {
        block["cache_control"] = cache.clone();
    }
}

fn content_block(block: &ContentBlock) -> Option<Value> {
    match block {
        ContentBlock::Text(t) if !t.text.trim().is_empty() => {
            Some(json!({"type": "text", "text": t.text}))
        }
        ContentBlock::Image(i) => Some(json!({"type": "image", "source":
            {"type": "base64", "media_type": i.mime_type, "data": i.data}})),
        _ => None,
    }
}

fn user_blocks(content: &MessageContent) -> Vec<Value> {
    match content {
        MessageContent::Text(text) if text.trim().is_empty() => Vec::new(),
        MessageContent::Text(text) => vec![json!({"type": "text", "text": text})],
        MessageContent::Blocks(blocks) => blocks.iter().filter_map(content_block).collect(),
    }
}

fn assistant_blocks(message: &AssistantMessage) -> Vec<Value> {
    let mut out = Vec::new();
    for block in &message.content {
        match block {
            ContentBlock::Text(t) if !t.text.trim().is_empty() => {
                out.push(json!({"type": "text", "text": t.text}))
            }
            ContentBlock::Thinking(t) if t.redacted == Some(true) => {
                if let Some(data) = &t.thinking_signature {
                    out.push(json!({"type": "redacted_thinking", "data": data}));
                }
            }
            ContentBlock::Thinking(t) => {
                match t.thinking_signature.as_deref().filter(|s| !s.is_empty()) {
                    Some(signature) => out.push(
                        json!({"type": "thinking", "thinking": t.thinking, "signature": signature}),
                    ),
                    None if !t.thinking.trim().is_empty() => {
                        out.push(json!({"type": "text", "text": t.thinking}))
                    }
                    None => {}
                }
            }
            ContentBlock::ToolCall(call) => {
                let input = if call.arguments.is_object() {
                    call.arguments.clone()
                } else {
                    json!({})
                };
                out.push(
                    json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}),
                );
            }
            _ => {}
        }
    }
    out
}
