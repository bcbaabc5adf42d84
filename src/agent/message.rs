//! pi's message and content model (pi-ai 1.6.0), serialised with pi's JSON field names so that
//! transcripts, events and session files are interchangeable with pi's.
//!
//! One `ContentBlock` enum serves every role: pi narrows the allowed blocks per role in its
//! TypeScript types, but the wire shape of each block is the same, and one enum keeps the
//! conversions in providers and sessions simple.

use std::sync::Arc;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// Milliseconds since the Unix epoch, as pi stamps messages (`Date.now()`).
pub type Timestamp = i64;

/// The current wall-clock time in milliseconds since the epoch.
pub fn now_ms() -> Timestamp {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum ContentBlock {
    #[serde(rename = "text")]
    Text(TextContent),
    #[serde(rename = "thinking")]
    Thinking(ThinkingContent),
    #[serde(rename = "image")]
    Image(ImageContent),
    #[serde(rename = "toolCall")]
    ToolCall(ToolCall),
}

impl ContentBlock {
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextContent {
            text: text.into(),
            text_signature: None,
        })
    }

    /// The text of a `text` block, `None` for other blocks.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text(t) => Some(&t.text),
            _ => None,
        }
    }

    pub fn as_tool_call(&self) -> Option<&ToolCall> {
        match self {
            ContentBlock::ToolCall(c) => Some(c),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextContent {
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_signature: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThinkingContent {
    pub thinking: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_signature: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redacted: Option<bool>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    /// Base64-encoded image bytes.
    pub data: String,
    pub mime_type: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The model's arguments: always a JSON object (`{}` when the text did not parse).
    pub arguments: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought_signature: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Set when the model's argument text was not a valid JSON object; `arguments` is then `{}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments_error: Option<String>,
}

/// `string | ContentBlock[]`, as pi allows for user and system message content.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MessageContent {
    Text(String),
    Blocks(Vec<ContentBlock>),
}

impl Default for MessageContent {
    fn default() -> Self {
        MessageContent::Text(String::new())
    }
}

impl MessageContent {
    /// All text of the content, text blocks joined with newlines (images and others skipped).
    pub fn to_text(&self) -> String {
        match self {
            MessageContent::Text(s) => s.clone(),
            MessageContent::Blocks(blocks) => {
                let texts: Vec<&str> = blocks.iter().filter_map(ContentBlock::as_text).collect();
                texts.join("\n")
            }
        }
    }

    pub fn is_empty_text(&self) -> bool {
        match self {
            MessageContent::Text(s) => s.is_empty(),
            MessageContent::Blocks(b) => b.is_empty(),
        }
    }
}

impl From<&str> for MessageContent {
    fn from(s: &str) -> Self {
        MessageContent::Text(s.to_string())
    }
}

impl From<String> for MessageContent {
    fn from(s: String) -> Self {
        MessageContent::Text(s)
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    Pending,
    #[default]
    Stop,
    Length,
    ToolUse,
    Error,
    Aborted,
    Deferred,
}

impl StopReason {
    /// `error` and `aborted` end a run at once (spec §3.5).
    pub fn is_hard_exit(self) -> bool {
        matches!(self, StopReason::Error | StopReason::Aborted)
    }
}

#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, strum::IntoStaticStr,
)]
#[cfg_attr(test, derive(strum::EnumIter, strum::VariantNames))]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum ThinkingLevel {
    #[default]
    Off,
    Minimal,
    Low,
    Medium,
    High,
    Xhigh,
    Max,
}

