//! What every tool shares: the context (workspace, read tracker, bash settings), the
//! [`AgentTool`] around a tool's body, and result builders.

use std::path::PathBuf;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::ToolOptions;
use super::args::parse_args;
pub use super::error::{ABORTED, check_abort, conflict_text, ws_error};
use super::jobs::Jobs;
pub use super::process::BashSettings;
pub use super::text::{detect_crlf, normalize_to_lf, restore_line_endings, strip_bom};
use super::tracker::{FileMutationQueue, MutationGuard, ReadTracker};
use super::workspace::{Unsaved, Workspace};
use crate::agent::message::ToolDeclaration;
use crate::agent::tool::{
    AgentTool, AgentToolResult, ExecutionMode, ToolError, ToolInput, ToolUpdater,
};

/// Shared by the tools one [`super::coding_tools`] call builds.
#[derive(Clone)]
pub struct ToolContext {
    pub ws: Arc<dyn Workspace>,
    pub tracker: Arc<ReadTracker>,
    pub queue: &'static FileMutationQueue,
    pub bash: BashSettings,
    /// The session's background jobs (`bash` with `background`, `bash_output`, `bash_kill`).
    pub jobs: Arc<Jobs>,
}

impl ToolContext {
    pub fn new(ws: Arc<dyn Workspace>, opts: &ToolOptions) -> Self {
        ToolContext {
            ws,
            tracker: opts.read_tracker.clone().unwrap_or_default(),
            queue: FileMutationQueue::global(),
            bash: BashSettings {
                shell: opts.shell.clone(),
                command_prefix: opts.command_prefix.clone(),
                env: opts.env.clone(),
                spill_dir: opts.spill_dir.clone(),
                sandbox: opts.sandbox.clone(),
            },
            jobs: opts.jobs.clone().unwrap_or_default(),
        }
    }

    /// The file a mutating tool (`write`, `edit`) changes, resolved, with its turn in the
    /// mutation queue (held until the guard drops); fails with `ABORTED` when `cancel` fires
    /// while waiting for it.
    pub async fn lock_file(
        &self,
        path: &str,
        cancel: &CancellationToken,
    ) -> Result<(PathBuf, MutationGuard), ToolError> {
        let abs = self.ws.resolve(path).map_err(|e| ws_error(path, e))?;
        match self.queue.lock_or_cancel(&abs, cancel).await {
            Some(turn) => Ok((abs, turn)),
            None => Err(ToolError::new(ABORTED)),
        }
    }
}

/// Builds a declaration from a name, a description and a JSON Schema.
pub fn declaration(name: &str, description: &str, parameters: Value) -> ToolDeclaration {
    ToolDeclaration {
        name: name.to_string(),
        description: description.to_string(),
        parameters,
        constrained_sampling: None,
    }
}

/// A tool's arguments as a struct, and what the tool does with them: [`TypedTool`] makes an
/// [`AgentTool`] of it, which reads the struct once from the call's validated JSON.
pub trait ToolArgs: DeserializeOwned + Send + 'static {
    /// What the tool works on ([`ToolContext`] for the coding tools).
    type State: Clone + Send + Sync + 'static;
    /// The file tools run beside each other: writes to one file are serialised by the
    /// mutation queue.
    const MODE: Option<ExecutionMode> = Some(ExecutionMode::Parallel);
    /// A call cancelled before it starts fails with `ABORTED`, as pi's tools check their
    /// signal first.
    const ABORTS_BEFORE_START: bool = true;

    /// The name the model calls the tool by.
    const NAME: &'static str;
    /// What the model reads about the tool.
    const DESCRIPTION: &'static str;

    /// The JSON Schema of the arguments: the properties `Self` reads (a unit test checks
    /// each tool's pair).
    fn parameters(state: &Self::State) -> Value;

    /// What the model is told about the tool.
    fn declaration(state: &Self::State) -> ToolDeclaration {
        declaration(Self::NAME, Self::DESCRIPTION, Self::parameters(state))
    }

    /// pi's `prepareArguments`: a shim on the raw arguments, before validation.
    fn prepare_arguments(args: Value) -> Value {
        args
    }

    /// The call's work, once its arguments are read.
    fn run(
        self,
        state: Self::State,
        call: Call,
    ) -> impl Future<Output = Result<AgentToolResult, ToolError>> + Send + 'static;
}

/// What a call gets from the loop besides its arguments.
pub struct Call {
    pub id: String,
    pub cancel: CancellationToken,
    pub on_update: ToolUpdater,
}

