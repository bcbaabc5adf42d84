//! `agent-lsp run`: one prompt to settlement over the real loop, recorded in a session.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::Args;
use tokio::signal::unix::{Signal, SignalKind, signal};

use crate::agent::RunFailure;
use crate::agent::message::{AgentMessage, ThinkingLevel};
use crate::cli::approve::Approval;
use crate::cli::output::{HumanRenderer, JsonRenderer, Renderer};
use crate::cli::view::CliView;
use crate::compaction::CompactionOptions;
use crate::core::commands::{Builtin, BuiltinOutcome, CommandError, run_model};
use crate::core::permissions::PermissionSpec;
use crate::core::session::Session;
use crate::core::{
    CompactError, Expansion, Headless, LoopLimits, McpSource, McpSpec, ModelChoice, RecordChoice,
    SessionSpec, SessionTools, SetupError, assemble,
};
use crate::mcp::McpHub;
use crate::mcp::server::State;
use crate::model_registry::EnvSource;
use crate::sandbox::{Network, SandboxMode, SandboxSetting};
use crate::store::{SessionFile, SessionStore};
use crate::tools::jobs::END_WITHIN;

/// Exit status after Ctrl-C, as shells report a SIGINT death.
pub const EXIT_INTERRUPTED: u8 = 130;
/// Exit status after SIGTERM (128 + 15).
pub const EXIT_TERMINATED: u8 = 143;

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The model as provider/id (e.g. openai/gpt-4.1, anthropic/claude-sonnet-4-5, ollama/qwen3).
    #[arg(long, short = 'm')]
    pub model: Option<String>,
    /// The project directory the tools work in (default: the current directory).
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    /// Print one JSON event per line instead of text.
    #[arg(long)]
    pub json: bool,
    /// Which tool calls run without asking.
    #[arg(long, value_enum, default_value_t = Approval::ReadOnly)]
    pub approve: Approval,
    /// Continue a stored session (id, id prefix, or file path).
    #[arg(long, conflicts_with_all = ["continue_", "fork", "no_session"])]
    pub session: Option<String>,
    /// Continue the most recent session of this directory.
    #[arg(long = "continue", short = 'c', conflicts_with_all = ["fork", "no_session"])]
    pub continue_: bool,
    /// Copy a stored session (id, id prefix, or path) into a new one and continue there.
    #[arg(long, conflicts_with = "no_session")]
    pub fork: Option<String>,
    /// Where sessions are stored [default: $XDG_DATA_HOME/agent-lsp/sessions].
    #[arg(long, env = "AGENT_LSP_SESSION_DIR")]
    pub session_dir: Option<PathBuf>,
    /// Do not record this run.
    #[arg(long)]
    pub no_session: bool,
    /// Reasoning effort: off, minimal, low, medium, high, xhigh (clamped to what the model takes).
    #[arg(long)]
    pub thinking: Option<String>,
    /// A further directory the tools may read and change besides --cwd (repeatable); paths
    /// outside the project and these directories are refused.
    #[arg(long = "add-dir", value_name = "DIR")]
    pub add_dir: Vec<PathBuf>,
    /// A file with MCP servers (`{"mcpServers": …}`), after the user's and the project's
    /// (repeatable; later files win by name).
    #[arg(long = "mcp-config", value_name = "FILE")]
    pub mcp_config: Vec<PathBuf>,
    /// Start the MCP servers of the project's `.mcp.json` without having been allowed before.
    #[arg(long)]
    pub trust_project_mcp: bool,
    /// Run the hooks of the project's `.agent-lsp/settings.json` and `settings.local.json`
    /// without having been allowed before (for this run; nothing is remembered).
    #[arg(long)]
    pub trust_project_hooks: bool,
    /// End the run after this many model responses (turns).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_turns: Option<u64>,
    /// When the model makes the same tool call this many times in a row, its result says so
    /// (0: never).
    #[arg(long, value_name = "N", default_value_t = LoopLimits::default().warn_at)]
    pub loop_guard_warn: usize,
    /// When the model makes the same tool call this many times in a row, the run ends (0: never).
    #[arg(long, value_name = "N", default_value_t = LoopLimits::default().stop_at)]
    pub loop_guard_stop: usize,
    /// Leave out the AGENTS.md / CLAUDE.md files (global and from / down to --cwd).
    #[arg(long)]
    pub no_context_files: bool,
    /// The command sandbox: workspaceWrite (write only inside --cwd, --add-dir and a temp dir),
    /// readOnly (write only the temp dir) or off. Default: workspaceWrite, as bash runs unasked.
    #[arg(long, value_name = "MODE", value_parser = parse_sandbox)]
    pub sandbox: Option<SandboxMode>,
    /// Let sandboxed commands use the network (workspaceWrite only).
    #[arg(long, conflicts_with = "sandbox_allow_domain")]
    pub sandbox_network: bool,
    /// Let sandboxed commands reach only this domain (`*.example.com`: its subdomains), through
    /// agent-lsp's proxy; repeat for more (workspaceWrite only).
    #[arg(long, value_name = "DOMAIN", value_parser = parse_domain)]
    pub sandbox_allow_domain: Vec<String>,
    /// Pass this environment variable to sandboxed commands although it holds a model key
    /// (those are removed otherwise); repeat for more.
    #[arg(long, value_name = "NAME")]
    pub sandbox_env: Vec<String>,
    /// Compact the session once its context passes this many tokens (default: the model's
    /// context window minus compaction.reserveTokens, as pi).
    #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u64).range(1..))]
    pub compact_threshold: Option<u64>,
    /// The prompt (several words are joined with spaces); `-` reads it from stdin. `/name args`
    /// runs a prompt template, a skill, an MCP prompt or a built-in (`/model`, `/compact`).
    #[arg(required = true)]
    pub prompt: Vec<String>,
}

