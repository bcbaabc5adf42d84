//! The Value-built OpenAI body of before (test-only reference for the borrowed serialiser).

use serde_json::{Map, Value, json};

use super::{OpenAiCompat, effort, max_tokens, normalize_id};
use crate::agent::message::{
    AgentMessage, AssistantMessage, ContentBlock, MessageContent, ThinkingLevel, ToolDeclaration,
    ToolResultMessage,
};
use crate::agent::transcript::{current_system_prompt, system_message_text};
use crate::provider::tool_fold::ToolStrategy;
use crate::provider::transform::legacy::{self as tool_fold, transform_messages};
use crate::provider::{LlmContext, Model, StreamOptions};

/// The request body.
pub fn build_body(model: &Model, context: &LlmContext, options: &StreamOptions) -> Value {
    let compat = OpenAiCompat::for_model(model);
    let history = transform_messages(&context.messages, model, normalize_id);
    let wanted = if compat.tool_additions {
        ToolStrategy::Additions
    } else {
        ToolStrategy::None
    };
    let strategy = tool_fold::effective_strategy(wanted, &history);
    let tools = tool_fold::request_tools(strategy, &history);
    let mut body = Map::new();
    body.insert("model".into(), json!(model.id));
    body.insert(
        "messages".into(),
        Value::Array(convert_messages(&history, model, &compat, strategy)),
    );
    body.insert("stream".into(), json!(true));
    if compat.usage_in_streaming {
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    if compat.store {
        body.insert("store".into(), json!(false));
    }
    if let Some(max) = max_tokens(model, options) {
        body.insert(compat.max_tokens_field.clone(), json!(max));
    }
    if let Some(t) = options.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let (Some(session), true) = (&options.session_id, compat.store) {
        // Official OpenAI: route a session's requests to the same prompt cache.
        body.insert("prompt_cache_key".into(), json!(session));
    }
    let has_tool_history = history
        .iter()
        .any(|m| matches!(m, AgentMessage::ToolResult(_)));
    if !tools.is_empty() || has_tool_history {
        let decls = tools.iter().map(|t| tool_json(t, &compat)).collect();
        body.insert("tools".into(), Value::Array(decls));
    }
    if let Some(choice) = options.extra.get("toolChoice") {
        body.insert("tool_choice".into(), choice.clone());
    }
    if model.reasoning {
        add_reasoning(&mut body, options.reasoning.unwrap_or_default(), &compat);
    }
    Value::Object(body)
}

/// A tool in Chat Completions form.
pub fn tool_json(tool: &ToolDeclaration, compat: &OpenAiCompat) -> Value {
    let mut function = json!({
        "name": tool.name, "description": tool.description, "parameters": tool.parameters,
    });
    if compat.strict_mode {
        function["strict"] = json!(false);
    }
    json!({"type": "function", "function": function})
}

fn add_reasoning(body: &mut Map<String, Value>, level: ThinkingLevel, compat: &OpenAiCompat) {
    let on = level != ThinkingLevel::Off;
    let kind = if on { "enabled" } else { "disabled" };
    match compat.thinking_format.as_str() {
        "openrouter" => {
            body.insert("reasoning".into(), json!({"effort": effort(level)}));
        }
        "deepseek" => {
            body.insert("thinking".into(), json!({"type": kind}));
            if on && compat.reasoning_effort {
                body.insert("reasoning_effort".into(), json!(effort(level)));
            }
        }
        "zai" => {
            body.insert(
                "thinking".into(),
                json!({"type": kind, "clear_thinking": false}),
            );
        }
        "together" => {
            body.insert("reasoning".into(), json!({"enabled": on}));
        }
        "qwen" => {
            body.insert("enable_thinking".into(), json!(on));
        }
        "qwen-chat-template" => {
            let kwargs = json!({"enable_thinking": on, "preserve_thinking": true});
            body.insert("chat_template_kwargs".into(), kwargs);
        }
        "string-thinking" if on => {
            body.insert("thinking".into(), json!(level.as_str()));
        }
        _ if on && compat.reasoning_effort => {
            body.insert("reasoning_effort".into(), json!(effort(level)));
        }
        _ => {}
    }
    if let (Some(field), true) = (&compat.thinking_budget_field, on) {
        body.insert(field.clone(), json!(super::thinking_budget(level)));
    }
}

fn convert_messages(
    history: &[AgentMessage],
    model: &Model,
    compat: &OpenAiCompat,
    strategy: ToolStrategy,
) -> Vec<Value> {
    let system_role = if model.reasoning && compat.developer_role {
        "developer"
    } else {
        "system"
    };
    let mut out = Vec::with_capacity(history.len() + 1);
    if strategy == ToolStrategy::None {
        let prompt = current_system_prompt(history);
        if !prompt.is_empty() {
            out.push(json!({"role": system_role, "content": prompt}));
        }
    }
    let mut first_system = true;
    let mut images: Vec<Value> = Vec::new();
    for message in history {
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
    if compat.thinking_as_text && !thinking.is_empty() {
        let joined: Vec<&str> = thinking.iter().map(|(_, t)| *t).collect();
        text = format!("{}\n\n{text}", joined.join("\n\n"));
    } else if let Some((field, _)) = thinking.first() {
        let joined: Vec<&str> = thinking.iter().map(|(_, t)| *t).collect();
        m[*field] = json!(joined.join("\n\n"));
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
