//! Message and thought chunks paced as the daemon paces its deltas (`rpc::output`): a chunk
//! waiting in the output takes the text of the chunks after it — same session, same kind, same
//! `messageId` — while it is the session's last queued notification and nothing else was queued
//! since, so nothing is reordered. A client then gets one chunk per `deltaIntervalMs` of a
//! message (or per write, when it reads slowly) instead of one line per token.

use std::sync::{Arc, Mutex, MutexGuard};

use agent_client_protocol_schema::v1 as acp;

use crate::rpc::Framing;
use crate::rpc::merge::{Tail, encode_notification};
use crate::rpc::output::Output;
use crate::rpc::output::{Block, Pending};

pub const SESSION_UPDATE: &str = "session/update";

/// The `session/update`s of one session, in order, with chunks merged.
pub struct Updates {
    session: Arc<str>,
    output: Output,
    tail: Mutex<Option<Tail>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Updates {
    pub fn new(output: Output, session_id: &str) -> Self {
        Updates {
            session: Arc::from(session_id),
            output,
            tail: Mutex::new(None),
        }
    }

    /// Queues one update of this session, or appends its text to the waiting chunk before it.
    pub fn send(&self, update: acp::SessionUpdate) {
        // Held while queueing: the order of the checks is the order on the wire.
        let mut tail = lock(&self.tail);
        let Some((kind, message, text)) = chunk_text(&update) else {
            *tail = None;
            let notification = acp::SessionNotification::new(self.session.to_string(), update);
            self.output.notify(SESSION_UPDATE, notification);
            return;
        };
        let epoch = self.output.epoch();
        let joins = |b: &Block| b.kind == kind && b.run == *message;
        if tail.as_ref().is_some_and(|t| t.absorb(epoch, joins, text)) {
            return;
        }
        let block = Block {
            session: self.session.clone(),
            run: message.clone(),
            kind,
            index: 0,
        };
        let notification = acp::SessionNotification::new(self.session.to_string(), update);
        let chunk = Box::new(Chunk {
            notification,
            merged: String::new(),
        });
        *tail = Some(Tail::queue(&self.output, epoch, block, chunk));
    }
}

/// A queued chunk and the text merged into it since.
struct Chunk {
    notification: acp::SessionNotification,
    merged: String,
}

impl Pending for Chunk {
    fn append(&mut self, text: &str) {
        self.merged.push_str(text);
    }

    fn encode(self: Box<Self>, framing: Framing) -> Option<Vec<u8>> {
        let Chunk {
            mut notification,
            merged,
        } = *self;
        if let Some(text) = chunk_text_mut(&mut notification.update) {
            text.push_str(&merged);
        }
        encode_notification(framing, SESSION_UPDATE, &notification)
    }
}

/// A text chunk of a message with an id: its kind, `messageId` and text.
fn chunk_text(update: &acp::SessionUpdate) -> Option<(&'static str, &Arc<str>, &str)> {
    let (kind, chunk) = match update {
        acp::SessionUpdate::AgentMessageChunk(chunk) => ("agent_message_chunk", chunk),
        acp::SessionUpdate::AgentThoughtChunk(chunk) => ("agent_thought_chunk", chunk),
        _ => return None,
    };
    let acp::ContentBlock::Text(text) = &chunk.content else {
        return None;
    };
    let message = chunk.message_id.as_ref()?;
    Some((kind, &message.0, &text.text))
}

fn chunk_text_mut(update: &mut acp::SessionUpdate) -> Option<&mut String> {
    match update {
        acp::SessionUpdate::AgentMessageChunk(chunk)
        | acp::SessionUpdate::AgentThoughtChunk(chunk) => match &mut chunk.content {
            acp::ContentBlock::Text(text) => Some(&mut text.text),
            _ => None,
        },
        _ => None,
    }
}
