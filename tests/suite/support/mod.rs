//! Shared test support: one file per helper area.
pub mod lsp_client;
