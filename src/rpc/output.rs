//! The one ordered writer: every frame to the client — responses, `$/agentEvent` notifications,
//! server → client requests and notifications — goes through one channel and one writer task,
//! which writes them in the order they were queued.
//!
//! The writer runs on a thread of its own (as rust-analyzer's `lsp-server` does): what was queued
//! reaches the client while the sessions' thread is busy, e.g. scanning a 10 MB buffer for an
//! `edit` or serialising the next request's transcript (BENCH.md, scenario 5).
//!
//! Ordering by construction: the main loop queues a request's response slot ([`Output::reply_slot`])
//! before it handles the request, so the response precedes everything the request starts; a run
//! queues its events and its requests to the client on the same channel, so a request never
//! overtakes the events before it.
//!
//! Pacing: a streamed delta of a content block is written at once when none of that block was
//! written in the last `deltaIntervalMs`; otherwise the writer holds it until that interval has
//! passed (later deltas of the block merge into it meanwhile, see `events.rs`). Anything other
//! than a delta queued behind it ends the hold at once. While the client reads slowly, the writer
//! waits on its writes and queued deltas merge the same way.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::Serialize;
use tokio::io::{AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::{Notify, mpsc, oneshot};
use tokio::time::Instant;

use crate::rpc::jsonrpc::{Framing, OutgoingMessage};

/// The default `deltaIntervalMs`: one frame of a 60 Hz display, the fastest an editor redraws.
pub const DEFAULT_DELTA_INTERVAL: std::time::Duration = std::time::Duration::from_millis(16);

/// A queued notification; `None` once the writer took it.
pub(crate) type Slot = Arc<Mutex<Option<Box<dyn Pending>>>>;

/// A notification waiting in the output that later streamed text may be appended to: an
/// `$/agentEvent` delta of the LSP front end, an ACP message chunk.
pub(crate) trait Pending: Send {
    /// Appends a later delta of the same block.
    fn append(&mut self, text: &str);
    /// The notification as written, with everything appended.
    fn encode(self: Box<Self>, framing: Framing) -> Option<Vec<u8>>;
}

/// The content block a delta belongs to: session, run, delta kind and content index.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Block {
    pub session: Arc<str>,
    pub run: Arc<str>,
    pub kind: &'static str,
    pub index: usize,
}

/// Stands in for a due time beyond what `Instant` can hold.
const FOREVER: Duration = Duration::from_secs(365 * 24 * 3600);

enum Item {
    /// An `$/agentEvent`; `block` is set for a mergeable delta, which the writer paces.
    Event { slot: Slot, block: Option<Block> },
    /// A whole encoded frame (a request or notification to the client).
    Frame(Vec<u8>),
    /// A response, filled in by the main loop once the request is handled.
    Reply(oneshot::Receiver<Vec<u8>>),
    /// Answered once every item before it was written.
    Drained(oneshot::Sender<()>),
}

struct Shared {
    framing: Framing,
    /// `deltaIntervalMs`, in nanoseconds (settled by `initialize`).
    interval_ns: AtomicU64,
    /// Queued items that end a pacing hold (anything but a delta), not yet taken.
    urgent: AtomicUsize,
    /// Wakes a holding writer when `urgent` grows.
    wake: Notify,
    /// Bumped by every non-event frame: a delta never merges across one (see `events.rs`).
    epoch: AtomicU64,
    /// A write failed: the client is gone.
    closed: AtomicBool,
}

/// The connection's ordered output (cheap to clone). The writer ends when every clone is gone.
#[derive(Clone)]
pub struct Output {
    tx: mpsc::UnboundedSender<Item>,
    shared: Arc<Shared>,
}

/// The place of one response in the output; dropping it unfilled skips it.
pub struct ReplySlot {
    framing: Framing,
    tx: oneshot::Sender<Vec<u8>>,
}

impl ReplySlot {
    pub fn fill<T: Serialize>(self, message: &T) {
        match self.framing.encode(message) {
            Ok(frame) => {
                let _ = self.tx.send(frame);
            }
            Err(e) => tracing::error!(%e, "a response does not serialize"),
        }
    }
}

