//! Chat Completions messages (§A5): user text and image parts, assistant text/thinking/tool
//! calls with the compat quirks, tool results (their images follow in a user message), and
//! in-place system messages for the "additions" tool strategy.

use std::borrow::Borrow;

use serde_json::{Value, json};

use super::{OpenAiCompat, tool_json};
use crate::agent::message::{
    AgentMessage, AssistantMessage, ContentBlock, MessageContent, ToolResultMessage,
};
use crate::agent::model::Model;
use crate::agent::transcript::{current_system_prompt, system_message_text};
use crate::provider::tool_fold::ToolStrategy;
use crate::provider::transform::system_role;

/// The messages array: the system prompt (all system messages folded, strategy "none"; else
/// the first one, with later ones in place), then the conversation.
pub fn convert_messages<M: Borrow<AgentMessage>>(
    history: &[M],
    model: &Model,
    compat: &OpenAiCompat,
    strategy: ToolStrategy,
) -> Vec<Value> {
    let system_role = system_role(model, compat.developer_role);
    let mut out = Vec::with_capacity(history.len() + 1);
    if strategy == ToolStrategy::None {
        let prompt = current_system_prompt(history.iter().map(Borrow::borrow));
        if !prompt.is_empty() {
            out.push(json!({"role": system_role, "content": prompt}));
        }
    }
    let mut first_system = true;
    let mut images: Vec<Value> = Vec::new();
    for message in history.iter().map(Borrow::borrow) {
        if !matches!(message, AgentMessage::ToolResult(_)) {
            flush_tool_images(&mut out, &mut images, compat);
        }
        match message {
            AgentMessage::System(system) if strategy != ToolStrategy::None => {
                let text = system_message_text(system);
                if first_system {
                    if !text.is_empty() {
                        out.push(json!({"role": system_role, "content": text}));
                    }
                } else {
                    let mut m = json!({"role": "system", "content": text});
                    let added = system.tools_added.iter().flatten();
                    let tools: Vec<Value> = added.map(|t| tool_json(t, compat)).collect();
                    if !tools.is_empty() {
                        m["tools"] = Value::Array(tools);
                    }
                    out.push(m);
                }
                first_system = false;
            }
            AgentMessage::User(user) => out.extend(user_json(&user.content)),
            AgentMessage::Assistant(a) => out.extend(assistant_json(a, compat)),
            AgentMessage::ToolResult(r) => out.push(tool_result_json(r, compat, &mut images)),
            _ => {}
        }
    }
    flush_tool_images(&mut out, &mut images, compat);
    out
}

fn image_json(data: &str, mime: &str) -> Value {
    json!({"type": "image_url", "image_url": {"url": format!("data:{mime};base64,{data}")}})
}

fn user_json(content: &MessageContent) -> Option<Value> {
    match content {
        MessageContent::Text(text) if text.trim().is_empty() => None,
        MessageContent::Text(text) => Some(json!({"role": "user", "content": text})),
        MessageContent::Blocks(blocks) => {
            let has_image = blocks.iter().any(|b| matches!(b, ContentBlock::Image(_)));
            if !has_image {
                let text = content.to_text();
                return (!text.trim().is_empty()).then(|| json!({"role": "user", "content": text}));
            }
            let parts: Vec<Value> = blocks
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Text(t) => Some(json!({"type": "text", "text": t.text})),
                    ContentBlock::Image(i) => Some(image_json(&i.data, &i.mime_type)),
                    _ => None,
                })
                .collect();
            Some(json!({"role": "user", "content": parts}))
        }
    }
}

/// A safe replay field name (the thinking signature of completions is the delta field's name).
fn replay_field(signature: Option<&str>) -> Option<&str> {
    signature.filter(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
}

fn assistant_json(message: &AssistantMessage, compat: &OpenAiCompat) -> Option<Value> {
    let mut text = String::new();
    let mut thinking: Vec<(&str, &str)> = Vec::new();
    let mut calls = Vec::new();
    for block in &message.content {
        match block {
            ContentBlock::Text(t) => text.push_str(&t.text),
            ContentBlock::Thinking(t) if !t.thinking.is_empty() => {
                let field =
                    replay_field(t.thinking_signature.as_deref()).unwrap_or("reasoning_content");
                thinking.push((field, &t.thinking));
            }
            ContentBlock::ToolCall(call) => calls.push(json!({
                "id": call.id, "type": "function",
                "function": {"name": call.name, "arguments": call.arguments.to_string()},
            })),
            _ => {}
        }
    }
    let mut m = json!({"role": "assistant"});
    if let Some((field, _)) = thinking.first() {
        let joined: Vec<&str> = thinking.iter().map(|(_, t)| *t).collect();
        if compat.thinking_as_text {
            text = format!("{}\n\n{text}", joined.join("\n\n"));
        } else {
            m[*field] = json!(joined.join("\n\n"));
        }
    }
    if compat.reasoning_content_on_assistant && m.get("reasoning_content").is_none() {
        m["reasoning_content"] = json!("");
    }
    if text.trim().is_empty() && calls.is_empty() {
        return None;
    }
    m["content"] = if text.is_empty() {
        Value::Null
    } else {
        json!(text)
    };
    if !calls.is_empty() {
        m["tool_calls"] = Value::Array(calls);
    }
    let details = encrypted_details(message);
    if !details.is_empty() {
        m["reasoning_details"] = Value::Array(details);
    }
    Some(m)
}

/// OpenRouter encrypted reasoning kept in tool calls' `thoughtSignature`, replayed as
/// `reasoning_details` (only same-model history keeps signatures).
fn encrypted_details(message: &AssistantMessage) -> Vec<Value> {
    message
        .tool_calls()
        .filter_map(|c| serde_json::from_str::<Value>(c.thought_signature.as_deref()?).ok())
        .filter(|d| d.get("type").and_then(Value::as_str) == Some("reasoning.encrypted"))
        .collect()
}

fn tool_result_json(
    result: &ToolResultMessage,
    compat: &OpenAiCompat,
    images: &mut Vec<Value>,
) -> Value {
    let texts: Vec<&str> = result
        .content
        .iter()
        .filter_map(ContentBlock::as_text)
        .collect();
    let before = images.len();
    for block in &result.content {
        if let ContentBlock::Image(i) = block {
            images.push(image_json(&i.data, &i.mime_type));
        }
    }
    let text = match (texts.is_empty(), images.len() > before) {
        (false, _) => texts.join("\n"),
        (true, true) => "(see attached image)".to_string(),
        (true, false) => "(no tool output)".to_string(),
    };
    let mut m = json!({"role": "tool", "tool_call_id": result.tool_call_id, "content": text});
    if compat.tool_result_name {
        m["name"] = json!(result.tool_name);
    }
    m
}

/// Images from tool results go in a user message after the results (tool messages are text).
fn flush_tool_images(out: &mut Vec<Value>, images: &mut Vec<Value>, compat: &OpenAiCompat) {
    if images.is_empty() {
        return;
    }
    if compat.assistant_after_tool_result {
        out.push(json!({"role": "assistant", "content": "I have processed the tool results."}));
    }
    let mut parts = vec![json!({"type": "text", "text": "Attached image(s) from tool result:"})];
    parts.append(images);
    out.push(json!({"role": "user", "content": parts}));
}
