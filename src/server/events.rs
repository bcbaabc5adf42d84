//! The ordered writer of `$/agentEvent` notifications.
//!
//! All events of a connection go through one channel drained by one task, so the order of
//! `emit` calls is the order on the wire. Each session numbers its events under a lock held
//! while queueing, so `seq` order and wire order agree and `seq` has no gaps. An event may carry
//! a response [`Gate`]: the writer holds it (and everything after it) until the response that
//! created the ids it carries has been written.
//!
//! Server → client requests go out through the same framework channel as these notifications,
//! but from the run's task. A request therefore first passes a [`EventHub::flushed`] barrier
//! through this writer: once the writer reaches it, every event queued before it was handed to
//! the framework (whose client channel is FIFO), so the request cannot overtake them.

use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::server::outgoing::Outgoing;
use crate::server::protocol::{AgentEventParams, method};
use crate::server::wire::Gate;

enum Item {
    Event {
        gate: Option<Gate>,
        params: AgentEventParams,
    },
    /// Answered when every item before it was written.
    Barrier(oneshot::Sender<()>),
}

/// The connection's event channel.
#[derive(Clone)]
pub struct EventHub {
    tx: mpsc::UnboundedSender<Item>,
}

impl EventHub {
    /// Starts the writer task; with `deliver == false` (client did not opt in) events are
    /// numbered and dropped.
    pub fn start(out: Outgoing, deliver: bool) -> Self {
        let (tx, mut rx) = mpsc::unbounded_channel::<Item>();
        tokio::spawn(async move {
            while let Some(item) = rx.recv().await {
                match item {
                    Item::Event { gate, params } => {
                        if let Some(gate) = gate {
                            gate.wait().await;
                        }
                        if deliver {
                            out.notify(method::EVENT, params).await;
                        }
                    }
                    Item::Barrier(done) => {
                        let _ = done.send(());
                    }
                }
            }
        });
        EventHub { tx }
    }

    /// Resolves once every event queued so far was handed to the framework (at once when the
    /// writer is gone). Callers send their request after it, so it follows those events.
    pub async fn flushed(&self) {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Item::Barrier(tx)).is_ok() {
            let _ = rx.await;
        }
    }

    /// A numbering emitter for one session.
    pub fn emitter(&self, session_id: String) -> Emitter {
        Emitter {
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
    hub: EventHub,
    seq: Arc<Mutex<u64>>,
}

impl Emitter {
    /// Queues `event` with the next `seq`; `gate` delays it until a response was written.
    pub fn emit(&self, run_id: Option<&str>, event: Value, gate: Option<Gate>) {
        let mut seq = self.seq.lock().unwrap_or_else(|e| e.into_inner());
        *seq += 1;
        let params = AgentEventParams {
            session_id: self.session_id.clone(),
            run_id: run_id.map(str::to_owned),
            seq: *seq,
            event,
        };
        // Sent under the lock: queue order equals seq order. A closed channel means the
        // connection is gone, and then there is nobody to tell.
        if self.hub.tx.send(Item::Event { gate, params }).is_err() {
            tracing::debug!("event dropped: the connection is closing");
        }
    }

    /// The `seq` of the last event queued.
    pub fn last_seq(&self) -> u64 {
        *self.seq.lock().unwrap_or_else(|e| e.into_inner())
    }
}
