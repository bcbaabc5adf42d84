//! JSON-RPC 2.0 as the daemon speaks it: the message kinds, error codes and the framed reader.
//!
//! The reader turns a byte stream into [`Incoming`] messages, one at a time, in wire order. The
//! framing is a parameter: LSP's `Content-Length` headers, or one message per line (ACP). Broken
//! input never ends the stream: a frame that is not a JSON-RPC message comes out as
//! [`Incoming::Malformed`] (to be answered with its error), garbage between frames is skipped in
//! one linear pass (reported once per run of garbage), and a frame over [`MAX_FRAME`] is refused
//! and skipped as it arrives, never buffered.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt};

/// The largest message accepted (a 10 MB document opened with `didOpen` is well below it).
pub const MAX_FRAME: usize = 128 * 1024 * 1024;

/// Standard and LSP error codes.
pub mod code {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    pub const SERVER_NOT_INITIALIZED: i64 = -32002;
    /// agent-lsp's own, in every protocol it speaks: the session is busy (a run is active).
    pub const AGENT_BUSY: i64 = -32001;
}

/// Typed params, or the `-32602` error that says what is wrong.
pub fn parse_params<T: serde::de::DeserializeOwned>(params: Value) -> Result<T, ResponseError> {
    serde_json::from_value(params).map_err(|e| ResponseError::invalid_params(e.to_string()))
}

/// A request id: a number or a string (a `null` id only appears in error responses).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Id {
    Number(i64),
    String(String),
}

/// The `error` of a response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{message} ({code})")]
pub struct ResponseError {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ResponseError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        ResponseError {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(code::INVALID_PARAMS, message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(code::INTERNAL_ERROR, message)
    }
}

/// One message from the peer.
#[derive(Debug, PartialEq)]
pub enum Incoming {
    Request {
        id: Id,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
    /// A reply to one of our requests.
    Response {
        id: Id,
        result: Result<Value, ResponseError>,
    },
    /// Not a JSON-RPC message: answer `error` to `id` (`None`: id `null`).
    Malformed {
        id: Option<Id>,
        error: ResponseError,
    },
}

/// A request or notification we send (`id: None`).
#[derive(Serialize)]
pub struct OutgoingMessage<'a, P> {
    pub jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<&'a Id>,
    pub method: &'a str,
    pub params: P,
}

impl<'a, P> OutgoingMessage<'a, P> {
    pub fn notification(method: &'a str, params: P) -> Self {
        OutgoingMessage {
            jsonrpc: "2.0",
            id: None,
            method,
            params,
        }
    }

    pub fn request(id: &'a Id, method: &'a str, params: P) -> Self {
        OutgoingMessage {
            jsonrpc: "2.0",
            id: Some(id),
            method,
            params,
        }
    }
}

/// Our answer to a request.
#[derive(Serialize)]
pub struct Response<'a> {
    jsonrpc: &'static str,
    /// Serialised even when `None` (as `null`): the answer to a message without a usable id.
    id: Option<&'a Id>,
    #[serde(flatten)]
    outcome: Outcome,
}

#[derive(Serialize)]
#[serde(rename_all = "lowercase")]
enum Outcome {
    Result(Value),
    Error(ResponseError),
}

impl<'a> Response<'a> {
    pub fn new(id: Option<&'a Id>, result: Result<Value, ResponseError>) -> Self {
        let outcome = match result {
            Ok(value) => Outcome::Result(value),
            Err(error) => Outcome::Error(error),
        };
        Response {
            jsonrpc: "2.0",
            id,
            outcome,
        }
    }
}

/// How messages are delimited on the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// LSP: `Content-Length: N\r\n\r\n` and N bytes of JSON.
    ContentLength,
    /// One JSON message per line (ACP).
    Lines,
}

impl Framing {
    /// `message` encoded as one frame.
    pub fn encode<T: Serialize>(self, message: &T) -> Result<Vec<u8>, serde_json::Error> {
        let body = serde_json::to_vec(message)?;
        Ok(match self {
            Framing::ContentLength => {
                let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
                frame.extend_from_slice(&body);
                frame
            }
            Framing::Lines => {
                let mut frame = body;
                frame.push(b'\n');
                frame
            }
        })
    }
}

