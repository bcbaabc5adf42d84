//! The transcript as Responses `input` items (pi's `convertResponsesMessages`, tool strategy
//! "none"): the system prompt as one instruction message, user messages as `input_text` /
//! `input_image` parts, assistant turns as their stored reasoning items, `message` items and
//! `function_call`s, tool results as `function_call_output`s.

use std::borrow::Borrow;

use serde_json::{Value, json};

use super::ResponsesCompat;
use crate::agent::message::{
    AgentMessage, AssistantMessage, ContentBlock, MessageContent, ToolResultMessage,
};
use crate::agent::model::Model;
use crate::agent::transcript::current_system_prompt;
use crate::provider::transform::{same_model, sanitize_id, system_role};

/// Providers whose requests keep another provider's function-call item ids, hashed (pi's
/// `allowedToolCallProviders`).
const PAIRED_ID_PROVIDERS: [&str; 3] = ["openai", "openai-codex", "opencode"];
/// OpenAI's limit on item ids.
const MAX_ID: usize = 64;

/// pi's `shortHash` (a 53-bit pair of Murmur-style mixes over UTF-16 code units, in base 36),
/// so ids shortened here match the ids pi shortens.
pub fn short_hash(text: &str) -> String {
    let (mut h1, mut h2): (u32, u32) = (0xdead_beef, 0x41c6_ce57);
    for unit in text.encode_utf16() {
        let ch = u32::from(unit);
        h1 = (h1 ^ ch).wrapping_mul(2_654_435_761);
        h2 = (h2 ^ ch).wrapping_mul(1_597_334_677);
    }
    h1 = (h1 ^ (h1 >> 16)).wrapping_mul(2_246_822_507)
        ^ (h2 ^ (h2 >> 13)).wrapping_mul(3_266_489_909);
    h2 = (h2 ^ (h2 >> 16)).wrapping_mul(2_246_822_507)
        ^ (h1 ^ (h1 >> 13)).wrapping_mul(3_266_489_909);
    format!("{}{}", base36(h2), base36(h1))
}

fn base36(mut n: u32) -> String {
    let mut digits = Vec::new();
    loop {
        digits.push(char::from_digit(n % 36, 36).unwrap_or('0'));
        n /= 36;
        if n == 0 {
            break;
        }
    }
    digits.iter().rev().collect()
}

/// pi's `normalizeIdPart`: `[a-zA-Z0-9_-]`, at most 64 characters, no trailing `_`.
fn id_part(part: &str) -> String {
    sanitize_id(part, MAX_ID).trim_end_matches('_').to_string()
}

/// Tool-call ids for this API: pi's `call_id|item_id` pairs keep both parts (the item id must
/// start with `fc_`), other ids are sanitized whole.
pub fn normalize_id(id: &str) -> String {
    let Some((call, item)) = id.split_once('|') else {
        return id_part(id);
    };
    let item = item.split('|').next().unwrap_or(item);
    let mut item_id = id_part(item);
    if !item_id.starts_with("fc_") {
        item_id = id_part(&format!("fc_{item_id}"));
    }
    format!("{}|{item_id}", id_part(call))
}

/// pi's id for another provider's function-call item: `fc_` and a hash of its id.
fn foreign_item_id(item: &str) -> String {
    format!("fc_{}", short_hash(item))
        .chars()
        .take(MAX_ID)
        .collect()
}

/// The `input` array for a transformed history.
pub fn convert_input<M: Borrow<AgentMessage>>(
    history: &[M],
    model: &Model,
    compat: &ResponsesCompat,
) -> Vec<Value> {
    let role = system_role(model, compat.developer_role);
    let mut out = Vec::with_capacity(history.len() + 1);
    let prompt = current_system_prompt(history.iter().map(Borrow::borrow));
    if !prompt.is_empty() {
        out.push(json!({"role": role, "content": prompt}));
    }
    // pi numbers the fallback ids of assistant text by the message's place after the prompt.
    let conversation = (history.iter().map(Borrow::borrow))
        .filter(|m: &&AgentMessage| !matches!(m, AgentMessage::System(_)));
    for (index, message) in conversation.enumerate() {
        match message {
            AgentMessage::User(user) => out.extend(user_item(&user.content)),
            AgentMessage::Assistant(a) => assistant_items(&mut out, a, model, index),
            AgentMessage::ToolResult(r) => out.push(tool_result_item(r, model)),
            _ => {}
        }
    }
    out
}

fn image_part(data: &str, mime: &str) -> Value {
    json!({"type": "input_image", "detail": "auto", "image_url": format!("data:{mime};base64,{data}")})
}

fn user_item(content: &MessageContent) -> Option<Value> {
    let parts: Vec<Value> = match content {
        MessageContent::Text(text) => vec![json!({"type": "input_text", "text": text})],
        MessageContent::Blocks(blocks) => blocks
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text(t) => Some(json!({"type": "input_text", "text": t.text})),
                ContentBlock::Image(i) => Some(image_part(&i.data, &i.mime_type)),
                _ => None,
            })
            .collect(),
    };
    (!parts.is_empty()).then(|| json!({"role": "user", "content": parts}))
}

