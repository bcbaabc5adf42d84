//! The one registry of server → client requests (approvals, applyEdit, saveDocuments, …).
//!
//! Each request gets a fresh id and its reply slot in [`Replies`] *before* it is queued; the main
//! loop hands every response from the client to its slot ([`Replies::deliver`]). The caller
//! awaits the reply with a timeout and a cancellation token; a timeout, a cancellation (which
//! sends `$/cancelRequest`), an error reply or a closed connection all come back as
//! [`RequestError`]: never a hang.
//!
//! Requests go through the connection's ordered [`Output`], behind every event queued before
//! them, so a client never sees an approval or an edit before the events that led to it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::rpc::jsonrpc::{Id, OutgoingMessage, ResponseError};
use crate::rpc::output::Output;

/// Why a server → client request produced no usable answer.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error("no reply within {0:?}")]
    Timeout(Duration),
    #[error("cancelled")]
    Cancelled,
    #[error("the client is gone")]
    Disconnected,
    #[error("the client answered with an error: {0}")]
    ErrorReply(String),
    #[error("the client's reply is malformed: {0}")]
    Malformed(String),
}

type Reply = Result<Value, RequestError>;

#[derive(Default)]
struct Slots {
    waiting: HashMap<Id, oneshot::Sender<Reply>>,
    /// stdin ended: nothing more can arrive.
    closed: bool,
}

/// The reply slots of the requests in flight, filled by the main loop.
#[derive(Clone, Default)]
pub struct Replies {
    slots: Arc<Mutex<Slots>>,
}

impl Replies {
    fn lock(&self) -> MutexGuard<'_, Slots> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A slot for the reply to `id`; `None` once the client is gone.
    fn register(&self, id: Id) -> Option<oneshot::Receiver<Reply>> {
        let mut slots = self.lock();
        if slots.closed {
            return None;
        }
        let (tx, rx) = oneshot::channel();
        slots.waiting.insert(id, tx);
        Some(rx)
    }

    fn forget(&self, id: &Id) {
        self.lock().waiting.remove(id);
    }

    /// Hands a response to the request waiting for it; `false` when none waits for `id`
    /// (a late reply to a cancelled request, or a stray one).
    pub fn deliver(&self, id: &Id, result: Result<Value, ResponseError>) -> bool {
        let Some(slot) = self.lock().waiting.remove(id) else {
            return false;
        };
        let _ = slot.send(result.map_err(|e| RequestError::ErrorReply(e.message)));
        true
    }

    /// The client is gone: every waiting request fails as [`RequestError::Disconnected`], and
    /// so does every later one.
    pub fn close(&self) {
        let mut slots = self.lock();
        slots.closed = true;
        slots.waiting.clear();
    }
}

/// Sends requests and notifications to the client.
#[derive(Clone)]
pub struct Outgoing {
    output: Output,
    replies: Replies,
    next_id: Arc<AtomicI64>,
    cancel: CancelNotice,
}

/// How the protocol tells the peer a request was given up.
#[derive(Clone, Copy, Debug)]
pub enum CancelNotice {
    /// LSP's `$/cancelRequest {id}`.
    Lsp,
    /// ACP's `$/cancel_request {requestId}`.
    Acp,
}

impl Outgoing {
    /// Requests of an LSP connection.
    pub fn new(output: Output, replies: Replies) -> Self {
        Self::with_cancel(output, replies, CancelNotice::Lsp)
    }

    pub fn with_cancel(output: Output, replies: Replies, cancel: CancelNotice) -> Self {
        Outgoing {
            output,
            replies,
            next_id: Arc::new(AtomicI64::new(1)),
            cancel,
        }
    }

    pub fn output(&self) -> &Output {
        &self.output
    }

