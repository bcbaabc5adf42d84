//! The framework's writer: frames pass through untouched, and responses are reported once
//! written.
//!
//! tower-lsp-server writes its responses from its own serve task, so "the handler returned"
//! does not mean "the response is on the wire". To guarantee that the response creating a
//! session or run id precedes every event carrying it, this writer parses the Content-Length
//! frames it forwards and resolves a [`Gate`] when the last byte of the response with a watched
//! id has been accepted by the output (`output.rs`, which writes in order). Events are only
//! handed to the output after their gate opened, so they are written after the response.

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

    /// Whether any response is watched (then the writer collects frame bodies).
    fn any(&self) -> bool {
        !self.lock().is_empty()
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

/// Incremental Content-Length frame splitter over the bytes written. It copies a frame's body
/// only while some response is watched (rarely: from a request's arrival to its response), so
/// the event stream passes through without per-frame copies.
#[derive(Default)]
struct Framer {
    /// The header bytes of the frame being read (until the blank line).
    header: Vec<u8>,
    /// Body bytes still to come for the current frame (0: reading a header).
    remaining: usize,
    /// The current frame's body, when it is collected.
    body: Option<Vec<u8>>,
}

impl Framer {
    /// Feeds bytes; calls `done` with the body of each completed frame that `collect` (asked
    /// once per frame, at its header's end) wanted.
    fn feed(&mut self, mut bytes: &[u8], collect: impl Fn() -> bool, mut done: impl FnMut(&[u8])) {
        while !bytes.is_empty() {
            if self.remaining > 0 {
                let n = self.remaining.min(bytes.len());
                if let Some(body) = &mut self.body {
                    body.extend_from_slice(&bytes[..n]);
                }
                self.remaining -= n;
                bytes = &bytes[n..];
                if self.remaining == 0
                    && let Some(body) = self.body.take()
                {
                    done(&body);
                }
                continue;
            }
            // In a header: take bytes up to and including the blank line that ends it.
            let Some(end) = header_end(&self.header, bytes) else {
                self.header.extend_from_slice(bytes);
                bytes = &[];
                continue;
            };
            self.header.extend_from_slice(&bytes[..end]);
            bytes = &bytes[end..];
            let len = content_length(&self.header[..self.header.len() - 4]);
            self.header.clear();
            match len {
                Some(0) => done(&[]),
                Some(len) => {
                    self.remaining = len;
                    self.body = collect().then(|| Vec::with_capacity(len));
                }
                // Not a frame we understand: skip it rather than misparse forever.
                None => {}
            }
        }
    }
}

/// Where in `bytes` the header that began with `header` ends (just after its `\r\n\r\n`,
/// which may start in `header`).
fn header_end(header: &[u8], bytes: &[u8]) -> Option<usize> {
    const END: &[u8] = b"\r\n\r\n";
    let keep = header.len().min(3);
    let mut seam = [0u8; 6];
    let head = bytes.len().min(3);
    seam[..keep].copy_from_slice(&header[header.len() - keep..]);
    seam[keep..keep + head].copy_from_slice(&bytes[..head]);
    if let Some(i) = seam[..keep + head].windows(4).position(|w| w == END) {
        return Some(i + 4 - keep);
    }
    bytes.windows(4).position(|w| w == END).map(|i| i + 4)
}

/// The Content-Length in a frame's header lines (without the blank line that ends them).
pub(crate) fn content_length(headers: &[u8]) -> Option<usize> {
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
            let watch = &this.watch;
            this.framer
                .feed(&buf[..*n], || watch.any(), |body| watch.written(body));
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

    #[test]
    fn frames_split_anywhere_are_found_and_only_collected_when_asked() {
        let bodies = [r#"{"a":1}"#, "", r#"{"id":2,"result":"x\r\n\r\n"}"#];
        let stream: Vec<u8> = bodies.iter().flat_map(|b| frame(b)).collect();
        for split in 0..stream.len() {
            let mut framer = Framer::default();
            let mut got = Vec::new();
            for part in [&stream[..split], &stream[split..]] {
                framer.feed(part, || true, |b| got.push(b.to_vec()));
            }
            let want: Vec<Vec<u8>> = bodies.iter().map(|b| b.as_bytes().to_vec()).collect();
            assert_eq!(got, want, "split at {split}");
        }
        let mut framer = Framer::default();
        let mut got = 0;
        // Bodies that nobody watches are skipped (empty ones still complete at once).
        framer.feed(&stream, || false, |_| got += 1);
        assert_eq!(got, 1);
    }
}
