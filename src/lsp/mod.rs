//! The daemon: an LSP server over stdio with the agent extension methods (see `protocol.md`).
//!
//! Code map, from the wire inwards:
//! - over `crate::rpc` (messages, the framed reader, the one ordered writer, the registry of
//!   requests to the client): `main_loop`, the one loop that handles every message in wire
//!   order (lifecycle, document sync), `dispatch`: the request table;
//! - `protocol`: every wire type; `config`: what `initialize` settles;
//! - `position` + `documents`: ropey mirrors and the one position module;
//! - `session_table` (the connection's sessions and the agent methods), `controls` (live
//!   model, thinking level, queue modes, stats; listing, forking, renaming stored sessions),
//!   `live_session` (one
//!   session: its agent, runs, queues with ids, persistence), `events` (numbering and merging
//!   of `$/agentEvent`s), `conn` (what sessions share);
//! - `diagnostics`: the editor's forwarded diagnostics and the `diagnostics` tool;
//! - `language`: the editor's language servers as the `lsp_*` tools (`agent/languageRequest`);
//! - `approval`: the `beforeToolCall` hook's asking, over the core's approval gate;
//! - `ask_user`: questions for the user (`agent/askUser`, or a generic client's message);
//! - `saving`: whether a buffer holds unsaved changes of the user (`saveAfterEdit`);
//! - `buffers`: the tools' `Workspace` over editor buffers (applyEdit, confirm, save);
//! - `generic`: the LSP-standard surface for clients without the agent protocol.

pub mod approval;
pub mod ask_user;
pub mod buffers;
pub mod changes;
pub mod commands;
pub mod config;
pub mod conn;
pub mod controls;
pub mod diagnostics;
pub mod dispatch;
pub mod documents;
pub mod events;
pub mod generic_client;
pub mod language;
pub mod live_session;
pub mod main_loop;
pub mod position;
pub mod protocol;
pub mod saving;
pub mod session_table;
pub mod view;

use std::time::Duration;

use anyhow::Context;

pub use crate::rpc::Framing;

use crate::lsp::main_loop::{Exit, Server};
use crate::rpc::output::Output;

/// Serves LSP over stdin/stdout until the client exits, stdin closes or the editor dies; the
/// process's exit status: success after `shutdown` + `exit`, failure otherwise.
pub async fn serve_stdio() -> anyhow::Result<std::process::ExitCode> {
    let output = Output::start(tokio::io::stdout(), Framing::ContentLength)
        .context("cannot start the output thread")?;
    let input = crate::rpc::stdin::stdin().context("cannot start the stdin thread")?;
    let mut server = Server::new(output.clone());
    let exit = server.serve(input, Framing::ContentLength).await;
    // Runs end with their `agent_end` and are stored on the way out.
    if let Some(sessions) = server.sessions() {
        sessions.abort_all();
        let _ = tokio::time::timeout(Duration::from_secs(3), sessions.wait_all_idle()).await;
        sessions.end_jobs().await;
        sessions.stop_mcp().await;
        sessions.close_all();
    }
    let _ = tokio::time::timeout(Duration::from_secs(3), output.drained()).await;
    Ok(match exit {
        Exit::Clean => std::process::ExitCode::SUCCESS,
        _ => std::process::ExitCode::FAILURE,
    })
}