/// The [`AgentTool`] whose arguments are `A`.
pub struct TypedTool<A: ToolArgs> {
    state: A::State,
    decl: ToolDeclaration,
}

impl<A: ToolArgs> TypedTool<A> {
    pub fn new(state: A::State) -> Self {
        TypedTool {
            decl: A::declaration(&state),
            state,
        }
    }
}

impl<A: ToolArgs> AgentTool for TypedTool<A> {
    fn declaration(&self) -> &ToolDeclaration {
        &self.decl
    }

    fn execution_mode(&self) -> Option<ExecutionMode> {
        A::MODE
    }

    fn prepare_arguments(&self, args: Value) -> Value {
        A::prepare_arguments(args)
    }

    fn execute(&self, input: ToolInput) -> BoxFuture<'static, Result<AgentToolResult, ToolError>> {
        let state = self.state.clone();
        Box::pin(async move {
            let args = parse_args::<A>(input.args)?;
            if A::ABORTS_BEFORE_START {
                check_abort(&input.cancel)?;
            }
            let call = Call {
                id: input.tool_call_id,
                cancel: input.cancel,
                on_update: input.on_update,
            };
            args.run(state, call).await
        })
    }
}

/// Runs `work` on the blocking pool; if it panics, the call fails with `{tool} failed: …`.
pub async fn blocking<T: Send + 'static>(
    tool: &str,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ToolError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ToolError::new(format!("{tool} failed: {e}")))
}

/// Where a listing tool (`grep`, `find`, `ls`) looks: `path` as the model wrote it (the
/// workspace root when absent), and resolved.
pub fn listing_start(
    ws: &dyn Workspace,
    path: Option<String>,
) -> Result<(String, PathBuf), ToolError> {
    let path = path.unwrap_or_else(|| ".".into());
    let resolved = ws
        .resolve(&path)
        .map_err(|e| ToolError::new(e.to_string()))?;
    Ok((path, resolved))
}

/// A mutating tool's result text, with the note saying the change is not on disk when it was
/// left unsaved in an editor buffer.
pub fn with_unsaved_note(text: String, unsaved: Option<Unsaved>, path: &str) -> String {
    match unsaved {
        None => text,
        Some(why) => format!("{text}\n\n{}", why.note(path)),
    }
}

/// The count limit's notice and `details` entry (pi's words) of a listing cut at `limit`:
/// `items` names what is counted ("results"), `hint` ends the advice.
pub fn count_limit(
    limit: usize,
    items: &str,
    key: &'static str,
    hint: &str,
) -> (String, &'static str, Value) {
    let notice = format!(
        "{limit} {items} limit reached. Use limit={} for more{hint}",
        limit * 2
    );
    (notice, key, Value::from(limit))
}

/// A listing (`grep`, `find`, `ls`) cut to pi's 50 KB, with pi's bracketed notices and the
/// matching `details` keys, in the order the notices are added.
pub struct Listing {
    content: String,
    notices: Vec<String>,
    details: Map<String, Value>,
}

impl Listing {
    /// Head-truncates `lines`; `count_limit` is the count limit's notice and `details` entry,
    /// when that limit was reached (it comes first, as in pi).
    pub fn new(lines: &[String], count_limit: Option<(String, &str, Value)>) -> Self {
        use super::truncate::{DEFAULT_MAX_BYTES, Limits, format_size, truncate_head};
        let trunc = truncate_head(
            &lines.join("\n"),
            Limits {
                max_lines: usize::MAX,
                max_bytes: DEFAULT_MAX_BYTES,
            },
        );
        let mut listing = Listing {
            content: trunc.content.clone(),
            notices: Vec::new(),
            details: Map::new(),
        };
        if let Some((notice, key, value)) = count_limit {
            listing.note(notice, key, value);
        }
        if trunc.truncated {
            let notice = format!("{} limit reached", format_size(DEFAULT_MAX_BYTES));
            listing.note(notice, "truncation", serde_json::json!(trunc));
        }
        listing
    }

    pub fn note(&mut self, notice: String, key: &str, value: Value) {
        self.notices.push(notice);
        self.details.insert(key.to_string(), value);
    }

    pub fn into_result(self) -> AgentToolResult {
        let mut out = self.content;
        if !self.notices.is_empty() {
            out.push_str(&format!("\n\n[{}]", self.notices.join(". ")));
        }
        AgentToolResult {
            details: Some(Value::Object(self.details)),
            ..AgentToolResult::text(out)
        }
    }
}
