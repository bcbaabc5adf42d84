//! Session setup: the one place a session is assembled, for every front end (`agent-lsp run`,
//! the daemon, and the ones to come).
//!
//! A front end says what it wants in a [`SessionSpec`] and what it adds of its own through
//! [`FrontEnd`]; [`assemble`] resolves the model, opens or creates the session file, opens the
//! workspace and builds the loop's options (system prompt, tools, restored messages, stream
//! options). The front end then only adds its hooks (approval) and listeners (rendering,
//! forwarding) and runs the agent. Whatever every session needs belongs here, not in a front end.

pub mod approval;
pub mod commands;
pub mod compaction;
pub mod controls;
pub mod hooks;
pub mod journal;
pub mod loop_guard;
pub mod mcp;
pub mod permissions;
pub mod plan;
pub mod resources;
pub mod session;
pub mod stats;
pub mod subagent;
mod system_prompt;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::agent::AgentOptions;
use crate::agent::declare::declarations;
use crate::agent::message::{AgentMessage, MessageContent, ThinkingLevel};
use crate::agent::stream_contract::{StreamFn, StreamOptions};
use crate::agent::tool::ToolRef;
use crate::agent::transcript::initial_system_message;
use crate::compaction::{CompactionOptions, CompactionSettings};
use crate::mcp::config::ConfigError;
use crate::model_registry::{EnvSource, ModelError, ResolvedModel, clamp_thinking, resolve_model};
use crate::sandbox::{self, Sandbox, SandboxParts, SandboxSetting};
use crate::store::{ForkPoint, SessionContext, SessionError, SessionFile, SessionStore};
use crate::tools::web::{self, FetchSettings};
use crate::tools::{
    AskHandle, AskUserTool, DiskWorkspace, Jobs, ToolOptions, Workspace, coding_tools,
};
use permissions::{PermissionSpec, Permissions};

pub use approval::ApprovalGate;
pub use commands::{Builtin, CommandInfo, Expansion, SessionCommands};
pub use compaction::{
    CompactError, Compacted, CompactionEnd, CompactionEvent, Compactor, CompactorParts,
    SharedRecord,
};
pub use controls::{LiveSettings, ModelInfo, SessionControls, SwitchError};
pub use hooks::{HookRun, SessionHooks};
pub use journal::Journal;
pub use loop_guard::{GuardEvent, LoopGuard, LoopLimits};
pub use mcp::{McpSource, McpSpec, SessionTools};
pub use plan::{Plan, PlanUpdate, TodoItem, TodoStatus};
pub use system_prompt::system_prompt;

/// What a front end asks for.
pub struct SessionSpec {
    /// The project directory: where the tools work and the session is filed. A resumed session
    /// keeps its own directory when that still exists, unless `cwd_is_explicit`.
    pub cwd: PathBuf,
    pub cwd_is_explicit: bool,
    /// Further directories the tools may read and change.
    pub extra_roots: Vec<PathBuf>,
    pub model: ModelChoice,
    /// Requested reasoning effort; `None` keeps the session's (off for a new one). Either is
    /// clamped to what the model accepts.
    pub thinking: Option<ThinkingLevel>,
    pub record: RecordChoice,
    pub stream_fn: Arc<dyn StreamFn>,
    /// The environment models and keys are resolved from.
    pub env: EnvSource,
    /// The MCP servers whose tools the session offers.
    pub mcp: McpSpec,
    /// The turn limit and the repeated-call guard.
    pub limits: LoopLimits,
    /// Load `AGENTS.md`/`CLAUDE.md` into the system prompt (`--no-context-files` turns it off).
    pub context_files: bool,
    /// The front end's compaction settings, over the user's `settings.json`.
    pub compaction: CompactionOptions,
    /// The command sandbox (issue 19): `sandbox` and `sandboxNetwork`, `run --sandbox`, ACP modes.
    pub sandbox: SandboxSetting,
    /// The permission rules (issue 35): whether the settings files are read, the front end's.
    pub permissions: PermissionSpec,
}