    /// Sends `method` and awaits its typed reply, bounded by `timeout` and `cancel`.
    pub async fn request<P: Serialize, R: DeserializeOwned>(
        &self,
        method: &str,
        params: P,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<R, RequestError> {
        let id = Id::Number(self.next_id.fetch_add(1, Ordering::Relaxed));
        let reply = self
            .replies
            .register(id.clone())
            .ok_or(RequestError::Disconnected)?;
        self.output
            .send(&OutgoingMessage::request(&id, method, &params));
        let outcome = tokio::select! {
            reply = reply => reply.unwrap_or(Err(RequestError::Disconnected)),
            () = cancel.cancelled() => Err(RequestError::Cancelled),
            () = tokio::time::sleep(timeout) => Err(RequestError::Timeout(timeout)),
        };
        if matches!(
            outcome,
            Err(RequestError::Cancelled | RequestError::Timeout(_))
        ) {
            self.replies.forget(&id);
            match self.cancel {
                CancelNotice::Lsp => self.notify("$/cancelRequest", CancelParams { id: &id }),
                CancelNotice::Acp => self.notify("$/cancel_request", AcpCancel { request_id: &id }),
            }
        }
        serde_json::from_value(outcome?).map_err(|e| RequestError::Malformed(e.to_string()))
    }

    /// Sends `method` as a request whose answer nobody waits for: the client's side of the
    /// connection is closed (stdin ended), so an answer could not be read, yet the client may
    /// still read what we write (`terminal/release` of its terminals as the agent exits).
    pub fn request_unanswered<P: Serialize>(&self, method: &str, params: P) {
        let id = Id::Number(self.next_id.fetch_add(1, Ordering::Relaxed));
        self.output
            .send(&OutgoingMessage::request(&id, method, &params));
    }

    /// Sends a notification.
    pub fn notify<P: Serialize>(&self, method: &str, params: P) {
        self.output.notify(method, params);
    }
}

#[derive(Serialize)]
struct CancelParams<'a> {
    id: &'a Id,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AcpCancel<'a> {
    request_id: &'a Id,
}

/// A timeout as people read it: `250 ms`, `2 s`, `1.5 s`.
pub(crate) fn duration_text(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{} s", d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(duration_text(Duration::from_millis(250)), "250 ms");
        assert_eq!(duration_text(Duration::from_millis(0)), "0 ms");
        assert_eq!(duration_text(Duration::from_secs(600)), "600 s");
        assert_eq!(duration_text(Duration::from_millis(1500)), "1.5 s");
    }
    use serde_json::json;

    #[tokio::test]
    async fn replies_reach_their_request_and_only_registered_ids_are_taken() {
        let replies = Replies::default();
        let ok = replies.register(Id::Number(1)).unwrap();
        let failed = replies.register(Id::String("x".into())).unwrap();
        assert!(!replies.deliver(&Id::Number(9), Ok(json!(1))));
        assert!(replies.deliver(&Id::Number(1), Ok(json!({"a": 1}))));
        let error = ResponseError::new(-32601, "no");
        assert!(replies.deliver(&Id::String("x".into()), Err(error)));
        assert_eq!(ok.await.unwrap().unwrap(), json!({"a": 1}));
        assert!(matches!(failed.await.unwrap(), Err(RequestError::ErrorReply(m)) if m == "no"));
        // Delivered once: a second reply with the same id is not ours any more.
        assert!(!replies.deliver(&Id::Number(1), Ok(json!(2))));
    }

    /// A given-up request is withdrawn in the connection's own words: LSP's
    /// `$/cancelRequest {id}`, ACP's `$/cancel_request {requestId}`.
    #[tokio::test]
    async fn a_cancelled_request_is_withdrawn_in_each_protocols_words() {
        use crate::rpc::Framing;
        use tokio::io::AsyncReadExt;
        for (notice, method, key) in [
            (CancelNotice::Lsp, "$/cancelRequest", "id"),
            (CancelNotice::Acp, "$/cancel_request", "requestId"),
        ] {
            let (write, mut read) = tokio::io::duplex(1 << 16);
            let output = Output::start(write, Framing::Lines).expect("output thread");
            let out = Outgoing::with_cancel(output.clone(), Replies::default(), notice);
            let cancel = CancellationToken::new();
            cancel.cancel();
            let asked: Result<Value, _> = out
                .request(
                    "fs/read_text_file",
                    json!({}),
                    Duration::from_secs(60),
                    &cancel,
                )
                .await;
            assert!(matches!(asked, Err(RequestError::Cancelled)));
            output.drained().await;
            drop((out, output));
            let mut text = String::new();
            read.read_to_string(&mut text).await.unwrap();
            let lines: Vec<Value> = (text.lines())
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            assert_eq!(lines.len(), 2, "{text}");
            assert_eq!(lines[0]["method"], "fs/read_text_file");
            assert_eq!(lines[1]["method"], method, "{text}");
            assert_eq!(lines[1]["params"], json!({key: lines[0]["id"]}));
        }
    }

    #[tokio::test]
    async fn closing_fails_waiting_and_later_requests() {
        let replies = Replies::default();
        let waiting = replies.register(Id::Number(1)).unwrap();
        replies.close();
        assert!(waiting.await.is_err(), "the slot is dropped: Disconnected");
        assert!(replies.register(Id::Number(2)).is_none());
    }
}
