//! agent-lsp: a coding agent served to editors as a language server.
//!
//! See `ARCHITECTURE.md` for the code map. In short: [`agent`] is the loop (a port of pi's
//! agent loop), [`provider`] streams model responses, and the front ends drive the loop.

pub mod agent;
pub mod provider;
