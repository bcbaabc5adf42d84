//! The coding tools (`read`, `write`, `edit`, `bash`, `grep`, `find`, `ls`) over a [`Workspace`].
//!
//! Names, parameter schemas, limits, notices and error texts follow pi's coding agent (models
//! are tuned on them). Every file access goes through a [`Workspace`] so the daemon can serve
//! reads from editor buffers and land writes as `workspace/applyEdit`; the disk implementation
//! is [`DiskWorkspace`]. Writes are atomic, keep line endings and permissions, refuse to clobber
//! a file changed since the agent read it ([`ReadTracker`]) and are serialised per file
//! ([`FileMutationQueue`]).
//!
//! Directory walks (`grep`, `find`, `ls`) read the disk below a resolved path directly, with
//! [`Workspace::open_documents`] overlaying it, so they stay fast on large trees.
//!
//! Differences from pi, on purpose: writes are atomic and conflict-checked; `grep`/`find` use
//! ripgrep's libraries in-process (no `rg`/`fd` download); `read` attaches images as they are
//! (no resizing to 2000×2000, no BMP conversion; images over [`read::MAX_IMAGE_BYTES`] are
//! refused with an explanation); truncation `details` omit the duplicated `content` text.

mod args;
mod ask_user;
mod bash;
mod bash_jobs;
mod bash_output;
pub mod beneath;
mod common;
pub mod content;
pub(crate) mod diff;
mod disk;
mod edit;
mod edit_match;
mod error;
mod find;
mod grep;
mod hosted_job;
mod image;
mod job;
mod job_host;
pub mod jobs;
mod ls;
pub mod paths;
mod preview;
mod process;
pub mod question;
pub mod read;
pub mod recorder;
mod text;
mod tracker;
pub mod truncate;
pub(crate) mod walk;
pub mod web;
pub mod workspace;
mod write;

use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::agent::tool::ToolRef;

#[cfg(test)]
pub(crate) use args::assert_args_match_schema;
pub(crate) use args::count as count_arg;
pub use ask_user::ASK_USER;
pub use bash::{parse_timeout, run_command};
pub use bash_jobs::{BASH_KILL, BASH_OUTPUT, started};
pub use common::{BashSettings, Call, ToolArgs, ToolContext, TypedTool, blocking};
pub use job_host::{HostExit, JobHost, Pulled};
pub use jobs::{JobError, JobInfo, JobStatus, Jobs};
// The edit a call would make, for front ends that show whole-file diffs (ACP).
pub(crate) use common::{normalize_to_lf, strip_bom};
pub use content::{Capture, ContentHash, ContentId};
pub(crate) use edit::{parse_edits, prepare_edit_arguments};
pub(crate) use edit_match::apply_edits;
pub use preview::{ToolPreview, preview};
pub use question::{AskHandle, Question, QuestionOption, UserAnswer, UserChannel};
pub use tracker::{FileMutationQueue, ReadTracker};
pub use workspace::{
    DiskWorkspace, FileSnapshot, Fingerprint, Unsaved, Workspace, WorkspaceError, WriteOutcome,
    WriteRequest,
};

/// The coding tools, each the [`AgentTool`](crate::agent::tool::AgentTool) of its arguments.
pub type ReadTool = TypedTool<read::ReadArgs>;
pub type BashTool = TypedTool<bash::BashArgs>;
pub type EditTool = TypedTool<edit::EditArgs>;
pub type WriteTool = TypedTool<write::WriteArgs>;
pub type GrepTool = TypedTool<grep::GrepArgs>;
pub type FindTool = TypedTool<find::FindArgs>;
pub type LsTool = TypedTool<ls::LsArgs>;
/// The tool through which the model asks the user (`question.rs`: how it reaches them).
pub type AskUserTool = TypedTool<ask_user::AskUserArgs>;
pub type BashOutputTool = TypedTool<bash_jobs::BashOutputArgs>;
pub type BashKillTool = TypedTool<bash_jobs::BashKillArgs>;

/// The seven tool names, in pi's order.
pub const ALL_TOOLS: [&str; 7] = ["read", "bash", "edit", "write", "grep", "find", "ls"];

