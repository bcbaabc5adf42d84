//! The ordered writer of `$/agentEvent` notifications.
//!
//! All events of a connection go through one channel drained by one task, so the order of
//! `emit` calls is the order on the wire. Each session numbers its events under a lock held
//! while queueing, so `seq` order and wire order agree and `seq` has no gaps. An event may carry
//! a response [`Gate`]: the writer holds it (and everything after it) until the response that
//! created the ids it carries has been written.

use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::mpsc;

use crate::server::outgoing::Outgoing;
use crate::server::protocol::{AgentEventParams, method};
use crate::server::wire::Gate;

struct Item {
    gate: Option<Gate>,
    params: AgentEventParams,
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
                if let Some(gate) = item.gate {
                    gate.wait().await;
                }
                if deliver {
                    out.notify(method::EVENT, item.params).await;
                }
            }
        });
        EventHub { tx }
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
        if self.hub.tx.send(Item { gate, params }).is_err() {
            tracing::debug!("event dropped: the connection is closing");
        }
    }

    /// The `seq` of the last event queued.
    pub fn last_seq(&self) -> u64 {
        *self.seq.lock().unwrap_or_else(|e| e.into_inner())
    }
}
