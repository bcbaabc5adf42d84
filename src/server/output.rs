//! The daemon's one ordered output: every frame to the client (the framework's responses, the
//! `$/agentEvent` notifications, server → client requests) goes through one [`Output`].
//!
//! Why not the framework's client channel: tower-lsp-server sends a server-initiated message
//! through a channel to its serve task, which encodes it and writes it. Every event and request
//! therefore crossed a task (often a thread) and was serialised twice (typed params → `Value` →
//! text). Here the producer encodes its frame once and, when nothing is waiting before it and
//! stdout is a pipe or socket (how editors start a server), writes it with one non-blocking
//! system call on its own task. Whatever the pipe does not take at once is queued in order and
//! written by a flusher task; later frames queue behind it, so frames are never interleaved or
//! reordered.
//!
//! The framework keeps writing its own frames through [`FrameworkWriter`], which hands the
//! output whole frames only, so its bytes can never land inside one of ours.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use serde::Serialize;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::Notify;

use crate::server::stdio::{NonBlocking, Stdout};
use crate::server::wire::content_length;

/// Queued bytes above which [`Output::room`] waits: the client reads slower than we write.
const HIGH_WATER: usize = 256 * 1024;

/// Where the bytes go.
enum Target {
    /// A non-blocking pipe or socket: producers may write directly.
    Direct(Arc<NonBlocking>),
    /// Anything else (tokio's blocking stdout, test writers): only the flusher writes.
    Writer(Box<dyn AsyncWrite + Send + Unpin>),
}

#[derive(Default)]
struct State {
    /// Bytes accepted but not yet written, in order (behind [`State::writing`]).
    queued: Vec<u8>,
    /// Bytes the flusher took from `queued` and is writing now: they still wait for the
    /// client, so they count against [`HIGH_WATER`] until written.
    writing: usize,
    /// The flusher owns the write side: producers only append to `queued`.
    flushing: bool,
    /// A write failed (the client is gone): further frames are dropped.
    closed: bool,
}

struct Shared {
    state: Mutex<State>,
    /// For direct writes; `None` when only the flusher may write.
    direct: Option<Arc<NonBlocking>>,
    /// Wakes the flusher (a stored permit, so a wake before it waits is not lost).
    flush: Notify,
    /// Wakes producers waiting for room and callers waiting for the queue to drain.
    drained: Notify,
}

/// The connection's ordered output (cheap to clone).
#[derive(Clone)]
pub struct Output {
    shared: Arc<Shared>,
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

impl Output {
    /// Output to the daemon's stdout; starts the flusher task.
    pub fn start(stdout: Stdout) -> Self {
        let target = match stdout {
            Stdout::Reactor(fd) => Target::Direct(Arc::new(fd)),
            Stdout::Blocking(stdout) => Target::Writer(Box::new(stdout)),
        };
        Self::start_with(target)
    }

    /// Output to any writer, written by the flusher only (tests, non-pipe stdout).
    pub fn to_writer(writer: impl AsyncWrite + Send + Unpin + 'static) -> Self {
        Self::start_with(Target::Writer(Box::new(writer)))
    }

    fn start_with(target: Target) -> Self {
        let direct = match &target {
            Target::Direct(fd) => Some(fd.clone()),
            Target::Writer(_) => None,
        };
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            direct,
            flush: Notify::new(),
            drained: Notify::new(),
        });
        tokio::spawn(flusher(shared.clone(), target));
        Output { shared }
    }

    /// Sends one JSON-RPC message: `message` serialised once, framed, written or queued.
    pub fn send_message<T: Serialize>(&self, message: &T) -> Result<(), serde_json::Error> {
        let mut frame = Vec::with_capacity(512);
        frame.extend_from_slice(HEADER_SPACE);
        serde_json::to_writer(&mut frame, message)?;
        let start = put_header(&mut frame);
        self.send_bytes(&frame[start..]);
        Ok(())
    }

    /// Sends bytes that are one or more whole frames.
    pub fn send_bytes(&self, mut bytes: &[u8]) {
        let mut state = lock(&self.shared.state);
        if state.closed {
            return;
        }
        if state.queued.is_empty()
            && !state.flushing
            && let Some(fd) = &self.shared.direct
        {
            // Nothing is ahead of us: write now, on this task, under the lock (the descriptor is
            // non-blocking, so the lock is held for one short system call).
            match fd.try_write(bytes) {
                Ok(n) => bytes = &bytes[n..],
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => {
                    tracing::debug!(%e, "stdout closed; dropping output");
                    state.closed = true;
                    return;
                }
            }
            if bytes.is_empty() {
                return;
            }
        }
        state.queued.extend_from_slice(bytes);
        if !state.flushing {
            state.flushing = true;
            self.shared.flush.notify_one();
        }
    }

    /// Resolves when fewer than [`HIGH_WATER`] bytes wait (or the output is closed): the event
    /// writer waits here, so a slow client makes deltas merge instead of memory grow.
    pub async fn room(&self) {
        self.wait_until(|s| s.queued.len() + s.writing < HIGH_WATER)
            .await;
    }

    /// Resolves when everything accepted so far was written (or the output is closed).
    pub async fn drained(&self) {
        self.wait_until(|s| s.queued.is_empty() && !s.flushing)
            .await;
    }

    async fn wait_until(&self, ready: impl Fn(&State) -> bool) {
        loop {
            let woken = self.shared.drained.notified();
            tokio::pin!(woken);
            // Registered before the check, so a drain right after it still wakes us.
            woken.as_mut().enable();
            {
                let state = lock(&self.shared.state);
                if state.closed || ready(&state) {
                    return;
                }
            }
            woken.await;
        }
    }

    /// Whether a write failed (the client stopped reading for good).
    pub fn is_closed(&self) -> bool {
        lock(&self.shared.state).closed
    }

    /// An `AsyncWrite` for the framework, handing this output whole frames only.
    pub fn framework_writer(&self) -> FrameworkWriter {
        FrameworkWriter {
            output: self.clone(),
            partial: Vec::new(),
        }
    }
}

