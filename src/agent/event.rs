//! The agent's lifecycle events (pi's `AgentEvent`), serialised with pi's JSON shapes.
//!
//! `message_update` carries only the provider's delta event (no cumulative partial message), as
//! pi's RPC mode does: a long answer then costs O(n) bytes on the wire, not O(n²).

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agent::message::{AgentMessage, AssistantMessage, ToolResultMessage};
use crate::agent::stream_contract::AssistantMessageEvent;
use crate::agent::tool::AgentToolResult;

/// Whole messages and tool results are boxed: every streamed delta is moved through several
/// channels and futures as an `AgentEvent`, so the enum is kept small.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, strum::IntoStaticStr)]
#[cfg_attr(test, derive(strum::VariantNames))]
#[serde(tag = "type", rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum AgentEvent {
    AgentStart,
    /// The run's new messages (prompts and loop-inserted system messages included).
    AgentEnd {
        messages: Vec<AgentMessage>,
    },
    TurnStart,
    #[serde(rename_all = "camelCase")]
    TurnEnd {
        /// Serialised with its `role`, as pi does (the struct alone has no role field).
        #[serde(serialize_with = "with_role::assistant")]
        message: Arc<AssistantMessage>,
        #[serde(serialize_with = "with_role::tool_results")]
        tool_results: Vec<Arc<ToolResultMessage>>,
    },
    MessageStart {
        message: AgentMessage,
    },
    #[serde(rename_all = "camelCase")]
    MessageUpdate {
        assistant_message_event: AssistantMessageEvent,
    },
    MessageEnd {
        message: AgentMessage,
    },
    /// A streamed response was withdrawn (it faked tool calls in text); a repaired retry follows.
    /// Not in pi 1.6: see ARCHITECTURE.md, "deliberate improvements".
    #[serde(rename_all = "camelCase")]
    MessageDiscard {
        message: Box<AssistantMessage>,
        reason: String,
    },
    #[serde(rename_all = "camelCase")]
    ToolExecutionStart {
        tool_call_id: String,
        tool_name: String,
        args: Value,
    },
    #[serde(rename_all = "camelCase")]
    ToolExecutionUpdate {
        tool_call_id: String,
        tool_name: String,
        args: Value,
        partial_result: Box<AgentToolResult>,
    },
    #[serde(rename_all = "camelCase")]
    ToolExecutionEnd {
        tool_call_id: String,
        tool_name: String,
        result: Box<AgentToolResult>,
        is_error: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
    },
    /// The provider will retry a failed request (rate limit, overload) after `delay_ms`.
    #[serde(rename_all = "camelCase")]
    ProviderRetry {
        attempt: u32,
        max_attempts: u32,
        delay_ms: u64,
        error_message: String,
    },
}

impl AgentEvent {
    /// The `type` tag, as it appears on the wire.
    pub fn kind(&self) -> &'static str {
        self.into()
    }

    /// The streamed delta a `message_update` carries (text, thinking or tool-call arguments),
    /// the one event that arrives per token: front ends encode or merge it without its JSON.
    pub fn streamed_delta(&self) -> Option<StreamedDelta<'_>> {
        let AgentEvent::MessageUpdate {
            assistant_message_event: inner,
        } = self
        else {
            return None;
        };
        let (kind, content_index, text) = match inner {
            AssistantMessageEvent::TextDelta {
                content_index,
                delta,
            } => ("text_delta", content_index, delta),
            AssistantMessageEvent::ThinkingDelta {
                content_index,
                delta,
            } => ("thinking_delta", content_index, delta),
            AssistantMessageEvent::ToolCallDelta {
                content_index,
                delta,
            } => ("toolcall_delta", content_index, delta),
            _ => return None,
        };
        Some(StreamedDelta {
            kind,
            content_index: *content_index,
            text,
        })
    }
}

/// See [`AgentEvent::streamed_delta`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamedDelta<'a> {
    /// The inner event's `type` tag on the wire: `text_delta`, `thinking_delta`, `toolcall_delta`.
    pub kind: &'static str,
    pub content_index: usize,
    pub text: &'a str,
}

/// Serialises bare message structs with pi's leading `role` field, so `turn_end` carries the same
/// message shape as `message_end` (found by the pi 1.6.0 interop test, tests/interop/). Reading
/// ignores the extra field.
mod with_role {
    use std::sync::Arc;

    use serde::{Serialize, Serializer};

    use crate::agent::message::{AssistantMessage, ToolResultMessage};

    #[derive(Serialize)]
    struct Tagged<'a, T> {
        role: &'static str,
        #[serde(flatten)]
        inner: &'a T,
    }

    pub fn assistant<S: Serializer>(message: &AssistantMessage, s: S) -> Result<S::Ok, S::Error> {
        Tagged {
            role: "assistant",
            inner: message,
        }
        .serialize(s)
    }

    pub fn tool_results<S: Serializer>(
        results: &[Arc<ToolResultMessage>],
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_seq(results.iter().map(|inner| Tagged {
            role: "toolResult",
            inner: &**inner,
        }))
    }
}

#[cfg(test)]
mod tests {
    use strum::VariantNames as _;

    use super::*;

    #[test]
    fn kinds_are_the_serde_tags() {
        let message = || AgentMessage::user_text("hi");
        let samples = [
            AgentEvent::AgentStart,
            AgentEvent::AgentEnd { messages: vec![] },
            AgentEvent::TurnStart,
            AgentEvent::TurnEnd {
                message: Arc::default(),
                tool_results: vec![],
            },
            AgentEvent::MessageStart { message: message() },
            AgentEvent::MessageUpdate {
                assistant_message_event: AssistantMessageEvent::TextStart { content_index: 0 },
            },
            AgentEvent::MessageEnd { message: message() },
            AgentEvent::MessageDiscard {
                message: Box::default(),
                reason: "faked a call".into(),
            },
            AgentEvent::ToolExecutionStart {
                tool_call_id: "c".into(),
                tool_name: "read".into(),
                args: Value::Null,
            },
            AgentEvent::ToolExecutionUpdate {
                tool_call_id: "c".into(),
                tool_name: "read".into(),
                args: Value::Null,
                partial_result: Box::default(),
            },
            AgentEvent::ToolExecutionEnd {
                tool_call_id: "c".into(),
                tool_name: "read".into(),
                result: Box::default(),
                is_error: false,
                duration_ms: None,
            },
            AgentEvent::ProviderRetry {
                attempt: 1,
                max_attempts: 3,
                delay_ms: 10,
                error_message: "overloaded".into(),
            },
        ];
        crate::testing::tags::assert_names_are_serde_tags(&samples, AgentEvent::VARIANTS);
    }

    #[test]
    fn turn_end_messages_carry_pi_roles_and_read_back() {
        let event = AgentEvent::TurnEnd {
            message: Arc::default(),
            tool_results: vec![Arc::default()],
        };
        let json = serde_json::to_value(&event).unwrap();
        assert_eq!(json["message"]["role"], "assistant");
        assert_eq!(json["toolResults"][0]["role"], "toolResult");
        let back: AgentEvent = serde_json::from_value(json).unwrap();
        assert_eq!(back, event);
    }
}
