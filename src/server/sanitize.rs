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

use crate::server::outgoing::Replies;
use crate::server::wire::content_length;

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

/// What to do with one frame.
enum Checked {
    /// A valid message; `response_to` is the id of a response (which may be a reply to us).
    Pass { response_to: Option<Value> },
    /// Not a valid JSON-RPC message: this error-request body replaces it.
    Replace(Vec<u8>),
}

/// Checks one frame body.
fn check_body(body: &[u8]) -> Checked {
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
                let response_to = shape.method.is_none().then_some(shape.id).flatten();
                return Checked::Pass { response_to };
            }
            let why = "invalid request: not a JSON-RPC 2.0 request, notification or response";
            (-32600, why.to_owned(), id)
        }
    };
    let request = json!({"jsonrpc": "2.0", "id": id, "method": MALFORMED_METHOD,
                         "params": {"code": code, "message": message}});
    Checked::Replace(serde_json::to_vec(&request).unwrap_or_default())
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn push_frame(out: &mut Vec<u8>, body: &[u8]) {
    out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
    out.extend_from_slice(body);
}

/// An `AsyncRead` that forwards only well-formed frames (see the module docs).
pub struct SanitizedReader<R> {
    inner: R,
    /// Our requests' reply slots: replies to them are delivered here, not forwarded.
    replies: Option<Replies>,
    input: Vec<u8>,
    output: Vec<u8>,
    output_pos: usize,
    eof: bool,
}

impl<R> SanitizedReader<R> {
    pub fn new(inner: R) -> Self {
        SanitizedReader {
            inner,
            replies: None,
            input: Vec::new(),
            output: Vec::new(),
            output_pos: 0,
            eof: false,
        }
    }

    /// Delivers replies to the requests registered in `replies` there instead of forwarding
    /// them (the framework does not know those requests), and closes `replies` at end of input.
    pub fn routing_replies(mut self, replies: Replies) -> Self {
        self.replies = Some(replies);
        self
    }

    /// Moves every complete frame from `input` to `output`, repairing bad ones.
    fn process(&mut self) {
        while let Some(header_end) = find(&self.input, b"\r\n\r\n") {
            let start = header_end + 4;
            // An absurd length (one that overflows) is as unusable as a missing one.
            let frame_end =
                content_length(&self.input[..header_end]).and_then(|len| start.checked_add(len));
            let Some(end) = frame_end else {
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
            if self.input.len() < end {
                return;
            }
            let body = &self.input[start..end];
            match check_body(body) {
                Checked::Pass {
                    response_to: Some(id),
                } if self.replies.as_ref().is_some_and(|r| r.deliver(&id, body)) => {}
                Checked::Pass { .. } => push_frame(&mut self.output, body),
                Checked::Replace(replacement) => {
                    tracing::warn!("malformed message from the client answered with an error");
                    push_frame(&mut self.output, &replacement);
                }
            }
            self.input.drain(..end);
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
                Poll::Ready(Err(e)) => {
                    if let Some(replies) = &this.replies {
                        replies.close();
                    }
                    return Poll::Ready(Err(e));
                }
                Poll::Ready(Ok(())) if read.filled().is_empty() => {
                    this.eof = true;
                    if let Some(replies) = &this.replies {
                        replies.close();
                    }
                }
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
    async fn an_overflowing_content_length_is_malformed_not_a_panic() {
        let good = r#"{"jsonrpc":"2.0","method":"x"}"#;
        let input = format!(
            "Content-Length: {}\r\n\r\n{{}}Content-Length: {}\r\n\r\n{good}",
            usize::MAX,
            good.len()
        );
        let out = filter(input.as_bytes()).await;
        assert!(out.contains("-32700"), "{out}");
        assert_eq!(
            out.matches(good).count(),
            1,
            "the next frame is kept: {out}"
        );
    }

    #[tokio::test]
    async fn wrong_shape_keeps_its_id() {
        let body = r#"{"jsonrpc":"2.0","id":4,"method":5}"#;
        let out = filter(format!("Content-Length: {}\r\n\r\n{body}", body.len()).as_bytes()).await;
        assert!(out.contains(r#""id":4"#) && out.contains("-32600"), "{out}");
    }

    #[tokio::test]
    async fn replies_to_our_requests_are_delivered_not_forwarded() {
        let replies = Replies::default();
        let slot = replies.register_for_test("5");
        let ours = r#"{"jsonrpc":"2.0","id":5,"result":{"applied":true}}"#;
        let theirs = r#"{"jsonrpc":"2.0","id":6,"result":null}"#;
        let note = r#"{"jsonrpc":"2.0","method":"x","id":5}"#;
        let input: String = [ours, theirs, note]
            .iter()
            .map(|b| format!("Content-Length: {}\r\n\r\n{b}", b.len()))
            .collect();
        let mut out = String::new();
        SanitizedReader::new(input.as_bytes())
            .routing_replies(replies.clone())
            .read_to_string(&mut out)
            .await
            .unwrap();
        assert!(!out.contains("applied"), "{out}");
        assert!(out.contains(theirs) && out.contains(note), "{out}");
        assert_eq!(slot.await.unwrap().unwrap(), json!({"applied": true}));
        // End of input: the client is gone for every later request.
        assert!(replies.is_closed_for_test());
    }
}
