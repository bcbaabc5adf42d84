//! The agent's lifecycle events (pi's `AgentEvent`), serialised with pi's JSON shapes.
//!
//! `message_update` carries only the provider's delta event (no cumulative partial message), as
//! pi's RPC mode does: a long answer then costs O(n) bytes on the wire, not O(n²).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agent::message::{AgentMessage, AssistantMessage, ToolResultMessage};
use crate::agent::tool::AgentToolResult;
use crate::provider::AssistantMessageEvent;

#[allow(clippy::large_enum_variant)] // Events are moved to listeners, not stored in bulk.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEvent {
    AgentStart,
    /// The run's new messages (prompts and loop-inserted system messages included).
    AgentEnd {
        messages: Vec<AgentMessage>,
    },
    TurnStart,
    #[serde(rename_all = "camelCase")]
    TurnEnd {
        message: AssistantMessage,
        tool_results: Vec<ToolResultMessage>,
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
        message: AssistantMessage,
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
        partial_result: AgentToolResult,
    },
    #[serde(rename_all = "camelCase")]
    ToolExecutionEnd {
        tool_call_id: String,
        tool_name: String,
        result: AgentToolResult,
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
        match self {
            AgentEvent::AgentStart => "agent_start",
            AgentEvent::AgentEnd { .. } => "agent_end",
            AgentEvent::TurnStart => "turn_start",
            AgentEvent::TurnEnd { .. } => "turn_end",
            AgentEvent::MessageStart { .. } => "message_start",
            AgentEvent::MessageUpdate { .. } => "message_update",
            AgentEvent::MessageEnd { .. } => "message_end",
            AgentEvent::MessageDiscard { .. } => "message_discard",
            AgentEvent::ToolExecutionStart { .. } => "tool_execution_start",
            AgentEvent::ToolExecutionUpdate { .. } => "tool_execution_update",
            AgentEvent::ToolExecutionEnd { .. } => "tool_execution_end",
            AgentEvent::ProviderRetry { .. } => "provider_retry",
        }
    }
}