impl Output {
    /// Starts the writer on `writer`, on the writer's own thread; fails if that thread (or its
    /// runtime) cannot be created, since a daemon that cannot write must not start.
    pub fn start(
        writer: impl AsyncWrite + Send + Unpin + 'static,
        framing: Framing,
    ) -> std::io::Result<Self> {
        let (tx, rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            framing,
            interval_ns: AtomicU64::new(0),
            urgent: AtomicUsize::new(0),
            wake: Notify::new(),
            epoch: AtomicU64::new(0),
            closed: AtomicBool::new(false),
        });
        let writer = Writer {
            shared: shared.clone(),
            sink: BufWriter::with_capacity(64 * 1024, Box::new(writer)),
            written: HashMap::new(),
        };
        spawn_writer(writer.run(rx))?;
        Ok(Output { tx, shared })
    }

    /// Sets the pace of streamed deltas (`ZERO`: no pacing).
    pub fn set_delta_interval(&self, interval: Duration) {
        let ns = u64::try_from(interval.as_nanos()).unwrap_or(u64::MAX);
        self.shared.interval_ns.store(ns, Ordering::Relaxed);
    }

    /// Queues a notification to the client.
    pub fn notify<P: Serialize>(&self, method: &str, params: P) {
        self.send(&OutgoingMessage::notification(method, params));
    }

    /// Queues one message (a request or notification), encoded now.
    pub fn send<T: Serialize>(&self, message: &T) {
        match self.shared.framing.encode(message) {
            Ok(frame) => self.queue(Item::Frame(frame)),
            Err(e) => tracing::error!(%e, "a message to the client does not serialize"),
        }
    }

    /// Reserves the place of a response: everything queued after this call is written after it.
    pub fn reply_slot(&self) -> ReplySlot {
        let (tx, rx) = oneshot::channel();
        self.queue(Item::Reply(rx));
        ReplySlot {
            framing: self.shared.framing,
            tx,
        }
    }

    /// Resolves once everything queued before the call was written (or the client is gone).
    pub async fn drained(&self) {
        let (tx, rx) = oneshot::channel();
        self.queue(Item::Drained(tx));
        let _ = rx.await;
    }

    /// Whether a write failed (the client stopped reading for good).
    pub fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::SeqCst)
    }

    /// The current epoch (see [`Shared::epoch`]).
    pub(crate) fn epoch(&self) -> u64 {
        self.shared.epoch.load(Ordering::SeqCst)
    }

    /// Queues an event; `block` marks a delta the writer may hold.
    pub(crate) fn queue_event(&self, slot: Slot, block: Option<Block>) {
        self.queue(Item::Event { slot, block });
    }

    fn queue(&self, item: Item) {
        let urgent = !matches!(item, Item::Event { block: Some(_), .. });
        if !matches!(item, Item::Event { .. }) {
            self.shared.epoch.fetch_add(1, Ordering::SeqCst);
        }
        if urgent {
            self.shared.urgent.fetch_add(1, Ordering::SeqCst);
        }
        if self.tx.send(item).is_err() {
            tracing::debug!("output dropped: the connection is closing");
        }
        if urgent {
            self.shared.wake.notify_waiters();
        }
    }
}

/// Runs the writer on a thread with a runtime of its own (for the pacing timers); the thread
/// ends with the writer, when every [`Output`] is gone or the client stopped reading.
fn spawn_writer(run: impl Future<Output = ()> + Send + 'static) -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    std::thread::Builder::new()
        .name("agent-lsp-output".into())
        .spawn(move || runtime.block_on(run))?;
    Ok(())
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The writer task's state.
struct Writer {
    shared: Arc<Shared>,
    sink: BufWriter<Box<dyn AsyncWrite + Send + Unpin>>,
    /// Per session, the last delta block written and when.
    written: HashMap<Arc<str>, (Block, Instant)>,
}

impl Writer {
    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Item>) {
        while let Some(item) = rx.recv().await {
            if !matches!(item, Item::Event { block: Some(_), .. }) {
                self.shared.urgent.fetch_sub(1, Ordering::SeqCst);
            }
            let frame = match item {
                Item::Event { slot, block } => self.event_frame(slot, block).await,
                Item::Frame(frame) => Some(frame),
                Item::Reply(reply) => reply.await.ok(),
                Item::Drained(done) => {
                    let _ = self.sink.flush().await;
                    let _ = done.send(());
                    None
                }
            };
            let written = match frame {
                Some(frame) => self.sink.write_all(&frame).await,
                None => Ok(()),
            };
            // Batched while more is queued, flushed when the writer catches up.
            let flushed = match written {
                Ok(()) if rx.is_empty() => self.sink.flush().await,
                other => other,
            };
            if let Err(e) = flushed {
                tracing::debug!(%e, "stdout closed; dropping output");
                self.shared.closed.store(true, Ordering::SeqCst);
                return;
            }
        }
    }

    /// The frame of one event, first holding a delta that comes too soon after its block's last.
    async fn event_frame(&mut self, slot: Slot, block: Option<Block>) -> Option<Vec<u8>> {
        let interval = Duration::from_nanos(self.shared.interval_ns.load(Ordering::Relaxed));
        if let Some(block) = &block
            && let Some((last, at)) = self.written.get(&block.session)
            && last == block
        {
            // An interval too large to add (a client's whim) holds until an urgent item comes.
            let due = at
                .checked_add(interval)
                .unwrap_or_else(|| Instant::now() + FOREVER);
            if due > Instant::now() {
                // What is written so far must not wait with the delta.
                let _ = self.sink.flush().await;
                hold(&self.shared, due).await;
            }
        }
        // Taking the event closes it to merges: later deltas queue anew.
        let pending = lock(&slot).take()?;
        if let Some(block) = block {
            self.remember(block, interval);
        }
        pending.encode(self.shared.framing)
    }

    fn remember(&mut self, block: Block, interval: Duration) {
        let now = Instant::now();
        if self.written.len() >= 256 {
            // Sessions come and go; entries older than the interval no longer hold anything.
            self.written
                .retain(|_, (_, at)| now.duration_since(*at) < interval);
        }
        self.written.insert(block.session.clone(), (block, now));
    }
}

/// Waits until `due`, or until an urgent item is queued behind.
async fn hold(shared: &Shared, due: Instant) {
    let sleep = tokio::time::sleep_until(due);
    tokio::pin!(sleep);
    loop {
        let woken = shared.wake.notified();
        tokio::pin!(woken);
        // Registered before the check, so an urgent item queued after it still wakes us.
        woken.as_mut().enable();
        if shared.urgent.load(Ordering::SeqCst) > 0 {
            return;
        }
        tokio::select! {
            () = &mut sleep => return,
            () = woken => {}
        }
    }
}

#[cfg(test)]
#[path = "output_tests.rs"]
mod tests;
