//! Transcript utilities (pi-ai `utils/transcript.ts`): system messages carry the prompt and the
//! tool declarations, so the current prompt and tool set are a replay of the transcript.

use serde_json::{Map, Value};

use crate::agent::message::{
    AgentMessage, MessageContent, SystemMessage, ToolDeclaration, ToolReference,
};

/// The tool set after replaying every system message in order: per message, first remove
/// `toolsRemoved` names, then set `toolsAdded` by name (a re-declaration replaces in place).
pub fn current_tools<'a>(
    messages: impl IntoIterator<Item = &'a AgentMessage>,
) -> Vec<ToolDeclaration> {
    let mut tools = ToolSet::default();
    tools.replay(messages);
    tools.into_vec()
}

/// An insertion-ordered tool map, the state of a transcript replay.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolSet {
    tools: Vec<ToolDeclaration>,
}

impl ToolSet {
    /// Applies one system message's declarations.
    pub fn apply(&mut self, system: &SystemMessage) {
        for removed in system.tools_removed.iter().flatten() {
            self.tools.retain(|t| t.name != removed.name);
        }
        for added in system.tools_added.iter().flatten() {
            match self.tools.iter_mut().find(|t| t.name == added.name) {
                Some(existing) => *existing = added.clone(),
                None => self.tools.push(added.clone()),
            }
        }
    }

    /// Applies the system messages of `messages`, in order.
    pub fn replay<'a>(&mut self, messages: impl IntoIterator<Item = &'a AgentMessage>) {
        for message in messages {
            if let AgentMessage::System(system) = message {
                self.apply(system);
            }
        }
    }

    pub fn as_slice(&self) -> &[ToolDeclaration] {
        &self.tools
    }

    pub fn into_vec(self) -> Vec<ToolDeclaration> {
        self.tools
    }
}

/// Improvement 3: an incremental transcript replay. The loop only appends to its context, so
/// the tool set of the committed prefix is cached and each request replays just the new
/// messages (O(new) instead of O(transcript)). Call [`IncrementalTools::reset`] when the context
/// is replaced wholesale (a hook returned a new one); [`IncrementalTools::tools_at`] also resets
/// by itself when the transcript got shorter than the cached prefix.
#[derive(Clone, Debug, Default)]
pub struct IncrementalTools {
    replayed: usize,
    set: ToolSet,
}

impl IncrementalTools {
    /// Forgets the cached prefix.
    pub fn reset(&mut self) {
        *self = IncrementalTools::default();
    }

    /// The tool set after replaying `messages`, which must extend the previously seen prefix.
    pub fn tools_at(&mut self, messages: &[AgentMessage]) -> &[ToolDeclaration] {
        if messages.len() < self.replayed {
            self.reset();
        }
        self.set.replay(&messages[self.replayed..]);
        self.replayed = messages.len();
        self.set.as_slice()
    }

    /// The cached set extended by `extra` messages, without committing them to the cache.
    pub fn tools_with(
        &mut self,
        messages: &[AgentMessage],
        extra: &[AgentMessage],
    ) -> Vec<ToolDeclaration> {
        let mut set = ToolSet {
            tools: self.tools_at(messages).to_vec(),
        };
        set.replay(extra);
        set.into_vec()
    }
}

/// What changed between two tool sets (pi's `getToolStateChanges`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolChanges {
    pub added: Vec<ToolDeclaration>,
    pub removed: Vec<ToolReference>,
}

impl ToolChanges {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty()
    }
}

/// Added: tools of `current` missing from `previous` or declared differently, in `current` order.
/// Removed: tools of `previous` missing from `current` or declared differently, in `previous`
/// order. A changed declaration therefore appears in both lists, as in pi.
pub fn tool_state_changes(
    previous: &[ToolDeclaration],
    current: &[ToolDeclaration],
) -> ToolChanges {
    let same = |a: &ToolDeclaration, b: &ToolDeclaration| declarations_equal(a, b);
    let added = current
        .iter()
        .filter(|c| !previous.iter().any(|p| p.name == c.name && same(p, c)))
        .cloned()
        .collect();
    let removed = previous
        .iter()
        .filter(|p| !current.iter().any(|c| c.name == p.name && same(p, c)))
        .map(|p| ToolReference {
            name: p.name.clone(),
        })
        .collect();
    ToolChanges { added, removed }
}

