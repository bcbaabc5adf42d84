//! The one registry of server → client requests (approvals, applyEdit, saveDocuments, …).
//!
//! Each request gets its id from the framework's counter (so ids never collide with anything
//! the framework sends itself) and its reply slot in [`Replies`] *before* the message is written.
//! The stdin reader hands every response whose id is registered there straight to its slot
//! ([`Replies::deliver`]); the framework never sees it. The caller awaits the reply with a
//! timeout and a cancellation token; a timeout, a cancellation (which sends `$/cancelRequest`),
//! an error reply or a closed connection all come back as [`RequestError`]: never a hang.
//!
//! Requests and notifications are encoded once, straight from their typed params, and written
//! through the connection's [`Output`] on the sender's task (see `output.rs` for why).
//!
//! Ordering: a request is sent only after the event writer flushed every `$/agentEvent` queued
//! before it (see [`EventHub::flushed`]), so a client never sees an approval or an edit before the
//! events of the assistant message that asked for it.
//!
//! [`EventHub::flushed`]: crate::server::events::EventHub::flushed

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use tower_lsp_server::Client;
use tower_lsp_server::jsonrpc::{Id, Response};

use crate::server::events::EventHub;
use crate::server::output::Output;
use crate::server::protocol::{AgentEventParams, method};

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
    /// By the id's JSON text (`7`, `"abc"`): the form both the request and the reply carry.
    waiting: HashMap<String, oneshot::Sender<Reply>>,
    /// stdin ended: nothing more can arrive.
    closed: bool,
}

/// The reply slots of the requests in flight, shared with the stdin reader.
#[derive(Clone, Default)]
pub struct Replies {
    slots: Arc<Mutex<Slots>>,
}

impl Replies {
    fn lock(&self) -> MutexGuard<'_, Slots> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A slot for the reply to `id`; `None` once the client is gone.
    fn register(&self, id: &str) -> Option<oneshot::Receiver<Reply>> {
        let mut slots = self.lock();
        if slots.closed {
            return None;
        }
        let (tx, rx) = oneshot::channel();
        slots.waiting.insert(id.to_owned(), tx);
        Some(rx)
    }

    #[cfg(test)]
    pub(crate) fn register_for_test(&self, id: &str) -> oneshot::Receiver<Reply> {
        self.register(id).expect("open")
    }

    #[cfg(test)]
    pub(crate) fn is_closed_for_test(&self) -> bool {
        self.lock().closed
    }

    fn forget(&self, id: &str) {
        self.lock().waiting.remove(id);
    }

    /// Hands the response `body` (whose id is `id`) to the request waiting for it; `false` when
    /// no request of ours waits for that id (the framework's, or a stray reply).
    pub fn deliver(&self, id: &Value, body: &[u8]) -> bool {
        let Some(slot) = self.lock().waiting.remove(&id.to_string()) else {
            return false;
        };
        let reply = match serde_json::from_slice::<Response>(body) {
            Ok(response) => response
                .into_parts()
                .1
                .map_err(|e| RequestError::ErrorReply(e.message.into_owned())),
            Err(e) => Err(RequestError::Malformed(e.to_string())),
        };
        let _ = slot.send(reply);
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

/// A message to the client, serialised as tower-lsp-server's `Request` is (same field order).
#[derive(Serialize)]
struct Message<'a, P> {
    jsonrpc: &'static str,
    method: &'a str,
    params: &'a P,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a Id>,
}

/// Sends requests and notifications to the client.
#[derive(Clone)]
pub struct Outgoing {
    /// Only for its request-id counter, shared with the framework's own requests.
    client: Client,
    output: Output,
    replies: Replies,
    /// The event writer requests wait for; `None` for the writer's own handle.
    events: Option<EventHub>,
}

impl Outgoing {
    pub fn new(client: Client, output: Output, replies: Replies) -> Self {
        Outgoing {
            client,
            output,
            replies,
            events: None,
        }
    }

    /// The same client, with requests ordered after the events queued on `hub`.
    pub fn after_events(&self, hub: EventHub) -> Self {
        Outgoing {
            events: Some(hub),
            ..self.clone()
        }
    }