/// Classifies one frame's body.
pub fn parse_message(body: &[u8]) -> Incoming {
    #[derive(Deserialize)]
    struct Raw {
        jsonrpc: Option<Value>,
        id: Option<Value>,
        method: Option<Value>,
        #[serde(default)]
        params: Value,
        // `"result": null` is a result (a present `null`), not a missing one.
        #[serde(default, deserialize_with = "present")]
        result: Option<Value>,
        #[serde(default, deserialize_with = "present")]
        error: Option<Value>,
    }
    let raw = match serde_json::from_slice::<Raw>(body) {
        Ok(raw) => raw,
        Err(e) if e.is_syntax() || e.is_eof() => return malformed(None, code::PARSE_ERROR, e),
        Err(e) => return malformed(None, code::INVALID_REQUEST, e),
    };
    let id = match raw.id {
        None => None,
        Some(id) => match serde_json::from_value::<Id>(id) {
            Ok(id) => Some(id),
            Err(_) => return invalid(None, "its id is neither a number nor a string"),
        },
    };
    if raw.jsonrpc.as_ref().and_then(Value::as_str) != Some("2.0") {
        return invalid(id, "it lacks \"jsonrpc\": \"2.0\"");
    }
    match (raw.method, id) {
        (Some(Value::String(method)), Some(id)) => Incoming::Request {
            id,
            method,
            params: raw.params,
        },
        (Some(Value::String(method)), None) => Incoming::Notification {
            method,
            params: raw.params,
        },
        (Some(_), id) => invalid(id, "its method is not a string"),
        (None, Some(id)) => match (raw.result, raw.error) {
            (Some(result), None) => Incoming::Response {
                id,
                result: Ok(result),
            },
            (None, Some(error)) => match serde_json::from_value::<ResponseError>(error) {
                Ok(error) => Incoming::Response {
                    id,
                    result: Err(error),
                },
                Err(e) => invalid(Some(id), format!("its error is malformed: {e}")),
            },
            _ => invalid(Some(id), "a response needs exactly one of result and error"),
        },
        (None, None) => invalid(None, "it has neither a method nor an id"),
    }
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

fn malformed(id: Option<Id>, code: i64, error: impl std::fmt::Display) -> Incoming {
    let kind = if code == code::PARSE_ERROR {
        "parse error"
    } else {
        "invalid request"
    };
    Incoming::Malformed {
        id,
        error: ResponseError::new(code, format!("{kind}: {error}")),
    }
}

fn invalid(id: Option<Id>, why: impl std::fmt::Display) -> Incoming {
    let why = format!("not a JSON-RPC 2.0 request, notification or response: {why}");
    malformed(id, code::INVALID_REQUEST, why)
}

/// Reads [`Incoming`] messages from a byte stream (see the module docs).
pub struct Reader<R> {
    inner: R,
    framing: Framing,
    limit: usize,
    buf: Vec<u8>,
    /// Bytes of `buf` already consumed.
    start: usize,
    /// Bytes of a refused frame still to be skipped as they arrive.
    skip: usize,
    /// The rest of a refused line is dropped up to its newline.
    skip_line: bool,
    /// Inside a run of garbage that was already reported.
    in_garbage: bool,
    eof: bool,
}

/// The header name, matched case-insensitively (editors write `Content-Length`).
const CONTENT_LENGTH: &[u8] = b"content-length";
/// The read buffer's capacity kept between messages.
const RETAINED_BUFFER: usize = 1 << 20;
/// Headers longer than this are not headers.
const MAX_HEADER: usize = 4096;
/// A Content-Length from this size up is a broken header (skipping it would eat the stream).
const ABSURD_LENGTH: usize = 1 << 40;

impl<R: AsyncRead + Unpin> Reader<R> {
    pub fn new(inner: R, framing: Framing) -> Self {
        Self::with_limit(inner, framing, MAX_FRAME)
    }

    pub fn with_limit(inner: R, framing: Framing, limit: usize) -> Self {
        Reader {
            inner,
            framing,
            limit,
            buf: Vec::new(),
            start: 0,
            skip: 0,
            skip_line: false,
            in_garbage: false,
            eof: false,
        }
    }

    /// The next message; `None` once the stream ended (or failed).
    pub async fn next(&mut self) -> Option<Incoming> {
        loop {
            if let Some(message) = self.take_message() {
                return Some(message);
            }
            if self.eof {
                return None;
            }
            self.fill().await;
        }
    }

    async fn fill(&mut self) {
        if self.start > 0 && self.start * 2 >= self.buf.len() {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        // One large frame (a 10 MB `didOpen`) must not keep its buffer for the connection's
        // life: once what is left fits a small one, give the memory back.
        if self.buf.capacity() > RETAINED_BUFFER && self.buf.len() <= RETAINED_BUFFER / 2 {
            self.buf.shrink_to(RETAINED_BUFFER / 2);
        }
        self.buf.reserve(64 * 1024);
        match self.inner.read_buf(&mut self.buf).await {
            Ok(0) => self.eof = true,
            Ok(_) => {}
            Err(e) => {
                tracing::debug!(%e, "the input stream failed");
                self.eof = true;
            }
        }
    }

    fn pending(&self) -> &[u8] {
        &self.buf[self.start..]
    }

    /// One message out of what was read, or `None` when more input is needed.
    fn take_message(&mut self) -> Option<Incoming> {
        loop {
            let n = self.skip.min(self.pending().len());
            self.start += n;
            self.skip -= n;
            if self.skip > 0 {
                return None;
            }
            let step = match self.framing {
                Framing::ContentLength => self.next_framed(),
                Framing::Lines => self.next_line(),
            };
            match step {
                Step::Message(message) => return Some(message),
                Step::NeedMore => return None,
                Step::Skipped => {}
            }
        }
    }

    fn next_framed(&mut self) -> Step {
        let pending = self.pending();
        // Skip to the next header, reporting a run of garbage once.
        let Some(at) = find_ignore_case(pending, CONTENT_LENGTH) else {
            // Keep a tail that may be the start of a header split across reads.
            let keep = pending.len().min(CONTENT_LENGTH.len() - 1);
            let dropped = pending.len() - keep;
            let garbage = !is_blank(&pending[..dropped]);
            self.start += dropped;
            return self.garbage(garbage).unwrap_or(Step::NeedMore);
        };
        // Other header lines (`Content-Type: …`) may come first.
        let garbage = !is_blank(&pending[..at]) && !is_header_lines(&pending[..at]);
        self.start += at;
        if let Some(report) = self.garbage(garbage) {
            return report;
        }
        let pending = self.pending();
        let window = &pending[..pending.len().min(MAX_HEADER)];
        let Some(header_len) = find(window, b"\r\n\r\n") else {
            if pending.len() < MAX_HEADER && !self.eof {
                return Step::NeedMore;
            }
            self.start += CONTENT_LENGTH.len();
            return refuse(code::PARSE_ERROR, "parse error: a header without its end");
        };
        // A length beyond any real message is a broken header, not a frame to skip.
        let length = content_length(&pending[..header_len]).filter(|n| *n < ABSURD_LENGTH);
        let Some(length) = length else {
            self.start += header_len + 4;
            return refuse(
                code::PARSE_ERROR,
                "parse error: a message without a valid Content-Length header",
            );
        };
        self.in_garbage = false;
        if length > self.limit {
            self.start += header_len + 4;
            self.skip = length;
            let why = format!(
                "invalid request: a message of {length} bytes exceeds the limit of {} bytes",
                self.limit
            );
            return refuse(code::INVALID_REQUEST, &why);
        }
        let body_at = self.start + header_len + 4;
        if self.buf.len() - body_at < length {
            // Nothing consumed: the header is read again once the body is complete.
            return Step::NeedMore;
        }
        self.start = body_at + length;
        Step::Message(parse_message(&self.buf[body_at..body_at + length]))
    }

    fn next_line(&mut self) -> Step {
        let pending = self.pending();
        let Some(end) = pending.iter().position(|b| *b == b'\n') else {
            if self.skip_line || pending.len() > self.limit {
                self.start = self.buf.len();
                if !std::mem::replace(&mut self.skip_line, true) {
                    return refuse(
                        code::INVALID_REQUEST,
                        "invalid request: a message exceeds the size limit",
                    );
                }
            }
            return Step::NeedMore;
        };
        let line_at = self.start;
        self.start += end + 1;
        if std::mem::take(&mut self.skip_line) {
            return Step::Skipped;
        }
        if end > self.limit {
            return refuse(
                code::INVALID_REQUEST,
                "invalid request: a message exceeds the size limit",
            );
        }
        let line = self.buf[line_at..line_at + end].trim_ascii();
        if line.is_empty() {
            return Step::Skipped;
        }
        Step::Message(parse_message(line))
    }

    /// Reports garbage the first time in a run; `None` when nothing is to be reported.
    fn garbage(&mut self, garbage: bool) -> Option<Step> {
        if !garbage || std::mem::replace(&mut self.in_garbage, true) {
            return None;
        }
        Some(refuse(
            code::PARSE_ERROR,
            "parse error: bytes outside any message (no Content-Length header)",
        ))
    }
}

enum Step {
    Message(Incoming),
    NeedMore,
    Skipped,
}

fn refuse(code: i64, message: &str) -> Step {
    Step::Message(Incoming::Malformed {
        id: None,
        error: ResponseError::new(code, message),
    })
}

fn is_blank(bytes: &[u8]) -> bool {
    bytes.iter().all(u8::is_ascii_whitespace)
}

/// Whether `bytes` are whole `Name: value` header lines (short, as headers are).
fn is_header_lines(bytes: &[u8]) -> bool {
    bytes.len() < MAX_HEADER
        && bytes.ends_with(b"\r\n")
        && bytes[..bytes.len() - 2]
            .split(|b| *b == b'\n')
            .all(|line| line.contains(&b':') && line.is_ascii())
}

/// The Content-Length in a frame's header lines (without the blank line that ends them).
fn content_length(headers: &[u8]) -> Option<usize> {
    let text = std::str::from_utf8(headers).ok()?;
    text.split("\r\n").find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("content-length")
            .then(|| value.trim().parse().ok())?
    })
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn find_ignore_case(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
}

#[cfg(test)]
#[path = "jsonrpc_tests.rs"]
mod tests;