/// pi compares `JSON.stringify` output, which is key-order sensitive.
pub(crate) fn declarations_equal(a: &ToolDeclaration, b: &ToolDeclaration) -> bool {
    a.name == b.name
        && a.description == b.description
        && a.constrained_sampling == b.constrained_sampling
        && same_text(&a.parameters, &b.parameters)
}

/// Equality of the serialised texts without serialising (this runs every turn): same shape,
/// keys in the same order (`Value`'s own equality ignores key order; pi's does not), numbers
/// spelled the same.
pub(crate) fn same_text(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((ka, va), (kb, vb))| ka == kb && same_text(va, vb))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(va, vb)| same_text(va, vb))
        }
        // `Number`'s equality says 0.0 == -0.0, whose texts differ: floats compare by bits
        // (and an integer never equals a float: `1` and `1.0` are different texts).
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            _ if x.is_f64() != y.is_f64() => false,
            (Some(p), Some(q)) if x.is_f64() => p.to_bits() == q.to_bits(),
            _ => x == y,
        },
        _ => a == b,
    }
}

/// pi's `createInitialSystemMessage`: `None` when the prompt is empty and there are no tools.
pub fn initial_system_message(
    prompt: Option<&str>,
    tools: &[ToolDeclaration],
) -> Option<SystemMessage> {
    let prompt = prompt.unwrap_or("");
    if prompt.is_empty() && tools.is_empty() {
        return None;
    }
    Some(SystemMessage {
        content: MessageContent::Text(prompt.to_string()),
        tools_added: (!tools.is_empty()).then(|| tools.to_vec()),
        timestamp: 0,
        ..Default::default()
    })
}

/// All system messages replayed into one (pi's `getCurrentSystemMessage`): contents joined with
/// blank lines, sections merged by name (`null` deletes), tools replayed, first timestamp.
/// `None` when there is no system message.
pub fn current_system_message<'a>(
    messages: impl IntoIterator<Item = &'a AgentMessage>,
) -> Option<SystemMessage> {
    let mut texts: Vec<String> = Vec::new();
    let mut sections: Map<String, Value> = Map::new();
    let mut tools = ToolSet::default();
    let mut timestamp = None;
    for message in messages {
        let AgentMessage::System(system) = message else {
            continue;
        };
        timestamp.get_or_insert(system.timestamp);
        let text = system.content.to_text();
        if !text.is_empty() {
            texts.push(text);
        }
        for (name, value) in system.sections.iter().flatten() {
            match value {
                Value::Null => {
                    sections.shift_remove(name);
                }
                other => {
                    sections.insert(name.clone(), other.clone());
                }
            }
        }
        tools.apply(system);
    }
    let timestamp = timestamp?;
    let tools = tools.into_vec();
    Some(SystemMessage {
        content: MessageContent::Text(texts.join("\n\n")),
        sections: (!sections.is_empty()).then_some(sections),
        timestamp,
        tools_added: (!tools.is_empty()).then_some(tools),
        tools_removed: None,
    })
}

/// pi's `getSystemMessageText`: content text, then each non-null section value, empty parts
/// removed, joined with blank lines.
pub fn system_message_text(system: &SystemMessage) -> String {
    let mut parts = vec![system.content.to_text()];
    for value in system.sections.iter().flatten().map(|(_, v)| v) {
        match value {
            Value::String(s) => parts.push(s.clone()),
            Value::Null => {}
            other => parts.push(other.to_string()),
        }
    }
    parts.retain(|p| !p.is_empty());
    parts.join("\n\n")
}