/// pi's text signature v1, `{"v":1,"id":…,"phase"?}`, or a legacy plain id.
fn text_signature(signature: &str) -> (String, Option<String>) {
    let parsed = serde_json::from_str::<Value>(signature).ok();
    let v1 = parsed.filter(|v| v.get("v") == Some(&json!(1)));
    match v1
        .as_ref()
        .and_then(|v| v.get("id"))
        .and_then(Value::as_str)
    {
        Some(id) => {
            let phase = v1
                .as_ref()
                .and_then(|v| v.get("phase"))
                .and_then(Value::as_str);
            let phase = phase.filter(|p| matches!(*p, "commentary" | "final_answer"));
            (id.to_string(), phase.map(str::to_string))
        }
        None => (signature.to_string(), None),
    }
}

fn assistant_items(out: &mut Vec<Value>, message: &AssistantMessage, model: &Model, index: usize) {
    let same_api = message.provider == model.provider && message.api == model.api;
    let same = same_model(message, model);
    let paired = PAIRED_ID_PROVIDERS.contains(&model.provider.as_str());
    let mut text_blocks = 0;
    for block in &message.content {
        match block {
            // The reasoning item as the API sent it, encrypted content and all. A signature
            // that is not one (another API's, a hand-edited session) is not sent, nor an item
            // without encrypted content: with `store: false` the server cannot resolve it.
            ContentBlock::Thinking(t) => {
                let item = t
                    .thinking_signature
                    .as_deref()
                    .and_then(|s| serde_json::from_str::<Value>(s).ok());
                out.extend(item.filter(replayable));
            }
            ContentBlock::Text(t) => {
                let signature = t.text_signature.as_deref().filter(|_| same);
                let (id, phase) = match signature.map(text_signature) {
                    Some((id, phase)) if !id.is_empty() => (id, phase),
                    _ if text_blocks == 0 => (format!("msg_pi_{index}"), None),
                    _ => (format!("msg_pi_{index}_{text_blocks}"), None),
                };
                text_blocks += 1;
                let id = if id.chars().count() > MAX_ID {
                    format!("msg_{}", short_hash(&id))
                } else {
                    id
                };
                let mut item = json!({
                    "type": "message", "role": "assistant",
                    "content": [{"type": "output_text", "text": t.text, "annotations": []}],
                    "status": "completed", "id": id,
                });
                if let Some(phase) = phase {
                    item["phase"] = json!(phase);
                }
                out.push(item);
            }
            ContentBlock::ToolCall(call) => {
                let (call_id, item_id) = match call.id.split_once('|') {
                    Some((c, i)) => (c, Some(i)),
                    None => (call.id.as_str(), None),
                };
                // Another model's item ids were paired with its own reasoning items: omitted.
                // Another provider's are hashed (pi's foreign item ids) where this provider
                // pairs ids, so they cannot collide with its own; elsewhere omitted.
                let item_id = match (same, same_api) {
                    (true, _) => item_id.map(str::to_string),
                    (false, true) => None,
                    (false, false) if paired => item_id.map(foreign_item_id),
                    (false, false) => None,
                };
                let item_id = item_id.filter(|i| i.starts_with("fc_"));
                let arguments = call.arguments.to_string();
                let mut item = json!({"type": "function_call"});
                if let Some(id) = item_id {
                    item["id"] = json!(id);
                }
                item["call_id"] = json!(call_id);
                item["name"] = json!(call.name);
                item["arguments"] = json!(arguments);
                if let (true, Some(namespace)) = (same, &call.namespace) {
                    item["namespace"] = json!(namespace);
                }
                out.push(item);
            }
            ContentBlock::Image(_) => {}
        }
    }
}

/// A stored reasoning item that can go back: an object with its encrypted content.
fn replayable(item: &Value) -> bool {
    let encrypted = item.get("encrypted_content").and_then(Value::as_str);
    item.is_object() && encrypted.is_some_and(|e| !e.is_empty())
}

/// The output: the text parts joined, or text and images as parts for a vision model.
fn tool_result_item(result: &ToolResultMessage, model: &Model) -> Value {
    let call_id = result.tool_call_id.split('|').next().unwrap_or_default();
    let texts: Vec<&str> = result
        .content
        .iter()
        .filter_map(ContentBlock::as_text)
        .collect();
    let text = texts.join("\n");
    let images: Vec<Value> = result
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Image(i) => Some(image_part(&i.data, &i.mime_type)),
            _ => None,
        })
        .collect();
    let has_text = !text.trim().is_empty();
    let output = if images.is_empty() || !model.input.iter().any(|i| i == "image") {
        let shown = if has_text {
            text
        } else if images.is_empty() {
            "(no tool output)".to_string()
        } else {
            "(see attached image)".to_string()
        };
        json!(shown)
    } else {
        let mut parts = Vec::with_capacity(images.len() + 1);
        if has_text {
            parts.push(json!({"type": "input_text", "text": text}));
        }
        parts.extend(images);
        Value::Array(parts)
    };
    json!({"type": "function_call_output", "call_id": call_id, "output": output})
}
