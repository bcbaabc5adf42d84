//! Cross-provider history cleanup before conversion (pi's `transform-messages.ts`, §A14).
//!
//! Errored/aborted assistant turns are dropped; thinking from another model becomes text;
//! tool-call ids are normalized for the target API (results follow the mapping); orphaned tool
//! calls get a synthetic "No result provided" error result; results answering no pending call
//! are dropped. Custom roles never reach a provider.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::agent::message::{
    AgentMessage, AssistantMessage, ContentBlock, StopReason, ToolResultMessage,
};

use super::Model;

#[cfg(test)]
pub(crate) mod fixtures;
#[cfg(test)]
pub(crate) mod legacy;

/// Whether `message` came from exactly this model (provider, api and id).
pub fn same_model(message: &AssistantMessage, model: &Model) -> bool {
    message.provider == model.provider && message.api == model.api && message.model == model.id
}

/// [`sanitize_id`], borrowing `id` when it is already in that form (the common case: ids the
/// target API itself issued; this runs for every tool call of the history on every request).
pub fn sanitize_id_cow(id: &str, max: usize) -> Cow<'_, str> {
    let valid = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-';
    if id.len() <= max && id.as_bytes().iter().all(valid) {
        Cow::Borrowed(id)
    } else {
        Cow::Owned(sanitize_id(id, max))
    }
}

/// Keeps `[a-zA-Z0-9_-]`, replaces the rest with `_`, and cuts to `max` characters.
pub fn sanitize_id(id: &str, max: usize) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(max)
        .collect()
}

/// The cleaned history (system messages kept in place for the tool-folding step), borrowing
/// every message it does not change: a request is built once per turn from the whole
/// transcript, so copying it here would make every turn O(history) in allocations.
/// `normalize_id` borrows ids already in the target form.
pub fn transform_messages<'a>(
    messages: &'a [AgentMessage],
    model: &Model,
    normalize_id: impl Fn(&str) -> Cow<'_, str>,
) -> Vec<Cow<'a, AgentMessage>> {
    let mut out = Vec::with_capacity(messages.len());
    let mut ids: HashMap<&'a str, String> = HashMap::new();
    let mut pending: Vec<(Cow<'a, str>, &'a str)> = Vec::new();
    for message in messages {
        match message {
            AgentMessage::Custom(_) => {}
            AgentMessage::System(_) => out.push(Cow::Borrowed(message)),
            AgentMessage::Assistant(a) if a.stop_reason.is_hard_exit() => {}
            AgentMessage::Assistant(a) => {
                close_orphans(&mut out, &mut pending);
                pending.extend(a.tool_calls().map(|c| {
                    let id = normalize_id(&c.id);
                    if id != c.id {
                        ids.insert(&c.id, id.to_string());
                    }
                    (id, c.name.as_str())
                }));
                out.push(match convert_assistant(a, model, &normalize_id) {
                    Some(converted) => Cow::Owned(AgentMessage::Assistant(converted)),
                    None => Cow::Borrowed(message),
                });
            }
            AgentMessage::ToolResult(r) => {
                let id = ids
                    .get(r.tool_call_id.as_str())
                    .map_or(r.tool_call_id.as_str(), String::as_str);
                if let Some(pos) = pending.iter().position(|(p, _)| p == id) {
                    pending.remove(pos);
                    out.push(if id == r.tool_call_id {
                        Cow::Borrowed(message)
                    } else {
                        let mut result = r.clone();
                        result.tool_call_id = id.to_string();
                        Cow::Owned(AgentMessage::ToolResult(result))
                    });
                }
            }
            AgentMessage::User(_) => {
                close_orphans(&mut out, &mut pending);
                out.push(Cow::Borrowed(message));
            }
        }
    }
    close_orphans(&mut out, &mut pending);
    out
}