/// pi's `getCurrentSystemPrompt`: the replayed system text, or `""`.
pub fn current_system_prompt<'a>(messages: impl IntoIterator<Item = &'a AgentMessage>) -> String {
    current_system_message(messages)
        .map(|m| system_message_text(&m))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn arb_message() -> impl Strategy<Value = AgentMessage> {
        let names = prop::sample::select(vec!["a", "b", "c", "d"]);
        let tools = prop::collection::vec((names.clone(), 0u8..3), 0..3);
        let removed = prop::collection::vec(names, 0..2);
        prop_oneof![
            (tools, removed).prop_map(|(added, removed)| AgentMessage::from(SystemMessage {
                tools_added: Some(
                    added
                        .into_iter()
                        .map(|(n, d)| tool(n, &d.to_string()))
                        .collect()
                ),
                tools_removed: Some(
                    removed
                        .into_iter()
                        .map(|n| ToolReference { name: n.into() })
                        .collect()
                ),
                ..Default::default()
            })),
            Just(AgentMessage::user_text("x")),
        ]
    }

    proptest! {
        /// Improvement 3: the incremental replay equals the full replay at every cut.
        #[test]
        fn incremental_replay_equals_full_replay_at_every_cut(
            messages in prop::collection::vec(arb_message(), 0..24),
            cuts in prop::collection::vec(0usize..25, 1..8),
        ) {
            let mut cache = IncrementalTools::default();
            let mut cuts = cuts;
            cuts.sort_unstable();
            for cut in cuts {
                let cut = cut.min(messages.len());
                let prefix = &messages[..cut];
                prop_assert_eq!(cache.tools_at(prefix).to_vec(), current_tools(prefix));
                let rest = &messages[cut..];
                let mut all = prefix.to_vec();
                all.extend_from_slice(rest);
                prop_assert_eq!(cache.tools_with(prefix, rest), current_tools(&all));
            }
        }
    }

    fn tool(name: &str, description: &str) -> ToolDeclaration {
        ToolDeclaration {
            name: name.into(),
            description: description.into(),
            parameters: json!({"type": "object"}),
            constrained_sampling: None,
        }
    }

    fn system(added: Vec<ToolDeclaration>, removed: Vec<&str>) -> AgentMessage {
        AgentMessage::from(SystemMessage {
            tools_added: Some(added),
            tools_removed: Some(
                removed
                    .into_iter()
                    .map(|n| ToolReference { name: n.into() })
                    .collect(),
            ),
            ..Default::default()
        })
    }

    #[test]
    fn replay_removes_then_adds_per_message() {
        let messages = vec![
            system(vec![tool("a", "1"), tool("b", "1")], vec![]),
            system(vec![tool("a", "2")], vec!["a"]),
        ];
        let names: Vec<_> = current_tools(&messages)
            .into_iter()
            .map(|t| (t.name, t.description))
            .collect();
        assert_eq!(
            names,
            vec![
                ("b".to_string(), "1".to_string()),
                ("a".to_string(), "2".to_string())
            ]
        );
    }

    #[test]
    fn changed_declarations_appear_in_both_lists() {
        let changes = tool_state_changes(
            &[tool("a", "1"), tool("b", "1")],
            &[tool("a", "2"), tool("c", "1")],
        );
        let added: Vec<_> = changes.added.iter().map(|t| t.name.as_str()).collect();
        let removed: Vec<_> = changes.removed.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(added, ["a", "c"]);
        assert_eq!(removed, ["a", "b"]);
    }

    #[test]
    fn key_order_matters_like_json_stringify() {
        let mut a = tool("a", "1");
        a.parameters = json!({"type": "object", "properties": {}});
        let mut b = tool("a", "1");
        b.parameters = json!({"properties": {}, "type": "object"});
        assert!(!tool_state_changes(&[a], &[b]).is_empty());
    }

    #[test]
    fn system_prompt_joins_contents_and_sections() {
        let messages = vec![
            AgentMessage::from(SystemMessage {
                content: "base".into(),
                sections: Some(
                    json!({"rules": "be brief", "tmp": "x"})
                        .as_object()
                        .cloned()
                        .unwrap_or_default(),
                ),
                timestamp: 7,
                ..Default::default()
            }),
            AgentMessage::from(SystemMessage {
                content: "".into(),
                sections: Some(
                    json!({"tmp": null})
                        .as_object()
                        .cloned()
                        .unwrap_or_default(),
                ),
                timestamp: 9,
                ..Default::default()
            }),
        ];
        assert_eq!(current_system_prompt(&messages), "base\n\nbe brief");
        assert_eq!(
            current_system_message(&messages).map(|m| m.timestamp),
            Some(7)
        );
    }
}
