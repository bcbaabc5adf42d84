//! The ordered writer of `$/agentEvent` notifications, with back-pressure coalescing.
//!
//! All events of a connection go through one channel drained by one task, so the order of
//! `emit` calls is the order on the wire. Each session numbers its events under a lock held
//! while queueing, so `seq` order and wire order agree and `seq` has no gaps. An event may carry
//! a response [`Gate`]: the writer holds it (and everything after it) until the response that
//! created the ids it carries has been written.
//!
//! Coalescing: while an event waits in the channel (the client reads slower than the run
//! produces), a `message_update` delta of the same session, run, kind and content block that
//! would be queued right behind it is appended to it instead, without taking a `seq`. A client
//! that keeps up sees every provider delta; one that falls behind gets fewer, larger ones.
//! Nothing waits to batch: an event is merged into only while it is the last item queued, and
//! the writer takes it as soon as it gets to it.
//!
//! Server → client requests go out through the same framework channel as these notifications,
//! but from the run's task. A request therefore first passes a [`EventHub::flushed`] barrier
//! through this writer: once the writer reaches it, every event queued before it was handed to
//! the framework (whose client channel is FIFO), so the request cannot overtake them.

use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::server::outgoing::Outgoing;
use crate::server::protocol::{AgentEventParams, method};
use crate::server::wire::Gate;

/// An event waiting for the writer; `None` once the writer took it.
type Slot = Arc<Mutex<Option<AgentEventParams>>>;

enum Item {
    Event {
        gate: Option<Gate>,
        slot: Slot,
    },
    /// Answered when every item before it was written.
    Barrier(oneshot::Sender<()>),
}

/// What a delta may be merged into: the same session, run, delta kind and content block.
#[derive(Clone, PartialEq, Eq)]
struct MergeKey {
    session: Arc<str>,
    run: String,
    kind: String,
    index: u64,
}

/// The last item queued, when it is a delta later deltas may be merged into.
struct Tail {
    key: MergeKey,
    slot: Slot,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The connection's event channel.
#[derive(Clone)]
pub struct EventHub {
    tx: mpsc::UnboundedSender<Item>,
    tail: Arc<Mutex<Option<Tail>>>,
}

impl EventHub {
    /// Starts the writer task; with `deliver == false` (client did not opt in) events are
    /// numbered and dropped.
    pub fn start(out: Outgoing, deliver: bool) -> Self {
        let (tx, mut rx) = mpsc::unbounded_channel::<Item>();
        tokio::spawn(async move {
            while let Some(item) = rx.recv().await {
                match item {
                    Item::Event { gate, slot } => {
                        if let Some(gate) = gate {
                            gate.wait().await;
                        }
                        // Taking the event closes it to merges: later deltas queue anew.
                        let params = lock(&slot).take();
                        if let (true, Some(params)) = (deliver, params) {
                            out.notify(method::EVENT, params).await;
                        }
                    }
                    Item::Barrier(done) => {
                        let _ = done.send(());
                    }
                }
            }
        });
        EventHub {
            tx,
            tail: Arc::new(Mutex::new(None)),
        }
    }

    /// Resolves once every event queued so far was handed to the framework (at once when the
    /// writer is gone). Callers send their request after it, so it follows those events.
    pub async fn flushed(&self) {
        let (tx, rx) = oneshot::channel();
        let sent = {
            let mut tail = lock(&self.tail);
            // Nothing queued after the barrier may join an event before it.
            *tail = None;
            self.tx.send(Item::Barrier(tx)).is_ok()
        };
        if sent {
            let _ = rx.await;
        }
    }

    /// A numbering emitter for one session.
    pub fn emitter(&self, session_id: String) -> Emitter {
        Emitter {
            session: Arc::from(session_id.as_str()),
            session_id,
            hub: self.clone(),
            seq: Arc::new(Mutex::new(0)),
        }
    }
}

/// Numbers and queues the events of one session.
#[derive(Clone)]
pub struct Emitter {
    session_id: String,
    session: Arc<str>,
    hub: EventHub,
    seq: Arc<Mutex<u64>>,
}

impl Emitter {
    /// Queues `event` with the next `seq`; `gate` delays it until a response was written. A
    /// delta right behind a waiting delta of the same block is merged into it instead.
    pub fn emit(&self, run_id: Option<&str>, event: Value, gate: Option<Gate>) {
        let mut seq = lock(&self.seq);
        let mut tail = lock(&self.hub.tail);
        let key = match (gate.is_none(), run_id) {
            (true, Some(run)) => merge_key(&self.session, run, &event),
            _ => None,
        };
        let event = match (&key, tail.as_ref()) {
            (Some(key), Some(t)) if t.key == *key => match merge_into(&t.slot, event) {
                None => return,
                Some(event) => event,
            },
            _ => event,
        };
        *seq += 1;
        let slot: Slot = Arc::new(Mutex::new(Some(AgentEventParams {
            session_id: self.session_id.clone(),
            run_id: run_id.map(str::to_owned),
            seq: *seq,
            event,
        })));
        *tail = key.map(|key| Tail {
            key,
            slot: slot.clone(),
        });
        // Sent under the locks: queue order equals seq order. A closed channel means the
        // connection is gone, and then there is nobody to tell.
        if self.hub.tx.send(Item::Event { gate, slot }).is_err() {
            tracing::debug!("event dropped: the connection is closing");
        }
    }

