//! The lines of a session file in pi's format v3: one header, then tree entries.
//!
//! Every entry is written as `{"type", "id", "parentId", "timestamp", …fields}` in that order, as
//! pi writes it. Entry types this version does not know are kept verbatim ([`EntryKind::Unknown`])
//! so a newer pi file survives a round trip through agent-lsp.

use serde::de::Error as _;
use serde::ser::SerializeMap as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::agent::message::{AgentMessage, MessageContent};

/// The session format version this module writes.
pub const CURRENT_VERSION: u64 = 3;

/// Line 1 of a session file (not part of the tree).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionHeader {
    /// Always `"session"`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Missing in v1 files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
    pub id: String,
    pub timestamp: String,
    pub cwd: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session: Option<String>,
}

/// One tree entry: common fields plus the type-specific payload.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionEntry {
    pub id: String,
    /// `None` (JSON `null`) for a root entry.
    pub parent_id: Option<String>,
    /// ISO-8601 UTC.
    pub timestamp: String,
    pub kind: EntryKind,
}

/// The type-specific part of an entry (spec §C2).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, strum::IntoStaticStr)]
#[cfg_attr(test, derive(strum::VariantNames))]
#[serde(tag = "type", rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum EntryKind {
    Message {
        message: AgentMessage,
    },
    #[serde(rename_all = "camelCase")]
    ModelChange {
        provider: String,
        model_id: String,
    },
    #[serde(rename_all = "camelCase")]
    ThinkingLevelChange {
        thinking_level: String,
    },
    #[serde(rename_all = "camelCase")]
    Compaction {
        summary: String,
        first_kept_entry_id: String,
        tokens_before: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        details: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        from_hook: Option<bool>,
    },
    #[serde(rename_all = "camelCase")]
    BranchSummary {
        from_id: String,
        summary: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        details: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        from_hook: Option<bool>,
    },
    #[serde(rename_all = "camelCase")]
    Custom {
        custom_type: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        data: Option<Value>,
    },
    #[serde(rename_all = "camelCase")]
    CustomMessage {
        custom_type: String,
        content: MessageContent,
        #[serde(default)]
        display: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        details: Option<Value>,
    },
    #[serde(rename_all = "camelCase")]
    Label {
        target_id: String,
        /// `None` clears the label.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        label: Option<String>,
    },
    SessionInfo {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    /// An entry type from a newer pi: kept as written (minus the common fields).
    #[serde(skip)]
    Unknown {
        kind: String,
        fields: Map<String, Value>,
    },
}

const KNOWN_TYPES: [&str; 9] = [
    "message",
    "model_change",
    "thinking_level_change",
    "compaction",
    "branch_summary",
    "custom",
    "custom_message",
    "label",
    "session_info",
];

impl EntryKind {
    /// The message of a message entry.
    pub fn message(&self) -> Option<&AgentMessage> {
        match self {
            EntryKind::Message { message } => Some(message),
            _ => None,
        }
    }

    /// The `type` tag as written in the file.
    pub fn type_name(&self) -> &str {
        match self {
            EntryKind::Unknown { kind, .. } => kind,
            known => known.into(),
        }
    }
}

impl Serialize for SessionEntry {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if let EntryKind::Message { message } = &self.kind {
            // Two of these per turn: written straight, with no `Value` copy of the message
            // (the general path below gives the same bytes: a message entry has no field
            // besides `message`).
            let mut map = s.serialize_map(Some(5))?;
            map.serialize_entry("type", "message")?;
            map.serialize_entry("id", &self.id)?;
            map.serialize_entry("parentId", &self.parent_id)?;
            map.serialize_entry("timestamp", &self.timestamp)?;
            map.serialize_entry("message", message)?;
            return map.end();
        }
        self.serialize_via_map(s)
    }
}

impl SessionEntry {
    /// The general form: the common fields, then the kind's own fields (an unknown kind's
    /// verbatim), built as a JSON map.
    fn serialize_via_map<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = Map::with_capacity(8);
        map.insert("type".into(), Value::String(self.kind.type_name().into()));
        map.insert("id".into(), Value::String(self.id.clone()));
        map.insert(
            "parentId".into(),
            self.parent_id.clone().map_or(Value::Null, Value::String),
        );
        map.insert("timestamp".into(), Value::String(self.timestamp.clone()));
        let fields = match &self.kind {
            EntryKind::Unknown { fields, .. } => fields.clone(),
            known => match serde_json::to_value(known).map_err(serde::ser::Error::custom)? {
                Value::Object(fields) => fields,
                _ => Map::new(),
            },
        };
        for (key, value) in fields {
            if key != "type" {
                map.insert(key, value);
            }
        }
        map.serialize(s)
    }
}

impl<'de> Deserialize<'de> for SessionEntry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(d)?;
        SessionEntry::from_value(Value::Object(map)).map_err(D::Error::custom)
    }
}