/// Room before the body for the longest header: `Content-Length: <20 digits>\r\n\r\n`.
const HEADER_SPACE: &[u8] = &[b' '; 40];

/// Writes the header right before the body that follows [`HEADER_SPACE`]; returns where the
/// frame starts. The body is not moved.
fn put_header(frame: &mut [u8]) -> usize {
    let body_len = frame.len() - HEADER_SPACE.len();
    let header = format!("Content-Length: {body_len}\r\n\r\n");
    let start = HEADER_SPACE.len() - header.len();
    frame[start..HEADER_SPACE.len()].copy_from_slice(header.as_bytes());
    start
}

/// Writes what producers queued, for as long as the output lives.
async fn flusher(shared: Arc<Shared>, mut target: Target) {
    let mut batch = Vec::new();
    loop {
        shared.flush.notified().await;
        loop {
            {
                let mut state = lock(&shared.state);
                if state.queued.is_empty() {
                    state.flushing = false;
                    break;
                }
                std::mem::swap(&mut batch, &mut state.queued);
                state.writing = batch.len();
            }
            if let Err(e) = write_all(&mut target, &batch).await {
                tracing::debug!(%e, "stdout closed; dropping output");
                let mut state = lock(&shared.state);
                state.closed = true;
                state.queued = Vec::new();
                state.writing = 0;
                state.flushing = false;
                drop(state);
                shared.drained.notify_waiters();
                return;
            }
            batch.clear();
            lock(&shared.state).writing = 0;
            // The batch reached the client: producers waiting for room may go on.
            shared.drained.notify_waiters();
        }
        shared.drained.notify_waiters();
    }
}

async fn write_all(target: &mut Target, mut bytes: &[u8]) -> io::Result<()> {
    match target {
        Target::Direct(fd) => {
            while !bytes.is_empty() {
                let n = std::future::poll_fn(|cx| fd.poll_write(cx, bytes)).await?;
                if n == 0 {
                    return Err(io::ErrorKind::WriteZero.into());
                }
                bytes = &bytes[n..];
            }
            Ok(())
        }
        Target::Writer(writer) => {
            writer.write_all(bytes).await?;
            writer.flush().await
        }
    }
}

/// The framework's stdout: bytes are held until they complete a frame, then handed to the
/// output, so a frame written in several pieces is never split by someone else's frame.
pub struct FrameworkWriter {
    output: Output,
    partial: Vec<u8>,
}

impl AsyncWrite for FrameworkWriter {
    fn poll_write(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        this.partial.extend_from_slice(buf);
        let whole = whole_frames(&this.partial);
        if whole > 0 {
            this.output.send_bytes(&this.partial[..whole]);
            this.partial.drain(..whole);
        }
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Accepted bytes belong to the output now; it writes them in order.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// The length of the longest prefix of `bytes` made of whole Content-Length frames. A header
/// that cannot be parsed passes everything through: the framework only writes valid frames, and
/// holding bytes forever would be worse than forwarding them.
fn whole_frames(bytes: &[u8]) -> usize {
    let mut pos = 0;
    while pos < bytes.len() {
        let rest = &bytes[pos..];
        let Some(header_end) = rest.windows(4).position(|w| w == b"\r\n\r\n") else {
            return pos;
        };
        let Some(len) = content_length(&rest[..header_end]) else {
            return bytes.len();
        };
        let Some(end) = (header_end + 4).checked_add(len) else {
            return bytes.len();
        };
        if rest.len() < end {
            return pos;
        }
        pos += end;
    }
    pos
}

#[cfg(test)]
#[path = "output_tests.rs"]
mod tests;
