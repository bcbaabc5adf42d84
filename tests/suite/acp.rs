//! `agent-lsp acp` driven by the official ACP TypeScript SDK (`tests/acp/client.mjs`), against
//! the scripted mock model over loopback: what an ACP editor sees on the wire.

mod support;

mod ask_user;
mod auth;
mod client_tools;
mod commands;
mod modes;
mod pacing;
mod permissions;
mod prompts;
mod sessions;
mod subagents;
mod web;
