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

use crate::agent::model::Model;

/// Whether `message` came from exactly this model (provider, api and id).
pub fn same_model(message: &AssistantMessage, model: &Model) -> bool {
    message.provider == model.provider && message.api == model.api && message.model == model.id
}

/// The role OpenAI's APIs give the system prompt: `developer` for a reasoning model when the
/// endpoint takes that role (`developer_role`), else `system`.
pub fn system_role(model: &Model, developer_role: bool) -> &'static str {
    if model.reasoning && developer_role {
        "developer"
    } else {
        "system"
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

/// The cleaned history (system messages kept in place for the tool-folding step). Messages
/// that need no change are borrowed: a request is built from the transcript without copying it.
pub fn transform_messages<'a>(
    messages: &'a [AgentMessage],
    model: &Model,
    normalize_id: impl Fn(&str) -> String,
) -> Vec<Cow<'a, AgentMessage>> {
    let mut out = Vec::with_capacity(messages.len());
    // Tool-call ids that normalisation changed (the others map to themselves).
    let mut ids: HashMap<&'a str, String> = HashMap::new();
    let mut pending: Vec<(Cow<'a, str>, &'a str)> = Vec::new();
    for message in messages {
        match message {
            AgentMessage::Custom(_) => {}
            AgentMessage::System(_) => out.push(Cow::Borrowed(message)),
            AgentMessage::Assistant(a) if a.stop_reason.is_hard_exit() => {}
            AgentMessage::Assistant(a) => {
                close_orphans(&mut out, &mut pending);
                let converted = convert_assistant(a, model, &normalize_id, &mut ids);
                pending = a
                    .tool_calls()
                    .map(|c| (mapped(&ids, &c.id), c.name.as_str()))
                    .collect();
                out.push(match converted {
                    Some(owned) => Cow::Owned(AgentMessage::from(owned)),
                    None => Cow::Borrowed(message),
                });
            }
            AgentMessage::ToolResult(r) => {
                let id = mapped(&ids, &r.tool_call_id);
                if let Some(pos) = pending.iter().position(|(p, _)| *p == id) {
                    pending.remove(pos);
                    out.push(match id {
                        Cow::Borrowed(_) => Cow::Borrowed(message),
                        Cow::Owned(id) => Cow::Owned(AgentMessage::from(ToolResultMessage {
                            tool_call_id: id,
                            ..(**r).clone()
                        })),
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

/// The id a tool call or result goes out under.
fn mapped<'a>(ids: &HashMap<&'a str, String>, id: &'a str) -> Cow<'a, str> {
    ids.get(id)
        .map_or(Cow::Borrowed(id), |new| Cow::Owned(new.clone()))
}

fn close_orphans(out: &mut Vec<Cow<'_, AgentMessage>>, pending: &mut Vec<(Cow<'_, str>, &str)>) {
    for (id, name) in pending.drain(..) {
        out.push(Cow::Owned(AgentMessage::from(ToolResultMessage {
            tool_call_id: id.into_owned(),
            tool_name: name.to_string(),
            content: vec![ContentBlock::text("No result provided")],
            is_error: true,
            ..ToolResultMessage::default()
        })));
    }
}

/// Thinking of another model becomes text (signatures dropped); tool-call ids are normalized
/// (the changed ones recorded in `ids` for their results); a pending stop reason becomes
/// `stop`. `None` when that changes nothing (the message goes out as it is).
fn convert_assistant<'a>(
    message: &'a AssistantMessage,
    model: &Model,
    normalize_id: &impl Fn(&str) -> String,
    ids: &mut HashMap<&'a str, String>,
) -> Option<AssistantMessage> {
    let same = same_model(message, model);
    let mut changes = message.stop_reason == StopReason::Pending;
    for block in &message.content {
        match block {
            ContentBlock::Thinking(_) => changes |= !same,
            ContentBlock::ToolCall(call) => {
                let id = normalize_id(&call.id);
                if id != call.id {
                    ids.insert(&call.id, id);
                    changes = true;
                }
                changes |= !same && call.thought_signature.is_some();
            }
            _ => {}
        }
    }
    if !changes {
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
                call.id = mapped(ids, &call.id).into_owned();
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
#[path = "transform/fixtures_tests.rs"]
pub(crate) mod fixtures;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::message::{ThinkingContent, ToolCall};
    use serde_json::json;

    fn assistant(content: Vec<ContentBlock>, stop: StopReason) -> AgentMessage {
        AgentMessage::from(AssistantMessage {
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
            AgentMessage::from(ToolResultMessage {
                tool_call_id: "a|1".into(),
                tool_name: "read".into(),
                ..ToolResultMessage::default()
            }),
            AgentMessage::user_text("next"),
        ];
        let out = transform_messages(&messages, &Model::default(), |id| sanitize_id(id, 40));
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
