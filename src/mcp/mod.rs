//! MCP servers as a source of the agent's tools (the official SDK, `rmcp`, as a client).
//!
//! - `config`: the `mcpServers` shape, its sources and `${VAR}` expansion;
//! - `trust`: whether a project's `.mcp.json` may start its servers;
//! - `server`: one server's connection, state, tools, calls and restarts;
//! - `hub`: the servers of a connection, shared by sessions, and a session's view of them;
//! - `tool`: an MCP tool as an agent tool (names, schemas, approval kind, results);
//! - `elicit`: a server's elicitation asked of the user through the calling session.
//!
//! Tools reach the model the way pi declares tools: through the transcript. When a server's tools
//! appear, change or go, the session sets the agent's tools and the loop declares the difference
//! with a system message before the next request.

pub mod config;
pub mod elicit;
pub mod hub;
pub mod server;
pub mod tool;
pub mod trust;

pub use hub::{McpHub, McpSession};
