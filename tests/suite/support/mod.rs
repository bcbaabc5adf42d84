//! Shared test support: one file per helper area.

pub mod cli_run;
pub mod lsp_client;
pub mod mock_provider;
pub mod mock_stream;
pub mod pi_session;
pub mod swapper;
pub mod tool_harness;

/// A temporary folder outside `/tmp`, as the user's other folders are: a sandboxed command has
/// a `/tmp` of its own, so what it must not reach is best placed where it would see it.
pub fn outside_tmp() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("agent-lsp-test-")
        .tempdir_in("/var/tmp")
        .expect("a temporary folder in /var/tmp")
}
