//! Chat Completions messages serialised straight from the borrowed transcript (§A5): user text
//! and image parts, assistant text/thinking/tool calls with the compat quirks, tool results
//! (their images follow in a user message), and in-place system messages for the "additions"
//! tool strategy.

use std::borrow::Cow;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

use super::OpenAiCompat;
use super::json_out::{DataUrl, Fields, Joined, JsonText, Pick, to_text};
use crate::agent::message::{
    AgentMessage, AssistantMessage, ContentBlock, MessageContent, ToolCall, ToolDeclaration,
    ToolResultMessage,
};
use crate::agent::transcript::system_message_text;
use crate::provider::tool_fold::ToolStrategy;

/// A string value of a message: borrowed, joined on the fly, or (rarely) built.
pub enum Text<'a> {
    Str(&'a str),
    Joined(Joined<'a>),
    Owned(String),
}

impl Serialize for Text<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Text::Str(t) => s.serialize_str(t),
            Text::Joined(j) => j.serialize(s),
            Text::Owned(t) => s.serialize_str(t),
        }
    }
}

/// One part of a user message's content array.
pub enum Part<'a> {
    Text(&'a str),
    Image(DataUrl<'a>),
}

impl Serialize for Part<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(2))?;
        match self {
            Part::Text(text) => {
                map.serialize_entry("type", "text")?;
                map.serialize_entry("text", text)?;
            }
            Part::Image(url) => {
                map.serialize_entry("type", "image_url")?;
                map.serialize_entry("image_url", &UrlObject(url))?;
            }
        }
        map.end()
    }
}

struct UrlObject<'r, 'a>(&'r DataUrl<'a>);

impl Serialize for UrlObject<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(1))?;
        map.serialize_entry("url", self.0)?;
        map.end()
    }
}

/// A tool in Chat Completions form.
pub struct Tool<'a> {
    pub decl: &'a ToolDeclaration,
    pub strict: bool,
}

impl Serialize for Tool<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(2))?;
        map.serialize_entry("type", "function")?;
        map.serialize_entry("function", &Function(self))?;
        map.end()
    }
}

struct Function<'r, 'a>(&'r Tool<'a>);

impl Serialize for Function<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let decl = self.0.decl;
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("name", &decl.name)?;
        map.serialize_entry("description", &decl.description)?;
        map.serialize_entry("parameters", &decl.parameters)?;
        if self.0.strict {
            map.serialize_entry("strict", &false)?;
        }
        map.end()
    }
}

/// An assistant tool call: `{"id", "type": "function", "function": {"name", "arguments"}}`.
pub struct Call<'a>(&'a ToolCall);

impl Serialize for Call<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(3))?;
        map.serialize_entry("id", &self.0.id)?;
        map.serialize_entry("type", "function")?;
        map.serialize_entry("function", &CallFunction(self.0))?;
        map.end()
    }
}

struct CallFunction<'a>(&'a ToolCall);

impl Serialize for CallFunction<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(2))?;
        map.serialize_entry("name", &self.0.name)?;
        map.serialize_entry("arguments", &JsonText(&self.0.arguments))?;
        map.end()
    }
}

/// A field value of an assistant message.
pub enum Field<'a> {
    Str(&'a str),
    Text(Text<'a>),
    Null,
    Calls(Vec<Call<'a>>),
    Values(Vec<Value>),
}

impl Serialize for Field<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Field::Str(t) => s.serialize_str(t),
            Field::Text(t) => t.serialize(s),
            Field::Null => s.serialize_unit(),
            Field::Calls(calls) => calls.serialize(s),
            Field::Values(values) => values.serialize(s),
        }
    }
}

/// One Chat Completions message.
pub enum Message<'a> {
    /// `{"role", "content": string}`.
    Text { role: &'a str, content: Text<'a> },
    /// `{"role": "user", "content": [parts]}`.
    Parts(Vec<Part<'a>>),
    /// A later system message of the "additions" strategy, with the tools it adds.
    System {
        content: String,
        tools: Vec<Tool<'a>>,
    },
    /// Assistant fields in the order (and with the key semantics) of the old object building.
    Assistant(Fields<'a, Field<'a>>),
    Tool {
        id: &'a str,
        content: Text<'a>,
        name: Option<&'a str>,
    },
}

