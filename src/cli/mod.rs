//! The command line: `agent-lsp` (the daemon, also `--stdio`), `run`, `demo`, `sessions`.
//!
//! stdout carries only protocol or command output; logs go to stderr (`-v`, `RUST_LOG`).

pub mod approve;
mod ask;
pub mod demo;
pub mod doctor;
pub mod login;
mod malloc;
pub mod output;
pub mod run;
pub mod sessions_cmd;
pub mod view;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::core::journal::review::Selection;
use crate::model_registry::EnvSource;
use crate::store::SessionStore;

#[derive(Debug, Parser)]
#[command(
    name = "agent-lsp",
    version,
    about = "A coding agent served to editors as a language server",
    long_about = "A coding agent served to editors as a language server.\n\n\
        Without a command, agent-lsp serves LSP over stdin/stdout for an editor. `run` answers \
        one prompt in a terminal or script, `demo` shows a scripted session without a model, \
        `sessions list | fork | rename` manage stored sessions, `doctor` checks the set-up, \
        `login` stores a provider's key.\n\n\
        Models: --model provider/id with ANTHROPIC_API_KEY, OPENAI_API_KEY (OPENAI_BASE_URL / \
        ANTHROPIC_BASE_URL for other endpoints), ollama/<name> for a local Ollama, or \
        providers in $XDG_CONFIG_HOME/agent-lsp/models.json."
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
pub enum Command {
    /// Answer one prompt with the coding tools, printing the run as it happens.
    Run(run::RunArgs),
    /// A complete scripted session (read, edit, check, answer) in a temporary project: no model,
    /// no key, no network.
    Demo(demo::DemoArgs),
    /// Serve the Agent Client Protocol (ACP v1) over stdin/stdout, for Zed's agent panel,
    /// JetBrains, CodeCompanion, avante, agent-shell and other ACP clients.
    Acp {
        /// `login`: what an ACP client runs in a terminal for the `terminal` auth method (the
        /// same as `agent-lsp login`).
        #[command(subcommand)]
        command: Option<AcpCommand>,
    },
    /// Store a provider's key for agent-lsp (asked in a terminal, or `--provider` with the key
    /// on standard input): in $XDG_CONFIG_HOME/agent-lsp/credentials, readable only by you and
    /// hidden from sandboxed commands; the environment's variable still wins.
    Login(login::LoginArgs),
    /// Forget the keys `login` stored (every one, or `--provider`'s).
    Logout(login::LogoutArgs),
    /// Stored sessions.
    Sessions(SessionsArgs),
    /// What agent-lsp would use here and what stands in its way (the model, keys, sandbox,
    /// sessions, MCP servers, the binary on PATH), each problem with its fix; exits 1 on a
    /// problem.
    Doctor(doctor::DoctorArgs),
}

#[derive(Debug, Subcommand)]
pub enum AcpCommand {
    /// Store a provider's key (as `agent-lsp login`).
    Login(login::LoginArgs),
}

/// `sessions`: the store every subcommand reads, and the subcommand.
#[derive(Debug, Args)]
pub struct SessionsArgs {
    /// Where sessions are stored [default: $XDG_DATA_HOME/agent-lsp/sessions].
    #[arg(long, env = "AGENT_LSP_SESSION_DIR", global = true)]
    pub session_dir: Option<PathBuf>,
    #[command(subcommand)]
    pub command: SessionsCommand,
}