impl SessionSpec {
    /// A session in `cwd` with exactly this model, recorded in memory only, with nothing from
    /// the user's environment or configuration (no keys, MCP servers or context files): the
    /// demo's and the tests'.
    pub fn isolated(cwd: PathBuf, model: ResolvedModel, stream_fn: Arc<dyn StreamFn>) -> Self {
        SessionSpec {
            cwd,
            cwd_is_explicit: true,
            extra_roots: Vec::new(),
            model: ModelChoice::Given(Box::new(model)),
            thinking: None,
            record: RecordChoice::New(None),
            stream_fn,
            env: EnvSource::default(),
            mcp: McpSpec::default(),
            limits: LoopLimits::default(),
            context_files: false,
            compaction: CompactionOptions::default(),
            sandbox: SandboxSetting::default(),
            permissions: PermissionSpec::default(),
        }
    }
}

/// Which model the session talks to.
pub enum ModelChoice {
    /// `provider/id` from the registry; `None`: the resumed session's model, else the default.
    Named(Option<String>),
    /// A model the front end resolved itself (the daemon's, once per connection; the demo's).
    Given(Box<ResolvedModel>),
    /// The resumed session's own model when it still resolves, else this one (`provider/id`;
    /// `None`: the registry's default).
    Default(Option<String>),
}

/// Where the session is recorded.
pub enum RecordChoice {
    /// A new session file in this store; `None`: kept in memory only.
    New(Option<SessionStore>),
    /// A new session file at exactly this path (pi's `--session <path>` for a missing file).
    NewAt(PathBuf),
    /// Continue this stored session: its messages, model and thinking level.
    Resume(SessionFile),
    /// Continue in a copy of this stored session, made in the store once everything resolved.
    Fork(SessionStore, SessionFile),
}

/// What a front end adds to every session it opens; each method defaults to the headless run's.
pub trait FrontEnd {
    /// The tools' workspace over the session's directories.
    fn workspace(&self, disk: DiskWorkspace) -> Arc<dyn Workspace> {
        Arc::new(disk)
    }

    /// A paragraph after the system prompt.
    fn prompt_note(&self) -> Option<&str> {
        None
    }

    /// Tools besides the coding tools, over the session's workspace (`options`: how the coding
    /// tools are built, its sandbox included); one named like a coding tool replaces it.
    fn extra_tools(&self, _workspace: &Arc<dyn Workspace>, _options: &ToolOptions) -> Vec<ToolRef> {
        Vec::new()
    }
}

/// The front end with nothing of its own: files on disk, the coding tools.
pub struct Headless;

impl FrontEnd for Headless {}

/// What a session is made of: built by [`assemble`], moved whole into the
/// [`session::Session`] that drives it.
pub struct SessionParts {
    /// The persisted transcript (pi's JSONL v3), appended at every `message_end`, with any model
    /// or thinking change already recorded; shared with the compactor.
    pub record: SharedRecord,
    /// The canonical project directory.
    pub cwd: PathBuf,
    pub workspace: Arc<dyn Workspace>,
    /// The session's tools as they change, its MCP servers' included (started in the
    /// background).
    pub tools: Arc<SessionTools>,
    /// The live model and thinking level (switched through it, also mid-run).
    pub controls: Arc<SessionControls>,
    /// The turn limit and the repeated-call guard (their events, why a run was stopped).
    pub guard: Arc<LoopGuard>,
    /// The session's slash commands (templates, skills, built-ins; MCP prompts come from
    /// `tools`).
    pub commands: SessionCommands,
    /// The context files in the system prompt, in its order.
    pub context_files: Vec<PathBuf>,
    /// The session's compactions (`agent/compact`, `/compact`, and the automatic ones); the
    /// session attaches its agent and observes its events.
    pub compactor: Arc<Compactor>,
    /// The effect journal of the session's tools, told each run's id.
    pub journal: Arc<Journal>,
    /// The approval gate of the session's tool calls (its "always" answers, over the sandbox).
    pub gate: Arc<ApprovalGate>,
    /// The commands' sandbox: its policy, whether this kernel can enforce it, and the calls the
    /// user approved to run outside it (the approval gates record those).
    pub sandbox: Arc<Sandbox>,
    /// The plan the model keeps with `todo_write` (restored from the session file).
    pub plan: Arc<Plan>,
    /// The session's background jobs (`bash` with `background: true`), which end with it
    /// ([`session::Session::end_jobs`]).
    pub jobs: Arc<Jobs>,
    /// The user's hooks (the project's once trusted).
    pub hooks: Arc<SessionHooks>,
}

