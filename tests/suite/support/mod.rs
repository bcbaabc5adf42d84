//! Shared test support: one file per helper area.

pub mod lsp_client;
pub mod pi_session;
