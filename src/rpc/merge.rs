//! Merging a session's streamed deltas while they wait in the output: the front ends' event
//! emitters (the LSP front end's `$/agentEvent`s, ACP's message chunks) keep their session's
//! last queued delta as a `Tail` and append later deltas of the same block to it.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::rpc::jsonrpc::{Framing, OutgoingMessage};
use crate::rpc::output::{Block, Output, Pending, Slot};

/// One notification, encoded; a value that does not serialise is logged and skipped.
pub(crate) fn encode_notification<P: serde::Serialize>(
    framing: Framing,
    method: &str,
    params: &P,
) -> Option<Vec<u8>> {
    match framing.encode(&OutgoingMessage::notification(method, params)) {
        Ok(frame) => Some(frame),
        Err(e) => {
            tracing::error!(%e, method, "a notification does not serialize");
            None
        }
    }
}

/// A session's last queued notification, when it is a delta later deltas may be merged into
/// (the LSP front end's events, ACP's message chunks in `acp/chunks.rs`).
pub(crate) struct Tail {
    block: Block,
    slot: Slot,
    /// The output's epoch when it was queued: no merge across another frame.
    epoch: u64,
}

impl Tail {
    /// The block its delta belongs to.
    pub(crate) fn block(&self) -> &Block {
        &self.block
    }

    /// Queues `pending`, a delta of `block`, as the tail later deltas may join. `epoch` is the
    /// output's, read by the caller under the same lock as its merge check.
    pub(crate) fn queue(
        output: &Output,
        epoch: u64,
        block: Block,
        pending: Box<dyn Pending>,
    ) -> Tail {
        let slot: Slot = Arc::new(Mutex::new(Some(pending)));
        output.queue_event(slot.clone(), Some(block.clone()));
        Tail { block, slot, epoch }
    }

    /// Appends `text` to the waiting delta if nothing else was queued since (`epoch`), the
    /// writer has not taken it yet, and `joins` says the text belongs to its block.
    pub(crate) fn absorb(
        &self,
        epoch: u64,
        joins: impl FnOnce(&Block) -> bool,
        text: &str,
    ) -> bool {
        if self.epoch != epoch || !joins(&self.block) {
            return false;
        }
        match lock(&self.slot).as_mut() {
            Some(pending) => {
                pending.append(text);
                true
            }
            None => false,
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
