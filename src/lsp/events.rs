//! `$/agentEvent` numbering and delta merging, per session; the ordered writer is
//! `rpc/output.rs`, the merging `rpc/merge.rs`.
//!
//! Each session numbers its events under its own lock held while queueing, so `seq` order and
//! wire order agree and `seq` has no gaps. Events stay typed until the writer encodes them.
//!
//! Merging: while a `message_update` delta (text, thinking or tool-call arguments) waits in the
//! output, a following delta of the same session, run, kind and content block is appended to it
//! instead of being queued, without taking a `seq` — but only while it is that session's last
//! queued event and no other frame was queued since, so nothing is ever reordered.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::agent::event::AgentEvent;
use crate::agent::stream_contract::AssistantMessageEvent;
use crate::lsp::protocol::{AgentEventParams, EventBody, method};
use crate::rpc::jsonrpc::Framing;
use crate::rpc::merge::{Tail, encode_notification};
use crate::rpc::output::{Block, Output, Pending};

/// A queued event and the text of the deltas merged into it since.
struct Waiting {
    params: AgentEventParams,
    merged: String,
}

impl Waiting {
    /// The event as written: its delta followed by the merged text.
    fn into_params(self) -> AgentEventParams {
        let Waiting { mut params, merged } = self;
        if !merged.is_empty()
            && let EventBody::Agent(event) = &params.event
        {
            params.event = EventBody::Agent(Arc::new(appended(event, &merged)));
        }
        params
    }
}

impl Pending for Waiting {
    fn append(&mut self, text: &str) {
        self.merged.push_str(text);
    }

    fn encode(self: Box<Self>, framing: Framing) -> Option<Vec<u8>> {
        let params = self.into_params();
        encode_notification(framing, method::EVENT, &params)
    }
}

/// `event` (a streamed delta) with `more` appended to its delta.
fn appended(event: &AgentEvent, more: &str) -> AgentEvent {
    let mut event = event.clone();
    if let AgentEvent::MessageUpdate {
        assistant_message_event:
            AssistantMessageEvent::TextDelta { delta, .. }
            | AssistantMessageEvent::ThinkingDelta { delta, .. }
            | AssistantMessageEvent::ToolCallDelta { delta, .. },
    } = &mut event
    {
        delta.push_str(more);
    }
    event
}

struct EmitState {
    seq: u64,
    tail: Option<Tail>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Numbers and queues the events of one session.
#[derive(Clone)]
pub struct Emitter {
    session: Arc<str>,
    output: Output,
    /// `false` when the client did not opt in to events: they are numbered and dropped.
    deliver: bool,
    state: Arc<Mutex<EmitState>>,
}

impl Emitter {
    pub fn new(output: Output, session_id: &str, deliver: bool) -> Self {
        Emitter {
            session: Arc::from(session_id),
            output,
            deliver,
            state: Arc::new(Mutex::new(EmitState { seq: 0, tail: None })),
        }
    }

    /// Queues `event` with the next `seq`, or merges it into the waiting delta of its block.
    pub fn emit(&self, run_id: Option<&str>, event: EventBody) {
        let mut state = lock(&self.state);
        let delta = match (&event, run_id) {
            (EventBody::Agent(e), Some(run)) => e.streamed_delta().map(|d| (run, d)),
            _ => None,
        };
        let epoch = self.output.epoch();
        if let (Some((run, d)), Some(tail)) = (delta, &state.tail) {
            let joins =
                |b: &Block| b.index == d.content_index && b.kind == d.kind && *b.run == *run;
            if tail.absorb(epoch, joins, d.text) {
                return;
            }
        }
        state.seq += 1;
        if !self.deliver {
            return;
        }
        let run = run_id.map(|run| match &state.tail {
            Some(tail) if *tail.block().run == *run => tail.block().run.clone(),
            _ => Arc::from(run),
        });
        let block = delta.zip(run.clone()).map(|((_, d), run)| Block {
            session: self.session.clone(),
            run,
            kind: d.kind,
            index: d.content_index,
        });
        let waiting = Box::new(Waiting {
            params: AgentEventParams {
                session_id: self.session.clone(),
                run_id: run,
                seq: state.seq,
                event,
            },
            merged: String::new(),
        });
        // Queued under the lock: queue order equals seq order.
        state.tail = match block {
            Some(block) => Some(Tail::queue(&self.output, epoch, block, waiting)),
            None => {
                self.output
                    .queue_event(Arc::new(Mutex::new(Some(waiting))), None);
                None
            }
        };
    }

    /// The `seq` of the last event queued.
    pub fn last_seq(&self) -> u64 {
        lock(&self.state).seq
    }
}

#[cfg(test)]
#[path = "events_tests.rs"]
mod tests;
