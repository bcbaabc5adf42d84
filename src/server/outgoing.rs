//! The one registry of server → client requests (approvals, applyEdit, saveDocuments, …).
//!
//! Each request gets its id from the framework's counter and its reply slot is registered by the
//! framework *before* the message is sent. The caller awaits the reply with a timeout and a
//! cancellation token; a timeout, a cancellation (which sends `$/cancelRequest`), an error reply
//! or a closed connection all come back as [`RequestError`]: never a hang.
//!
//! Ordering: a request is sent only after the event writer flushed every `$/agentEvent` queued
//! before it (see [`EventHub::flushed`]), so a client never sees an approval or an edit before the
//! events of the assistant message that asked for it.
//!
//! [`EventHub::flushed`]: crate::server::events::EventHub::flushed

use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tower_lsp_server::Client;
use tower_lsp_server::jsonrpc::{Id, Request};
use tower_service::Service;

use crate::server::events::EventHub;
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

/// Sends requests and notifications to the client.
#[derive(Clone)]
pub struct Outgoing {
    client: Client,
    /// The event writer requests wait for; `None` for the writer's own handle.
    events: Option<EventHub>,
}

impl Outgoing {
    pub fn new(client: Client) -> Self {
        Outgoing {
            client,
            events: None,
        }
    }

    /// The same client, with requests ordered after the events queued on `hub`.
    pub fn after_events(&self, hub: EventHub) -> Self {
        Outgoing {
            client: self.client.clone(),
            events: Some(hub),
        }
    }

    pub fn client(&self) -> &Client {
        &self.client
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
        let params =
            serde_json::to_value(params).map_err(|e| RequestError::Malformed(e.to_string()))?;
        let id = self.client.next_request_id();
        let request = Request::build(method)
            .id(id.clone())
            .params(params)
            .finish();
        let client = self.client.clone();
        let events = self.events.clone();
        let reply = async move {
            if let Some(events) = events {
                events.flushed().await;
            }
            // `call` registers the reply slot before queueing the message.
            client.clone().call(request).await
        };
        let outcome = tokio::select! {
            reply = reply => reply,
            () = cancel.cancelled() => {
                self.cancel_remote(&id).await;
                return Err(RequestError::Cancelled);
            }
            () = tokio::time::sleep(timeout) => {
                self.cancel_remote(&id).await;
                return Err(RequestError::Timeout(timeout));
            }
        };
        match outcome {
            Ok(Some(response)) => {
                let (_, result) = response.into_parts();
                result.map_err(|e| RequestError::ErrorReply(e.message.into_owned()))
            }
            Ok(None) | Err(_) => Err(RequestError::Disconnected),
        }
    }

    /// Tells the client we no longer wait for request `id`.
    async fn cancel_remote(&self, id: &Id) {
        self.notify("$/cancelRequest", json!({ "id": id })).await;
    }

    /// Sends a notification (dropped with a log line when the connection is gone).
    pub async fn notify<P: Serialize>(&self, method: &'static str, params: P) {
        let params = match serde_json::to_value(params) {
            Ok(p) => p,
            Err(err) => {
                tracing::error!(method, %err, "notification params do not serialize");
                return;
            }
        };
        self.notify_value(method, params).await;
    }

    /// Sends one `$/agentEvent`, moving the event into the params instead of re-serializing
    /// it through [`serde_json::to_value`] (a deep copy of every event, on the one writer).
    pub async fn notify_event(&self, params: AgentEventParams) {
        self.notify_value(method::EVENT, event_params(params)).await;
    }

    async fn notify_value(&self, method: &'static str, params: Value) {
        let note = Request::build(method).params(params).finish();
        if self.client.clone().call(note).await.is_err() {
            tracing::debug!(method, "notification dropped: the client is gone");
        }
    }
}

/// `params` as JSON, exactly as `serde_json::to_value` gives it, without copying the event.
fn event_params(params: AgentEventParams) -> Value {
    let mut map = serde_json::Map::with_capacity(4);
    map.insert("sessionId".into(), Value::String(params.session_id));
    map.insert(
        "runId".into(),
        params.run_id.map_or(Value::Null, Value::String),
    );
    map.insert("seq".into(), Value::from(params.seq));
    map.insert("event".into(), params.event);
    Value::Object(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_params_serialize_like_the_wire_type() {
        for run_id in [Some("r".to_string()), None] {
            let params = AgentEventParams {
                session_id: "s".into(),
                run_id,
                seq: 7,
                event: json!({"type": "agent_start", "x": [1, {"y": "z"}]}),
            };
            let expected = serde_json::to_string(&params).unwrap();
            let built = serde_json::to_string(&event_params(params)).unwrap();
            assert_eq!(built, expected);
        }
    }
}