#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// List sessions, most recently updated first: id, updated time, messages, name, cwd.
    List {
        /// Only sessions of this project directory (`--cwd` alone: the current directory).
        #[arg(long, num_args = 0..=1, default_missing_value = ".")]
        cwd: Option<PathBuf>,
        /// One JSON object per session.
        #[arg(long)]
        json: bool,
    },
    /// Copy a session up to (not including) one of its user messages into a new session, as pi
    /// forks; without a message id, list the session's user messages and their ids.
    Fork {
        /// The session (id, id prefix, or file path).
        session: String,
        /// The user message to fork before (its entry id in the session file).
        message_id: Option<String>,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// Name a session (pi's session name; `sessions list` shows it).
    Rename {
        /// The session (id, id prefix, or file path).
        session: String,
        /// The new name (several words are joined with spaces).
        #[arg(required = true)]
        name: Vec<String>,
    },
    /// Show the files a run changed (default: the last run that changed files), each with a
    /// diff from before the run to now, and whether it was changed since.
    Changes {
        /// The session (id, id prefix, or file path).
        session: String,
        /// The run (as the journal names it; `--json` lists it).
        #[arg(long)]
        run: Option<String>,
        /// JSON output (protocol.md `agent/runChanges`).
        #[arg(long)]
        json: bool,
    },
    /// Remove the effect journal's stored images no session refers to (of every project, or of
    /// one); images a running session may still need are kept.
    Gc {
        /// Only this project directory's sessions (`--cwd` alone: the current directory).
        #[arg(long, num_args = 0..=1, default_missing_value = ".")]
        cwd: Option<PathBuf>,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// Delete a session file, and the journal's images only it referred to (its runs can no
    /// longer be reviewed or reverted).
    Delete {
        /// The session (id, id prefix, or file path).
        session: String,
    },
    /// Restore the files a run changed (default: the last run that changed files), or every run
    /// since a user message; files changed since the agent changed them are left alone.
    Revert {
        /// The session (id, id prefix, or file path).
        session: String,
        #[arg(long, conflicts_with = "message")]
        run: Option<String>,
        /// A user message (its entry id; `sessions fork ID` lists them): revert every run since.
        #[arg(long)]
        message: Option<String>,
        /// Only these files (absolute or relative to the session's directory).
        #[arg(long = "path")]
        paths: Vec<String>,
        /// Also overwrite files changed since the agent changed them.
        #[arg(long)]
        force: bool,
        /// JSON output (protocol.md `agent/revert`).
        #[arg(long)]
        json: bool,
    },
}

/// How long a front end's leftover tasks get once it has returned.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// Parses the arguments and runs the chosen command.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing(cli.verbose);
    let runtime = match runtime_for(&cli.command) {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("agent-lsp: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let env = EnvSource::from_process();
    let result = match cli.command {
        // The server runs as a task, like the sessions' tasks it talks to.
        None => {
            let served = runtime.block_on(async {
                tokio::spawn(crate::lsp::serve_stdio())
                    .await
                    .unwrap_or_else(|e| Err(anyhow::anyhow!("the server task ended: {e}")))
            });
            // What is still running (an aborted run's tool, a hash) is not waited for long.
            runtime.shutdown_timeout(SHUTDOWN_GRACE);
            return served.unwrap_or_else(|e| {
                eprintln!("agent-lsp: {e:#}");
                ExitCode::FAILURE
            });
        }
        Some(Command::Acp {
            command: Some(AcpCommand::Login(args)),
        })
        | Some(Command::Login(args)) => return login::login(args, &env),
        Some(Command::Logout(args)) => return login::logout(args, &env),
        Some(Command::Acp { command: None }) => {
            let served = runtime.block_on(async {
                tokio::spawn(crate::acp::serve_stdio())
                    .await
                    .unwrap_or_else(|e| Err(anyhow::anyhow!("the ACP agent ended: {e}")))
            });
            runtime.shutdown_timeout(SHUTDOWN_GRACE);
            served
        }
        Some(Command::Run(args)) => return runtime.block_on(run::run(args, env, cli.verbose > 0)),
        Some(Command::Demo(args)) => return runtime.block_on(demo::demo(args)),
        Some(Command::Doctor(args)) => return runtime.block_on(doctor::run(args, env)),
        Some(Command::Sessions(args)) => runtime.block_on(sessions(args, &env)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("agent-lsp: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Every command runs its async work on one thread; blocking work (file searches, reads,
/// writes, session syncs) goes to tokio's blocking pool.
/// - A headless run is one loop streaming one response: the provider's reader, the loop and the
///   JSON writer share a core with no cross-thread wake per delta (BENCH.md, scenario 2). The
///   JSON lines batched during a burst of work are written when the thread runs out of work.
/// - The daemon's own work per message is small next to the cost of waking another thread (tens
///   to hundreds of microseconds on a busy or virtual machine). On one thread every hand-off
///   between the main loop, a session and its provider stream is a task switch, not a thread
///   wake (BENCH.md, scenarios 2 and 5). The writer alone has its own thread (`rpc::output`):
///   output must not wait behind a long computation on this one.
fn runtime_for(command: &Option<Command>) -> std::io::Result<tokio::runtime::Runtime> {
    let mut builder = tokio::runtime::Builder::new_current_thread();
    builder.enable_all();
    match command {
        Some(Command::Run(_) | Command::Demo(_)) => {
            builder.on_thread_park(output::flush_json_lines);
        }
        _ => malloc::use_one_malloc_arena(),
    }
    builder.build()
}

async fn sessions(args: SessionsArgs, env: &EnvSource) -> anyhow::Result<()> {
    let store = match args.session_dir.or_else(|| SessionStore::default_dir(env)) {
        Some(dir) => SessionStore::new(dir),
        None => anyhow::bail!("no session directory: set HOME, XDG_DATA_HOME or --session-dir"),
    };
    let absolute = |cwd: Option<PathBuf>| cwd.map(|c| sessions_cmd::absolute(&c)).transpose();
    match args.command {
        SessionsCommand::List { cwd, json } => {
            sessions_cmd::list(&store, absolute(cwd)?.as_deref(), json)
        }
        SessionsCommand::Fork {
            session,
            message_id,
            json,
        } => sessions_cmd::fork(&store, &session, message_id.as_deref(), json),
        SessionsCommand::Rename { session, name } => {
            sessions_cmd::rename(&store, &session, &name.join(" "))
        }
        SessionsCommand::Changes { session, run, json } => {
            sessions_cmd::changes(&store, &session, run, json).await
        }
        SessionsCommand::Gc { cwd, json } => {
            sessions_cmd::gc(&store, absolute(cwd)?.as_deref(), json)
        }
        SessionsCommand::Delete { session } => sessions_cmd::delete(&store, &session),
        SessionsCommand::Revert {
            session,
            run,
            message,
            paths,
            force,
            json,
        } => {
            let selection = match message {
                Some(message) => Selection::Since(message),
                None => Selection::Run(run),
            };
            let paths = (!paths.is_empty()).then_some(paths);
            let request = sessions_cmd::RevertRequest {
                selection,
                paths,
                force,
                json,
            };
            sessions_cmd::revert(&store, &session, request).await
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
