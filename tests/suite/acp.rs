//! `agent-lsp acp` driven by the official ACP TypeScript SDK (`tests/acp/client.mjs`), against
//! the scripted mock model over loopback: what an ACP editor sees on the wire.

pub(super) mod support;

mod ask_user;
mod auth;
mod client_tools;
mod commands;
mod modes;
mod pacing;
mod permissions;
mod prompts;
mod rules;
mod sessions;
mod subagents;
mod terminal_jobs;
mod web;
