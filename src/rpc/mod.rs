//! The JSON-RPC layer the front ends share: framing and the reader (`jsonrpc`), the one
//! ordered, paced writer (`output`), merging of streamed deltas while they wait (`merge`), and the
//! registry of requests to the client (`outgoing`), and stdin read on a thread of its own
//! (`stdin`). It knows no protocol's methods: the LSP front
//! end (`lsp/`) and ACP (`acp/`) build on it, neither on the other.

pub mod jsonrpc;
pub mod merge;
pub mod outgoing;
pub mod output;
pub mod stdin;

pub use jsonrpc::Framing;
