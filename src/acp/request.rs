//! A request to the client that nothing but its answer or its timeout ends: the session's file
//! and terminal requests, which a turn's cancellation does not take back.

use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use crate::rpc::outgoing::{Outgoing, RequestError};

/// Sends `method` to the client and waits for its answer, at most `timeout`.
pub(super) async fn request<P: Serialize, R: DeserializeOwned>(
    out: &Outgoing,
    method: &str,
    params: P,
    timeout: Duration,
) -> Result<R, RequestError> {
    let never = CancellationToken::new();
    out.request(method, params, timeout, &never).await
}
