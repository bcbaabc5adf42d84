//! Reading a stream's chunks by their shape: after one plain text chunk, the next ones usually
//! differ from it only in the text (same id, model, fields and order, byte for byte); after
//! one chunk of a tool call's arguments, likewise the next ones differ only in the arguments.
//!
//! A chunk is `prefix + "text" + suffix`. When a new chunk has the previous one's prefix and
//! suffix and one whole JSON string between them, a JSON parser reads the prefix and suffix
//! exactly as before, so the new chunk parses to the previous one with the text replaced: only
//! the string is read (a `memcmp` of the rest instead of a parse). Anything else is parsed in
//! full, and a parsed chunk of one of the two plain shapes becomes the new template: only
//! `delta.content`, or only one tool call (`index`, `id`, `function.name` kept as they were,
//! `function.arguments` the text). Proptested against serde in `openai_chunk_tests.rs`.

use std::borrow::Cow;

use super::fast::{self, Spans};
use super::{Choice, Chunk, Delta, FirstChoice, FunctionDelta, ToolCallDelta};

/// Parses one stream's chunks (see the module documentation).
#[derive(Debug, Default)]
pub struct ChunkParser {
    template: Option<Template>,
    /// Plain chunks in a row that did not match the template before it; past [`MAX_MISSES`]
    /// the stream's chunks differ beyond the text (a per-chunk nonce such as OpenAI's
    /// `obfuscation`) and no more templates are copied.
    misses: u32,
}

/// See [`ChunkParser::misses`].
const MAX_MISSES: u32 = 8;

/// The last plain chunk: its text, where the text token was, and what else it held.
#[derive(Debug)]
struct Template {
    data: String,
    start: usize,
    end: usize,
    id: Option<String>,
    model: Option<String>,
    slot: Slot,
}

/// Which field the text token fills.
#[derive(Debug)]
enum Slot {
    /// `delta.content`.
    Content,
    /// The arguments of the only tool call, with its other fields.
    Arguments {
        index: Option<u64>,
        id: Option<String>,
        name: Option<String>,
    },
}

impl ChunkParser {
    /// Parses one chunk's JSON (serde's error when the data is invalid).
    pub fn parse<'a>(&'a mut self, data: &'a str) -> serde_json::Result<Chunk<'a>> {
        if let Some(text) = self.template.as_ref().and_then(|t| t.text_of(data)) {
            // Borrowed here, where every path returns: the template stays free to replace below.
            self.misses = 0;
            return match &self.template {
                Some(template) => Ok(template.chunk(text)),
                None => serde_json::from_str(data),
            };
        }
        let Some((chunk, spans)) = fast::parse_spanned(data) else {
            self.template = None;
            return serde_json::from_str(data);
        };
        let plain = spans != Spans::default();
        if self.template.is_some() && plain {
            self.misses = self.misses.saturating_add(1);
        }
        self.template = if plain && self.misses <= MAX_MISSES {
            Template::of(&chunk, data, spans)
        } else {
            None
        };
        Ok(chunk)
    }
}

#[cfg(test)]
impl ChunkParser {
    pub fn has_template(&self) -> bool {
        self.template.is_some()
    }
}

impl Template {
    /// A template from a parsed chunk of one of the plain shapes (see the module
    /// documentation), with `spans` from the same parse.
    fn of(chunk: &Chunk, data: &str, spans: Spans) -> Option<Template> {
        let choice = chunk.choices.as_ref()?.0.as_ref()?;
        let delta = choice.delta.as_ref()?;
        let bare = chunk.usage.is_none()
            && chunk.error.is_none()
            && choice.finish_reason.is_none()
            && choice.usage.is_none()
            && delta.reasoning_content.is_none()
            && delta.reasoning.is_none()
            && delta.reasoning_text.is_none()
            && delta.reasoning_details.is_none();
        if !bare {
            return None;
        }
        let ((start, end), slot) = match (&delta.content, &delta.tool_calls) {
            (Some(_), None) => (spans.content?, Slot::Content),
            (None, Some(calls)) => {
                let [call] = calls.as_slice() else {
                    return None;
                };
                let function = call.function.as_ref()?;
                function.arguments.as_ref()?;
                let slot = Slot::Arguments {
                    index: call.index,
                    id: call.id.as_deref().map(str::to_string),
                    name: function.name.as_deref().map(str::to_string),
                };
                (spans.arguments?, slot)
            }
            _ => return None,
        };
        Some(Template {
            data: data.to_string(),
            start,
            end,
            id: chunk.id.as_deref().map(str::to_string),
            model: chunk.model.as_deref().map(str::to_string),
            slot,
        })
    }

    /// The text of `data` when it is this template with another string token.
    fn text_of<'a>(&self, data: &'a str) -> Option<Cow<'a, str>> {
        let (prefix, suffix) = (&self.data[..self.start], &self.data[self.end..]);
        if data.len() < prefix.len() + suffix.len() + 2
            || !data.starts_with(prefix)
            || !data.ends_with(suffix)
        {
            return None;
        }
        fast::string_token(data.get(prefix.len()..data.len() - suffix.len())?)
    }

    fn chunk<'a>(&'a self, text: Cow<'a, str>) -> Chunk<'a> {
        let delta = match &self.slot {
            Slot::Content => Delta {
                content: Some(text),
                ..Delta::default()
            },
            Slot::Arguments { index, id, name } => Delta {
                tool_calls: Some(vec![ToolCallDelta {
                    index: *index,
                    id: id.as_deref().map(Cow::Borrowed),
                    function: Some(FunctionDelta {
                        name: name.as_deref().map(Cow::Borrowed),
                        arguments: Some(text),
                    }),
                }]),
                ..Delta::default()
            },
        };
        Chunk {
            id: self.id.as_deref().map(Cow::Borrowed),
            model: self.model.as_deref().map(Cow::Borrowed),
            choices: Some(FirstChoice(Some(Choice {
                delta: Some(delta),
                ..Choice::default()
            }))),
            ..Chunk::default()
        }
    }
}
