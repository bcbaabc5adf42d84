//! The stdin filter: malformed input becomes a well-formed request the server answers with an
//! error, instead of ending the connection.
//!
//! tower-lsp-server reads stdin through a `FramedRead`, which ends the stream after the first
//! decode error: one malformed message from the client would silently stop the daemon. This
//! reader splits Content-Length frames itself, passes valid JSON-RPC messages through unchanged
//! and replaces anything else by a request to [`MALFORMED_METHOD`] (id `null` unless the broken
//! message had a usable id), whose handler answers with the JSON-RPC error (`-32700` parse error
//! or `-32600` invalid request) and a message that says what was wrong.

use std::pin::Pin;
use std::task::{Context, Poll};

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, ReadBuf};
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Response};

/// The internal method malformed messages are rewritten to.
pub const MALFORMED_METHOD: &str = "agent/_malformedMessage";

/// The handler of [`MALFORMED_METHOD`]: always the error described in `params`.
pub fn malformed_error(params: Value) -> Error {
    let code = params.get("code").and_then(Value::as_i64).unwrap_or(-32700);
    let message = params
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("malformed message")
        .to_owned();
    Error {
        code: ErrorCode::from(code),
        message: message.into(),
        data: None,
    }
}

/// Checks one frame body; returns the replacement body when it is not a valid JSON-RPC message.
fn check_body(body: &[u8]) -> Option<Vec<u8>> {
    #[derive(Deserialize)]
    struct Shape {
        jsonrpc: Option<String>,
        method: Option<Value>,
        id: Option<Value>,
        #[allow(dead_code)] // Present only to be skipped cheaply.
        params: Option<IgnoredAny>,
    }
    let (code, message, id) = match serde_json::from_slice::<Shape>(body) {
        Err(e) if e.is_syntax() || e.is_eof() => (-32700, format!("parse error: {e}"), Value::Null),
        Err(e) => (-32600, format!("invalid request: {e}"), Value::Null),
        Ok(shape) => {
            let id = match &shape.id {
                Some(id @ (Value::Number(_) | Value::String(_))) => id.clone(),
                _ => Value::Null,
            };
            let valid = shape.jsonrpc.as_deref() == Some("2.0")
                && match &shape.method {
                    Some(Value::String(_)) => true,
                    Some(_) => false,
                    None => serde_json::from_slice::<Response>(body).is_ok(),
                };
            if valid {
                return None;
            }
            let why = "invalid request: not a JSON-RPC 2.0 request, notification or response";
            (-32600, why.to_owned(), id)
        }
    };
    let request = json!({"jsonrpc": "2.0", "id": id, "method": MALFORMED_METHOD,
                         "params": {"code": code, "message": message}});
    Some(serde_json::to_vec(&request).unwrap_or_default())
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn content_length(headers: &[u8]) -> Option<usize> {
    let text = std::str::from_utf8(headers).ok()?;
    text.split("\r\n").find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("content-length")
            .then(|| value.trim().parse().ok())?
    })
}

fn push_frame(out: &mut Vec<u8>, body: &[u8]) {
    out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
    out.extend_from_slice(body);
}

/// An `AsyncRead` that forwards only well-formed frames (see the module docs).
pub struct SanitizedReader<R> {
    inner: R,
    input: Vec<u8>,
    output: Vec<u8>,
    output_pos: usize,
    eof: bool,
}

impl<R> SanitizedReader<R> {
    pub fn new(inner: R) -> Self {
        SanitizedReader {
            inner,
            input: Vec::new(),
            output: Vec::new(),
            output_pos: 0,
            eof: false,
        }
    }

    /// Moves every complete frame from `input` to `output`, repairing bad ones.
    fn process(&mut self) {
        while let Some(header_end) = find(&self.input, b"\r\n\r\n") {
            let Some(len) = content_length(&self.input[..header_end]) else {
                // No usable header: report it and resynchronise at the next header.
                let skip_from = header_end + 4;
                let next = find(&self.input[skip_from..], b"Content-Length")
                    .map_or(self.input.len(), |i| skip_from + i);
                self.input.drain(..next);
                let reply = json!({"jsonrpc": "2.0", "id": null, "method": MALFORMED_METHOD,
                    "params": {"code": -32700, "message": "parse error: a message without a valid Content-Length header"}});
                push_frame(&mut self.output, reply.to_string().as_bytes());
                continue;
            };
            let start = header_end + 4;
            if self.input.len() < start + len {
                return;
            }
            let body = &self.input[start..start + len];
            match check_body(body) {
                None => push_frame(&mut self.output, body),
                Some(replacement) => {
                    tracing::warn!("malformed message from the client answered with an error");
                    push_frame(&mut self.output, &replacement);
                }
            }
            self.input.drain(..start + len);
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for SanitizedReader<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        loop {
            if this.output_pos < this.output.len() {
                let n = buf.remaining().min(this.output.len() - this.output_pos);
                buf.put_slice(&this.output[this.output_pos..this.output_pos + n]);
                this.output_pos += n;
                if this.output_pos == this.output.len() {
                    this.output.clear();
                    this.output_pos = 0;
                }
                return Poll::Ready(Ok(()));
            }
            if this.eof {
                return Poll::Ready(Ok(()));
            }
            let mut chunk = [0u8; 8192];
            let mut read = ReadBuf::new(&mut chunk);
            match Pin::new(&mut this.inner).poll_read(cx, &mut read) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) if read.filled().is_empty() => this.eof = true,
                Poll::Ready(Ok(())) => {
                    this.input.extend_from_slice(read.filled());
                    this.process();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    async fn filter(input: &[u8]) -> String {
        let mut out = String::new();
        SanitizedReader::new(input)
            .read_to_string(&mut out)
            .await
            .unwrap();
        out
    }

    #[tokio::test]
    async fn valid_frames_pass_and_bad_ones_are_rewritten() {
        let good = r#"{"jsonrpc":"2.0","method":"x"}"#;
        let input = format!(
            "Content-Length: {}\r\n\r\n{good}Content-Length: 3\r\n\r\n{{a}}content-length: {}\r\n\r\n{good}",
            good.len(),
            good.len()
        );
        let out = filter(input.as_bytes()).await;
        assert_eq!(out.matches(good).count(), 2, "{out}");
        assert!(
            out.contains(MALFORMED_METHOD) && out.contains("-32700"),
            "{out}"
        );
    }

    #[tokio::test]
    async fn wrong_shape_keeps_its_id() {
        let body = r#"{"jsonrpc":"2.0","id":4,"method":5}"#;
        let out = filter(format!("Content-Length: {}\r\n\r\n{body}", body.len()).as_bytes()).await;
        assert!(out.contains(r#""id":4"#) && out.contains("-32600"), "{out}");
    }
}
