//! Shared test support: one file per helper area.

pub mod cli_run;
pub mod lsp_client;
pub mod mock_provider;
pub mod mock_stream;
pub mod pi_session;
pub mod swapper;
pub mod tool_harness;
