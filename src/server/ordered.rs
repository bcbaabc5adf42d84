//! The ordered document-sync shim around the framework's service.
//!
//! tower-lsp-server runs handlers concurrently (and lazily), so a `didChange` handler cannot be
//! trusted to run in wire order. `Service::call` itself *is* called in wire order, so the shim
//! applies `didOpen`/`didChange`/`didClose` right there, synchronously, before forwarding the
//! message: every later request sees every earlier edit.
//!
//! It also registers a response [`Gate`] for requests that create ids, and runs their handler
//! inside a task-local scope so the handler can hand the gate to the events it causes.

use std::task::{Context, Poll};

use serde_json::Value;
use tower_lsp_server::jsonrpc::{Id, Request};
use tower_service::Service;

use crate::server::documents::DocStore;
use crate::server::protocol::method;
use crate::server::wire::{Gate, ResponseWatch};

tokio::task_local! {
    static RESPONSE_GATE: Gate;
}

/// The gate of the request whose handler is running, or an open gate outside of one.
pub fn current_gate() -> Gate {
    RESPONSE_GATE
        .try_with(Gate::clone)
        .unwrap_or_else(|_| Gate::open())
}

/// Requests whose responses carry ids that later events refer to.
fn creates_ids(method_name: &str) -> bool {
    [
        method::PROMPT,
        method::STEER,
        method::FOLLOW_UP,
        method::NEW_SESSION,
        method::CLEAR_QUEUE,
        "workspace/executeCommand",
    ]
    .contains(&method_name)
}

pub struct OrderedSync<S> {
    inner: S,
    docs: DocStore,
    watch: ResponseWatch,
}

impl<S> OrderedSync<S> {
    pub fn new(inner: S, docs: DocStore, watch: ResponseWatch) -> Self {
        OrderedSync { inner, docs, watch }
    }

    fn apply_sync(&self, req: &Request) {
        let Some(params) = req.params() else { return };
        let result = match req.method() {
            "textDocument/didOpen" => parse(params).map(|p| self.docs.open(p)),
            "textDocument/didChange" => parse(params).map(|p| self.docs.change(p)),
            "textDocument/didClose" => parse(params).map(|p| self.docs.close(p)),
            _ => Ok(()),
        };
        if let Err(err) = result {
            tracing::warn!(method = req.method(), %err, "malformed document notification ignored");
        }
    }
}

fn parse<T: serde::de::DeserializeOwned>(params: &Value) -> Result<T, serde_json::Error> {
    T::deserialize(params)
}

fn id_value(id: &Id) -> Value {
    serde_json::to_value(id).unwrap_or(Value::Null)
}

impl<S> Service<Request> for OrderedSync<S>
where
    S: Service<Request>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = futures_util::future::BoxFuture<'static, Result<S::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        self.apply_sync(&req);
        let gate = match req.id() {
            Some(id) if creates_ids(req.method()) => Some(self.watch.watch(&id_value(id))),
            _ => None,
        };
        let fut = self.inner.call(req);
        match gate {
            Some(gate) => Box::pin(RESPONSE_GATE.scope(gate, fut)),
            None => Box::pin(fut),
        }
    }
}
