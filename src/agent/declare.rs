//! pi's `declareToolChanges`: before pending messages enter the transcript, make the
//! transcript's replayed tool set equal the context's executable tools.

use std::sync::Arc;

use crate::agent::message::{AgentMessage, SystemMessage, ToolDeclaration, now_ms};
use crate::agent::tool::ToolRef;
use crate::agent::transcript::{
    IncrementalTools, ToolChanges, declarations_equal, tool_state_changes,
};

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
    // The usual turn: nothing declares and the tools did not change. Checked on references;
    // the general path below clones every declaration twice per turn.
    if sys_idx.is_none() && unchanged(cache.tools_at(transcript), tools) {
        return pending;
    }
    let mut baseline = pending.clone();
    let mut intent_declares = false;
    if let Some(i) = sys_idx
        && let AgentMessage::System(p) = &mut baseline[i]
    {
        let p = Arc::make_mut(p);
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
                apply_changes(Arc::make_mut(p), changes);
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
            out.insert(at, AgentMessage::from(update));
            out
        }
    }
}

/// Whether `tool_state_changes(previous, &declarations(tools))` is empty, checked on references.
fn unchanged(previous: &[ToolDeclaration], tools: &[ToolRef]) -> bool {
    tools.iter().all(|t| {
        previous
            .iter()
            .any(|p| declarations_equal(p, t.declaration()))
    }) && previous
        .iter()
        .all(|p| tools.iter().any(|t| declarations_equal(p, t.declaration())))
}

fn apply_changes(message: &mut SystemMessage, changes: ToolChanges) {
    message.tools_added = (!changes.added.is_empty()).then_some(changes.added);
    message.tools_removed = (!changes.removed.is_empty()).then_some(changes.removed);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::tool::{AgentTool, AgentToolResult, ToolError, ToolInput};
    use crate::agent::transcript::tool_state_changes;
    use futures_util::future::BoxFuture;
    use proptest::prelude::*;
    use serde_json::json;
    use std::sync::Arc;

    struct Declared(ToolDeclaration);

    impl AgentTool for Declared {
        fn declaration(&self) -> &ToolDeclaration {
            &self.0
        }
        fn execute(&self, _: ToolInput) -> BoxFuture<'static, Result<AgentToolResult, ToolError>> {
            Box::pin(async { Ok(AgentToolResult::text("")) })
        }
    }

    /// Declarations from a small alphabet: names, descriptions and schemas that collide,
    /// including key order, 0 / 0.0 / -0.0 and nested arrays.
    fn declaration(k: (u8, u8, u8)) -> ToolDeclaration {
        let schemas = [
            json!({"type": "object", "properties": {"a": {"type": "string"}}}),
            json!({"properties": {"a": {"type": "string"}}, "type": "object"}),
            json!({"type": "object", "minimum": 0}),
            json!({"type": "object", "minimum": 0.0}),
            json!({"type": "object", "minimum": -0.0}),
            json!({"type": "object", "enum": [[1, "x"], null, true]}),
        ];
        ToolDeclaration {
            name: ["read", "edit", "bash"][usize::from(k.0 % 3)].into(),
            description: ["d", "e"][usize::from(k.1 % 2)].into(),
            parameters: schemas[usize::from(k.2 % 6)].clone(),
            constrained_sampling: None,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]
        #[test]
        fn unchanged_agrees_with_tool_state_changes(
            prev in proptest::collection::vec((0u8..3, 0u8..2, 0u8..6), 0..4),
            cur in proptest::collection::vec((0u8..3, 0u8..2, 0u8..6), 0..4),
        ) {
            let previous: Vec<ToolDeclaration> = prev.into_iter().map(declaration).collect();
            let tools: Vec<ToolRef> = cur
                .into_iter()
                .map(|k| Arc::new(Declared(declaration(k))) as ToolRef)
                .collect();
            let expected = tool_state_changes(&previous, &declarations(&tools)).is_empty();
            prop_assert_eq!(unchanged(&previous, &tools), expected);
        }
    }
}
