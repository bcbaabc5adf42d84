//! Anthropic Messages content serialised straight from the borrowed transcript (§A4, §A13):
//! user/assistant blocks, consecutive tool results merged into one user message, in-place tool
//! changes (strategy "changes") and the cache breakpoint on the last user block.

use std::borrow::Cow;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

use crate::agent::message::{
    AgentMessage, AssistantMessage, ContentBlock, MessageContent, SystemMessage, ToolCall,
    ToolDeclaration,
};
use crate::agent::transcript::system_message_text;
use crate::provider::tool_fold::{ToolRefs, ToolStrategy};

/// A tool declaration: only `properties` and `required` of the schema are sent, as pi does.
pub struct Tool<'a> {
    pub decl: &'a ToolDeclaration,
    pub cache: Option<&'a Value>,
    pub eager: bool,
}

impl Serialize for Tool<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("name", &self.decl.name)?;
        map.serialize_entry("description", &self.decl.description)?;
        map.serialize_entry("input_schema", &Schema(&self.decl.parameters))?;
        if let Some(cache) = self.cache {
            map.serialize_entry("cache_control", cache)?;
        }
        if self.eager {
            map.serialize_entry("eager_input_streaming", &true)?;
        }
        map.end()
    }
}

struct Schema<'a>(&'a Value);

impl Serialize for Schema<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("type", "object")?;
        match self.0.get("properties") {
            Some(properties) => map.serialize_entry("properties", properties)?,
            None => map.serialize_entry("properties", &EmptyObject)?,
        }
        if let Some(required) = self.0.get("required") {
            map.serialize_entry("required", required)?;
        }
        map.end()
    }
}

/// `{}`.
struct EmptyObject;

impl Serialize for EmptyObject {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_map(Some(0))?.end()
    }
}

/// One content block.
pub enum Block<'a> {
    Text(&'a str),
    OwnedText(String),
    Image {
        mime: &'a str,
        data: &'a str,
    },
    ToolResult {
        id: &'a str,
        content: Option<Vec<Block<'a>>>,
        is_error: bool,
    },
    RedactedThinking(&'a str),
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    ToolUse(&'a ToolCall),
    ToolRemoval(&'a str),
    ToolAddition(&'a ToolDeclaration),
}

/// A block, with the cache breakpoint when it is the last block of the last user message.
struct Cached<'r, 'a>(&'r Block<'a>, Option<&'a Value>);

impl Serialize for Cached<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        match self.0 {
            Block::Text(text) => text_entries(&mut map, text)?,
            Block::OwnedText(text) => text_entries(&mut map, text)?,
            Block::Image { mime, data } => {
                map.serialize_entry("type", "image")?;
                map.serialize_entry("source", &Source { mime, data })?;
            }
            Block::ToolResult {
                id,
                content,
                is_error,
            } => {
                map.serialize_entry("type", "tool_result")?;
                map.serialize_entry("tool_use_id", id)?;
                match content {
                    Some(blocks) => map.serialize_entry("content", &Blocks(blocks, None))?,
                    None => map.serialize_entry("content", "(no tool output)")?,
                }
                map.serialize_entry("is_error", is_error)?;
            }
            Block::RedactedThinking(data) => {
                map.serialize_entry("type", "redacted_thinking")?;
                map.serialize_entry("data", data)?;
            }
            Block::Thinking {
                thinking,
                signature,
            } => {
                map.serialize_entry("type", "thinking")?;
                map.serialize_entry("thinking", thinking)?;
                map.serialize_entry("signature", signature)?;
            }
            Block::ToolUse(call) => {
                map.serialize_entry("type", "tool_use")?;
                map.serialize_entry("id", &call.id)?;
                map.serialize_entry("name", &call.name)?;
                if call.arguments.is_object() {
                    map.serialize_entry("input", &call.arguments)?;
                } else {
                    map.serialize_entry("input", &EmptyObject)?;
                }
            }
            Block::ToolRemoval(name) => {
                map.serialize_entry("type", "tool_removal")?;
                map.serialize_entry("tool", &Reference(name))?;
            }
            Block::ToolAddition(decl) => {
                map.serialize_entry("type", "tool_addition")?;
                map.serialize_entry("tool", &Definition(decl))?;
            }
        }
        if let Some(cache) = self.1 {
            map.serialize_entry("cache_control", cache)?;
        }
        map.end()
    }
}

fn text_entries<M: SerializeMap>(map: &mut M, text: &str) -> Result<(), M::Error> {
    map.serialize_entry("type", "text")?;
    map.serialize_entry("text", text)
}

struct Source<'a> {
    mime: &'a str,
    data: &'a str,
}

impl Serialize for Source<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(3))?;
        map.serialize_entry("type", "base64")?;
        map.serialize_entry("media_type", self.mime)?;
        map.serialize_entry("data", self.data)?;
        map.end()
    }
}

