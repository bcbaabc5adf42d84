//! The daemon: an LSP server over stdio with the agent extension methods (see `protocol.md`).
//!
//! Code map, from the wire inwards:
//! - `stdio`: stdin/stdout on the runtime's reactor when they are pipes (no blocking-pool hops);
//! - `sanitize` (stdin: malformed frames become error replies instead of ending the stream;
//!   replies to our requests go straight to `outgoing`'s slots), `output` (stdout: the one
//!   ordered writer of every frame; events and requests are written on their own task) and
//!   `wire` (knows when one of the framework's responses has been written, for response gates);
//! - `ordered`: the shim that applies document sync in wire order and scopes response gates;
//! - `backend` (LSP lifecycle, capabilities) and `methods` (the agent methods, thin);
//! - `protocol`: every wire type; `config`: what `initialize` settles;
//! - `position` + `documents`: ropey mirrors and the one position module;
//! - `outgoing`: the one registry of server → client requests (timeouts, cancellation);
//! - `sessions` (the connection's sessions and the agent methods), `session` (one session: its
//!   agent, runs, queues with ids, persistence), `events` (the ordered `$/agentEvent` writer),
//!   `conn` (what sessions share);
//! - `diagnostics`: the editor's forwarded diagnostics and the `diagnostics` tool;
//! - `approval` (policy and "always" memory), `ask` (the `beforeToolCall` hook);
//! - `buffer_ws`: the tools' `Workspace` over editor buffers (applyEdit, confirm, save);
//! - `generic`: the LSP-standard surface for clients without the agent protocol.
//!
//! **Invariant:** no LSP handler waits on the client or on a run; runs and their server → client
//! round trips live in spawned tasks.

pub mod approval;
pub mod ask;
pub mod backend;
pub mod buffer_ws;
pub mod config;
pub mod conn;
pub mod diagnostics;
pub mod documents;
pub mod events;
pub mod generic;
pub mod methods;
pub mod ordered;
pub mod outgoing;
pub mod output;
pub mod position;
pub mod protocol;
pub mod sanitize;
pub mod session;
pub mod sessions;
pub mod stdio;
pub mod wire;

use std::sync::atomic::Ordering;
use std::time::Duration;

use tower_lsp_server::{LspService, Server};

use crate::server::backend::{Backend, Shared};
use crate::server::ordered::OrderedSync;
use crate::server::outgoing::Replies;
use crate::server::output::Output;
use crate::server::sanitize::SanitizedReader;
use crate::server::wire::{ResponseWatch, WatchedWriter};

/// Serves LSP over stdin/stdout until the client exits, stdin closes or the editor dies.
///
/// The process exits from here (code 0 after `shutdown` + `exit`, 1 otherwise) instead of
/// returning: the tokio runtime would otherwise wait on the blocking stdin reader, which never
/// returns while an editor keeps our stdin open after `exit`.
pub async fn serve_stdio() -> anyhow::Result<()> {
    let shared = Shared::new(Output::start(stdio::stdout()), Replies::default());
    let watch = ResponseWatch::default();
    let (service, socket) = register_methods(LspService::build({
        let shared = shared.clone();
        move |client| Backend::new(client, shared)
    }))
    .finish();
    let service = OrderedSync::new(service, shared.docs.clone(), watch.clone());
    let stdout = WatchedWriter::new(shared.output.framework_writer(), watch);
    let stdin = SanitizedReader::new(stdio::stdin()).routing_replies(shared.replies.clone());
    let parent_gone = watch_parent(shared.clone());
    tokio::select! {
        () = Server::new(stdin, stdout, socket).serve(service) => {}
        () = parent_gone => tracing::warn!("the editor process is gone; exiting"),
    }
    let clean = shared.shutdown_requested.load(Ordering::SeqCst);
    finish_runs(&shared).await;
    let _ = tokio::time::timeout(Duration::from_secs(3), shared.output.drained()).await;
    std::process::exit(if clean { 0 } else { 1 });
}

fn register_methods(
    builder: tower_lsp_server::LspServiceBuilder<Backend>,
) -> tower_lsp_server::LspServiceBuilder<Backend> {
    use crate::server::protocol::method;
    builder
        .custom_method("agent/getDocument", Backend::get_document)
        .custom_method(sanitize::MALFORMED_METHOD, Backend::malformed)
        .custom_method(method::PROMPT, Backend::prompt)
        .custom_method(method::STEER, Backend::steer)
        .custom_method(method::FOLLOW_UP, Backend::follow_up)
        .custom_method(method::ABORT, Backend::abort)
        .custom_method(method::CLEAR_QUEUE, Backend::clear_queue)
        .custom_method(method::REMOVE_QUEUED, Backend::remove_queued)
        .custom_method(method::DIAGNOSTICS, Backend::diagnostics_noted)
        .custom_method(method::NEW_SESSION, Backend::new_session)
        .custom_method(method::GET_STATE, Backend::get_state)
        .custom_method(method::GET_MESSAGES, Backend::get_messages)
        .custom_method("window/workDoneProgress/cancel", Backend::progress_cancel)
}

/// Aborts every run and gives them a moment to end (sessions are stored on the way out).
async fn finish_runs(shared: &Shared) {
    if let Some(sessions) = shared.sessions.get() {
        sessions.abort_all();
        let _ = tokio::time::timeout(Duration::from_secs(3), sessions.wait_all_idle()).await;
    }
}

/// Resolves when the editor process named in `initialize` no longer exists.
async fn watch_parent(shared: Shared) {
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let Some(pid) = shared.config.get().and_then(|c| c.process_id) else {
            continue;
        };
        let Ok(pid) = i32::try_from(pid) else {
            continue;
        };
        let alive = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None);
        if matches!(alive, Err(nix::errno::Errno::ESRCH)) {
            return;
        }
    }
}
