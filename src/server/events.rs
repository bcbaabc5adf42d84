//! The ordered writer of `$/agentEvent` notifications, with paced delta coalescing.
//!
//! All events of a connection go through one channel drained by one task, so the order of
//! `emit` calls of a session is the order of its events on the wire. Each session numbers its
//! events under its own lock held while queueing, so `seq` order and wire order agree and `seq`
//! has no gaps. An event may carry a response [`Gate`]: the writer holds it (and everything after
//! it) until the response that created the ids it carries has been written.
//!
//! Coalescing: while a `message_update` delta (text, thinking or tool-call arguments) waits in
//! the channel, a following delta of the same session, run, kind and content block is appended
//! to it instead of being queued, without taking a `seq` — but only while it is that session's
//! last queued event, so a session's events are never reordered. Deltas wait for two reasons:
//! - back-pressure: the client reads slower than the run produces;
//! - pace: a delta of a block is written at once when none of that block was written in the
//!   last `interval` (`deltaIntervalMs`, one editor frame by default), otherwise the writer holds
//!   it until `interval` after the previous one, collecting the following deltas into it.
//!   Everything queued behind it waits with it, except that a queued non-delta event (or a
//!   request's barrier) ends the hold at once: tool calls, approvals and `message_end` are never
//!   delayed by pacing, and a slow stream (deltas further apart than `interval`) is written one
//!   delta per notification as each arrives.
//!
//! Server → client requests go out through the same ordered output (`output.rs`) as these
//! notifications, but from the run's task. A request therefore first passes a
//! [`EventHub::flushed`] barrier through this writer: once the writer reaches it, every event
//! queued before it was handed to the output (which writes in order), so the request cannot
//! overtake them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{Notify, mpsc, oneshot};
use tokio::time::Instant;

use crate::agent::event::StreamedDelta;
use crate::server::outgoing::Outgoing;
use crate::server::protocol::AgentEventParams;
use crate::server::wire::Gate;

/// The default `deltaIntervalMs`: one frame of a 60 Hz display, the fastest an editor redraws.
pub const DEFAULT_DELTA_INTERVAL: Duration = Duration::from_millis(16);

/// Stands in for a due time beyond what `Instant` can hold.
const FOREVER: Duration = Duration::from_secs(365 * 24 * 3600);

/// An event waiting for the writer; `None` once the writer took it.
type Slot = Arc<Mutex<Option<Waiting>>>;

/// A queued event and the text of the deltas merged into it since. The text is kept apart and
/// joined once, when the writer takes the event: looking up the event's `delta` in its JSON maps
/// hashed two keys per streamed delta.
struct Waiting {
    params: AgentEventParams,
    merged: String,
}

impl Waiting {
    /// The event as written: its delta followed by the merged text.
    fn into_params(self) -> AgentEventParams {
        let Waiting { mut params, merged } = self;
        if !merged.is_empty()
            && let Some(Value::String(text)) = params
                .event
                .get_mut("assistantMessageEvent")
                .and_then(|e| e.get_mut("delta"))
        {
            text.push_str(&merged);
        }
        params
    }
}

enum Item {
    Event {
        gate: Option<Gate>,
        slot: Slot,
        /// The block of a mergeable delta, which the writer paces.
        block: Option<Block>,
    },
    /// Answered when every item before it was written.
    Barrier(oneshot::Sender<()>),
}

/// The content block a delta belongs to: session, run, delta kind and content index.
#[derive(Clone, PartialEq, Eq)]
struct Block {
    session: Arc<str>,
    run: Arc<str>,
    kind: &'static str,
    index: u64,
}

/// A session's last queued event, when it is a delta later deltas may be merged into.
struct Tail {
    block: Block,
    slot: Slot,
    /// The hub's barrier count when it was queued: no merge across a barrier.
    epoch: u64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What emitters and the writer share.
struct Shared {
    tx: mpsc::UnboundedSender<Item>,
    /// Queued items that end a pacing hold (non-delta events, barriers), not yet taken.
    urgent: AtomicUsize,
    /// Wakes a holding writer when `urgent` grows.
    wake: Notify,
    /// Barriers queued so far.
    epoch: AtomicU64,
    /// Items queued and not yet handed to the sink: a barrier with none is already passed.
    pending: AtomicUsize,
}

impl Shared {
    /// Queues `item`; `urgent` items wake a writer holding a paced delta.
    fn send(&self, item: Item, urgent: bool) -> bool {
        if urgent {
            self.urgent.fetch_add(1, Ordering::SeqCst);
        }
        self.pending.fetch_add(1, Ordering::SeqCst);
        let sent = self.tx.send(item).is_ok();
        if urgent {
            self.wake.notify_waiters();
        }
        sent
    }
}

/// The connection's event channel.
#[derive(Clone)]
pub struct EventHub {
    shared: Arc<Shared>,
}

impl EventHub {
    /// Starts the writer task; with `deliver == false` (client did not opt in) events are
    /// numbered and dropped. `interval` paces the deltas of a block (`ZERO`: no pacing).
    pub fn start(out: Outgoing, deliver: bool, interval: Duration) -> Self {
        Self::start_with(Sink::Client(out), deliver, interval)
    }

