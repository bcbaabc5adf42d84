//! The Agent's observable state (pi's `agent.state`) and its reduction from events.

use crate::agent::event::AgentEvent;
use crate::agent::message::{AgentMessage, ThinkingLevel};
use crate::agent::model::Model;
use crate::agent::tool::ToolRef;
use crate::agent::transcript::current_system_prompt;

/// A snapshot of the Agent's state. Setting state emits no events.
#[derive(Clone)]
pub struct AgentState {
    pub model: Model,
    pub thinking_level: ThinkingLevel,
    /// The transcript; runs append to it through `message_end` only.
    pub messages: Vec<AgentMessage>,
    pub tools: Vec<ToolRef>,
    pub is_streaming: bool,
    /// The message between its `message_start` and `message_end`.
    pub streaming_message: Option<AgentMessage>,
    /// Ids of tool calls between `tool_execution_start` and `tool_execution_end`, in start order.
    pub pending_tool_calls: Vec<String>,
    /// The last failed response's `errorMessage` in the current or last run.
    pub error_message: Option<String>,
}

impl AgentState {
    /// pi's `state.systemPrompt`: the transcript's replayed system text.
    pub fn system_prompt(&self) -> String {
        current_system_prompt(&self.messages)
    }

    /// Applies an event before listeners see it (pi's `processEvents` reduction).
    pub fn reduce(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::MessageStart { message } => {
                self.streaming_message = Some(message.clone());
            }
            AgentEvent::MessageEnd { message } => {
                self.streaming_message = None;
                self.messages.push(message.clone());
            }
            AgentEvent::MessageDiscard { .. } | AgentEvent::AgentEnd { .. } => {
                self.streaming_message = None;
            }
            AgentEvent::ToolExecutionStart { tool_call_id, .. } => {
                if !self.pending_tool_calls.contains(tool_call_id) {
                    self.pending_tool_calls.push(tool_call_id.clone());
                }
            }
            AgentEvent::ToolExecutionEnd { tool_call_id, .. } => {
                self.pending_tool_calls.retain(|id| id != tool_call_id);
            }
            AgentEvent::TurnEnd { message, .. } => {
                if let Some(error) = message.error_message.as_ref().filter(|e| !e.is_empty()) {
                    self.error_message = Some(error.clone());
                }
            }
            AgentEvent::AgentStart
            | AgentEvent::TurnStart
            | AgentEvent::MessageUpdate { .. }
            | AgentEvent::ToolExecutionUpdate { .. }
            | AgentEvent::ProviderRetry { .. } => {}
        }
    }
}

impl std::fmt::Debug for AgentState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tools: Vec<&str> = self.tools.iter().map(|t| t.name()).collect();
        f.debug_struct("AgentState")
            .field("model", &self.model.id)
            .field("thinking_level", &self.thinking_level)
            .field("messages", &self.messages.len())
            .field("tools", &tools)
            .field("is_streaming", &self.is_streaming)
            .field("pending_tool_calls", &self.pending_tool_calls)
            .field("error_message", &self.error_message)
            .finish()
    }
}
