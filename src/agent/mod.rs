//! The agent core: pi's message model, tools, events and the agent loop.
//!
//! **Invariant:** nothing in `agent/` knows about LSP, JSON-RPC, editors or the disk. Providers
//! reach it through [`crate::provider::StreamFn`], tools through [`tool::AgentTool`].

pub mod event;
pub mod message;
pub mod tool;
pub mod transcript;