impl Serialize for Message<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Message::Assistant(fields) => fields.serialize(s),
            Message::Text { role, content } => {
                let mut map = s.serialize_map(Some(2))?;
                map.serialize_entry("role", role)?;
                map.serialize_entry("content", content)?;
                map.end()
            }
            Message::Parts(parts) => {
                let mut map = s.serialize_map(Some(2))?;
                map.serialize_entry("role", "user")?;
                map.serialize_entry("content", parts)?;
                map.end()
            }
            Message::System { content, tools } => {
                let mut map = s.serialize_map(None)?;
                map.serialize_entry("role", "system")?;
                map.serialize_entry("content", content)?;
                if !tools.is_empty() {
                    map.serialize_entry("tools", tools)?;
                }
                map.end()
            }
            Message::Tool { id, content, name } => {
                let mut map = s.serialize_map(None)?;
                map.serialize_entry("role", "tool")?;
                map.serialize_entry("tool_call_id", id)?;
                map.serialize_entry("content", content)?;
                if let Some(name) = name {
                    map.serialize_entry("name", name)?;
                }
                map.end()
            }
        }
    }
}

/// The history from `start` on as Chat Completions messages (the system prompt of strategy
/// "none" is the caller's). `start` must be a cut; every cut from it on is pushed to `cuts` as
/// `(position, output messages so far)`: a position where no tool-result image waits for its
/// user message, so the output so far covers exactly the messages before it.
pub fn convert_messages<'a>(
    history: &'a [Cow<'a, AgentMessage>],
    start: usize,
    system_role: &'static str,
    compat: &OpenAiCompat,
    strategy: ToolStrategy,
    cuts: &mut Vec<(usize, usize)>,
) -> Vec<Message<'a>> {
    let rest = history.get(start..).unwrap_or_default();
    let mut out = Vec::with_capacity(rest.len());
    let before = history.get(..start).unwrap_or_default();
    let mut first_system = !before
        .iter()
        .any(|m| matches!(**m, AgentMessage::System(_)));
    let mut images: Vec<Part<'a>> = Vec::new();
    for (position, message) in (start..).zip(rest.iter().map(|m| &**m)) {
        if images.is_empty() {
            cuts.push((position, out.len()));
        }
        if !matches!(message, AgentMessage::ToolResult(_)) {
            flush_tool_images(&mut out, &mut images, compat);
        }
        match message {
            AgentMessage::System(system) if strategy != ToolStrategy::None => {
                let text = system_message_text(system);
                if first_system {
                    if !text.is_empty() {
                        out.push(Message::Text {
                            role: system_role,
                            content: Text::Owned(text),
                        });
                    }
                } else {
                    let added = system.tools_added.iter().flatten();
                    let strict = compat.strict_mode;
                    let tools = added.map(|decl| Tool { decl, strict }).collect();
                    out.push(Message::System {
                        content: text,
                        tools,
                    });
                }
                first_system = false;
            }
            AgentMessage::User(user) => out.extend(user_message(&user.content)),
            AgentMessage::Assistant(a) => out.extend(assistant_message(a, compat)),
            AgentMessage::ToolResult(r) => out.push(tool_result(r, compat, &mut images)),
            _ => {}
        }
    }
    if images.is_empty() {
        cuts.push((history.len(), out.len()));
    }
    flush_tool_images(&mut out, &mut images, compat);
    out
}

fn image(block: &ContentBlock) -> Option<Part<'_>> {
    match block {
        ContentBlock::Image(i) => Some(Part::Image(DataUrl {
            mime: &i.mime_type,
            data: &i.data,
        })),
        _ => None,
    }
}

fn user_message(content: &MessageContent) -> Option<Message<'_>> {
    let text = match content {
        MessageContent::Text(text) if text.trim().is_empty() => return None,
        MessageContent::Text(text) => Text::Str(text),
        MessageContent::Blocks(blocks) => {
            if blocks.iter().any(|b| matches!(b, ContentBlock::Image(_))) {
                let parts = blocks.iter().filter_map(|b| match b {
                    ContentBlock::Text(t) => Some(Part::Text(&t.text)),
                    other => image(other),
                });
                return Some(Message::Parts(parts.collect()));
            }
            let joined = Joined {
                blocks,
                pick: Pick::Text,
                sep: "\n",
            };
            if joined.is_blank() {
                return None;
            }
            Text::Joined(joined)
        }
    };
    Some(Message::Text {
        role: "user",
        content: text,
    })
}

