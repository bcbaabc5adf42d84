//! The default `convertToLlm` (improvement 4): pi's role filter plus seed 002's
//! `projectToolCallProtocol`, so a request is always protocol-valid.
//!
//! pi 1.6 only keeps the LLM roles. Providers also reject orphan tool results (a `transformContext`
//! window that cut the call off), results separated from their call, and assistant messages
//! with empty content left by a failed or aborted request. The projection drops the first two
//! kinds of damage and re-attaches each result right after its call.

use std::collections::HashMap;

use crate::agent::message::{AgentMessage, AssistantMessage, ContentBlock, StopReason};

/// pi's default role filter, then [`project_tool_call_protocol`].
pub fn default_convert_to_llm(messages: Vec<AgentMessage>) -> Vec<AgentMessage> {
    let llm: Vec<AgentMessage> = messages
        .into_iter()
        .filter(|m| !matches!(m, AgentMessage::Custom(_)))
        .collect();
    project_tool_call_protocol(llm)
}

/// Drops orphan tool results and empty error/aborted assistant messages; places each tool
/// result right after the assistant message that called it, in call order.
pub fn project_tool_call_protocol(messages: Vec<AgentMessage>) -> Vec<AgentMessage> {
    let mut results: HashMap<String, AgentMessage> = HashMap::new();
    let mut rest = Vec::with_capacity(messages.len());
    for message in messages {
        match message {
            AgentMessage::ToolResult(r) => {
                // The first result for an id wins, as with duplicated deliveries upstream.
                results
                    .entry(r.tool_call_id.clone())
                    .or_insert(AgentMessage::ToolResult(r));
            }
            other => rest.push(other),
        }
    }
    let mut projected = Vec::with_capacity(rest.len() + results.len());
    for message in rest {
        let AgentMessage::Assistant(assistant) = message else {
            projected.push(message);
            continue;
        };
        if is_empty_failure(&assistant) {
            continue;
        }
        let ids: Vec<String> = assistant.tool_calls().map(|c| c.id.clone()).collect();
        projected.push(AgentMessage::Assistant(assistant));
        for id in ids {
            if let Some(result) = results.remove(&id) {
                projected.push(result);
            }
        }
    }
    projected
}

/// An error/aborted response with nothing the model could build on (no text, no calls).
fn is_empty_failure(message: &AssistantMessage) -> bool {
    matches!(message.stop_reason, StopReason::Error | StopReason::Aborted)
        && message.content.iter().all(|block| match block {
            ContentBlock::Text(t) => t.text.is_empty(),
            ContentBlock::Thinking(t) => t.thinking.is_empty(),
            _ => false,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::message::{ToolCall, ToolResultMessage, UserMessage};
    use serde_json::json;

    fn call_msg(ids: &[&str]) -> AgentMessage {
        AgentMessage::Assistant(AssistantMessage {
            content: ids
                .iter()
                .map(|id| {
                    ContentBlock::ToolCall(ToolCall {
                        id: id.to_string(),
                        name: "echo".into(),
                        arguments: json!({}),
                        ..Default::default()
                    })
                })
                .collect(),
            stop_reason: StopReason::ToolUse,
            ..Default::default()
        })
    }

    fn result(id: &str) -> AgentMessage {
        AgentMessage::ToolResult(ToolResultMessage {
            tool_call_id: id.into(),
            tool_name: "echo".into(),
            ..Default::default()
        })
    }

    fn roles(ms: &[AgentMessage]) -> Vec<String> {
        ms.iter()
            .map(|m| match m {
                AgentMessage::ToolResult(r) => format!("tr:{}", r.tool_call_id),
                other => other.role().to_string(),
            })
            .collect()
    }

    #[test]
    fn projection_drops_orphans_and_empty_failures_and_reorders() {
        let failed = AgentMessage::Assistant(AssistantMessage {
            content: vec![ContentBlock::text("")],
            stop_reason: StopReason::Error,
            ..Default::default()
        });
        let user = AgentMessage::User(UserMessage {
            content: "hi".into(),
            timestamp: 1,
        });
        let out = default_convert_to_llm(vec![
            result("orphan"),
            user.clone(),
            call_msg(&["a", "b"]),
            user,
            result("b"),
            result("a"),
            failed,
        ]);
        assert_eq!(roles(&out), ["user", "assistant", "tr:a", "tr:b", "user"]);
    }
}