struct Reference<'a>(&'a str);

impl Serialize for Reference<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(2))?;
        map.serialize_entry("type", "tool_reference")?;
        map.serialize_entry("name", self.0)?;
        map.end()
    }
}

struct Definition<'a>(&'a ToolDeclaration);

impl Serialize for Definition<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(2))?;
        map.serialize_entry("type", "tool_definition")?;
        let tool = Tool {
            decl: self.0,
            cache: None,
            eager: false,
        };
        map.serialize_entry("definition", &tool)?;
        map.end()
    }
}

/// A block list; `cache` goes on its last block.
struct Blocks<'r, 'a>(&'r [Block<'a>], Option<&'a Value>);

impl Serialize for Blocks<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let last = self.0.len().saturating_sub(1);
        s.collect_seq(
            self.0
                .iter()
                .enumerate()
                .map(|(i, b)| Cached(b, self.1.filter(|_| i == last))),
        )
    }
}

/// One message: `{"role", "content": [blocks]}`.
pub struct Message<'a> {
    pub role: &'static str,
    pub content: Vec<Block<'a>>,
    /// The cache breakpoint for the last block (set on the last user message only).
    pub cache: Option<&'a Value>,
}

impl Serialize for Message<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(2))?;
        map.serialize_entry("role", self.role)?;
        map.serialize_entry("content", &Blocks(&self.content, self.cache))?;
        map.end()
    }
}

fn message<'a>(role: &'static str, content: Vec<Block<'a>>) -> Message<'a> {
    Message {
        role,
        content,
        cache: None,
    }
}

/// The history from `start` on as Anthropic messages, with the cache breakpoint on the last
/// user block among them (the caller starts no later than the message that opens it). `start`
/// must be a cut; every cut from it on is pushed to `cuts` as `(position, output messages so
/// far)`: a position where the last output message is closed (not a tool-result message that
/// the next results would merge into), so the output so far covers exactly the messages before.
pub fn convert_messages<'a>(
    history: &'a [Cow<'a, AgentMessage>],
    start: usize,
    strategy: ToolStrategy,
    cache: &'a Value,
    cuts: &mut Vec<(usize, usize)>,
) -> Vec<Message<'a>> {
    let rest = history.get(start..).unwrap_or_default();
    let mut out: Vec<Message<'a>> = Vec::with_capacity(rest.len());
    let mut tools = ToolRefs::default();
    let mut first_system = true;
    for system in history
        .get(..start)
        .unwrap_or_default()
        .iter()
        .filter_map(|m| m.as_system())
    {
        first_system = false;
        tools.apply(system);
    }
    for (position, message_) in (start..).zip(rest.iter().map(|m| &**m)) {
        if !open_results(&out) {
            cuts.push((position, out.len()));
        }
        match message_ {
            AgentMessage::System(system) => {
                if !first_system && strategy == ToolStrategy::Changes {
                    out.push(message("system", system_change(system, tools.as_slice())));
                }
                first_system = false;
                tools.apply(system);
            }
            AgentMessage::User(user) => {
                let blocks = user_blocks(&user.content);
                if !blocks.is_empty() {
                    out.push(message("user", blocks));
                }
            }
            AgentMessage::Assistant(a) => {
                let blocks = assistant_blocks(a);
                if !blocks.is_empty() {
                    out.push(message("assistant", blocks));
                }
            }
            AgentMessage::ToolResult(r) => {
                let content: Vec<Block<'a>> = r.content.iter().filter_map(content_block).collect();
                let block = Block::ToolResult {
                    id: &r.tool_call_id,
                    content: (!content.is_empty()).then_some(content),
                    is_error: r.is_error,
                };
                append_tool_result(&mut out, block);
            }
            AgentMessage::Custom(_) => {}
        }
    }
    if !open_results(&out) {
        cuts.push((history.len(), out.len()));
    }
    if let Some(last_user) = out.iter_mut().rev().find(|m| m.role == "user") {
        last_user.cache = Some(cache);
    }
    out
}