    /// Sends `method` and awaits its typed reply, bounded by `timeout` and `cancel`.
    pub async fn request<P: Serialize, R: DeserializeOwned>(
        &self,
        method: &'static str,
        params: P,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<R, RequestError> {
        let value = self.request_value(method, params, timeout, cancel).await?;
        serde_json::from_value(value).map_err(|e| RequestError::Malformed(e.to_string()))
    }

    async fn request_value<P: Serialize>(
        &self,
        method: &'static str,
        params: P,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<Value, RequestError> {
        let id = self.client.next_request_id();
        let key = serde_json::to_string(&id).map_err(|e| RequestError::Malformed(e.to_string()))?;
        let reply = self
            .replies
            .register(&key)
            .ok_or(RequestError::Disconnected)?;
        let exchange = async {
            if let Some(events) = &self.events {
                events.flushed().await;
            }
            let message = Message {
                jsonrpc: "2.0",
                method,
                params: &params,
                id: Some(&id),
            };
            self.output
                .send_message(&message)
                .map_err(|e| RequestError::Malformed(e.to_string()))?;
            if self.output.is_closed() {
                return Err(RequestError::Disconnected);
            }
            reply.await.map_err(|_| RequestError::Disconnected)?
        };
        let outcome = tokio::select! {
            outcome = exchange => outcome,
            () = cancel.cancelled() => Err(RequestError::Cancelled),
            () = tokio::time::sleep(timeout) => Err(RequestError::Timeout(timeout)),
        };
        if matches!(
            outcome,
            Err(RequestError::Cancelled | RequestError::Timeout(_))
        ) {
            self.replies.forget(&key);
            self.cancel_remote(&id).await;
        }
        outcome
    }

    /// Tells the client we no longer wait for request `id`.
    async fn cancel_remote(&self, id: &Id) {
        self.notify("$/cancelRequest", json!({ "id": id })).await;
    }

    /// Sends a notification (dropped with a log line when it cannot be encoded or the
    /// connection is gone).
    pub async fn notify<P: Serialize>(&self, method: &'static str, params: P) {
        self.send_note(method, &params);
    }

    /// Sends one `$/agentEvent` once the output has room: a client reading slowly holds the
    /// event writer here, where waiting deltas merge.
    pub async fn notify_event(&self, params: AgentEventParams) {
        self.output.room().await;
        self.send_note(method::EVENT, &params);
    }

    fn send_note<P: Serialize>(&self, method: &'static str, params: &P) {
        let message = Message {
            jsonrpc: "2.0",
            method,
            params,
            id: None,
        };
        if let Err(err) = self.output.send_message(&message) {
            tracing::error!(method, %err, "notification params do not serialize");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower_lsp_server::jsonrpc::Request;

    #[test]
    fn messages_serialize_exactly_like_the_frameworks_requests() {
        for run_id in [Some("r".to_string()), None] {
            let params = AgentEventParams {
                session_id: "s".into(),
                run_id,
                seq: 7,
                event: json!({"type": "agent_start", "x": [1, {"y": "z"}]}),
            };
            let value = serde_json::to_value(&params).unwrap();
            for id in [None, Some(Id::Number(3)), Some(Id::String("a".into()))] {
                let ours = Message {
                    jsonrpc: "2.0",
                    method: method::EVENT,
                    params: &params,
                    id: id.as_ref(),
                };
                let mut theirs = Request::build(method::EVENT).params(value.clone());
                if let Some(id) = id.clone() {
                    theirs = theirs.id(id);
                }
                assert_eq!(
                    serde_json::to_string(&ours).unwrap(),
                    serde_json::to_string(&theirs.finish()).unwrap()
                );
            }
        }
    }

    #[tokio::test]
    async fn replies_reach_their_request_and_only_registered_ids_are_taken() {
        let replies = Replies::default();
        let ok = replies.register("1").unwrap();
        let failed = replies.register("\"x\"").unwrap();
        let garbled = replies.register("2").unwrap();
        assert!(!replies.deliver(&json!(9), br#"{"jsonrpc":"2.0","id":9,"result":1}"#));
        assert!(replies.deliver(&json!(1), br#"{"jsonrpc":"2.0","id":1,"result":{"a":1}}"#));
        let error = br#"{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"no"}}"#;
        assert!(replies.deliver(&json!("x"), error));
        assert!(replies.deliver(&json!(2), br#"{"jsonrpc":"2.0","id":2}"#));
        assert_eq!(ok.await.unwrap().unwrap(), json!({"a": 1}));
        assert!(matches!(failed.await.unwrap(), Err(RequestError::ErrorReply(m)) if m == "no"));
        assert!(matches!(
            garbled.await.unwrap(),
            Err(RequestError::Malformed(_))
        ));
        // Delivered once: a second reply with the same id is not ours any more.
        assert!(!replies.deliver(&json!(1), br#"{"jsonrpc":"2.0","id":1,"result":2}"#));
    }

    #[tokio::test]
    async fn closing_fails_waiting_and_later_requests() {
        let replies = Replies::default();
        let waiting = replies.register("1").unwrap();
        replies.close();
        assert!(waiting.await.is_err(), "the slot is dropped: Disconnected");
        assert!(replies.register("2").is_none());
    }
}