fn close_orphans(out: &mut Vec<Cow<'_, AgentMessage>>, pending: &mut Vec<(Cow<'_, str>, &str)>) {
    for (id, name) in pending.drain(..) {
        out.push(Cow::Owned(AgentMessage::ToolResult(ToolResultMessage {
            tool_call_id: id.into_owned(),
            tool_name: name.to_string(),
            content: vec![ContentBlock::text("No result provided")],
            is_error: true,
            ..ToolResultMessage::default()
        })));
    }
}

/// Whether converting `message` for `model` changes anything (the common case, a reply of the
/// same model with ids already in the target form, does not and is borrowed as is).
fn needs_conversion(
    message: &AssistantMessage,
    same: bool,
    normalize_id: &impl Fn(&str) -> Cow<'_, str>,
) -> bool {
    message.stop_reason == StopReason::Pending
        || message.content.iter().any(|block| match block {
            ContentBlock::Thinking(_) => !same,
            ContentBlock::ToolCall(call) => {
                (!same && call.thought_signature.is_some()) || normalize_id(&call.id) != call.id
            }
            _ => false,
        })
}

/// The converted message, or `None` when it would equal the original.
fn convert_assistant(
    message: &AssistantMessage,
    model: &Model,
    normalize_id: &impl Fn(&str) -> Cow<'_, str>,
) -> Option<AssistantMessage> {
    let same = same_model(message, model);
    if !needs_conversion(message, same, normalize_id) {
        return None;
    }
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
                call.id = normalize_id(&call.id).into_owned();
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
    Some(converted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::message::{ThinkingContent, ToolCall};
    use serde_json::json;

    fn assistant(content: Vec<ContentBlock>, stop: StopReason) -> AgentMessage {
        AgentMessage::Assistant(AssistantMessage {
            content,
            api: "openai-completions".into(),
            provider: "other".into(),
            model: "x".into(),
            stop_reason: stop,
            ..AssistantMessage::default()
        })
    }

    fn call(id: &str) -> ContentBlock {
        ContentBlock::ToolCall(ToolCall {
            id: id.into(),
            name: "read".into(),
            arguments: json!({}),
            ..ToolCall::default()
        })
    }

    #[test]
    fn the_borrowing_sanitizer_equals_the_copying_one() {
        let ids = [
            "call_1",
            "a|b",
            "é",
            "x".repeat(40).as_str(),
            &"y".repeat(41),
            "",
            "a-b_C9",
        ]
        .map(str::to_string);
        for id in &ids {
            for max in [0, 5, 40, 64] {
                assert_eq!(sanitize_id_cow(id, max), sanitize_id(id, max), "{id} {max}");
            }
        }
        assert!(matches!(sanitize_id_cow("call_1", 40), Cow::Borrowed(_)));
    }

    #[test]
    fn drops_errors_fills_orphans_and_maps_ids() {
        let messages = vec![
            AgentMessage::user_text("hi"),
            assistant(vec![call("bad|id")], StopReason::Error),
            assistant(
                vec![
                    ContentBlock::Thinking(ThinkingContent {
                        thinking: "thought".into(),
                        ..ThinkingContent::default()
                    }),
                    call("a|1"),
                    call("b"),
                ],
                StopReason::ToolUse,
            ),
            AgentMessage::ToolResult(ToolResultMessage {
                tool_call_id: "a|1".into(),
                tool_name: "read".into(),
                ..ToolResultMessage::default()
            }),
            AgentMessage::user_text("next"),
        ];
        let out = transform_messages(&messages, &Model::default(), |id| sanitize_id_cow(id, 40));
        let roles: Vec<&str> = out.iter().map(|m| m.role()).collect();
        assert_eq!(
            roles,
            ["user", "assistant", "toolResult", "toolResult", "user"]
        );
        let a = out[1].as_assistant().unwrap();
        assert_eq!(a.content[0].as_text(), Some("thought"));
        assert_eq!(out[2].as_tool_result().unwrap().tool_call_id, "a_1");
        let orphan = out[3].as_tool_result().unwrap();
        assert_eq!((orphan.tool_call_id.as_str(), orphan.is_error), ("b", true));
    }
}
