//! `agent-lsp run`: one prompt to settlement over the real loop, recorded in a session.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::Args;
use tokio::signal::unix::{Signal, SignalKind, signal};

use crate::agent::hooks::AgentHooks;
use crate::agent::message::{AgentMessage, ThinkingLevel};
use crate::agent::stream_contract::{StreamFn, StreamOptions};
use crate::agent::{Agent, AgentOptions, RunFailure, RunHandle, RunOutcome};
use crate::cli::approve::Approval;
use crate::cli::output::{HumanRenderer, JsonRenderer, Renderer};
use crate::cli::prompt::default_system_prompt;
use crate::cli::recorder::Recorder;
use crate::model_registry::{EnvSource, ResolvedModel, clamp_thinking, resolve_model};
use crate::session::{ForkPoint, SessionContext, SessionFile, SessionStore, time::iso_now};
use crate::tools::{DiskWorkspace, ToolOptions, Workspace, coding_tools};

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
    /// The prompt (several words are joined with spaces); `-` reads it from stdin.
    #[arg(required = true)]
    pub prompt: Vec<String>,
}

/// How one run is wired: everything `execute` needs, already resolved.
pub struct RunPlan {
    pub session: SessionFile,
    pub resolved: ResolvedModel,
    pub thinking: ThinkingLevel,
    pub cwd: PathBuf,
    /// Directories outside `cwd` the tools may touch (`--add-dir`).
    pub extra_roots: Vec<PathBuf>,
    pub approval: Approval,
    pub json: bool,
    pub stream_fn: Arc<dyn StreamFn>,
    pub prompt: String,
}

