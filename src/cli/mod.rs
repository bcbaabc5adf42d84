//! The command line: `agent-lsp` (the daemon, also `--stdio`), `run`, `demo`, `sessions`.
//!
//! stdout carries only protocol or command output; logs go to stderr (`-v`, `RUST_LOG`).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "agent-lsp",
    version,
    about = "A coding agent served to editors as a language server"
)]
pub struct Cli {
    /// Serve LSP over stdin/stdout (the default when no command is given).
    #[arg(long, global = false)]
    pub stdio: bool,
    /// More logging on stderr (repeat for more); `RUST_LOG` overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {}

/// Parses the arguments and runs the chosen command.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing(cli.verbose);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("agent-lsp: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = match cli.command {
        None => runtime.block_on(crate::server::serve_stdio()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("agent-lsp: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Logs go to stderr only: stdout is the protocol.
fn init_tracing(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
