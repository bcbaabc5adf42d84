//! agent-lsp: a coding agent served to editors as a language server.
//!
//! See `ARCHITECTURE.md` for the code map. In short: [`agent`] is the loop (a port of pi's
//! agent loop), [`provider`] streams model responses, [`model_registry`] finds models,
//! [`tools`] are the coding tools, [`sandbox`] jails their commands, [`mcp`] brings MCP servers'
//! tools, [`store`] persists conversations, [`core`] assembles and drives a session for every front
//! end, [`rpc`] is the JSON-RPC layer both servers share, and the front ends are [`lsp`] (the
//! daemon), [`acp`] (the ACP agent) and [`cli`] (the commands).

pub mod acp;
pub mod agent;
pub mod cli;
pub mod compaction;
pub mod core;
pub mod credentials;
pub mod hooks;
pub mod lsp;
pub mod mcp;
pub mod model_registry;
pub mod provider;
pub mod rpc;
pub mod sandbox;
pub mod state_file;
pub mod store;
pub mod testing;
pub mod tools;
