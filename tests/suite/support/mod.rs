//! Shared test support: one file per helper area.

pub mod cli_run;
pub mod jobs;
pub mod lsp_client;
pub mod mock_provider;
pub mod mock_stream;
pub mod pi_session;
pub mod swapper;
pub mod tool_harness;
pub mod web_server;

/// The sealed environment every test runs the binary in (the daemon, `run`, ACP through its
/// client): only `PATH` of the caller's, HOME and the XDG data and config folders in `home`
/// (state stays at HOME's `.local/state`, where the sandbox's quarantine is looked for), and Ollama's
/// address a closed loopback port, so no test reads the user's files or reaches a real model.
pub fn seal(cmd: &mut tokio::process::Command, home: &std::path::Path) {
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a loopback port");
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("OLLAMA_HOST", closed.to_string());
}

/// A temporary folder outside `/tmp`, as the user's other folders are: a sandboxed command has
/// a `/tmp` of its own, so what it must not reach is best placed where it would see it.
pub fn outside_tmp() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("agent-lsp-test-")
        .tempdir_in("/var/tmp")
        .expect("a temporary folder in /var/tmp")
}