/// How one run is wired: the session to assemble and what the command adds to it.
pub struct RunPlan {
    pub session: SessionSpec,
    pub approval: Approval,
    pub json: bool,
    pub prompt: String,
    /// `-v`: the context files loaded, on stderr.
    pub verbose: bool,
    /// `--trust-project-hooks`.
    pub trust_project_hooks: bool,
}

/// Resolves the arguments, runs, and maps the outcome to an exit status.
pub async fn run(args: RunArgs, env: EnvSource, verbose: bool) -> ExitCode {
    let plan = match plan(args, env, verbose) {
        Ok(plan) => plan,
        Err(e) => {
            eprintln!("agent-lsp: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    execute(plan).await
}

fn plan(args: RunArgs, env: EnvSource, verbose: bool) -> anyhow::Result<RunPlan> {
    let prompt = prompt_text(&args.prompt)?;
    let cwd_is_explicit = args.cwd.is_some();
    let cwd = match &args.cwd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let cwd = std::fs::canonicalize(&cwd)
        .with_context(|| format!("no such directory: {}", cwd.display()))?;
    let thinking = match &args.thinking {
        Some(level) => Some(ThinkingLevel::parse(level).with_context(|| {
            format!(
                "unknown thinking level {level:?}; use off, minimal, low, medium, high or xhigh"
            )
        })?),
        None => None,
    };
    let record = find_session(&args, &env, &cwd)?;
    Ok(RunPlan {
        session: SessionSpec {
            cwd,
            cwd_is_explicit,
            extra_roots: args.add_dir,
            model: ModelChoice::Named(args.model),
            thinking,
            record,
            stream_fn: crate::provider::default_stream_fn(),
            env,
            mcp: McpSpec {
                hub: Some(McpHub::new()),
                sources: args.mcp_config.into_iter().map(McpSource::File).collect(),
                trust_project: args.trust_project_mcp,
            },
            limits: LoopLimits {
                max_turns: args.max_turns.map(|n| n as usize),
                warn_at: args.loop_guard_warn,
                stop_at: args.loop_guard_stop,
            },
            context_files: !args.no_context_files,
            compaction: CompactionOptions {
                threshold_tokens: args.compact_threshold,
                ..CompactionOptions::default()
            },
            sandbox: SandboxSetting {
                mode: args.sandbox,
                network: match (args.sandbox_network, args.sandbox_allow_domain.is_empty()) {
                    (true, _) => Network::On,
                    (false, true) => Network::Off,
                    (false, false) => Network::Allow(args.sandbox_allow_domain.clone()),
                },
                pass_env: (!args.sandbox_env.is_empty()).then(|| args.sandbox_env.clone()),
                protected: None,
            },
            permissions: PermissionSpec::with_files(Default::default()),
        },
        approval: args.approve,
        json: args.json,
        prompt,
        verbose,
        trust_project_hooks: args.trust_project_hooks,
    })
}

fn parse_domain(s: &str) -> Result<String, String> {
    crate::sandbox::normalize_domain(s)
}

fn parse_sandbox(s: &str) -> Result<SandboxMode, String> {
    SandboxMode::parse(s).ok_or_else(|| format!("{s:?}: use workspaceWrite, readOnly or off"))
}

/// `a/b.jsonl`, `./x`: an argument meant as a file rather than a session id.
fn looks_like_path(arg: &str) -> bool {
    arg.contains(std::path::MAIN_SEPARATOR) || arg.ends_with(".jsonl")
}

/// Where the run is recorded: `--no-session`, `--session`, `--fork`, `--continue`, or new.
fn find_session(args: &RunArgs, env: &EnvSource, cwd: &Path) -> anyhow::Result<RecordChoice> {
    if args.no_session {
        return Ok(RecordChoice::New(None));
    }
    let dir = match &args.session_dir {
        Some(dir) => dir.clone(),
        None => SessionStore::default_dir(env).context(
            "no session directory: set HOME, XDG_DATA_HOME or --session-dir (or use --no-session)",
        )?,
    };
    let store = SessionStore::new(dir);
    if let Some(id) = &args.session {
        // pi's `--session <path>`: a path that does not exist yet starts a new session there.
        if looks_like_path(id) && !Path::new(id).exists() {
            return Ok(RecordChoice::NewAt(PathBuf::from(id)));
        }
        return Ok(RecordChoice::Resume(store.open(id)?));
    }
    if let Some(id) = &args.fork {
        let source = store.open(id)?;
        return Ok(RecordChoice::Fork(store, source));
    }
    if args.continue_
        && let Some(latest) = store.latest_for_cwd(cwd)?
    {
        return Ok(RecordChoice::Resume(latest));
    }
    Ok(RecordChoice::New(Some(store)))
}

/// Runs the plan's prompt to settlement. Ctrl-C (SIGINT) or SIGTERM aborts the run cleanly (the
/// run still ends with one `agent_end` and is recorded); a second signal exits at once.
pub async fn execute(plan: RunPlan) -> ExitCode {
    let mut signals = match Signals::watch() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("agent-lsp: cannot watch for Ctrl-C: {e}");
            return ExitCode::FAILURE;
        }
    };
    let renderer: Arc<dyn Renderer> = if plan.json {
        Arc::new(JsonRenderer)
    } else {
        Arc::new(HumanRenderer::default())
    };
    let prompt = plan.prompt.clone();
    let verbose = plan.verbose;
    let hub = plan.session.mcp.hub.clone();
    let session = match open_session(plan, renderer.clone()) {
        Ok(session) => session,
        Err(e) => {
            eprintln!("agent-lsp: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    if verbose {
        for path in &session.context_files {
            eprintln!("agent-lsp: context file {}", path.display());
        }
    }
    report_mcp(&session.tools).await;
    let tools = &session.tools;
    let expansion =
        (session.commands).expand(&prompt, |server, name| tools.mcp.has_prompt(server, name));
    let prompt = match expansion {
        Expansion::Text(text) => text,
        Expansion::Mcp {
            server,
            prompt,
            args,
        } => match tools.mcp.get_prompt(&server, &prompt, &args).await {
            Ok(text) => text,
            Err(e) => {
                eprintln!("agent-lsp: /{server}:{prompt}: {e}");
                return ExitCode::FAILURE;
            }
        },
        Expansion::Builtin(builtin) => {
            let done = run_builtin(&session, builtin).await;
            if let Some(hub) = hub {
                hub.shutdown().await;
            }
            return match done {
                Ok(outcome) => {
                    renderer.command(&outcome);
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("agent-lsp: {e}");
                    ExitCode::FAILURE
                }
            };
        }
    };
    if let Err(e) = session.start_run_with(AgentMessage::user_text(prompt)) {
        eprintln!("agent-lsp: {e}");
        return ExitCode::FAILURE;
    }
    let stopped_by = match signals.wait_or_abort(&session).await {
        Ok(stopped_by) => stopped_by,
        Err(code) => {
            // Exiting at once: what the run started in the background goes first.
            session.jobs.kill_now();
            return ExitCode::from(code);
        }
    };
    // The run is over, and so are its background jobs (each end shown before the summary).
    let _ = tokio::time::timeout(END_WITHIN, session.end_jobs()).await;
    if let Some(hub) = hub {
        hub.shutdown().await;
    }
    session.journal.collected().await;
    let Some((outcome, stopped)) = session.view.take_settled() else {
        eprintln!("agent-lsp: the run ended without settling");
        return ExitCode::FAILURE;
    };
    let run_usage = session.view.run_usage();
    let session_usage = SessionFile::usage(&session.record());
    let aborted = stopped_by.is_some() || outcome.aborted;
    let error = (outcome.error.clone())
        .or_else(|| stopped.as_ref().map(|s| s.message.clone()))
        .filter(|_| !aborted);
    let stop_reason = stopped.as_ref().map(|s| s.guard);
    renderer.settled(aborted, stop_reason, &run_usage, &session_usage);
    // The one listener records the session: it could not be written.
    if let Some(RunFailure::Listener(e)) = &outcome.failure {
        eprintln!("agent-lsp: {e}");
        return ExitCode::FAILURE;
    }
    if aborted {
        return ExitCode::from(stopped_by.unwrap_or(EXIT_INTERRUPTED));
    }
    match error {
        Some(e) => {
            eprintln!("agent-lsp: {e}");
            ExitCode::FAILURE
        }
        None => ExitCode::SUCCESS,
    }
}

/// `/model` and `/compact` as the whole run.
async fn run_builtin(
    session: &Arc<Session<CliView>>,
    builtin: Builtin,
) -> Result<BuiltinOutcome, CommandError> {
    match builtin {
        Builtin::Model { spec } => run_model(
            spec.as_deref(),
            &session.agent,
            &mut session.record(),
            &session.controls,
        ),
        Builtin::Compact { instructions } => {
            // A fresh session runs nothing else: a refusal can only say it is busy.
            let compaction = (session.compact(instructions))
                .map_err(|_| CommandError::Compact(CompactError::Busy))?;
            (compaction.await)
                .map(|result| BuiltinOutcome::Compacted(Box::new(result)))
                .map_err(CommandError::from)
        }
        Builtin::McpTrust => Err(CommandError::Unavailable(
            "/mcp-trust asks in an editor; `agent-lsp run` starts a project's .mcp.json servers \
             with --trust-project-mcp",
        )),
    }
}

/// SIGINT and SIGTERM, watched from before the run starts (so neither kills the process).
struct Signals {
    interrupt: Signal,
    terminate: Signal,
}

impl Signals {
    fn watch() -> std::io::Result<Signals> {
        Ok(Signals {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
        })
    }

    /// The exit status of the next signal.
    async fn next(&mut self) -> u8 {
        tokio::select! {
            _ = self.interrupt.recv() => EXIT_INTERRUPTED,
            _ = self.terminate.recv() => EXIT_TERMINATED,
        }
    }

    /// Waits for the session's run to settle: `Ok` with the exit status of the signal that
    /// aborted it, if any; `Err` with the status of a second signal, to exit without waiting.
    async fn wait_or_abort(&mut self, session: &Session<CliView>) -> Result<Option<u8>, u8> {
        let code = tokio::select! {
            () = session.wait_idle() => return Ok(None),
            code = self.next() => code,
        };
        session.abort();
        tokio::select! {
            () = session.wait_idle() => Ok(Some(code)),
            code = self.next() => Err(code),
        }
    }
}

/// One stderr line per MCP server once they started (or failed), and what needs the user.
async fn report_mcp(tools: &SessionTools) {
    if tools.mcp.is_empty() {
        return;
    }
    tools.mcp.ready().await;
    for status in tools.mcp.status() {
        let line = match (status.state, &status.error) {
            (State::Ready, _) => format!("started with {} tools", status.tools.len()),
            (State::Failed, Some(error)) => format!("failed: {error}"),
            (State::Disabled, _) => "disabled".into(),
            (State::Untrusted, _) => "not started: the project's .mcp.json is not trusted (run \
                                       with --trust-project-mcp to start its servers)"
                .into(),
            (state, _) => format!("{state:?}"),
        };
        eprintln!("agent-lsp: MCP server {}: {line}", status.name);
    }
}

fn open_session(
    plan: RunPlan,
    renderer: Arc<dyn Renderer>,
) -> anyhow::Result<Arc<Session<CliView>>> {
    let session = assemble(plan.session, &Headless).map_err(|e| match e {
        SetupError::Workspace { cwd, source } => anyhow::Error::new(source).context(format!(
            "cannot open the workspace {} (or a directory given with --add-dir)",
            cwd.display()
        )),
        other => other.into(),
    })?;
    for error in &session.mcp_errors {
        eprintln!("agent-lsp: {error}");
    }
    for warning in &session.warnings {
        eprintln!("agent-lsp: {warning}");
    }
    let untrusted = session.parts.gate.permissions().untrusted();
    if !untrusted.is_empty() {
        let rules: Vec<&str> = untrusted.iter().map(|u| u.rule.as_str()).collect();
        eprintln!(
            "agent-lsp: the project's settings allow {} without asking, but you have not \
             trusted them yet, so they do not apply here: answer the question about them in an \
             editor or ACP session of this project",
            rules.join(", ")
        );
    }
    let sandbox = &session.parts.sandbox;
    let degraded = sandbox.confines()
        && (!sandbox.availability.is_available()
            || !sandbox.not_isolated(&sandbox.policy()).is_empty());
    if plan.verbose || degraded {
        eprintln!("agent-lsp: {}", sandbox.status_line());
    }
    if plan.trust_project_hooks {
        session.parts.hooks.trust_for_session();
    } else if session.parts.hooks.untrusted() {
        eprintln!(
            "agent-lsp: the project's hooks (.agent-lsp/settings.json, settings.local.json) do \
             not run: they are not trusted (run with --trust-project-hooks to run them)"
        );
    }
    Ok(Session::create(
        session,
        CliView::new(renderer, plan.approval),
    ))
}

/// The prompt words joined, or stdin for `-`; refuses an empty prompt before any work starts.
fn prompt_text(words: &[String]) -> anyhow::Result<String> {
    let prompt = if words == ["-"] {
        std::io::read_to_string(std::io::stdin()).context("cannot read the prompt from stdin")?
    } else {
        words.join(" ")
    };
    if prompt.trim().is_empty() {
        bail!("the prompt is empty");
    }
    Ok(prompt)
}
