//! The mock provider's script: one [`MockResponse`] per expected request, parsed from JSON.
//!
//! See the module doc of [`crate::testing`] for the full format. Unknown keys are rejected so a
//! typo in a test script fails loudly instead of silently scripting the default response.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A whole script: the responses, served in order, one per request.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MockScript {
    #[serde(default)]
    pub responses: Vec<MockResponse>,
}

/// Why a script could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    #[error("cannot read script {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("invalid mock script: {0}")]
    Parse(#[from] serde_json::Error),
}

impl MockScript {
    /// Parses a script from JSON text.
    pub fn from_json(text: &str) -> Result<MockScript, ScriptError> {
        Ok(serde_json::from_str(text)?)
    }

    /// Reads and parses a script file.
    pub fn from_file(path: &Path) -> Result<MockScript, ScriptError> {
        let text = std::fs::read_to_string(path).map_err(|source| ScriptError::Read {
            path: path.display().to_string(),
            source,
        })?;
        MockScript::from_json(&text)
    }

    /// A script of plain text responses (a convenience for tests).
    pub fn texts<I: IntoIterator<Item = S>, S: Into<String>>(texts: I) -> MockScript {
        MockScript {
            responses: texts.into_iter().map(MockResponse::text).collect(),
        }
    }
}

/// One scripted tool call.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MockToolCall {
    pub id: String,
    pub name: String,
    /// The arguments; serialized compactly unless `raw_arguments` is given.
    #[serde(default)]
    pub arguments: Value,
    /// Verbatim argument text to stream instead of `arguments` (e.g. truncated JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_arguments: Option<String>,
}

impl MockToolCall {
    /// The argument text as it goes on the wire.
    pub fn argument_text(&self) -> String {
        match &self.raw_arguments {
            Some(raw) => raw.clone(),
            None if self.arguments.is_null() => "{}".to_string(),
            None => self.arguments.to_string(),
        }
    }
}

/// Token counts reported by the response (pi's names; `input` is the non-cached input).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MockUsage {
    #[serde(default)]
    pub input: u64,
    #[serde(default)]
    pub output: u64,
    #[serde(default)]
    pub cache_read: u64,
    #[serde(default)]
    pub cache_write: u64,
    /// Reasoning tokens (a subset of `output`).
    #[serde(default)]
    pub reasoning: u64,
}

/// `Retry-After` as seconds or a raw header value (e.g. an HTTP date).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RetryAfter {
    Seconds(u64),
    Raw(String),
}

impl RetryAfter {
    pub fn header_value(&self) -> String {
        match self {
            RetryAfter::Seconds(s) => s.to_string(),
            RetryAfter::Raw(raw) => raw.clone(),
        }
    }
}

/// One scripted response. Content fields stream in order thinking, text, tool calls; fault fields
/// change how (or whether) it is delivered.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MockResponse {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<MockToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<MockUsage>,
    /// Raw wire stop reason (`finish_reason` / `stop_reason`; Responses: the terminal status
    /// `completed`, `incomplete` or `failed`), replacing the natural one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// OpenAI: the delta field carrying reasoning (default `reasoning_content`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_field: Option<String>,
    /// Anthropic: a `redacted_thinking` block with this opaque `data` (after `thinking`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redacted_thinking: Option<String>,
    /// Anthropic: the thinking block's signature (default `sig-mock`); Responses: the reasoning
    /// item's `encrypted_content` (default `enc-<response id>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// OpenAI: stream tool-call argument deltas round-robin across calls.
    #[serde(default)]
    pub interleave: bool,
    /// OpenAI (OpenRouter style): before the tool calls, send `reasoning_details` entries of type
    /// `reasoning.encrypted` whose `id` is each call's id and `data` is `enc-<id>`.
    #[serde(default)]
    pub encrypted_reasoning: bool,
    /// Split text, thinking and arguments into deltas of at most this many bytes (UTF-8 safe).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_size: Option<usize>,
    /// Write the SSE byte stream in writes of this many bytes, ignoring character boundaries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_bytes: Option<usize>,
    /// Delay before each SSE chunk (and each raw write when `write_bytes` is set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    /// Answer with this HTTP status and `body` instead of a stream (unless 200).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<RetryAfter>,
    /// Close the connection without reading or answering.
    #[serde(default)]
    pub refuse: bool,
    /// Cut the connection (no final HTTP chunk) after this many SSE chunks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disconnect_after_chunks: Option<usize>,
    /// Insert a `data:` line that is not JSON after this many SSE chunks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub malformed_after_chunks: Option<usize>,
    /// Omit `data: [DONE]` (OpenAI), `message_stop` (Anthropic) or `response.completed`
    /// (Responses).
    #[serde(default)]
    pub omit_done: bool,
    /// Omit the stop reason: no `finish_reason` (OpenAI) or no `message_delta` (Anthropic).
    #[serde(default)]
    pub omit_stop_reason: bool,
    /// Anthropic: send `event: error` with this message after the content (Responses: an `error`
    /// event with code `server_error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_error: Option<String>,
    /// The response id (default `mock-<n>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The reported model (default: the requested model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Serve this response to every request from now on (the script never moves past it), each
    /// tool call id suffixed with `-<request index>` so every call is a new one.
    #[serde(default)]
    pub repeat: bool,
}

