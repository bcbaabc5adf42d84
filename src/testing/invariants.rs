//! History invariants the mock provider checks on every request, as real APIs do: every tool
//! result answers an earlier, still-unanswered tool call, and no tool call is left unanswered
//! when the conversation moves on (or ends).

use std::collections::BTreeSet;

use serde_json::Value;

use super::wire::WireApi;

/// Checks the request body's message history; `Err` says what is wrong.
pub fn check_history(api: WireApi, body: &Value) -> Result<(), String> {
    if api == WireApi::OpenAiResponses {
        return check_responses(body);
    }
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .ok_or_else(|| "request body has no \"messages\" array".to_string())?;
    match api {
        WireApi::OpenAi | WireApi::OpenAiResponses => check_openai(messages),
        WireApi::Anthropic => check_anthropic(messages),
    }
}

fn orphans(pending: &BTreeSet<String>, at: usize) -> Result<(), String> {
    if pending.is_empty() {
        return Ok(());
    }
    let ids: Vec<&str> = pending.iter().map(String::as_str).collect();
    Err(format!(
        "orphan tool call(s) {ids:?}: no tool result before message {at}"
    ))
}

fn answer(pending: &mut BTreeSet<String>, id: Option<&str>, at: usize) -> Result<(), String> {
    let id = id.ok_or_else(|| format!("tool result at message {at} has no tool call id"))?;
    if pending.remove(id) {
        Ok(())
    } else {
        Err(format!(
            "tool result at message {at} answers {id:?}, which is not an earlier unanswered tool call"
        ))
    }
}

fn check_openai(messages: &[Value]) -> Result<(), String> {
    let mut pending = BTreeSet::new();
    for (at, message) in messages.iter().enumerate() {
        match message.get("role").and_then(Value::as_str) {
            Some("tool") => {
                let id = message.get("tool_call_id").and_then(Value::as_str);
                answer(&mut pending, id, at)?;
            }
            Some("assistant") => {
                orphans(&pending, at)?;
                let calls = message.get("tool_calls").and_then(Value::as_array);
                for call in calls.into_iter().flatten() {
                    let id = call.get("id").and_then(Value::as_str).unwrap_or_default();
                    if id.is_empty() || !pending.insert(id.to_string()) {
                        return Err(format!(
                            "tool call at message {at} has a missing or duplicate id"
                        ));
                    }
                }
            }
            Some(_) => orphans(&pending, at)?,
            None => return Err(format!("message {at} has no role")),
        }
    }
    orphans(&pending, messages.len())
}

/// Responses `input` items: every `function_call_output` answers an earlier `function_call`,
/// calls are answered before the next message, and (as OpenAI refuses with `store: false`) a
/// replayed reasoning item carries its `encrypted_content`, since the server kept nothing.
fn check_responses(body: &Value) -> Result<(), String> {
    let items = body
        .get("input")
        .and_then(Value::as_array)
        .ok_or_else(|| "request body has no \"input\" array".to_string())?;
    let stateless = body.get("store") == Some(&Value::Bool(false));
    let mut pending = BTreeSet::new();
    for (at, item) in items.iter().enumerate() {
        match block_type(item) {
            Some("function_call") => {
                let id = item
                    .get("call_id")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if id.is_empty() || !pending.insert(id.to_string()) {
                    return Err(format!(
                        "function_call at item {at} has a missing or duplicate call_id"
                    ));
                }
            }
            Some("function_call_output") => {
                answer(
                    &mut pending,
                    item.get("call_id").and_then(Value::as_str),
                    at,
                )?;
            }
            Some("reasoning") => {
                let encrypted = item.get("encrypted_content").and_then(Value::as_str);
                if stateless && encrypted.is_none_or(str::is_empty) {
                    return Err(format!(
                        "reasoning item at {at} has no encrypted_content (store is false)"
                    ));
                }
            }
            _ if item.get("role").is_some() => orphans(&pending, at)?,
            other => return Err(format!("input item {at} has unsupported type {other:?}")),
        }
    }
    orphans(&pending, items.len())
}