/// Resolves the arguments, runs, and maps the outcome to an exit status.
pub async fn run(args: RunArgs, env: EnvSource) -> ExitCode {
    let plan = match plan(args, &env) {
        Ok(plan) => plan,
        Err(e) => {
            eprintln!("agent-lsp: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    execute(plan).await
}

fn plan(args: RunArgs, env: &EnvSource) -> anyhow::Result<RunPlan> {
    let prompt = prompt_text(&args.prompt)?;
    let explicit_cwd = args.cwd.is_some();
    let cwd = match &args.cwd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let cwd = std::fs::canonicalize(&cwd)
        .with_context(|| format!("no such directory: {}", cwd.display()))?;
    // Nothing is created before the model resolves, so a failed start leaves no empty session.
    let origin = find_session(&args, env, &cwd)?;
    let context = match &origin {
        Origin::New(_) | Origin::NewAt(_) => SessionContext::default(),
        Origin::Existing(s) | Origin::ForkOf(_, s) => s.context(),
    };
    let (resolved, thinking) = choose_model(&args, &context, env)?;
    let mut session = match origin {
        Origin::New(None) => SessionFile::in_memory(&cwd),
        Origin::New(Some(store)) => store.create(&cwd, None)?,
        Origin::NewAt(path) => SessionFile::create_at(&path, &cwd)?,
        Origin::Existing(session) => session,
        Origin::ForkOf(store, source) => store.fork(&source, ForkPoint::Leaf)?.0,
    };
    let cwd = match Path::new(session.cwd()) {
        stored if !explicit_cwd && stored.is_dir() => stored.to_path_buf(),
        _ => cwd,
    };
    record_settings(&mut session, &context, &resolved, thinking)?;
    Ok(RunPlan {
        session,
        resolved,
        thinking,
        cwd,
        extra_roots: args.add_dir,
        approval: args.approve,
        json: args.json,
        stream_fn: crate::provider::default_stream_fn(),
        prompt,
    })
}

/// The model (`--model`, else the session's, else the default) and the thinking level
/// (`--thinking`, else the session's), clamped to what the model accepts.
fn choose_model(
    args: &RunArgs,
    context: &SessionContext,
    env: &EnvSource,
) -> anyhow::Result<(ResolvedModel, ThinkingLevel)> {
    let spec = args.model.clone().or_else(|| {
        context
            .model
            .as_ref()
            .map(|m| format!("{}/{}", m.provider, m.model_id))
    });
    let resolved = resolve_model(spec.as_deref(), env)?;
    let requested = match &args.thinking {
        Some(level) => ThinkingLevel::parse(level).with_context(|| {
            format!(
                "unknown thinking level {level:?}; use off, minimal, low, medium, high or xhigh"
            )
        })?,
        None => context.thinking_level,
    };
    let thinking = clamp_thinking(&resolved.model, requested);
    Ok((resolved, thinking))
}

/// Records a model or thinking level that differs from the session's, as pi does on a switch.
fn record_settings(
    session: &mut SessionFile,
    context: &SessionContext,
    resolved: &ResolvedModel,
    thinking: ThinkingLevel,
) -> anyhow::Result<()> {
    let model = &resolved.model;
    let current = context
        .model
        .as_ref()
        .map(|m| (m.provider.as_str(), m.model_id.as_str()));
    if current != Some((model.provider.as_str(), model.id.as_str())) {
        session.append_model_change(&model.provider, &model.id)?;
    }
    if thinking != context.thinking_level {
        session.append_thinking_level(thinking)?;
    }
    Ok(())
}

/// Where the run's session comes from.
enum Origin {
    /// A new session, stored (`Some`) or in memory (`None`, `--no-session`).
    New(Option<SessionStore>),
    /// A new session at this file (`--session PATH` for a file that does not exist yet).
    NewAt(PathBuf),
    Existing(SessionFile),
    /// `--fork`: a copy of this session, made once the model is known.
    ForkOf(SessionStore, SessionFile),
}

/// `a/b.jsonl`, `./x`: an argument meant as a file rather than a session id.
fn looks_like_path(arg: &str) -> bool {
    arg.contains(std::path::MAIN_SEPARATOR) || arg.ends_with(".jsonl")
}

fn find_session(args: &RunArgs, env: &EnvSource, cwd: &Path) -> anyhow::Result<Origin> {
    if args.no_session {
        return Ok(Origin::New(None));
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
            return Ok(Origin::NewAt(PathBuf::from(id)));
        }
        return Ok(Origin::Existing(store.open(id)?));
    }
    if let Some(id) = &args.fork {
        let source = store.open(id)?;
        return Ok(Origin::ForkOf(store, source));
    }
    if args.continue_
        && let Some(latest) = store.latest_for_cwd(cwd)?
    {
        return Ok(Origin::Existing(latest));
    }
    Ok(Origin::New(Some(store)))
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
    let started = build_agent(plan, renderer.clone()).and_then(|(agent, recorder)| {
        let handle = agent.prompt(vec![AgentMessage::user_text(prompt)])?;
        Ok((agent, recorder, handle))
    });
    let (agent, recorder, handle) = match started {
        Ok(started) => started,
        Err(e) => {
            eprintln!("agent-lsp: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    let (outcome, stopped_by) = match signals.wait_or_abort(&agent, handle).await {
        Settled::Run(outcome, stopped_by) => (outcome, stopped_by),
        Settled::ExitNow(code) => return ExitCode::from(code),
    };
    let (run_usage, session_usage) = recorder.totals();
    let aborted = stopped_by.is_some() || outcome.aborted;
    let error = outcome.error.clone().filter(|_| !aborted);
    renderer.settled(aborted, error.as_deref(), &run_usage, &session_usage);
    // The one listener is the recorder: the session could not be written.
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

/// SIGINT and SIGTERM, watched from before the run starts (so neither kills the process).
struct Signals {
    interrupt: Signal,
    terminate: Signal,
}

/// How waiting for a run ended.
enum Settled {
    /// The run settled; with the exit status of the signal that aborted it, if any.
    Run(RunOutcome, Option<u8>),
    /// A second signal arrived while the abort was settling: exit without waiting.
    ExitNow(u8),
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

    async fn wait_or_abort(&mut self, agent: &Agent, handle: RunHandle) -> Settled {
        let mut wait = Box::pin(handle.wait());
        let code = tokio::select! {
            outcome = &mut wait => return Settled::Run(outcome, None),
            code = self.next() => code,
        };
        agent.abort();
        tokio::select! {
            outcome = &mut wait => Settled::Run(outcome, Some(code)),
            code = self.next() => Settled::ExitNow(code),
        }
    }
}

fn build_agent(plan: RunPlan, renderer: Arc<dyn Renderer>) -> anyhow::Result<(Agent, Recorder)> {
    let workspace: Arc<dyn Workspace> = Arc::new(
        DiskWorkspace::new(&plan.cwd, plan.extra_roots.clone()).with_context(|| {
            format!(
                "cannot open the workspace {} (or a directory given with --add-dir)",
                plan.cwd.display()
            )
        })?,
    );
    let session_id = plan.session.id().to_string();
    let tools = coding_tools(
        workspace,
        ToolOptions {
            env: vec![("AGENT_LSP_SESSION_ID".into(), session_id.clone())],
            ..Default::default()
        },
    );
    let mut options = AgentOptions::new(plan.stream_fn.clone());
    options.model = plan.resolved.model.clone();
    options.thinking_level = plan.thinking;
    let date = iso_now();
    options.system_prompt = Some(default_system_prompt(&plan.cwd, &date[..10]));
    options.tools = tools;
    options.messages = plan.session.messages();
    options.hooks = AgentHooks {
        before_tool_call: plan.approval.hook(),
        ..Default::default()
    };
    options.stream_options = StreamOptions {
        api_key: plan.resolved.api_key.clone(),
        session_id: Some(session_id),
        ..Default::default()
    };
    let agent = Agent::new(options);
    let recorder = Recorder::new(plan.session);
    agent.subscribe(recorder.listener(&plan.resolved, renderer));
    Ok((agent, recorder))
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