/// A safe replay field name (the thinking signature of completions is the delta field's name).
fn replay_field(signature: Option<&str>) -> Option<&str> {
    signature.filter(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
}

fn assistant_message<'a>(
    message: &'a AssistantMessage,
    compat: &OpenAiCompat,
) -> Option<Message<'a>> {
    let blocks = &message.content;
    let text = Joined {
        blocks,
        pick: Pick::Text,
        sep: "",
    };
    let thinking = Joined {
        blocks,
        pick: Pick::Thinking,
        sep: "\n\n",
    };
    let field = blocks.iter().find_map(|b| match b {
        ContentBlock::Thinking(t) if !t.thinking.is_empty() => {
            Some(replay_field(t.thinking_signature.as_deref()).unwrap_or("reasoning_content"))
        }
        _ => None,
    });
    let calls: Vec<Call<'a>> = message.tool_calls().map(Call).collect();
    let mut m = Fields::with_capacity(4);
    m.insert("role", Field::Str("assistant"));
    let content = match field {
        Some(_) if compat.thinking_as_text => {
            let mut joined = to_text(&thinking);
            joined.push_str("\n\n");
            joined.push_str(&to_text(&text));
            Text::Owned(joined)
        }
        Some(field) => {
            m.insert(field, Field::Text(Text::Joined(thinking)));
            Text::Joined(text)
        }
        None => Text::Joined(text),
    };
    if compat.reasoning_content_on_assistant && !m.contains("reasoning_content") {
        m.insert("reasoning_content", Field::Str(""));
    }
    let (empty, blank) = match &content {
        Text::Owned(t) => (t.is_empty(), t.trim().is_empty()),
        Text::Joined(j) => (j.is_empty(), j.is_blank()),
        Text::Str(t) => (t.is_empty(), t.trim().is_empty()),
    };
    if blank && calls.is_empty() {
        return None;
    }
    m.insert(
        "content",
        if empty {
            Field::Null
        } else {
            Field::Text(content)
        },
    );
    if !calls.is_empty() {
        m.insert("tool_calls", Field::Calls(calls));
    }
    let details = encrypted_details(message);
    if !details.is_empty() {
        m.insert("reasoning_details", Field::Values(details));
    }
    Some(Message::Assistant(m))
}

/// OpenRouter encrypted reasoning kept in tool calls' `thoughtSignature`, replayed as
/// `reasoning_details` (only same-model history keeps signatures).
fn encrypted_details(message: &AssistantMessage) -> Vec<Value> {
    message
        .tool_calls()
        .filter_map(|c| serde_json::from_str::<Value>(c.thought_signature.as_deref()?).ok())
        .filter(|d| d.get("type").and_then(Value::as_str) == Some("reasoning.encrypted"))
        .collect()
}

fn tool_result<'a>(
    result: &'a ToolResultMessage,
    compat: &OpenAiCompat,
    images: &mut Vec<Part<'a>>,
) -> Message<'a> {
    let texts = Joined {
        blocks: &result.content,
        pick: Pick::Text,
        sep: "\n",
    };
    let before = images.len();
    images.extend(result.content.iter().filter_map(image));
    let content = match (texts.is_none(), images.len() > before) {
        (false, _) => Text::Joined(texts),
        (true, true) => Text::Str("(see attached image)"),
        (true, false) => Text::Str("(no tool output)"),
    };
    Message::Tool {
        id: &result.tool_call_id,
        content,
        name: compat.tool_result_name.then_some(result.tool_name.as_str()),
    }
}

/// Images from tool results go in a user message after the results (tool messages are text).
fn flush_tool_images<'a>(
    out: &mut Vec<Message<'a>>,
    images: &mut Vec<Part<'a>>,
    compat: &OpenAiCompat,
) {
    if images.is_empty() {
        return;
    }
    if compat.assistant_after_tool_result {
        out.push(Message::Text {
            role: "assistant",
            content: Text::Str("I have processed the tool results."),
        });
    }
    let mut parts = Vec::with_capacity(images.len() + 1);
    parts.push(Part::Text("Attached image(s) from tool result:"));
    parts.append(images);
    out.push(Message::Parts(parts));
}