/// A session ready to run.
pub struct AssembledSession {
    /// Model, thinking level, system prompt, tools, restored messages and stream options; the
    /// front end adds its hooks before building the agent.
    pub options: AgentOptions,
    /// What the session keeps.
    pub parts: SessionParts,
    /// Broken MCP configuration files or entries (the rest still loaded).
    pub mcp_errors: Vec<ConfigError>,
    /// Configuration the session could not use (a broken `settings.json`), for the user.
    pub warnings: Vec<String>,
    /// How `ask_user` and the MCP servers' elicitations reach the user: connected to the front
    /// end when the session is created.
    pub ask: AskHandle,
    /// How the `task` tool's subagents reach the session: connected when it is created.
    pub children: subagent::ParentHandle,
}

/// Why a session could not be set up; front ends word these their own way.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error("cannot open the workspace {} or one of its extra directories", cwd.display())]
    Workspace {
        cwd: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Record(#[from] SessionError),
}

/// Builds the session. Nothing is created on disk before the model and the workspace resolved,
/// so a failed start leaves no empty session file.
pub fn assemble(
    spec: SessionSpec,
    front_end: &dyn FrontEnd,
) -> Result<AssembledSession, SetupError> {
    let stored = match &spec.record {
        RecordChoice::Resume(file) | RecordChoice::Fork(_, file) => Some(file),
        RecordChoice::New(_) | RecordChoice::NewAt(_) => None,
    };
    let context = stored.map(SessionFile::context).unwrap_or_default();
    let resolved = match spec.model {
        ModelChoice::Given(resolved) => *resolved,
        ModelChoice::Named(name) => {
            let name = name.or_else(|| {
                (context.model.as_ref()).map(|m| format!("{}/{}", m.provider, m.model_id))
            });
            resolve_model(name.as_deref(), &spec.env)?
        }
        ModelChoice::Default(default) => {
            let own = (context.model.as_ref()).map(|m| format!("{}/{}", m.provider, m.model_id));
            match own.map(|own| resolve_model(Some(&own), &spec.env)) {
                Some(Ok(own)) => own,
                _ => resolve_model(default.as_deref(), &spec.env)?,
            }
        }
    };
    let thinking = clamp_thinking(
        &resolved.model,
        spec.thinking.unwrap_or(context.thinking_level),
    );
    let cwd = match stored.map(|file| Path::new(file.cwd())) {
        Some(own) if !spec.cwd_is_explicit && own.is_dir() => own.to_path_buf(),
        _ => spec.cwd,
    };
    let disk = DiskWorkspace::new(&cwd, spec.extra_roots)
        .map_err(|source| SetupError::Workspace { cwd, source })?;
    let cwd = disk.root().to_path_buf();
    let mut writable = vec![cwd.clone()];
    writable.extend(disk.roots().extra().iter().cloned());
    let workspace = front_end.workspace(disk);
    let resumed = matches!(spec.record, RecordChoice::Resume(_));
    let continued = matches!(
        spec.record,
        RecordChoice::Resume(_) | RecordChoice::Fork(..)
    );
    let mut record = match spec.record {
        RecordChoice::New(None) => SessionFile::in_memory(&cwd),
        RecordChoice::New(Some(store)) => store.create(&cwd, None)?,
        RecordChoice::NewAt(path) => SessionFile::create_at(&path, &cwd)?,
        RecordChoice::Resume(file) => file,
        RecordChoice::Fork(store, source) => store.fork(&source, ForkPoint::Leaf)?.0,
    };
    if resumed {
        // Interrupted calls get the journal's statement before anything else is recorded.
        journal::recover::settle_interrupted(&mut record)?;
    }
    record_settings(&mut record, &context, &resolved, thinking)?;
    let record = Arc::new(std::sync::Mutex::new(record));
    let plan = Plan::new(record.clone());
    let journal = Arc::new(Journal::new(record.clone(), &cwd));
    let session_id = (record.lock().map(|r| r.id().to_string())).unwrap_or_default();
    let (user_sandbox, sandbox_warning) =
        match sandbox::user_sandbox(spec.env.config_dir().as_deref()) {
            Ok(user) => (user, None),
            Err(e) => (sandbox::UserSandbox::default(), Some(e)),
        };
    let sandbox = Sandbox::new(SandboxParts {
        setting: spec.sandbox.with_user(&user_sandbox),
        writable_roots: writable,
        temp_dir: Sandbox::temp_dir_for(&session_id),
        layers: sandbox::machine_layers(&spec.env),
        secret_env: crate::model_registry::secret_env_names(&spec.env),
        own_paths: sandbox::own_paths(&spec.env),
        quarantine: sandbox::quarantine_dir(&spec.env, &session_id),
        hidden: sandbox::hidden_paths(&spec.env),
    });
    let jobs = Jobs::new();
    let controls = Arc::new(SessionControls::new(resolved, thinking, spec.env.clone()));
    let options = ToolOptions {
        env: vec![("AGENT_LSP_SESSION_ID".into(), session_id.clone())],
        sandbox: Some(sandbox.clone()),
        jobs: Some(jobs.clone()),
        recorder: journal.recorder(&workspace),
        // One tracker for the coding tools and a front end's tools that write (`lsp_rename`).
        read_tracker: Some(Default::default()),
        ..ToolOptions::default()
    };
    // A front end's `bash` that runs commands elsewhere (ACP's client terminals) gets the
    // options too: a command the sandbox confines runs here, sandboxed, never outside it.
    let extra_tools = front_end.extra_tools(&workspace, &options);
    let web = FetchSettings {
        spill_dir: options.spill_dir.clone(),
    };
    let mut tools = coding_tools(workspace.clone(), options);
    tools.push(Arc::new(plan.tool()));
    let ask = AskHandle::default();
    tools.push(Arc::new(AskUserTool::new(ask.clone())));
    // The web tools, for every front end: `web_search` only with a search service configured.
    let search = web::search_config(&spec.env);
    tools.extend(web::web_tools(web, search.backend));
    let children = subagent::ParentHandle::default();
    let agent_dirs = subagent::custom::agent_dirs(&cwd, spec.env.config_dir().as_deref());
    let (agents, agent_warnings) = subagent::custom::load(subagent::builtin_agents(), &agent_dirs);
    let child_parts = Arc::new(subagent::ChildParts {
        stream_fn: spec.stream_fn.clone(),
        controls: controls.clone(),
        tools: Default::default(),
        cwd: cwd.clone(),
        record: record.clone(),
        parent: children.clone(),
        agents,
        max_turns: subagent::DEFAULT_CHILD_TURNS,
        env: spec.env.clone(),
        journal: journal.clone(),
    });
    tools.push(Arc::new(subagent::TaskTool::new(child_parts.clone())));
    // A front end's tool replaces the coding tool of its name (ACP's `bash` in client terminals).
    for extra in extra_tools {
        tools.retain(|tool| tool.name() != extra.name());
        tools.push(extra);
    }
    let tools = journal.wrap(tools, &workspace, &jobs);
    let (tools, mcp_errors) = mcp::attach(&spec.mcp, &cwd, &spec.env, tools, &ask);
    let tools = Arc::new(tools);
    let _ = child_parts.tools.set(Arc::downgrade(&tools));
    let date = crate::store::time::iso_now();
    let today = date.get(..10).unwrap_or(&date);
    let mut options = AgentOptions::new(spec.stream_fn);
    options.model = controls.model();
    options.thinking_level = thinking;
    let guard = Arc::new(LoopGuard::new(spec.limits));
    let (settings, mut warnings) = compaction_settings(&spec.env, &spec.compaction);
    warnings.extend(sandbox_warning);
    warnings.extend(agent_warnings);
    warnings.extend(search.warnings);
    warnings.extend(journal.collect_if_large(journal::gc::auto_limit(&spec.env)));
    let (permissions, rule_warnings) = Permissions::load(&spec.permissions, &cwd, &spec.env);
    warnings.extend(rule_warnings);
    let found = resources::load(&cwd, &spec.env, spec.context_files);
    let mut prompt = system_prompt(&cwd, today, front_end.prompt_note());
    prompt.push_str(&resources::prompt_sections(&found));
    let compactor = Arc::new(Compactor::new(CompactorParts {
        settings,
        controls: controls.clone(),
        stream_fn: options.stream_fn.clone(),
        record: record.clone(),
        tools: tools.clone(),
        system_prompt: prompt.clone(),
        session_id: session_id.clone(),
    }));
    let live_model = Some(controls.prepare_request_hook());
    options.hooks.prepare_request = Some(compactor.prepare_request_hook(live_model));
    options.hooks.recover_error = Some(compactor.recover_error_hook());
    options.hooks.get_api_key = Some(controls.api_key_hook());
    let hooks = Arc::new(SessionHooks::new(hooks::HookParts {
        cwd: cwd.clone(),
        session_id: session_id.clone(),
        record: record.clone(),
        env: &spec.env,
        tools: tools.clone(),
        controls: controls.clone(),
        resumed: continued,
    }));
    warnings.extend(hooks.problems().iter().cloned());
    if let Some(before) = hooks.pre_compact_hook() {
        compactor.before_each(before);
    }
    options.hooks.after_tool_call = hooks.after_tool_call_hook(guard.after_tool_call_hook());
    options.hooks.finish_turn = hooks.finish_turn_hook(guard.finish_turn_hook());
    let stored = record.lock().map(|r| r.messages()).unwrap_or_default();
    options.messages = with_initial_system_message(stored, &prompt, tools.base());
    options.system_prompt = Some(prompt);
    options.tools = tools.current();
    if !tools.mcp.is_empty() {
        options.hooks.prepare_run = Some(tools.prepare_run_hook());
        options.hooks.prepare_next_turn = Some(tools.next_turn_hook());
    }
    options.hooks.prepare_next_turn = hooks.next_turn_hook(options.hooks.prepare_next_turn.take());
    // The key comes per request with the model (`controls`), never from the template.
    options.stream_options = StreamOptions {
        session_id: Some(session_id),
        ..StreamOptions::default()
    };
    let parts = SessionParts {
        record,
        cwd,
        workspace,
        tools,
        controls,
        guard,
        context_files: found.context_files.iter().map(|f| f.path.clone()).collect(),
        commands: SessionCommands::new(&found),
        compactor,
        journal,
        gate: Arc::new(ApprovalGate::new(sandbox.clone(), Arc::new(permissions))),
        sandbox,
        plan,
        jobs,
        hooks,
    };
    Ok(AssembledSession {
        options,
        parts,
        mcp_errors,
        warnings,
        ask,
        children,
    })
}

/// pi's defaults, then the user's `settings.json`, then the front end's layer.
fn compaction_settings(
    env: &EnvSource,
    front_end: &CompactionOptions,
) -> (CompactionSettings, Vec<String>) {
    let mut settings = CompactionSettings::default();
    let mut warnings = Vec::new();
    match compaction::user_settings(env) {
        Ok(user) => settings.merge(&user),
        Err(e) => warnings.push(e),
    }
    settings.merge(front_end);
    (settings, warnings)
}

/// The stored messages of a session, with the system prompt and fixed tools first when the
/// session starts with a pure tool declaration (MCP tools that appeared before its first prompt):
/// the agent puts them first only when the transcript does not start with a system message, and
/// the first run's own initial message is never stored.
pub(crate) fn with_initial_system_message(
    mut messages: Vec<AgentMessage>,
    prompt: &str,
    tools: &[ToolRef],
) -> Vec<AgentMessage> {
    let declaration_only = matches!(messages.first(), Some(AgentMessage::System(s))
    if s.sections.is_none() && match &s.content {
        MessageContent::Text(text) => text.is_empty(),
        MessageContent::Blocks(blocks) => blocks.is_empty(),
    });
    if declaration_only
        && let Some(initial) = initial_system_message(Some(prompt), &declarations(tools))
    {
        messages.insert(0, AgentMessage::from(initial));
    }
    messages
}

/// Records a model or thinking level that differs from the session's, as pi does on a switch.
fn record_settings(
    record: &mut SessionFile,
    context: &SessionContext,
    resolved: &ResolvedModel,
    thinking: ThinkingLevel,
) -> Result<(), SessionError> {
    let model = &resolved.model;
    let current = (context.model.as_ref()).map(|m| (m.provider.as_str(), m.model_id.as_str()));
    if current != Some((model.provider.as_str(), model.id.as_str())) {
        record.append_model_change(&model.provider, &model.id)?;
    }
    if thinking != context.thinking_level {
        record.append_thinking_level(thinking)?;
    }
    Ok(())
}
