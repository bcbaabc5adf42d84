//! `agent-lsp acp`: an Agent Client Protocol (v1) agent over stdio, newline-delimited JSON-RPC,
//! on the same session core as the daemon (`core`). Types are the official schema
//! crate's (`agent-client-protocol-schema`, pinned); the JSON-RPC reader and the ordered writer
//! are the ones every front end shares (`crate::rpc`).
//!
//! Code map: `conn` (the loop and every method; it builds sessions and hands them their
//! hooks), `session` (one session: runs, follow-ups, mode, persistence), `updates` (pi's events
//! → `session/update`, and the replay of `session/load`), `permission` (ACP's side of the
//! core's approval gate: the mode as policy, `session/request_permission`), `ask_user`
//! (questions for the user: `elicitation/create`, else a permission request), `trust` (the
//! project's MCP servers, asked before a turn), `hooks` (hook events as messages, the project's
//! hooks asked about as its servers are), `texts` (a changed file's text for diffs),
//! `chunks` (the session's updates in order, message chunks merged and paced), `content`
//! (prompt blocks → pi's), `options` (modes and config options), `client` (the client's
//! capabilities, file system and terminals as the tools' workspace and `bash`), `terminal_job`
//! (a background job in a client terminal), `request` (a file or terminal request to the
//! client, which only its answer or its timeout ends).

mod ask_user;
mod auth;
mod chunks;
mod client;
mod commands;
mod conn;
mod content;
mod hooks;
mod options;
mod permission;
mod request;
mod rules_trust;
mod session;
mod subagent;
mod terminal_job;
mod texts;
mod trust;
mod trust_call;
mod updates;
mod view;

use std::time::Duration;

use anyhow::Context;

pub use conn::{Conn, STEER};

use crate::model_registry::EnvSource;
use crate::rpc::Framing;
use crate::rpc::output::Output;

/// Serves ACP on stdin/stdout until stdin closes; logs go to stderr only.
pub async fn serve_stdio() -> anyhow::Result<()> {
    let output = Output::start(tokio::io::stdout(), Framing::Lines)
        .context("cannot start the output thread")?;
    let input = crate::rpc::stdin::stdin().context("cannot start the stdin thread")?;
    let conn = Conn::new(
        output.clone(),
        EnvSource::from_process(),
        crate::provider::default_stream_fn(),
    );
    conn.serve(input).await;
    let _ = tokio::time::timeout(Duration::from_secs(3), output.drained()).await;
    Ok(())
}
