//! The one registry of server → client requests (approvals, applyEdit, saveDocuments, …).
//!
//! Each request gets its id from the framework's counter and its reply slot is registered by the
//! framework *before* the message is sent. The caller awaits the reply with a timeout and a
//! cancellation token; a timeout, a cancellation (which sends `$/cancelRequest`), an error reply
//! or a closed connection all come back as [`RequestError`]: never a hang.

use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tower_lsp_server::Client;
use tower_lsp_server::jsonrpc::{Id, Request};
use tower_service::Service;

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
}

impl Outgoing {
    pub fn new(client: Client) -> Self {
        Outgoing { client }
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
        // `call` registers the reply slot before queueing the message.
        let reply = self.client.clone().call(request);
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
        let note = Request::build(method).params(params).finish();
        if self.client.clone().call(note).await.is_err() {
            tracing::debug!(method, "notification dropped: the client is gone");
        }
    }
}
