//! The stdout writer: frames pass through untouched, and responses are reported once written.
//!
//! tower-lsp-server writes responses and server-initiated messages from two streams merged
//! without any order, so "the handler returned" does not mean "the response is on the wire".
//! To guarantee that the response creating a session or run id precedes every event carrying
//! it, this writer parses the Content-Length frames it forwards and resolves a [`Gate`] when the
//! last byte of the response with a watched id has been accepted by stdout. Events are only
//! handed to the framework after their gate opened, so they are written after the response.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::{BoxFuture, Shared};
use serde::Deserialize;
use serde_json::Value;
use tokio::io::AsyncWrite;
use tokio::sync::oneshot;

/// Resolves once the watched response was written (or after a safety timeout).
#[derive(Clone)]
pub struct Gate(Shared<BoxFuture<'static, ()>>);

impl Gate {
    /// A gate that is already open.
    pub fn open() -> Self {
        Gate(async {}.boxed().shared())
    }

    pub async fn wait(self) {
        self.0.await
    }
}

/// How long an event may wait for its response; only reached if the response was never sent
/// (for example the framework failed to serialize it), so events are never lost for good.
const GATE_TIMEOUT: Duration = Duration::from_secs(5);

/// Watches of response ids, shared between the shim (which registers) and the writer.
#[derive(Clone, Default)]
pub struct ResponseWatch {
    waiting: Arc<Mutex<HashMap<String, oneshot::Sender<()>>>>,
}

impl ResponseWatch {
    /// Registers interest in the response to request `id` (its JSON text).
    pub fn watch(&self, id: &Value) -> Gate {
        let (tx, rx) = oneshot::channel();
        self.lock().insert(id.to_string(), tx);
        let fut = async move {
            let _ = tokio::time::timeout(GATE_TIMEOUT, rx).await;
        };
        Gate(fut.boxed().shared())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<()>>> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn written(&self, body: &[u8]) {
        #[derive(Deserialize)]
        struct Head {
            id: Option<Value>,
            method: Option<serde::de::IgnoredAny>,
        }
        if self.lock().is_empty() {
            return;
        }
        let Ok(head) = serde_json::from_slice::<Head>(body) else {
            return;
        };
        if head.method.is_some() {
            return;
        }
        if let Some(id) = head.id
            && let Some(tx) = self.lock().remove(&id.to_string())
        {
            let _ = tx.send(());
        }
    }
}

/// Incremental Content-Length frame splitter over the bytes written.
#[derive(Default)]
struct Framer {
    buf: Vec<u8>,
}

impl Framer {
    /// Feeds bytes; returns the bodies of the frames completed by them.
    fn feed(&mut self, bytes: &[u8]) -> Vec<Vec<u8>> {
        self.buf.extend_from_slice(bytes);
        let mut bodies = Vec::new();
        while let Some(header_end) = find(&self.buf, b"\r\n\r\n") {
            let Some(len) = content_length(&self.buf[..header_end]) else {
                // Not a frame we understand: drop what we have rather than misparse forever.
                self.buf.clear();
                break;
            };
            let start = header_end + 4;
            if self.buf.len() < start + len {
                break;
            }
            bodies.push(self.buf[start..start + len].to_vec());
            self.buf.drain(..start + len);
        }
        bodies
    }
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

/// An `AsyncWrite` that forwards to `inner` and reports written responses to a [`ResponseWatch`].
pub struct WatchedWriter<W> {
    inner: W,
    framer: Framer,
    watch: ResponseWatch,
}

impl<W> WatchedWriter<W> {
    pub fn new(inner: W, watch: ResponseWatch) -> Self {
        WatchedWriter {
            inner,
            framer: Framer::default(),
            watch,
        }
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for WatchedWriter<W> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = &mut *self;
        let poll = Pin::new(&mut this.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = &poll {
            for body in this.framer.feed(&buf[..*n]) {
                this.watch.written(&body);
            }
        }
        poll
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    fn frame(body: &str) -> Vec<u8> {
        format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
    }

    #[tokio::test]
    async fn gate_opens_only_after_the_response_bytes_are_written() {
        let watch = ResponseWatch::default();
        let gate = watch.watch(&serde_json::json!(7));
        let mut writer = WatchedWriter::new(Vec::new(), watch);
        // A request from the server with the same id does not count; a response split in two does.
        writer
            .write_all(&frame(r#"{"jsonrpc":"2.0","id":7,"method":"x"}"#))
            .await
            .unwrap();
        let response = frame(r#"{"jsonrpc":"2.0","result":null,"id":7}"#);
        writer.write_all(&response[..10]).await.unwrap();
        assert!(gate.clone().0.now_or_never().is_none());
        writer.write_all(&response[10..]).await.unwrap();
        assert!(gate.0.now_or_never().is_some());
    }
}