impl ThinkingLevel {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    pub fn parse(s: &str) -> Option<Self> {
        serde_json::from_value(Value::String(s.to_string())).ok()
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cost {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
    pub total: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_from_provider: Option<bool>,
}

/// Token usage. `input` is non-cached input; `reasoning` is a subset of `output`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write1h: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<u64>,
    pub total_tokens: u64,
    pub cost: Cost,
}

impl Usage {
    /// Adds another usage into this one (for per-session totals).
    pub fn accumulate(&mut self, other: &Usage) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.total_tokens += other.total_tokens;
        self.cost.input += other.cost.input;
        self.cost.output += other.cost.output;
        self.cost.cache_read += other.cost.cache_read;
        self.cost.cache_write += other.cost.cache_write;
        self.cost.total += other.cost.total;
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolReference {
    pub name: String,
}

/// A tool as declared to the model (pi's `Tool` after `toToolDeclaration`): no `execute`, no label.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDeclaration {
    pub name: String,
    pub description: String,
    pub parameters: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constrained_sampling: Option<Value>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SystemMessage {
    pub content: MessageContent,
    /// Named sections; later messages replace by name, `null` removes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sections: Option<Map<String, Value>>,
    pub timestamp: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_added: Option<Vec<ToolDeclaration>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_removed: Option<Vec<ToolReference>>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserMessage {
    pub content: MessageContent,
    pub timestamp: Timestamp,
}

impl UserMessage {
    pub fn text(text: impl Into<String>) -> Self {
        UserMessage {
            content: MessageContent::Text(text.into()),
            timestamp: now_ms(),
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessage {
    pub content: Vec<ContentBlock>,
    pub api: String,
    pub provider: String,
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_model: Option<String>,
    pub usage: Usage,
    pub stop_reason: StopReason,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// When the request started.
    pub timestamp: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
    /// The provider's own stop reason, kept verbatim (also when it was unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_stop_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_thinking_level: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deferred: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_turn: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Stamped by the loop on every final assistant message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_level: Option<ThinkingLevel>,
}

impl AssistantMessage {
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(ContentBlock::as_tool_call)
    }

    /// All text blocks joined (thinking and tool calls skipped).
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(ContentBlock::as_text)
            .collect();
        texts.join("")
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultMessage {
    pub tool_call_id: String,
    pub tool_name: String,
    pub content: Vec<ContentBlock>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    pub is_error: bool,
    /// Present only when the tool's `execute` ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    pub timestamp: Timestamp,
}

/// An app-defined message with a role the loop does not know; passed through untouched.
#[derive(Clone, Debug, PartialEq)]
pub struct CustomMessage {
    pub role: String,
    /// Every field except `role`.
    pub fields: Map<String, Value>,
}

/// pi's `AgentMessage`: an LLM message or any app-defined message with a `role`.
///
/// Each body is shared (`Arc`), so a clone is a reference count: the loop's context, the run's
/// new messages, the events, the agent's state and the session record all hold the same
/// message, and a long session keeps one copy of its conversation, not four. Build one with
/// `From` (`AssistantMessage { .. }.into()`); change a held one with `Arc::make_mut`.
#[derive(Clone, Debug, PartialEq)]
pub enum AgentMessage {
    System(Arc<SystemMessage>),
    User(Arc<UserMessage>),
    Assistant(Arc<AssistantMessage>),
    ToolResult(Arc<ToolResultMessage>),
    Custom(Arc<CustomMessage>),
}

impl AgentMessage {
    pub fn role(&self) -> &str {
        match self {
            AgentMessage::System(_) => "system",
            AgentMessage::User(_) => "user",
            AgentMessage::Assistant(_) => "assistant",
            AgentMessage::ToolResult(_) => "toolResult",
            AgentMessage::Custom(c) => &c.role,
        }
    }

    pub fn user_text(text: impl Into<String>) -> Self {
        UserMessage::text(text).into()
    }

    pub fn as_assistant(&self) -> Option<&AssistantMessage> {
        match self {
            AgentMessage::Assistant(a) => Some(a),
            _ => None,
        }
    }

    pub fn as_system(&self) -> Option<&SystemMessage> {
        match self {
            AgentMessage::System(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_tool_result(&self) -> Option<&ToolResultMessage> {
        match self {
            AgentMessage::ToolResult(r) => Some(r),
            _ => None,
        }
    }

    pub fn timestamp(&self) -> Option<Timestamp> {
        match self {
            AgentMessage::System(m) => Some(m.timestamp),
            AgentMessage::User(m) => Some(m.timestamp),
            AgentMessage::Assistant(m) => Some(m.timestamp),
            AgentMessage::ToolResult(m) => Some(m.timestamp),
            AgentMessage::Custom(c) => c.fields.get("timestamp").and_then(Value::as_i64),
        }
    }
}

/// `From` each message struct into its (shared) variant.
macro_rules! agent_message_from {
    ($($variant:ident($message:ty)),* $(,)?) => {$(
        impl From<$message> for AgentMessage {
            fn from(m: $message) -> Self {
                AgentMessage::$variant(Arc::new(m))
            }
        }
    )*};
}

agent_message_from!(
    User(UserMessage),
    System(SystemMessage),
    Assistant(AssistantMessage),
    Custom(CustomMessage),
    ToolResult(ToolResultMessage),
);

/// A known message as `{"role": …, …fields}` with `role` first, as pi writes it: the body's
/// fields are written straight after `role` (no intermediate `Value`: this runs for every
/// message written to a session file, an event line or the daemon's wire). The known message
/// types have no `role` field of their own.
#[derive(Serialize)]
struct WithRole<'a, T> {
    role: &'a str,
    #[serde(flatten)]
    body: &'a T,
}

/// Serialises a message as `{"role": …, …fields}` with `role` first; a `role` among the
/// fields (an app-defined message's map may hold one) replaces the value in place.
fn with_role<S: Serializer, T: Serialize>(role: &str, body: &T, s: S) -> Result<S::Ok, S::Error> {
    let value = serde_json::to_value(body).map_err(serde::ser::Error::custom)?;
    let mut map = Map::with_capacity(16);
    map.insert("role".to_string(), Value::String(role.to_string()));
    if let Value::Object(fields) = value {
        map.extend(fields);
    }
    map.serialize(s)
}

impl Serialize for AgentMessage {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            AgentMessage::System(body) => WithRole {
                role: "system",
                body: &**body,
            }
            .serialize(s),
            AgentMessage::User(body) => WithRole {
                role: "user",
                body: &**body,
            }
            .serialize(s),
            AgentMessage::Assistant(body) => WithRole {
                role: "assistant",
                body: &**body,
            }
            .serialize(s),
            AgentMessage::ToolResult(body) => WithRole {
                role: "toolResult",
                body: &**body,
            }
            .serialize(s),
            AgentMessage::Custom(c) => with_role(&c.role, &c.fields, s),
        }
    }
}

impl<'de> Deserialize<'de> for AgentMessage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut map = Map::<String, Value>::deserialize(d)?;
        let role = match map.remove("role") {
            Some(Value::String(role)) => role,
            _ => return Err(D::Error::custom("message without a string `role`")),
        };
        let body = Value::Object(map);
        let parsed = match role.as_str() {
            "system" => serde_json::from_value::<SystemMessage>(body).map(AgentMessage::from),
            "user" => serde_json::from_value::<UserMessage>(body).map(AgentMessage::from),
            "assistant" => serde_json::from_value::<AssistantMessage>(body).map(AgentMessage::from),
            "toolResult" => {
                serde_json::from_value::<ToolResultMessage>(body).map(AgentMessage::from)
            }
            _ => {
                let Value::Object(fields) = body else {
                    return Err(D::Error::custom("message is not an object"));
                };
                return Ok(CustomMessage { role, fields }.into());
            }
        };
        parsed.map_err(|e| D::Error::custom(format!("invalid {role} message: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn thinking_level_names_are_the_serde_tags() {
        crate::testing::tags::assert_unit_names_are_serde_tags::<ThinkingLevel>();
    }

    #[test]
    fn messages_round_trip_with_pi_field_names() {
        let raw = json!({
            "role": "assistant",
            "content": [{"type": "text", "text": "Reading."},
                        {"type": "toolCall", "id": "call_1", "name": "read", "arguments": {"path": "notes.txt"}}],
            "api": "openai-completions", "provider": "mock", "model": "mock-model",
            "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "reasoning": 0, "totalTokens": 15,
                      "cost": {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.0, "totalFromProvider": false}},
            "stopReason": "toolUse", "timestamp": 1796020192726i64, "responseId": "chatcmpl-mock",
            "rawStopReason": "tool_calls", "durationMs": 55, "thinkingLevel": "off"
        });
        let msg: AgentMessage = serde_json::from_value(raw.clone()).unwrap();
        assert_eq!(msg.role(), "assistant");
        assert_eq!(serde_json::to_value(&msg).unwrap(), raw);
    }

    /// The direct serialisation writes exactly what the `Value`-built one wrote, for every kind
    /// of message and block.
    #[test]
    fn known_messages_serialise_as_through_a_value() {
        let model = crate::agent::model::Model::default();
        let mut messages = crate::provider::transform::fixtures::rich(&model);
        let full = json!({
            "role": "assistant", "content": [{"type": "text", "text": "x"}],
            "api": "a", "provider": "p", "model": "m",
            "usage": {"input": 1, "output": 2, "cacheRead": 3, "cacheWrite": 4, "reasoning": 0,
                      "totalTokens": 10, "cost": {"input": 0.5, "output": 1e-7, "cacheRead": 0.0,
                      "cacheWrite": 0.0, "total": 2.25, "totalFromProvider": true}},
            "stopReason": "error", "errorMessage": "boom \"quoted\"", "timestamp": -5,
            "responseId": "r", "rawStopReason": "x", "durationMs": 55, "thinkingLevel": "high",
            "diagnostics": {"b": 1, "a": [1.5, null]}, "deferred": {"z": true}
        });
        messages.push(serde_json::from_value(full).unwrap());
        for message in &messages {
            let direct = serde_json::to_string(message).unwrap();
            let mut out = Vec::new();
            let mut ser = serde_json::Serializer::new(&mut out);
            match message {
                AgentMessage::System(m) => with_role("system", m, &mut ser),
                AgentMessage::User(m) => with_role("user", m, &mut ser),
                AgentMessage::Assistant(m) => with_role("assistant", m, &mut ser),
                AgentMessage::ToolResult(m) => with_role("toolResult", m, &mut ser),
                AgentMessage::Custom(c) => with_role(&c.role, &c.fields, &mut ser),
            }
            .unwrap();
            assert_eq!(direct, String::from_utf8(out).unwrap());
        }
        let roles: std::collections::HashSet<&str> = messages.iter().map(|m| m.role()).collect();
        assert!(roles.len() >= 5, "{roles:?}");
    }

    #[test]
    fn unknown_roles_pass_through() {
        let raw = json!({"role": "notification", "text": "hi", "timestamp": 5});
        let msg: AgentMessage = serde_json::from_value(raw.clone()).unwrap();
        assert!(matches!(msg, AgentMessage::Custom(_)));
        assert_eq!(serde_json::to_value(&msg).unwrap(), raw);
    }
}
