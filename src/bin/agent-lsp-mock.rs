//! `agent-lsp-mock`: serves a scripted model provider (OpenAI and Anthropic streaming) on
//! loopback for tests of the CLI, the daemon and editor integrations.
//!
//! Prints one JSON line `{"port", "openaiBaseUrl", "anthropicBaseUrl"}` on stdout once it
//! listens, then serves until killed, interrupted, or stdin closes. Only a pipe, socket or
//! terminal on stdin is watched: with stdin at `/dev/null` or a file (a background job, a
//! process spawned with stdin ignored) it serves until killed instead of exiting at once. The
//! script format is documented in `agent_lsp::testing`.

use std::path::PathBuf;

use agent_lsp::testing::{MockProvider, MockScript};
use anyhow::Context as _;
use clap::Parser;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Serve a scripted model provider over loopback HTTP.
#[derive(Parser, Debug)]
#[command(name = "agent-lsp-mock", version)]
struct Args {
    /// The JSON script: {"responses": [...]}.
    #[arg(long)]
    script: PathBuf,
    /// Port on 127.0.0.1 (0 = pick a free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Append every request as a JSON line to this file.
    #[arg(long)]
    log: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let script = MockScript::from_file(&args.script)?;
    let mock = MockProvider::start_with(script, args.port, args.log.as_deref())
        .await
        .context("cannot start the mock provider")?;
    let mut stdout = tokio::io::stdout();
    stdout
        .write_all(format!("{}\n", mock.announcement()).as_bytes())
        .await?;
    stdout.flush().await?;
    let watch_stdin = stdin_is_a_channel();
    tokio::select! {
        _ = stdin_closed(), if watch_stdin => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    mock.shutdown();
    Ok(())
}

/// Whether stdin is something whose closing means "stop" (a pipe, socket or terminal), as
/// opposed to `/dev/null` or a file, which are at end of file from the start.
fn stdin_is_a_channel() -> bool {
    use std::io::IsTerminal as _;
    use std::os::unix::fs::FileTypeExt as _;
    if std::io::stdin().is_terminal() {
        return true;
    }
    std::fs::metadata("/dev/stdin")
        .map(|m| m.file_type().is_fifo() || m.file_type().is_socket())
        .unwrap_or(false)
}

/// Resolves when stdin reaches end of file (the parent went away) or fails.
async fn stdin_closed() {
    let mut stdin = tokio::io::stdin();
    let mut buf = [0u8; 1024];
    while let Ok(n) = stdin.read(&mut buf).await {
        if n == 0 {
            return;
        }
    }
}