fn blocks(message: &Value) -> impl Iterator<Item = &Value> {
    message
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn block_type(block: &Value) -> Option<&str> {
    block.get("type").and_then(Value::as_str)
}

fn check_anthropic(messages: &[Value]) -> Result<(), String> {
    let mut pending = BTreeSet::new();
    for (at, message) in messages.iter().enumerate() {
        match message.get("role").and_then(Value::as_str) {
            Some("assistant") => {
                orphans(&pending, at)?;
                for block in blocks(message).filter(|b| block_type(b) == Some("tool_use")) {
                    let id = block.get("id").and_then(Value::as_str).unwrap_or_default();
                    if id.is_empty() || !pending.insert(id.to_string()) {
                        return Err(format!(
                            "tool_use at message {at} has a missing or duplicate id"
                        ));
                    }
                }
            }
            Some("user") => {
                for block in blocks(message).filter(|b| block_type(b) == Some("tool_result")) {
                    let id = block.get("tool_use_id").and_then(Value::as_str);
                    answer(&mut pending, id, at)?;
                }
                // Anthropic wants every call answered in the very next user message.
                orphans(&pending, at + 1)?;
            }
            // Mid-conversation system messages (tool changes) may not split a call from its result.
            Some("system") => orphans(&pending, at)?,
            Some(other) => return Err(format!("message {at} has unsupported role {other:?}")),
            None => return Err(format!("message {at} has no role")),
        }
    }
    orphans(&pending, messages.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn openai_accepts_answered_calls_and_rejects_orphans() {
        let call = json!({"role": "assistant", "tool_calls": [{"id": "c1"}]});
        let result = json!({"role": "tool", "tool_call_id": "c1", "content": "ok"});
        let user = json!({"role": "user", "content": "go"});
        let ok = json!({"messages": [user, call, result, user]});
        assert!(check_history(WireApi::OpenAi, &ok).is_ok());
        let orphan = json!({"messages": [user, call, user]});
        assert!(
            check_history(WireApi::OpenAi, &orphan)
                .unwrap_err()
                .contains("orphan")
        );
        let stray = json!({"messages": [user, result]});
        assert!(
            check_history(WireApi::OpenAi, &stray)
                .unwrap_err()
                .contains("c1")
        );
    }

    #[test]
    fn responses_pairs_calls_and_wants_encrypted_reasoning() {
        let user = json!({"role": "user", "content": [{"type": "input_text", "text": "go"}]});
        let call = json!({"type": "function_call", "call_id": "c1", "name": "read"});
        let output = json!({"type": "function_call_output", "call_id": "c1", "output": "ok"});
        let reasoning = json!({"type": "reasoning", "id": "rs_1", "summary": []});
        let ok = json!({"store": false, "input": [user, call, output, user]});
        assert!(check_history(WireApi::OpenAiResponses, &ok).is_ok());
        let orphan = json!({"input": [user, call, user]});
        let error = check_history(WireApi::OpenAiResponses, &orphan).unwrap_err();
        assert!(error.contains("orphan"), "{error}");
        let bare = json!({"store": false, "input": [user, reasoning, call, output]});
        let error = check_history(WireApi::OpenAiResponses, &bare).unwrap_err();
        assert!(error.contains("encrypted_content"), "{error}");
        let stored = json!({"store": true, "input": [user, reasoning, call, output]});
        assert!(check_history(WireApi::OpenAiResponses, &stored).is_ok());
    }

    #[test]
    fn anthropic_requires_results_in_next_user_message() {
        let call = json!({"role": "assistant", "content": [{"type": "tool_use", "id": "t1"}]});
        let result =
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"}]});
        let user = json!({"role": "user", "content": "hi"});
        assert!(
            check_history(
                WireApi::Anthropic,
                &json!({"messages": [user, call, result]})
            )
            .is_ok()
        );
        assert!(
            check_history(WireApi::Anthropic, &json!({"messages": [user, call, user]})).is_err()
        );
        assert!(check_history(WireApi::Anthropic, &json!({"messages": [user, call]})).is_err());
    }
}