    fn start_with(sink: Sink, deliver: bool, interval: Duration) -> Self {
        let (tx, rx) = mpsc::unbounded_channel::<Item>();
        let shared = Arc::new(Shared {
            tx,
            urgent: AtomicUsize::new(0),
            wake: Notify::new(),
            epoch: AtomicU64::new(0),
            pending: AtomicUsize::new(0),
        });
        let writer = Writer {
            shared: shared.clone(),
            sink,
            deliver,
            interval,
            written: HashMap::new(),
        };
        tokio::spawn(writer.run(rx));
        EventHub { shared }
    }

    /// Resolves once every event queued so far was handed to the output (at once when the
    /// writer is gone). Callers send their request after it, so it follows those events.
    pub async fn flushed(&self) {
        // Nothing queued after the barrier may join an event before it.
        self.shared.epoch.fetch_add(1, Ordering::SeqCst);
        // Everything queued was handed over already (the usual case once the writer kept up):
        // no round trip through the writer.
        if self.shared.pending.load(Ordering::SeqCst) == 0 {
            return;
        }
        let (tx, rx) = oneshot::channel();
        if self.shared.send(Item::Barrier(tx), true) {
            let _ = rx.await;
        }
    }

    /// A numbering emitter for one session.
    pub fn emitter(&self, session_id: String) -> Emitter {
        Emitter {
            session: Arc::from(session_id.as_str()),
            session_id,
            shared: self.shared.clone(),
            state: Arc::new(Mutex::new(EmitState { seq: 0, tail: None })),
        }
    }
}

/// Where the writer hands events.
enum Sink {
    Client(Outgoing),
    /// Unit tests: the events as written, with the (virtual) time they were written.
    #[cfg(test)]
    Channel(mpsc::UnboundedSender<(Instant, AgentEventParams)>),
}

impl Sink {
    async fn send(&self, params: AgentEventParams) {
        match self {
            Sink::Client(out) => out.notify_event(params).await,
            #[cfg(test)]
            Sink::Channel(tx) => {
                let _ = tx.send((Instant::now(), params));
            }
        }
    }
}

/// The writer task's state.
struct Writer {
    shared: Arc<Shared>,
    sink: Sink,
    deliver: bool,
    interval: Duration,
    /// Per session, the last delta block written and when.
    written: HashMap<Arc<str>, (Block, Instant)>,
}

impl Writer {
    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Item>) {
        while let Some(item) = rx.recv().await {
            match item {
                Item::Event { gate, slot, block } => {
                    if block.is_none() {
                        self.shared.urgent.fetch_sub(1, Ordering::SeqCst);
                    }
                    if let Some(gate) = gate {
                        gate.wait().await;
                    }
                    self.write(slot, block).await;
                    self.shared.pending.fetch_sub(1, Ordering::SeqCst);
                }
                Item::Barrier(done) => {
                    self.shared.urgent.fetch_sub(1, Ordering::SeqCst);
                    self.shared.pending.fetch_sub(1, Ordering::SeqCst);
                    let _ = done.send(());
                }
            }
        }
    }

    /// Writes one event, first holding a delta that comes too soon after its block's last one.
    async fn write(&mut self, slot: Slot, block: Option<Block>) {
        if !self.deliver {
            lock(&slot).take();
            return;
        }
        if let Some(block) = &block
            && let Some((last, at)) = self.written.get(&block.session)
            && last == block
        {
            // An interval too large to add (a client's whim) holds until an urgent item comes.
            let due = at
                .checked_add(self.interval)
                .unwrap_or_else(|| Instant::now() + FOREVER);
            if due > Instant::now() {
                self.hold(due).await;
            }
        }
        // Taking the event closes it to merges: later deltas queue anew.
        let params = lock(&slot).take().map(Waiting::into_params);
        if let Some(params) = params {
            self.sink.send(params).await;
        }
        if let Some(block) = block {
            self.remember(block);
        }
    }

    /// Waits until `due`, or until an urgent item is queued behind.
    async fn hold(&self, due: Instant) {
        let sleep = tokio::time::sleep_until(due);
        tokio::pin!(sleep);
        loop {
            let woken = self.shared.wake.notified();
            tokio::pin!(woken);
            // Registered before the check, so an urgent item queued after it still wakes us.
            woken.as_mut().enable();
            if self.shared.urgent.load(Ordering::SeqCst) > 0 {
                return;
            }
            tokio::select! {
                () = &mut sleep => return,
                () = woken => {}
            }
        }
    }

    fn remember(&mut self, block: Block) {
        let now = Instant::now();
        if self.written.len() >= 256 {
            // Sessions come and go; entries older than the interval no longer hold anything.
            let interval = self.interval;
            self.written
                .retain(|_, (_, at)| now.duration_since(*at) < interval);
        }
        self.written.insert(block.session.clone(), (block, now));
    }
}

