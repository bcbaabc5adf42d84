//! A `task` call's subagent in ACP: the child's steps (each tool call it makes, with its title,
//! and what it says) are the call's content, replaced by each `tool_call_update` as the child
//! goes on and kept above the answer in the call's final update.

use std::collections::HashMap;
use std::sync::Mutex;

use agent_client_protocol_schema::v1 as acp;

use crate::acp::updates::{ToolLook, text_block};
use crate::agent::event::AgentEvent;
use crate::agent::message::{AgentMessage, ContentBlock};
use crate::core::subagent::ChildEvent;

/// What a child said, at most this many characters a step.
const SAID_CHARS: usize = 500;

/// One step: the child's tool call id (`None` for what it said) and its line.
type Step = (Option<String>, String);

/// The steps of each running `task` call, by the call's id.
#[derive(Default)]
pub struct ChildSteps(Mutex<HashMap<String, Vec<Step>>>);

impl ChildSteps {
    /// Notes a child's event; the `task` call's update when its steps changed.
    pub fn note(&self, look: &ToolLook<'_>, child: &ChildEvent) -> Option<acp::SessionUpdate> {
        let mut calls = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let steps = calls.entry(child.parent_tool_call_id.clone()).or_default();
        match child.event.as_ref() {
            AgentEvent::ToolExecutionStart {
                tool_call_id,
                tool_name,
                args,
            } => steps.push((Some(tool_call_id.clone()), look.title(tool_name, args))),
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                is_error: true,
                ..
            } => {
                let step = steps
                    .iter_mut()
                    .find(|(id, _)| id.as_ref() == Some(tool_call_id));
                step?.1.push_str(" (failed)");
            }
            AgentEvent::MessageEnd {
                message: AgentMessage::Assistant(message),
            } => {
                let said: Vec<&str> = (message.content.iter())
                    .filter_map(ContentBlock::as_text)
                    .collect();
                let said = said.join("\n");
                let said = said.trim();
                if said.is_empty() {
                    return None;
                }
                steps.push((None, shortened(said)));
            }
            _ => return None,
        }
        let fields = acp::ToolCallUpdateFields::new().content(content(steps));
        let update = acp::ToolCallUpdate::new(child.parent_tool_call_id.clone(), fields);
        Some(acp::SessionUpdate::ToolCallUpdate(update))
    }

    /// The steps of a `task` call that ended (nothing for any other call), as content to keep
    /// above its result; the child's last words are left out: they are the result.
    pub fn take(&self, call: &str) -> Vec<acp::ToolCallContent> {
        let mut calls = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let mut steps = calls.remove(call).unwrap_or_default();
        if steps.last().is_some_and(|(id, _)| id.is_none()) {
            steps.pop();
        }
        content(&steps)
    }
}

fn content(steps: &[Step]) -> Vec<acp::ToolCallContent> {
    (steps.iter())
        .map(|(_, line)| acp::ToolCallContent::Content(acp::Content::new(text_block(line))))
        .collect()
}

fn shortened(text: &str) -> String {
    match text.char_indices().nth(SAID_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}
