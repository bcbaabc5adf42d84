//! Folding transcript tool declarations into a request (§A13).
//!
//! Tools live in system messages (`toolsAdded`/`toolsRemoved`). Strategy "none" collapses all
//! system messages and sends the complete current tool list every request. "Additions" (when
//! the API can declare tools mid-conversation and the history only ever added tools) sends the
//! initial system message's tools at the top level and renders later additions in place.
//! "Changes" also renders removals in place.

use serde_json::Value;

use crate::agent::message::{AgentMessage, SystemMessage, ToolDeclaration};
use crate::agent::transcript::system_message_text;

/// How tool declarations reach the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolStrategy {
    None,
    Additions,
    Changes,
}

/// The transcript's tool set by reference (the replay of `transcript::ToolSet`, without
/// copying every tool's JSON schema on every request).
#[derive(Debug, Default)]
pub struct ToolRefs<'a> {
    tools: Vec<&'a ToolDeclaration>,
}

impl<'a> ToolRefs<'a> {
    /// Applies one system message's declarations: removals first, then additions by name (a
    /// re-declaration replaces in place).
    pub fn apply(&mut self, system: &'a SystemMessage) {
        for removed in system.tools_removed.iter().flatten() {
            self.tools.retain(|t| t.name != removed.name);
        }
        for added in system.tools_added.iter().flatten() {
            match self.tools.iter_mut().find(|t| t.name == added.name) {
                Some(existing) => *existing = added,
                None => self.tools.push(added),
            }
        }
    }

    pub fn as_slice(&self) -> &[&'a ToolDeclaration] {
        &self.tools
    }

    pub fn into_vec(self) -> Vec<&'a ToolDeclaration> {
        self.tools
    }
}

/// The system messages of a history.
fn systems<'a, I>(messages: I) -> impl Iterator<Item = &'a SystemMessage>
where
    I: IntoIterator<Item = &'a AgentMessage>,
{
    messages.into_iter().filter_map(AgentMessage::as_system)
}

/// True when no system message after the first removes or re-declares a tool.
pub fn history_is_additive<'a>(messages: impl IntoIterator<Item = &'a AgentMessage>) -> bool {
    let mut seen = ToolRefs::default();
    let mut first = true;
    for system in systems(messages) {
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
pub fn effective_strategy<'a>(
    wanted: ToolStrategy,
    messages: impl IntoIterator<Item = &'a AgentMessage>,
) -> ToolStrategy {
    match wanted {
        ToolStrategy::Additions if !history_is_additive(messages) => ToolStrategy::None,
        other => other,
    }
}

/// The top-level tool list for a strategy: everything current for `None`, else the tools of
/// the initial system message (later ones are rendered in place).
pub fn request_tools<'a>(
    strategy: ToolStrategy,
    messages: impl IntoIterator<Item = &'a AgentMessage>,
) -> Vec<&'a ToolDeclaration> {
    let mut systems = systems(messages);
    match strategy {
        ToolStrategy::None => {
            let mut tools = ToolRefs::default();
            systems.for_each(|s| tools.apply(s));
            tools.into_vec()
        }
        ToolStrategy::Additions | ToolStrategy::Changes => systems
            .next()
            .and_then(|s| s.tools_added.as_ref())
            .map(|tools| tools.iter().collect())
            .unwrap_or_default(),
    }
}

/// pi's `getCurrentSystemPrompt` without materialising the merged system message: contents
/// joined with blank lines, sections merged by name (`null` deletes), then each section value.
pub fn current_system_prompt<'a>(messages: impl IntoIterator<Item = &'a AgentMessage>) -> String {
    let mut texts: Vec<String> = Vec::new();
    let mut sections: Vec<(&'a str, &'a Value)> = Vec::new();
    let mut any = false;
    for system in systems(messages) {
        any = true;
        let text = system.content.to_text();
        if !text.is_empty() {
            texts.push(text);
        }
        for (name, value) in system.sections.iter().flatten() {
            let slot = sections.iter().position(|(n, _)| n == name);
            match (value, slot) {
                (Value::Null, Some(i)) => {
                    sections.remove(i);
                }
                (Value::Null, None) => {}
                (_, Some(i)) => sections[i].1 = value,
                (_, None) => sections.push((name, value)),
            }
        }
    }
    if !any {
        return String::new();
    }
    if sections.is_empty() {
        return texts.join("\n\n");
    }
    let merged = SystemMessage {
        content: texts.join("\n\n").into(),
        sections: Some(
            sections
                .into_iter()
                .map(|(n, v)| (n.to_string(), v.clone()))
                .collect(),
        ),
        ..SystemMessage::default()
    };
    system_message_text(&merged)
}

/// Reads a boolean compat flag of the model.
pub fn compat_flag(model: &super::Model, name: &str) -> Option<bool> {
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
        AgentMessage::System(SystemMessage {
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
        let names = |tools: Vec<&ToolDeclaration>| {
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