/// A session's numbering and merge state.
struct EmitState {
    seq: u64,
    tail: Option<Tail>,
}

/// Numbers and queues the events of one session.
#[derive(Clone)]
pub struct Emitter {
    session_id: String,
    session: Arc<str>,
    shared: Arc<Shared>,
    state: Arc<Mutex<EmitState>>,
}

impl Emitter {
    /// Queues `event` with the next `seq`; `gate` delays it until a response was written. A
    /// delta right behind a waiting delta of the same block is merged into it instead.
    pub fn emit(&self, run_id: Option<&str>, event: Value, gate: Option<Gate>) {
        let mut state = lock(&self.state);
        let delta = match (gate.is_none(), run_id) {
            (true, Some(run)) => delta_block(&event).map(|(kind, index)| (run, kind, index)),
            _ => None,
        };
        let epoch = self.shared.epoch.load(Ordering::SeqCst);
        let event = match (delta, state.tail.as_ref()) {
            (Some((run, kind, index)), Some(t))
                if t.epoch == epoch
                    && t.block.index == index
                    && t.block.kind == kind
                    && &*t.block.run == run =>
            {
                match merge_into(&t.slot, event) {
                    None => return,
                    Some(event) => event,
                }
            }
            _ => event,
        };
        state.seq += 1;
        let slot: Slot = Arc::new(Mutex::new(Some(Waiting {
            params: AgentEventParams {
                session_id: self.session_id.clone(),
                run_id: run_id.map(str::to_owned),
                seq: state.seq,
                event,
            },
            merged: String::new(),
        })));
        let block = delta.map(|(run, kind, index)| {
            let reuse = state
                .tail
                .as_ref()
                .map(|t| &t.block.run)
                .filter(|r| ***r == *run);
            Block {
                session: self.session.clone(),
                run: reuse.cloned().unwrap_or_else(|| Arc::from(run)),
                kind,
                index,
            }
        });
        state.tail = block.clone().map(|block| Tail {
            block,
            slot: slot.clone(),
            epoch,
        });
        let urgent = block.is_none();
        // Sent under the lock: queue order equals seq order. A closed channel means the
        // connection is gone, and then there is nobody to tell.
        if !self.shared.send(Item::Event { gate, slot, block }, urgent) {
            tracing::debug!("event dropped: the connection is closing");
        }
    }

    /// Appends a streamed delta to this session's waiting delta of the same block, without
    /// building its event; `false` when there is none (then the caller emits the event).
    pub fn merge_delta(&self, run_id: Option<&str>, delta: StreamedDelta<'_>) -> bool {
        let Some(run) = run_id else {
            return false;
        };
        let state = lock(&self.state);
        let epoch = self.shared.epoch.load(Ordering::SeqCst);
        let Some(t) = state.tail.as_ref().filter(|t| {
            t.epoch == epoch
                && t.block.index == delta.content_index as u64
                && t.block.kind == delta.kind
                && &*t.block.run == run
        }) else {
            return false;
        };
        // A tail is only ever a delta whose `delta` is a string (`delta_block`).
        match lock(&t.slot).as_mut() {
            Some(waiting) => {
                waiting.merged.push_str(delta.text);
                true
            }
            None => false,
        }
    }

    /// The `seq` of the last event queued.
    pub fn last_seq(&self) -> u64 {
        lock(&self.state).seq
    }
}

/// The delta kind and content index of a mergeable delta: `message_update` with a text,
/// thinking or tool-call delta (and nothing else that a merge could lose).
fn delta_block(event: &Value) -> Option<(&'static str, u64)> {
    let obj = event.as_object()?;
    if obj.len() != 2 || obj.get("type")?.as_str()? != "message_update" {
        return None;
    }
    let inner = obj.get("assistantMessageEvent")?.as_object()?;
    let kind = match inner.get("type")?.as_str()? {
        "text_delta" => "text_delta",
        "thinking_delta" => "thinking_delta",
        "toolcall_delta" => "toolcall_delta",
        _ => return None,
    };
    if inner.len() != 3 || !inner.get("delta")?.is_string() {
        return None;
    }
    Some((kind, inner.get("contentIndex")?.as_u64()?))
}

/// Appends `event`'s delta to the waiting event in `slot`; gives `event` back when the writer
/// already took it.
fn merge_into(slot: &Slot, event: Value) -> Option<Value> {
    let mut waiting = lock(slot);
    let delta = event
        .get("assistantMessageEvent")
        .and_then(|e| e.get("delta"))
        .and_then(Value::as_str);
    match (waiting.as_mut(), delta) {
        (Some(waiting), Some(delta)) => {
            waiting.merged.push_str(delta);
            None
        }
        _ => Some(event),
    }
}

#[cfg(test)]
#[path = "events_tests.rs"]
mod tests;
