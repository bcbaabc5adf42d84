//! Reading a stream's text chunks by their shape: after one plain text chunk, the next ones
//! usually differ from it only in the text (same id, model, fields and order, byte for byte).
//!
//! A chunk is `prefix + "text" + suffix`. When a new chunk has the previous one's prefix and
//! suffix and one whole JSON string between them, a JSON parser reads the prefix and suffix
//! exactly as before, so the new chunk parses to the previous one with the text replaced: only
//! the string is read (a `memcmp` of the rest instead of a parse). Anything else is parsed in
//! full, and a parsed plain text chunk becomes the new template. Proptested against serde in
//! `openai_chunk_tests.rs`.

use std::borrow::Cow;

use super::fast;
use super::{Choice, Chunk, Delta, FirstChoice};

/// Parses one stream's chunks (see the module documentation).
#[derive(Debug, Default)]
pub struct ChunkParser {
    template: Option<Template>,
    /// Text chunks in a row that did not match the template before it; past [`MAX_MISSES`]
    /// the stream's chunks differ beyond the text (a per-chunk nonce such as OpenAI's
    /// `obfuscation`) and no more templates are copied.
    misses: u32,
}

/// See [`ChunkParser::misses`].
const MAX_MISSES: u32 = 8;

/// The last plain text chunk: its text and where the text token was.
#[derive(Debug)]
struct Template {
    data: String,
    start: usize,
    end: usize,
    id: Option<String>,
    model: Option<String>,
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
        let Some((chunk, span)) = fast::parse_spanned(data) else {
            self.template = None;
            return serde_json::from_str(data);
        };
        if self.template.is_some() && span.is_some() {
            self.misses = self.misses.saturating_add(1);
        }
        self.template = span
            .filter(|_| self.misses <= MAX_MISSES)
            .and_then(|(start, end)| Template::of(&chunk, data, start, end));
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
    /// A template from a parsed chunk that holds nothing but text (and its id and model).
    fn of(chunk: &Chunk, data: &str, start: usize, end: usize) -> Option<Template> {
        let choice = chunk.choices.as_ref()?.0.as_ref()?;
        let delta = choice.delta.as_ref()?;
        let plain = chunk.usage.is_none()
            && chunk.error.is_none()
            && choice.finish_reason.is_none()
            && choice.usage.is_none()
            && delta.content.is_some()
            && delta.reasoning_content.is_none()
            && delta.reasoning.is_none()
            && delta.reasoning_text.is_none()
            && delta.tool_calls.is_none()
            && delta.reasoning_details.is_none();
        plain.then(|| Template {
            data: data.to_string(),
            start,
            end,
            id: chunk.id.as_deref().map(str::to_string),
            model: chunk.model.as_deref().map(str::to_string),
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
        Chunk {
            id: self.id.as_deref().map(Cow::Borrowed),
            model: self.model.as_deref().map(Cow::Borrowed),
            choices: Some(FirstChoice(Some(Choice {
                delta: Some(Delta {
                    content: Some(text),
                    ..Delta::default()
                }),
                ..Choice::default()
            }))),
            ..Chunk::default()
        }
    }
}