    /// The `seq` of the last event queued.
    pub fn last_seq(&self) -> u64 {
        *lock(&self.seq)
    }
}

/// The merge key of a mergeable delta: `message_update` with a text, thinking or tool-call
/// delta (and nothing else that a merge could lose).
fn merge_key(session: &Arc<str>, run: &str, event: &Value) -> Option<MergeKey> {
    let obj = event.as_object()?;
    if obj.len() != 2 || obj.get("type")?.as_str()? != "message_update" {
        return None;
    }
    let inner = obj.get("assistantMessageEvent")?.as_object()?;
    let kind = inner.get("type")?.as_str()?;
    if !matches!(kind, "text_delta" | "thinking_delta" | "toolcall_delta")
        || inner.len() != 3
        || !inner.get("delta")?.is_string()
    {
        return None;
    }
    Some(MergeKey {
        session: session.clone(),
        run: run.to_owned(),
        kind: kind.to_owned(),
        index: inner.get("contentIndex")?.as_u64()?,
    })
}

/// Appends `event`'s delta to the waiting event in `slot`; gives `event` back when the writer
/// already took it.
fn merge_into(slot: &Slot, event: Value) -> Option<Value> {
    let mut waiting = lock(slot);
    let target = waiting
        .as_mut()
        .and_then(|p| p.event.get_mut("assistantMessageEvent"))
        .and_then(|e| e.get_mut("delta"));
    let delta = event
        .get("assistantMessageEvent")
        .and_then(|e| e.get("delta"))
        .and_then(Value::as_str);
    match (target, delta) {
        (Some(Value::String(text)), Some(delta)) => {
            text.push_str(delta);
            None
        }
        _ => Some(event),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn delta(kind: &str, index: u64, text: &str) -> Value {
        json!({"type": "message_update",
               "assistantMessageEvent": {"type": kind, "contentIndex": index, "delta": text}})
    }

    #[test]
    fn only_plain_deltas_have_a_merge_key() {
        let s: Arc<str> = Arc::from("s");
        assert!(merge_key(&s, "r", &delta("text_delta", 0, "a")).is_some());
        assert!(merge_key(&s, "r", &delta("toolcall_delta", 1, "a")).is_some());
        assert!(merge_key(&s, "r", &delta("text_end", 0, "a")).is_none());
        let mut extra = delta("text_delta", 0, "a");
        extra["assistantMessageEvent"]["partial"] = json!({});
        assert!(merge_key(&s, "r", &extra).is_none());
        assert!(merge_key(&s, "r", &json!({"type": "agent_start"})).is_none());
        let a = merge_key(&s, "r", &delta("text_delta", 0, "a"));
        assert!(a != merge_key(&s, "r", &delta("text_delta", 1, "a")));
        assert!(a != merge_key(&s, "r", &delta("thinking_delta", 0, "a")));
        assert!(a != merge_key(&s, "r2", &delta("text_delta", 0, "a")));
    }

    #[test]
    fn merging_appends_until_the_writer_takes_the_event() {
        let slot: Slot = Arc::new(Mutex::new(Some(AgentEventParams {
            session_id: "s".into(),
            run_id: Some("r".into()),
            seq: 1,
            event: delta("text_delta", 0, "ab"),
        })));
        assert!(merge_into(&slot, delta("text_delta", 0, "cd")).is_none());
        let taken = lock(&slot).take().unwrap();
        assert_eq!(taken.event, delta("text_delta", 0, "abcd"));
        assert_eq!(taken.seq, 1);
        let back = merge_into(&slot, delta("text_delta", 0, "ef"));
        assert_eq!(back, Some(delta("text_delta", 0, "ef")));
    }
}
