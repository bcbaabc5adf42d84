//! The default `convertToLlm` (improvement 4): pi's role filter plus seed 002's
//! `projectToolCallProtocol`, so a request is always protocol-valid.
//!
//! pi 1.6 only keeps the LLM roles. Providers also reject orphan tool results (a `transformContext`
//! window that cut the call off), results separated from their call, and assistant messages
//! with empty content left by a failed or aborted request. The projection drops the first two
//! kinds of damage and re-attaches each result right after its call.

use std::collections::HashMap;
use std::sync::Arc;

use crate::agent::message::{AgentMessage, AssistantMessage, ContentBlock, StopReason};

/// pi's default role filter, then [`project_tool_call_protocol`].
pub fn default_convert_to_llm(messages: Vec<AgentMessage>) -> Vec<AgentMessage> {
    let order = llm_order(&messages, true);
    pick(messages, &order)
}

/// [`default_convert_to_llm`] of a shared transcript: the same snapshot when the conversion
/// would keep every message in place (the usual case: no custom roles, every result right after
/// its call), so a request costs no copy of the history; otherwise a converted copy.
pub fn default_convert_shared(messages: &Arc<Vec<AgentMessage>>) -> Arc<Vec<AgentMessage>> {
    let order = llm_order(messages, true);
    if order.iter().copied().eq(0..messages.len()) {
        return Arc::clone(messages);
    }
    Arc::new(order.iter().map(|&i| messages[i].clone()).collect())
}

/// Drops orphan tool results and empty error/aborted assistant messages; places each tool
/// result right after the assistant message that called it, in call order.
pub fn project_tool_call_protocol(messages: Vec<AgentMessage>) -> Vec<AgentMessage> {
    let order = llm_order(&messages, false);
    pick(messages, &order)
}

/// The indices of the messages the conversion keeps, in output order (one algorithm for the
/// owned and the shared form, so they cannot disagree).
fn llm_order(messages: &[AgentMessage], drop_custom: bool) -> Vec<usize> {
    // The first result for an id wins, as with duplicated deliveries upstream.
    let mut results: HashMap<&str, usize> = HashMap::new();
    for (i, message) in messages.iter().enumerate() {
        if let AgentMessage::ToolResult(r) = message {
            results.entry(r.tool_call_id.as_str()).or_insert(i);
        }
    }
    let mut order = Vec::with_capacity(messages.len());
    for (i, message) in messages.iter().enumerate() {
        match message {
            AgentMessage::ToolResult(_) => {}
            AgentMessage::Custom(_) if drop_custom => {}
            AgentMessage::Assistant(assistant) => {
                if is_empty_failure(assistant) {
                    continue;
                }
                order.push(i);
                for call in assistant.tool_calls() {
                    if let Some(j) = results.remove(call.id.as_str()) {
                        order.push(j);
                    }
                }
            }
            _ => order.push(i),
        }
    }
    order
}

/// The messages at `order`'s indices, moved out (each index appears at most once).
fn pick(messages: Vec<AgentMessage>, order: &[usize]) -> Vec<AgentMessage> {
    let mut slots: Vec<Option<AgentMessage>> = messages.into_iter().map(Some).collect();
    order.iter().filter_map(|&i| slots[i].take()).collect()
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
        AgentMessage::from(AssistantMessage {
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
        AgentMessage::from(ToolResultMessage {
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
        let failed = AgentMessage::from(AssistantMessage {
            content: vec![ContentBlock::text("")],
            stop_reason: StopReason::Error,
            ..Default::default()
        });
        let user = AgentMessage::from(UserMessage {
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

    #[test]
    fn shared_conversion_shares_a_clean_transcript_and_copies_otherwise() {
        let clean = Arc::new(vec![
            AgentMessage::user_text("go"),
            call_msg(&["a", "b"]),
            result("a"),
            result("b"),
            call_msg(&["c"]),
        ]);
        assert!(Arc::ptr_eq(&default_convert_shared(&clean), &clean));
        let out_of_order = Arc::new(vec![call_msg(&["a", "b"]), result("b"), result("a")]);
        let converted = default_convert_shared(&out_of_order);
        assert!(!Arc::ptr_eq(&converted, &out_of_order));
        assert_eq!(roles(&converted), ["assistant", "tr:a", "tr:b"]);
    }

    /// The implementation before the index-order refactor, kept as the reference.
    fn reference_convert(messages: Vec<AgentMessage>) -> Vec<AgentMessage> {
        let llm: Vec<AgentMessage> = messages
            .into_iter()
            .filter(|m| !matches!(m, AgentMessage::Custom(_)))
            .collect();
        let mut results: HashMap<String, AgentMessage> = HashMap::new();
        let mut rest = Vec::new();
        for message in llm {
            match message {
                AgentMessage::ToolResult(r) => {
                    results
                        .entry(r.tool_call_id.clone())
                        .or_insert(AgentMessage::ToolResult(r));
                }
                other => rest.push(other),
            }
        }
        let mut projected = Vec::new();
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

    /// Message `k` of a small alphabet with colliding ids, customs and empty failures.
    fn message(k: u8, n: usize) -> AgentMessage {
        let ids = ["a", "b", "c"];
        match k % 6 {
            0 => AgentMessage::user_text(format!("u{n}")),
            1 => call_msg(&[ids[n % 3]]),
            2 => call_msg(&[ids[n % 3], ids[(n + 1) % 3]]),
            3 => {
                let mut r = result(ids[n % 3]);
                if let AgentMessage::ToolResult(t) = &mut r {
                    std::sync::Arc::make_mut(t).timestamp = n as i64;
                }
                r
            }
            4 => AgentMessage::from(crate::agent::message::CustomMessage {
                role: "note".into(),
                fields: serde_json::Map::new(),
            }),
            _ => AgentMessage::from(AssistantMessage {
                content: vec![ContentBlock::text("")],
                stop_reason: StopReason::Aborted,
                ..Default::default()
            }),
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        #[test]
        fn owned_and_shared_conversions_equal_the_reference(
            ks in proptest::collection::vec((0u8..6, 0usize..6), 0..12)
        ) {
            let messages: Vec<AgentMessage> = ks.iter().map(|&(k, n)| message(k, n)).collect();
            let expected = reference_convert(messages.clone());
            proptest::prop_assert_eq!(&default_convert_to_llm(messages.clone()), &expected);
            let shared = Arc::new(messages);
            let converted = default_convert_shared(&shared);
            proptest::prop_assert_eq!(&*converted, &expected);
            proptest::prop_assert_eq!(Arc::ptr_eq(&converted, &shared), *shared == expected);
        }
    }
}