/// The tools of `bash`'s background jobs, built after the seven.
pub const JOB_TOOLS: [&str; 2] = [BASH_OUTPUT, BASH_KILL];

/// pi's default active set.
pub const DEFAULT_TOOLS: [&str; 4] = ["read", "bash", "edit", "write"];

/// How [`coding_tools`] builds the tools.
#[derive(Clone, Debug, Default)]
pub struct ToolOptions {
    /// Tool names to build; `None` builds all seven. Unknown names are ignored.
    pub only: Option<Vec<String>>,
    /// The shell for `bash` (`None`: `$SHELL` if it is bash, else `/bin/bash`, else `/bin/sh`).
    pub shell: Option<PathBuf>,
    /// Lines prepended to every `bash` command (pi's `commandPrefix`).
    pub command_prefix: Option<String>,
    /// Extra environment for `bash` (pi adds `PI_SESSION_ID` and friends).
    pub env: Vec<(String, String)>,
    /// Where `bash` spills full output; `None`: the system temp dir.
    pub spill_dir: Option<PathBuf>,
    /// Shared read tracker; `None`: a fresh one for these tools.
    pub read_tracker: Option<Arc<ReadTracker>>,
    /// The command sandbox for `bash` (issue 19); `None`: unsandboxed, as before.
    pub sandbox: Option<Arc<crate::sandbox::Sandbox>>,
    /// The session's background jobs; `None`: a registry of these tools' own.
    pub jobs: Option<Arc<Jobs>>,
    /// The session's journal, for a front end's tool that changes files (`lsp_rename`);
    /// `None`: not journaled.
    pub recorder: Option<Arc<dyn recorder::ChangeRecorder>>,
}

/// Builds the coding tools over `ws` (the seven and the job tools unless `opts.only` selects a
/// subset). The tools share one [`ReadTracker`], one [`Jobs`] registry and the process-wide
/// [`FileMutationQueue`].
pub fn coding_tools(ws: Arc<dyn Workspace>, opts: ToolOptions) -> Vec<ToolRef> {
    let ctx = ToolContext::new(ws, &opts);
    let wanted = |name: &str| {
        opts.only
            .as_ref()
            .is_none_or(|only| only.iter().any(|n| n == name))
    };
    let mut tools: Vec<ToolRef> = Vec::new();
    for name in ALL_TOOLS.into_iter().chain(JOB_TOOLS) {
        if !wanted(name) {
            continue;
        }
        let tool: ToolRef = match name {
            "read" => Arc::new(ReadTool::new(ctx.clone())),
            "bash" => Arc::new(BashTool::new(ctx.clone())),
            "edit" => Arc::new(EditTool::new(ctx.clone())),
            "write" => Arc::new(WriteTool::new(ctx.clone())),
            "grep" => Arc::new(GrepTool::new(ctx.clone())),
            "find" => Arc::new(FindTool::new(ctx.clone())),
            BASH_OUTPUT => Arc::new(BashOutputTool::new(ctx.clone())),
            BASH_KILL => Arc::new(BashKillTool::new(ctx.clone())),
            _ => Arc::new(LsTool::new(ctx.clone())),
        };
        tools.push(tool);
    }
    tools
}

/// What a tool does, for approval policies and user interfaces (`kind` of
/// `agent/beforeToolCall`, ACP's tool kinds).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolKind {
    Read,
    Edit,
    Delete,
    Move,
    Search,
    Execute,
    /// Reaches the network from the daemon (`web_fetch`, `web_search`).
    Network,
    Other,
}

impl ToolKind {
    /// Its name on the wire and in policy maps.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolKind::Read => "read",
            ToolKind::Edit => "edit",
            ToolKind::Delete => "delete",
            ToolKind::Move => "move",
            ToolKind::Search => "search",
            ToolKind::Execute => "execute",
            ToolKind::Network => "network",
            ToolKind::Other => "other",
        }
    }
}

/// The daemon's tool over the editor's diagnostics (it only reads them).
pub const DIAGNOSTICS: &str = "diagnostics";

/// The session's plan (`core::plan`): it changes nothing but the checklist the user sees.
pub const TODO_WRITE: &str = "todo_write";

