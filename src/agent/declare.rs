//! pi's `declareToolChanges`: before pending messages enter the transcript, make the
//! transcript's replayed tool set equal the context's executable tools.

use crate::agent::message::{AgentMessage, SystemMessage, ToolDeclaration, now_ms};
use crate::agent::tool::ToolRef;
use crate::agent::transcript::{IncrementalTools, ToolChanges, tool_state_changes};

/// The context's tools as declarations (pi's `toToolDeclaration`).
pub fn declarations(tools: &[ToolRef]) -> Vec<ToolDeclaration> {
    tools.iter().map(|t| t.declaration().clone()).collect()
}

/// Returns the pending messages, possibly with a pending system message rewritten or a new
/// declaration message inserted, so that replaying `transcript ++ result` yields `tools`.
pub fn declare_tool_changes(
    transcript: &[AgentMessage],
    tools: &[ToolRef],
    pending: Vec<AgentMessage>,
    cache: &mut IncrementalTools,
) -> Vec<AgentMessage> {
    let sys_idx = pending
        .iter()
        .rposition(|m| matches!(m, AgentMessage::System(_)));
    let mut baseline = pending.clone();
    let mut intent_declares = false;
    if let Some(i) = sys_idx
        && let AgentMessage::System(p) = &mut baseline[i]
    {
        intent_declares = p.tools_added.as_ref().is_some_and(|v| !v.is_empty())
            || p.tools_removed.as_ref().is_some_and(|v| !v.is_empty());
        p.tools_added = None;
        p.tools_removed = None;
    }
    let previous = cache.tools_with(transcript, &baseline);
    let changes = tool_state_changes(&previous, &declarations(tools));
    let unchanged = changes.is_empty();
    match sys_idx {
        Some(i) => {
            if unchanged && !intent_declares {
                return pending;
            }
            if let AgentMessage::System(p) = &mut baseline[i] {
                apply_changes(p, changes);
            }
            baseline
        }
        None if unchanged => pending,
        None => {
            let mut update = SystemMessage {
                content: "".into(),
                timestamp: now_ms(),
                ..Default::default()
            };
            apply_changes(&mut update, changes);
            let at = pending
                .iter()
                .position(|m| !matches!(m, AgentMessage::System(_)))
                .unwrap_or(pending.len());
            let mut out = pending;
            out.insert(at, AgentMessage::System(update));
            out
        }
    }
}

fn apply_changes(message: &mut SystemMessage, changes: ToolChanges) {
    message.tools_added = (!changes.added.is_empty()).then_some(changes.added);
    message.tools_removed = (!changes.removed.is_empty()).then_some(changes.removed);
}