/// The position of the last message that renders into a user message (the one carrying the
/// cache breakpoint), if any.
pub fn last_user_source(history: &[Cow<'_, AgentMessage>]) -> Option<usize> {
    history.iter().rposition(|m| match &**m {
        AgentMessage::ToolResult(_) => true,
        AgentMessage::User(user) => match &user.content {
            MessageContent::Text(text) => !text.trim().is_empty(),
            MessageContent::Blocks(blocks) => blocks.iter().any(|b| content_block(b).is_some()),
        },
        _ => false,
    })
}

/// Whether the last output message is one that a following tool result would merge into.
fn open_results(out: &[Message<'_>]) -> bool {
    out.last().is_some_and(|last| {
        last.role == "user"
            && last
                .content
                .iter()
                .all(|b| matches!(b, Block::ToolResult { .. }))
    })
}

/// A mid-conversation system message rendering tool changes in place (strategy "changes").
fn system_change<'a>(system: &'a SystemMessage, before: &[&ToolDeclaration]) -> Vec<Block<'a>> {
    let mut content = Vec::new();
    let text = system_message_text(system);
    if !text.is_empty() {
        content.push(Block::OwnedText(text));
    }
    let added = system.tools_added.iter().flatten();
    for removed in system.tools_removed.iter().flatten() {
        // A re-declaration replaces in place: no removal block for it.
        if !added.clone().any(|t| t.name == removed.name)
            && before.iter().any(|t| t.name == removed.name)
        {
            content.push(Block::ToolRemoval(&removed.name));
        }
    }
    content.extend(added.map(Block::ToolAddition));
    content
}

/// Consecutive tool results share one user message.
fn append_tool_result<'a>(out: &mut Vec<Message<'a>>, block: Block<'a>) {
    if open_results(out)
        && let Some(last) = out.last_mut()
    {
        last.content.push(block);
        return;
    }
    out.push(message("user", vec![block]));
}

fn content_block(block: &ContentBlock) -> Option<Block<'_>> {
    match block {
        ContentBlock::Text(t) if !t.text.trim().is_empty() => Some(Block::Text(&t.text)),
        ContentBlock::Image(i) => Some(Block::Image {
            mime: &i.mime_type,
            data: &i.data,
        }),
        _ => None,
    }
}

fn user_blocks(content: &MessageContent) -> Vec<Block<'_>> {
    match content {
        MessageContent::Text(text) if text.trim().is_empty() => Vec::new(),
        MessageContent::Text(text) => vec![Block::Text(text)],
        MessageContent::Blocks(blocks) => blocks.iter().filter_map(content_block).collect(),
    }
}

fn assistant_blocks(message: &AssistantMessage) -> Vec<Block<'_>> {
    let mut out = Vec::with_capacity(message.content.len());
    for block in &message.content {
        match block {
            ContentBlock::Text(t) if !t.text.trim().is_empty() => out.push(Block::Text(&t.text)),
            ContentBlock::Thinking(t) if t.redacted == Some(true) => {
                if let Some(data) = &t.thinking_signature {
                    out.push(Block::RedactedThinking(data));
                }
            }
            ContentBlock::Thinking(t) => {
                match t.thinking_signature.as_deref().filter(|s| !s.is_empty()) {
                    Some(signature) => out.push(Block::Thinking {
                        thinking: &t.thinking,
                        signature,
                    }),
                    None if !t.thinking.trim().is_empty() => out.push(Block::Text(&t.thinking)),
                    None => {}
                }
            }
            ContentBlock::ToolCall(call) => out.push(Block::ToolUse(call)),
            _ => {}
        }
    }
    out
}