/// The daemon's tools over the editor's language servers (`lsp/language/`): they only read,
/// but for [`LSP_RENAME`] with `apply: true`, which edits ([`call_kind`]).
pub const LSP_TOOLS: [&str; 7] = [
    "lsp_definition",
    "lsp_references",
    "lsp_hover",
    "lsp_document_symbols",
    "lsp_workspace_symbols",
    "lsp_implementations",
    LSP_RENAME,
];

/// The rename through the editor's language servers.
pub const LSP_RENAME: &str = "lsp_rename";

/// Whether a call is `lsp_rename` applying its edits (`apply: true`).
pub fn applies_rename(name: &str, args: &serde_json::Value) -> bool {
    name == LSP_RENAME && args.get("apply").and_then(serde_json::Value::as_bool) == Some(true)
}

/// The kind of one call: its tool's, but an applying `lsp_rename` edits.
pub fn call_kind(name: &str, args: &serde_json::Value) -> ToolKind {
    match applies_rename(name, args) {
        true => ToolKind::Edit,
        false => tool_kind(name),
    }
}

/// [`allowed_by_default`] for one call: an applying `lsp_rename` asks.
pub fn call_allowed_by_default(name: &str, args: &serde_json::Value) -> bool {
    allowed_by_default(name) && !applies_rename(name, args)
}

/// The kind of a tool by name (`Other` for unknown tools).
pub fn tool_kind(name: &str) -> ToolKind {
    match name {
        "read" | "ls" | BASH_OUTPUT | DIAGNOSTICS => ToolKind::Read,
        name if LSP_TOOLS.contains(&name) => ToolKind::Read,
        "write" | "edit" => ToolKind::Edit,
        "grep" | "find" => ToolKind::Search,
        "bash" | BASH_KILL => ToolKind::Execute,
        web::WEB_FETCH | web::WEB_SEARCH => ToolKind::Network,
        _ => ToolKind::Other,
    }
}

/// True for tools that never change anything on the machine (safe to run without approval).
/// `ask_user` is one: asking is itself the user's say; `todo_write` changes only the plan. The
/// `lsp_*` tools are by name; a call of `lsp_rename` that applies is not ([`call_kind`]).
pub fn is_read_only(name: &str) -> bool {
    matches!(
        name,
        "read" | "grep" | "find" | "ls" | BASH_OUTPUT | DIAGNOSTICS | TODO_WRITE | ASK_USER
    ) || LSP_TOOLS.contains(&name)
}

/// True for tools that run without approval unless a policy says otherwise: the read-only ones,
/// and `bash_kill`, which only stops a job the agent itself started (it changes no file and
/// starts nothing), so stopping one is never worth a question.
pub fn allowed_by_default(name: &str) -> bool {
    is_read_only(name) || name == BASH_KILL || name == TASK
}

/// The `task` tool (`core::subagent`). It runs without approval, as Claude Code's does: the
/// subagent's own calls go through the session's approval gate.
pub const TASK: &str = "task";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_tool_reads_the_arguments_its_schema_declares() {
        let root = std::env::temp_dir();
        let ws: Arc<dyn Workspace> = Arc::new(DiskWorkspace::new(root, Vec::new()).unwrap());
        let ctx = ToolContext::new(ws, &ToolOptions::default());
        fn check<A: ToolArgs<State = ToolContext>>(ctx: &ToolContext) {
            assert_args_match_schema::<A>(&A::declaration(ctx).parameters);
        }
        check::<read::ReadArgs>(&ctx);
        check::<edit::EditArgs>(&ctx);
        check::<write::WriteArgs>(&ctx);
        check::<grep::GrepArgs>(&ctx);
        check::<find::FindArgs>(&ctx);
        check::<ls::LsArgs>(&ctx);
        check::<bash_jobs::BashOutputArgs>(&ctx);
        check::<bash_jobs::BashKillArgs>(&ctx);
        // Sandboxed sessions declare every argument `bash` reads.
        assert_args_match_schema::<bash::BashArgs>(&bash::parameters(/*sandboxed*/ true));
    }
}