impl MockResponse {
    /// The scripted stop reason, else the natural one: `done` without tool calls, `tool_use`
    /// with them (each in the wire's own words).
    pub fn stop_reason_or<'a>(&'a self, done: &'a str, tool_use: &'a str) -> &'a str {
        let natural = if self.tool_calls.is_empty() {
            done
        } else {
            tool_use
        };
        self.stop_reason.as_deref().unwrap_or(natural)
    }

    /// A plain text response.
    pub fn text(text: impl Into<String>) -> MockResponse {
        MockResponse {
            text: Some(text.into()),
            ..MockResponse::default()
        }
    }

    /// A response that calls one tool.
    pub fn tool_call(id: &str, name: &str, arguments: Value) -> MockResponse {
        MockResponse {
            tool_calls: vec![MockToolCall {
                id: id.into(),
                name: name.into(),
                arguments,
                raw_arguments: None,
            }],
            ..MockResponse::default()
        }
    }

    /// An HTTP error response.
    pub fn status(status: u16, body: impl Into<String>) -> MockResponse {
        MockResponse {
            status: Some(status),
            body: Some(body.into()),
            ..MockResponse::default()
        }
    }
}

/// Splits `text` into pieces of at most `size` bytes without breaking a character (a piece holds
/// at least one character, so a 4-byte character survives `size` 1).
pub fn split_utf8(text: &str, size: Option<usize>) -> Vec<&str> {
    let size = match size {
        Some(size) if size > 0 => size,
        _ => return if text.is_empty() { vec![] } else { vec![text] },
    };
    let mut pieces = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + size).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        pieces.push(&text[start..end]);
        start = end;
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_example() {
        let script = MockScript::from_json(
            r#"{"responses": [
              {"text": "Hello"},
              {"thinking": "hmm", "text": "Answer", "usage": {"input": 10, "output": 5, "cacheRead": 3}},
              {"toolCalls": [{"id": "call_1", "name": "read", "arguments": {"path": "a.txt"}}]},
              {"text": "slow", "chunkSize": 4, "delayMs": 50},
              {"status": 429, "retryAfter": 1},
              {"disconnectAfterChunks": 3, "text": "partial"} ]}"#,
        )
        .unwrap();
        assert_eq!(script.responses.len(), 6);
        assert_eq!(script.responses[1].usage.as_ref().unwrap().cache_read, 3);
        assert_eq!(
            script.responses[4].retry_after,
            Some(RetryAfter::Seconds(1))
        );
        assert_eq!(
            script.responses[2].tool_calls[0].argument_text(),
            r#"{"path":"a.txt"}"#
        );
    }

    #[test]
    fn rejects_unknown_keys() {
        assert!(MockScript::from_json(r#"{"responses":[{"txet":"x"}]}"#).is_err());
    }

    #[test]
    fn splits_on_char_boundaries() {
        assert_eq!(split_utf8("héllo", Some(2)), vec!["hé", "ll", "o"]);
        assert_eq!(split_utf8("😀a", Some(1)), vec!["😀", "a"]);
        assert_eq!(split_utf8("abc", None), vec!["abc"]);
        assert!(split_utf8("", Some(3)).is_empty());
    }
}