impl SessionEntry {
    /// An entry from an already parsed line. Loading goes through this instead of
    /// `serde_json::from_value`, which would rebuild every nested map of the line first.
    pub fn from_value(value: Value) -> Result<SessionEntry, String> {
        let Value::Object(mut map) = value else {
            return Err("entry is not a JSON object".into());
        };
        let id = match map.remove("id") {
            Some(Value::String(id)) => id,
            _ => return Err("entry without a string `id`".into()),
        };
        let parent_id = match map.remove("parentId") {
            Some(Value::String(p)) => Some(p),
            Some(Value::Null) | None => None,
            Some(_) => return Err("entry `parentId` is not a string".into()),
        };
        let timestamp = match map.remove("timestamp") {
            Some(Value::String(t)) => t,
            // Tolerate numeric stamps from hand-written files instead of refusing the session.
            Some(Value::Number(n)) => n.as_i64().map(super::time::iso_from_ms).unwrap_or_default(),
            _ => String::new(),
        };
        let kind_name = match map.get("type") {
            Some(Value::String(t)) => t.clone(),
            _ => return Err("entry without a string `type`".into()),
        };
        // Deserialize from a borrow: cloning every entry's map doubled the cost of a resume.
        let value = Value::Object(map);
        let parsed = if KNOWN_TYPES.contains(&kind_name.as_str()) {
            EntryKind::deserialize(&value).map_err(|e| e.to_string())
        } else {
            Err(String::new())
        };
        let mut map = match value {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        let kind = match parsed {
            Ok(kind) => kind,
            // A newer pi may put shapes we do not know (a new content block type) inside a
            // known entry type: keep the entry verbatim rather than refuse the whole session.
            // It round-trips unchanged and contributes nothing to the context.
            Err(reason) => {
                if !reason.is_empty() {
                    tracing::warn!(entry = %id, "keeping an unreadable {kind_name} entry as is: {reason}");
                }
                map.remove("type");
                EntryKind::Unknown {
                    kind: kind_name,
                    fields: map,
                }
            }
        };
        Ok(SessionEntry {
            id,
            parent_id,
            timestamp,
            kind,
        })
    }
}

#[cfg(test)]
mod tests {
    use strum::VariantNames as _;

    use super::*;
    use serde_json::json;

    /// The direct form of message entries writes what the general map form writes.
    #[test]
    fn message_entries_serialise_as_through_the_map() {
        struct ViaMap<'a>(&'a SessionEntry);
        impl Serialize for ViaMap<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                self.0.serialize_via_map(s)
            }
        }
        let model = crate::agent::model::Model::default();
        let messages = crate::provider::transform::fixtures::rich(&model);
        for (i, message) in messages.into_iter().enumerate() {
            let entry = SessionEntry {
                id: format!("id{i}"),
                parent_id: (i % 2 == 1).then(|| "p\"q".to_string()),
                timestamp: "2026-01-01T00:00:00.000Z".into(),
                kind: EntryKind::Message { message },
            };
            let direct = serde_json::to_string(&entry).unwrap();
            assert_eq!(direct, serde_json::to_string(&ViaMap(&entry)).unwrap());
        }
    }

    #[test]
    fn type_names_are_the_serde_tags() {
        let samples = [
            EntryKind::Message {
                message: AgentMessage::user_text("hi"),
            },
            EntryKind::ModelChange {
                provider: "openai".into(),
                model_id: "gpt-4.1".into(),
            },
            EntryKind::ThinkingLevelChange {
                thinking_level: "high".into(),
            },
            EntryKind::Compaction {
                summary: "s".into(),
                first_kept_entry_id: "a1".into(),
                tokens_before: 1,
                details: None,
                from_hook: None,
            },
            EntryKind::BranchSummary {
                from_id: "a1".into(),
                summary: "s".into(),
                details: None,
                from_hook: None,
            },
            EntryKind::Custom {
                custom_type: "x".into(),
                data: None,
            },
            EntryKind::CustomMessage {
                custom_type: "x".into(),
                content: MessageContent::Text("note".into()),
                display: true,
                details: None,
            },
            EntryKind::Label {
                target_id: "a1".into(),
                label: None,
            },
            EntryKind::SessionInfo { name: None },
        ];
        crate::testing::tags::assert_names_are_serde_tags(&samples, &KNOWN_TYPES);
        // Every variant but `Unknown` (whose own `kind` is its tag) is a known type.
        assert_eq!(EntryKind::VARIANTS.len(), KNOWN_TYPES.len() + 1);
    }

    #[test]
    fn entries_round_trip_with_common_fields_first() {
        let raw = json!({"type": "model_change", "id": "a1b2c3d4", "parentId": null,
                         "timestamp": "2026-11-30T06:29:52.726Z", "provider": "openai", "modelId": "gpt-4.1"});
        let entry: SessionEntry = serde_json::from_value(raw.clone()).unwrap();
        assert_eq!(entry.parent_id, None);
        let text = serde_json::to_string(&entry).unwrap();
        assert_eq!(text, serde_json::to_string(&raw).unwrap());
    }

    #[test]
    fn unknown_entry_types_are_kept_verbatim() {
        let raw = json!({"type": "lane_op", "id": "0badc0de", "parentId": "a1b2c3d4",
                         "timestamp": "2026-11-30T06:29:52.726Z", "seq": 7, "op": {"x": 1}});
        let entry: SessionEntry = serde_json::from_value(raw.clone()).unwrap();
        assert_eq!(entry.kind.type_name(), "lane_op");
        assert_eq!(serde_json::to_value(&entry).unwrap(), raw);
    }

    #[test]
    fn a_known_entry_with_an_unknown_shape_is_kept_verbatim() {
        let raw = json!({"type": "message", "id": "0badc0de", "parentId": null,
                         "timestamp": "2026-11-30T06:29:52.726Z",
                         "message": {"role": "assistant", "content": [{"type": "hologram"}]}});
        let entry: SessionEntry = serde_json::from_value(raw.clone()).unwrap();
        assert!(matches!(entry.kind, EntryKind::Unknown { .. }));
        assert_eq!(serde_json::to_value(&entry).unwrap(), raw);
    }

    #[test]
    fn a_label_without_text_clears() {
        let raw = json!({"type": "label", "id": "00000001", "parentId": "a1b2c3d4",
                         "timestamp": "2026-11-30T06:29:52.726Z", "targetId": "a1b2c3d4"});
        let entry: SessionEntry = serde_json::from_value(raw).unwrap();
        assert_eq!(
            entry.kind,
            EntryKind::Label {
                target_id: "a1b2c3d4".into(),
                label: None
            }
        );
    }
}
