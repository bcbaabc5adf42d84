//! Folding transcript tool declarations into a request (§A13).
//!
//! Tools live in system messages (`toolsAdded`/`toolsRemoved`). Strategy "none" collapses all
//! system messages and sends the complete current tool list every request. "Additions" (when
//! the API can declare tools mid-conversation and the history only ever added tools) sends the
//! initial system message's tools at the top level and renders later additions in place.
//! "Changes" also renders removals in place.

use std::borrow::Borrow;

use crate::agent::message::{AgentMessage, ToolDeclaration};
use crate::agent::transcript::{ToolSet, current_tools};

/// How tool declarations reach the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolStrategy {
    None,
    Additions,
    Changes,
}

/// True when no system message after the first removes or re-declares a tool.
pub fn history_is_additive<M: Borrow<AgentMessage>>(messages: &[M]) -> bool {
    let mut seen = ToolSet::default();
    let mut first = true;
    for system in messages.iter().filter_map(|m| m.borrow().as_system()) {
        if !first {
            if system.tools_removed.as_ref().is_some_and(|r| !r.is_empty()) {
                return false;
            }
            let redeclared = system
                .tools_added
                .iter()
                .flatten()
                .any(|t| seen.as_slice().iter().any(|s| s.name == t.name));
            if redeclared {
                return false;
            }
        }
        first = false;
        seen.apply(system);
    }
    true
}

/// The strategy actually usable for this history (falls back to `None` when not additive).
pub fn effective_strategy<M: Borrow<AgentMessage>>(
    wanted: ToolStrategy,
    messages: &[M],
) -> ToolStrategy {
    match wanted {
        ToolStrategy::Additions if !history_is_additive(messages) => ToolStrategy::None,
        other => other,
    }
}

/// The top-level tool list for a strategy: everything current for `None`, else the tools of
/// the initial system message (later ones are rendered in place).
pub fn request_tools<M: Borrow<AgentMessage>>(
    strategy: ToolStrategy,
    messages: &[M],
) -> Vec<ToolDeclaration> {
    match strategy {
        ToolStrategy::None => current_tools(messages.iter().map(Borrow::borrow)),
        ToolStrategy::Additions | ToolStrategy::Changes => messages
            .iter()
            .find_map(|m| m.borrow().as_system())
            .and_then(|s| s.tools_added.clone())
            .unwrap_or_default(),
    }
}

/// Reads a boolean compat flag of the model.
pub fn compat_flag(model: &crate::agent::model::Model, name: &str) -> Option<bool> {
    model.compat.as_ref()?.get(name)?.as_bool()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::message::{SystemMessage, ToolReference};
    use serde_json::json;

    fn tool(name: &str) -> ToolDeclaration {
        ToolDeclaration {
            name: name.into(),
            description: String::new(),
            parameters: json!({"type": "object"}),
            constrained_sampling: None,
        }
    }

    fn system(added: &[&str], removed: &[&str]) -> AgentMessage {
        AgentMessage::from(SystemMessage {
            tools_added: Some(added.iter().map(|n| tool(n)).collect()),
            tools_removed: Some(
                removed
                    .iter()
                    .map(|n| ToolReference { name: (*n).into() })
                    .collect(),
            ),
            ..SystemMessage::default()
        })
    }

    #[test]
    fn additions_fall_back_to_none_after_a_removal() {
        let additive = vec![system(&["a"], &[]), system(&["b"], &[])];
        assert_eq!(
            effective_strategy(ToolStrategy::Additions, &additive),
            ToolStrategy::Additions
        );
        let names = |tools: Vec<ToolDeclaration>| {
            tools
                .into_iter()
                .map(|t| t.name.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names(request_tools(ToolStrategy::Additions, &additive)),
            ["a"]
        );
        assert_eq!(
            names(request_tools(ToolStrategy::None, &additive)),
            ["a", "b"]
        );
        let removing = vec![system(&["a"], &[]), system(&[], &["a"])];
        assert_eq!(
            effective_strategy(ToolStrategy::Additions, &removing),
            ToolStrategy::None
        );
        let redeclaring = vec![system(&["a"], &[]), system(&["a"], &[])];
        assert!(!history_is_additive(&redeclaring));
    }
}
