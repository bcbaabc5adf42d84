//! Every wire type of the agent extension protocol (documented in `protocol.md`).
//!
//! **Invariant:** this module and `protocol.md` change together. Internal agent types reach the
//! wire only through the fields below (`event`, `messages`, `args` are pi's JSON shapes).

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agent::event::AgentEvent;
use crate::agent::message::{ContentBlock, ThinkingLevel};
use crate::agent::queue::QueueMode;
use crate::core::commands::BuiltinOutcome;
use crate::core::loop_guard::{Guard, GuardEvent};
use crate::core::subagent::ChildEvent;
use crate::core::{CommandInfo, LiveSettings, ModelInfo};
pub use crate::mcp::server::ServerStatus;

/// The version advertised as `capabilities.experimental.agent.protocolVersion`.
pub const PROTOCOL_VERSION: u32 = 1;

/// Client → server request methods.
pub mod method {
    pub const PROMPT: &str = "agent/prompt";
    pub const STEER: &str = "agent/steer";
    pub const FOLLOW_UP: &str = "agent/followUp";
    pub const ABORT: &str = "agent/abort";
    pub const CLEAR_QUEUE: &str = "agent/clearQueue";
    pub const REMOVE_QUEUED: &str = "agent/removeQueued";
    pub const NEW_SESSION: &str = "agent/newSession";
    pub const GET_STATE: &str = "agent/getState";
    pub const GET_MESSAGES: &str = "agent/getMessages";
    pub const GET_DOCUMENT: &str = "agent/getDocument";
    pub const MCP_STATUS: &str = "agent/mcpStatus";
    pub const MCP_ASK_TRUST: &str = "agent/mcpAskTrust";
    pub const LIST_MODELS: &str = "agent/listModels";
    pub const SET_MODEL: &str = "agent/setModel";
    pub const SET_THINKING_LEVEL: &str = "agent/setThinkingLevel";
    pub const SET_QUEUE_MODES: &str = "agent/setQueueModes";
    pub const SET_SANDBOX: &str = "agent/setSandbox";
    pub const GET_STATS: &str = "agent/getStats";
    pub const LIST_SESSIONS: &str = "agent/listSessions";
    pub const FORK_SESSION: &str = "agent/forkSession";
    pub const RENAME_SESSION: &str = "agent/renameSession";
    pub const LIST_COMMANDS: &str = "agent/listCommands";
    pub const COMPACT: &str = "agent/compact";
    pub const RUN_CHANGES: &str = "agent/runChanges";
    pub const REVERT: &str = "agent/revert";
    pub const LIST_JOBS: &str = "agent/listJobs";
    pub const KILL_JOB: &str = "agent/killJob";
    pub const JOB_OUTPUT: &str = "agent/jobOutput";
    /// Server → client.
    pub const EVENT: &str = "$/agentEvent";
    pub const BEFORE_TOOL_CALL: &str = "agent/beforeToolCall";
    pub const SAVE_DOCUMENTS: &str = "agent/saveDocuments";
    pub const ASK_USER: &str = "agent/askUser";
    /// A request for the editor's own language servers (the `lsp_*` tools).
    pub const LANGUAGE_REQUEST: &str = "agent/languageRequest";
    /// Client → server notification: the editor's diagnostics for one document.
    pub const DIAGNOSTICS: &str = "agent/diagnostics";
}

/// `workspace/executeCommand` commands for generic clients.
pub mod command {
    pub const PROMPT: &str = "agent.prompt";
    pub const STEER: &str = "agent.steer";
    pub const FOLLOW_UP: &str = "agent.followUp";
    pub const ABORT: &str = "agent.abort";
    pub const NEW_SESSION: &str = "agent.newSession";
    pub const APPROVE: &str = "agent.approve";
    pub const REJECT: &str = "agent.reject";
    pub const MCP_ASK_TRUST: &str = "agent.mcpAskTrust";
    pub const ALL: [&str; 8] = [
        PROMPT,
        STEER,
        FOLLOW_UP,
        ABORT,
        NEW_SESSION,
        APPROVE,
        REJECT,
        MCP_ASK_TRUST,
    ];
}

/// JSON-RPC error codes of the agent methods (beyond the standard ones).
pub mod code {
    pub use crate::rpc::jsonrpc::code::AGENT_BUSY;
    pub const NO_MODEL: i64 = -32003;
    /// `agent/compact` did not compact (nothing to compact, cancelled, the summary failed).
    pub const COMPACTION_FAILED: i64 = -32004;
}

/// `capabilities.experimental.agent` sent by the client.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ClientAgentCapabilities {
    pub events: bool,
    pub approvals: bool,
    pub save_documents: bool,
    /// The client forwards the editor's diagnostics (`agent/diagnostics`).
    pub diagnostics: bool,
    /// The client answers `agent/askUser` (the `ask_user` tool, MCP elicitations).
    pub ask_user: bool,
    /// The LSP methods the client answers through `agent/languageRequest` (the `lsp_*` tools).
    pub language_features: Vec<String>,
}

/// A prompt: plain text or pi content blocks (text, image).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PromptMessage {
    Text(String),
    Blocks(Vec<ContentBlock>),
}

impl PromptMessage {
    /// The prompt's content blocks.
    pub fn into_blocks(self) -> Vec<ContentBlock> {
        match self {
            PromptMessage::Text(text) => vec![ContentBlock::text(text)],
            PromptMessage::Blocks(blocks) => blocks,
        }
    }

    /// The prompt's content blocks, refusing the kinds a user message cannot carry
    /// (`thinking`, `toolCall`): providers would reject or misread such a request later, so
    /// the client hears about it now, as invalid params.
    pub fn into_user_blocks(self) -> Result<Vec<ContentBlock>, String> {
        let blocks = self.into_blocks();
        for (i, block) in blocks.iter().enumerate() {
            let kind = match block {
                ContentBlock::Text(_) | ContentBlock::Image(_) => continue,
                ContentBlock::Thinking(_) => "thinking",
                ContentBlock::ToolCall(_) => "toolCall",
            };
            return Err(format!(
                "message[{i}] is a {kind} block; a prompt may only contain text and image blocks"
            ));
        }
        Ok(blocks)
    }

    /// The text blocks joined by newlines (what queues show).
    pub fn text(&self) -> String {
        match self {
            PromptMessage::Text(text) => text.clone(),
            PromptMessage::Blocks(blocks) => blocks
                .iter()
                .filter_map(ContentBlock::as_text)
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StreamingBehavior {
    Steer,
    FollowUp,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Disposition {
    Started,
    Steered,
    FollowUp,
    /// A built-in command (`/model`, `/compact`) ran; no message was sent.
    Command,
    /// An MCP prompt is being fetched; the message then goes as the prompt would have.
    Expanding,
}

/// What `agent/prompt`, `agent/steer` and `agent/followUp` answer: the message's run, or what a
/// slash command did instead.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum PromptReply<T> {
    Sent(T),
    Answered(Box<CommandAnswer>),
}

/// A slash command's answer in place of a message's.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum CommandAnswer {
    Command(CommandReply),
    Expanding(ExpandingReply),
}

/// A built-in command's answer: `disposition: "command"` and the command's result.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandReply {
    pub session_id: String,
    pub disposition: Disposition,
    #[serde(flatten)]
    pub outcome: BuiltinOutcome,
}

/// An MCP prompt being fetched: `disposition: "expanding"`, the command's name, and the id its
/// message will have; a failure comes as a `command_error` event.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExpandingReply {
    pub session_id: String,
    pub disposition: Disposition,
    pub command: String,
}

/// Result of `agent/listCommands`.
#[derive(Clone, Debug, Serialize)]
pub struct ListCommandsResult {
    pub commands: Vec<CommandInfo>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptParams {
    #[serde(default)]
    pub session_id: Option<String>,
    pub message: PromptMessage,
    #[serde(default)]
    pub streaming_behavior: Option<StreamingBehavior>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptResult {
    pub session_id: String,
    pub run_id: String,
    pub message_id: String,
    pub disposition: Disposition,
}

/// Params of `agent/steer` and `agent/followUp`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueParams {
    pub session_id: String,
    pub message: PromptMessage,
}

pub use crate::core::session::{QueuedMessage, Queues};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueResult {
    pub session_id: String,
    pub run_id: String,
    pub message_id: String,
    pub disposition: Disposition,
    #[serde(flatten)]
    pub queues: Queues,
}

/// Params of the `agent/diagnostics` notification: the latest diagnostics of one document
/// (positions in the negotiated encoding); an empty list clears them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DiagnosticsParams {
    pub uri: String,
    pub diagnostics: Vec<ls_types::Diagnostic>,
}

/// Params of `agent/removeQueued`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RemoveQueuedParams {
    pub session_id: String,
    pub message_id: String,
}

/// Result of `agent/removeQueued`: whether the message was still queued, and both queues after.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RemoveQueuedResult {
    pub removed: bool,
    #[serde(flatten)]
    pub queues: Queues,
}

/// Params of `agent/abort`, `agent/clearQueue`, `agent/getState`, `agent/getMessages`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionParams {
    pub session_id: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AbortResult {
    pub aborted: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionParams {
    #[serde(default)]
    pub cwd: Option<String>,
    /// A stored session to continue (id, unique id prefix or file path).
    #[serde(default)]
    pub resume: Option<String>,
    /// Responses per run (overrides `initializationOptions.maxTurns`).
    #[serde(default)]
    pub max_turns: Option<usize>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionResult {
    pub session_id: String,
    pub cwd: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelRef {
    pub provider: String,
    pub id: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StateResult {
    pub session_id: String,
    pub cwd: String,
    pub model: Option<ModelRef>,
    pub thinking_level: ThinkingLevel,
    pub steering_mode: QueueMode,
    pub follow_up_mode: QueueMode,
    pub is_streaming: bool,
    pub run_id: Option<String>,
    #[serde(flatten)]
    pub queues: Queues,
    pub message_count: usize,
    pub last_seq: u64,
    /// The session's JSONL file (pi's v3 format), when stored on disk.
    pub session_file: Option<String>,
    /// The `AGENTS.md` / `CLAUDE.md` files in the system prompt, in its order.
    pub context_files: Vec<String>,
    /// The commands' sandbox: `{mode, network, explicit, available, reason?}`.
    #[serde(default)]
    pub sandbox: Value,
    /// The model's plan (`todo_write`), `[]` when it has none.
    #[serde(default)]
    pub plan: Vec<crate::core::TodoItem>,
    /// The session's background jobs, running and recently ended, in the order they started.
    #[serde(default)]
    pub jobs: Vec<JobInfo>,
    /// The configured hooks and whether each runs.
    #[serde(default)]
    pub hooks: Vec<crate::core::hooks::trust::HookInfo>,
    /// The permission rules in force and where each came from.
    #[serde(default)]
    pub permissions: crate::core::permissions::PermissionsState,
}

/// A background job (`job_update`, `agent/listJobs`, `agent/killJob`).
pub use crate::tools::JobInfo;

/// Params of `agent/killJob` and `agent/jobOutput`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobParams {
    pub session_id: String,
    pub job_id: String,
}

/// Result of `agent/listJobs`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ListJobsResult {
    pub jobs: Vec<JobInfo>,
}

/// Result of `agent/killJob`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KillJobResult {
    pub job: JobInfo,
}

/// Result of `agent/jobOutput`: the end of what a job printed, for people.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobOutputResult {
    pub job_id: String,
    /// The last 64 KiB of its stdout and stderr, merged, ANSI stripped.
    pub output: String,
    /// Earlier output was left out.
    pub truncated: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessagesResult {
    pub session_id: String,
    pub messages: Vec<Value>,
    /// Parallel to `messages`: a user message's session file entry id, else `null`.
    pub message_ids: Vec<Option<String>>,
}

/// Params of `agent/getDocument`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GetDocumentParams {
    pub uri: String,
}

/// Result of `agent/getDocument`: the server's mirror of an open document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GetDocumentResult {
    pub uri: String,
    pub version: i32,
    pub text: String,
}

/// `$/agentEvent` params.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentEventParams {
    pub session_id: Arc<str>,
    pub run_id: Option<Arc<str>>,
    pub seq: u64,
    pub event: EventBody,
}

/// The `event` of `$/agentEvent`: the loop's event (pi's shapes) or a session event.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum EventBody {
    Agent(Arc<AgentEvent>),
    Session(SessionEvent),
}

/// Events of a session that do not come from the loop.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SessionEvent {
    /// Either queue changed.
    QueueUpdate(Queues),
    /// A subagent's loop event, nested under the parent's `task` call.
    SubagentEvent(ChildEvent),
    /// The run is over and the session accepts a new prompt.
    #[serde(rename_all = "camelCase")]
    AgentSettled {
        aborted: bool,
        /// The loop guard that ended the run, if one did.
        #[serde(skip_serializing_if = "Option::is_none")]
        stop_reason: Option<Guard>,
    },
    /// The session's model or thinking level changed (`agent/setModel`, `agent/setThinkingLevel`).
    ModelUpdate(LiveSettings),
    /// A loop guard warned about a repeated call, or stopped the run.
    LoopGuard(GuardEvent),
    /// A state, error or tool list of the session's MCP servers changed.
    McpUpdate { servers: Vec<ServerStatus> },
    /// The session's slash commands changed (an MCP server's prompts arrived or changed).
    CommandsUpdate { commands: Vec<CommandInfo> },
    /// A slash command could not be carried out (an MCP prompt that failed to arrive).
    CommandError { command: String, message: String },
    /// A compaction started (pi's event).
    CompactionStart {
        reason: crate::compaction::CompactionReason,
    },
    /// A compaction ended: with its result, aborted, or failed (pi's event).
    CompactionEnd(Box<crate::core::CompactionEnd>),
    /// A run changed files: its changes as `agent/runChanges` gives them, without the diffs.
    ChangesUpdate(RunChanges),
    /// The model replaced its plan (`todo_write`).
    PlanUpdate(crate::core::PlanUpdate),
    /// A background job started, ended by itself, or was stopped.
    JobUpdate { job: JobInfo },
    /// A hook ran: what it decided, or how it failed.
    Hook(crate::core::HookRun),
}

impl From<crate::core::CompactionEvent> for SessionEvent {
    fn from(event: crate::core::CompactionEvent) -> Self {
        use crate::core::CompactionEvent as E;
        match event {
            E::CompactionStart { reason } => SessionEvent::CompactionStart { reason },
            E::CompactionEnd(end) => SessionEvent::CompactionEnd(end),
        }
    }
}

/// Params of `agent/compact`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactParams {
    pub session_id: String,
    /// What the summary should focus on (pi's `customInstructions`).
    #[serde(default)]
    pub instructions: Option<String>,
}

/// Result of `agent/mcpStatus`.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpStatusResult {
    pub session_id: String,
    pub servers: Vec<ServerStatus>,
}

/// Result of `agent/mcpAskTrust`.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpAskTrustResult {
    pub session_id: String,
    /// Whether the user is asked (again): some project server waits and the client can be asked.
    pub asked: bool,
}

/// `kind` of `agent/beforeToolCall`.
pub use crate::tools::ToolKind;

/// What the user is asked to approve.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Preview {
    Diff {
        path: String,
        diff: String,
        /// Every changed file (absolute), when the diff covers several (`lsp_rename`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        paths: Option<Vec<String>>,
    },
    Command {
        command: String,
        cwd: String,
    },
    /// `web_fetch`: the URL, its host, and whether that host is this machine or a local
    /// network's (judged from the URL alone, without a lookup).
    Fetch {
        url: String,
        host: String,
        local: bool,
    },
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BeforeToolCallParams {
    pub session_id: String,
    pub run_id: String,
    pub tool_call_id: String,
    pub tool_name: String,
    pub args: Value,
    pub kind: ToolKind,
    pub title: String,
    pub preview: Option<Preview>,
    /// Approving saves the file's buffer with the user's own unsaved changes in it
    /// (`saveAfterEdit: "always"` and the buffer differs from the disk).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub saves_unsaved_changes: bool,
    /// For `bash`: whether the command runs sandboxed once approved, and why not (an
    /// escalation's justification, an unavailable sandbox).
    pub sandbox: Option<crate::sandbox::ApprovalSandbox>,
    /// The rules an "always" answer saves, per scope (`{session, project, user}`, each a list);
    /// absent when the call cannot be remembered.
    pub always_rules: Option<crate::core::permissions::Proposals>,
}

/// `decision` of the `agent/beforeToolCall` result.
pub use crate::core::approval::Decision;

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BeforeToolCallResult {
    pub decision: Decision,
    pub reason: Option<String>,
    pub terminate: Option<bool>,
    /// Where `allowAlways` / `blockAlways` is kept: `session` (also when absent), `project`,
    /// `user`.
    pub scope: Option<crate::core::permissions::Scope>,
}

/// `agent/askUser` params: a question for the user (the `ask_user` tool, or one field of an
/// MCP server's elicitation).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AskUserParams {
    pub session_id: String,
    pub run_id: String,
    pub tool_call_id: Option<String>,
    pub question: String,
    pub options: Option<Vec<crate::tools::QuestionOption>>,
    pub multi_select: bool,
    pub allow_text: bool,
    pub source: Option<AskUserSource>,
}

/// Who asks, when it is not the model: the MCP server whose elicitation this is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AskUserSource {
    pub mcp_server: String,
}

/// `action` of the `agent/askUser` result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum AskUserAction {
    Accept,
    Decline,
    Cancel,
}

/// `agent/askUser` result: accept with the chosen option labels and/or a typed answer.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AskUserResult {
    pub action: AskUserAction,
    pub selected: Option<Vec<String>>,
    pub text: Option<String>,
}

/// `agent/languageRequest` params: one standard LSP request (`method`, `params`) for the
/// editor's other language servers, made for a `lsp_*` tool call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LanguageRequestParams {
    pub session_id: String,
    pub run_id: String,
    pub tool_call_id: String,
    pub method: String,
    pub params: Value,
}

/// `agent/languageRequest` result: the servers asked (`[]`: none answers `method` for the
/// document) and their results merged, positions in the connection's encoding.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LanguageRequestResult {
    pub servers: Vec<String>,
    #[serde(default)]
    pub result: Value,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SaveDocumentsParams {
    pub uris: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SaveDocumentsResult {
    #[serde(default)]
    pub saved: Vec<String>,
}

/// Per-tool approval policy values in `initializationOptions.approval`.
pub use crate::core::approval::ApprovalPolicy;

/// `initializationOptions`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct InitOptions {
    pub model: Option<String>,
    pub approval: std::collections::HashMap<String, ApprovalPolicy>,
    pub approval_timeout_ms: Option<u64>,
    pub edit_timeout_ms: Option<u64>,
    /// How long an `agent/languageRequest` waits for the editor's language servers.
    pub language_timeout_ms: Option<u64>,
    pub cwd: Option<String>,
    /// Directories outside a session's cwd the tools may touch (absolute paths).
    pub extra_roots: Vec<String>,
    /// The pace of `$/agentEvent` deltas of one content block (ms; 0 = every delta at once).
    pub delta_interval_ms: Option<u64>,
    /// MCP servers (`{"NAME": {command…} | {url…}}`), after the user's and the project's.
    pub mcp_servers: Option<Value>,
    /// Responses per run (default: no limit); `agent/newSession` may set its own.
    pub max_turns: Option<usize>,
    pub loop_guard: LoopGuardOptions,
    /// `false`: no `AGENTS.md` / `CLAUDE.md` in the system prompt (default: loaded).
    pub context_files: Option<bool>,
    /// `{enabled, reserveTokens, keepRecentTokens, thresholdTokens}`, over the user's
    /// `settings.json`.
    pub compaction: crate::compaction::CompactionOptions,
    /// Whether a buffer is saved after the agent edited it (default `ifClean`).
    pub save_after_edit: SaveAfterEdit,
    /// The command sandbox of every session (`workspaceWrite`, `readOnly`, `off`); unset:
    /// `workspaceWrite` for commands that run without asking, hand-approved ones as approved.
    pub sandbox: Option<crate::sandbox::SandboxMode>,
    /// Sandboxed commands' network (`workspaceWrite` only): `false` (default), `true`, or a
    /// list of domains reached through the daemon's allowlist proxy.
    pub sandbox_network: crate::sandbox::Network,
    /// Environment variables passed to sandboxed commands although they hold the daemon's
    /// secrets (the providers' keys); default: the user's `settings.json` `sandbox.env`.
    pub sandbox_env: Option<Vec<String>>,
    /// Paths in every writable root that sandboxed commands may not change or create; default:
    /// the user's `settings.json` `sandbox.protectedPaths`, else the built-in list.
    pub sandbox_protected_paths: Option<Vec<String>>,
    /// Permission rules (`{allow, ask, deny}`, Claude Code's syntax) after the settings files'.
    pub permissions: crate::core::permissions::RuleLists,
}

/// `initializationOptions.saveAfterEdit`: when a buffer the agent edited is saved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SaveAfterEdit {
    /// Only when the buffer had no unsaved changes of the user before the edit.
    #[default]
    IfClean,
    /// Always, the user's unsaved changes included (the approval says so).
    Always,
    /// Never: the edit stays unsaved in the buffer.
    Never,
}

/// `initializationOptions.loopGuard`: the same tool call this many times in a row gets a note
/// (`warnAt`, default 3) or ends the run (`stopAt`, default 6); 0 turns either off.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LoopGuardOptions {
    pub warn_at: Option<usize>,
    pub stop_at: Option<usize>,
}

/// Result of `agent/listModels`.
#[derive(Clone, Debug, Serialize)]
pub struct ListModelsResult {
    pub models: Vec<ModelInfo>,
}

/// Params of `agent/setModel`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetModelParams {
    pub session_id: String,
    /// `provider/id` (or a bare id), as `initializationOptions.model`.
    pub model: String,
}

/// Params of `agent/setThinkingLevel`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetThinkingLevelParams {
    pub session_id: String,
    pub level: ThinkingLevel,
}

/// Params of `agent/setSandbox`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetSandboxParams {
    pub session_id: String,
    /// `workspaceWrite`, `readOnly`, `off`; `null` returns to the default.
    pub sandbox: Option<crate::sandbox::SandboxMode>,
    #[serde(default)]
    pub sandbox_network: crate::sandbox::Network,
}

/// Params of `agent/setQueueModes`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetQueueModesParams {
    pub session_id: String,
    #[serde(default)]
    pub steering: Option<QueueMode>,
    #[serde(default)]
    pub follow_up: Option<QueueMode>,
}

/// Result of `agent/setQueueModes`: both modes after the call.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueModesResult {
    pub steering: QueueMode,
    pub follow_up: QueueMode,
}

/// Params of `agent/listSessions`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ListSessionsParams {
    pub cwd: Option<String>,
}

/// One stored session.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    pub session_id: String,
    /// The session's name, else its first prompt (first line).
    pub title: String,
    pub name: Option<String>,
    pub cwd: String,
    /// ISO times.
    pub created: String,
    pub modified: String,
    pub message_count: usize,
    pub file: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct ListSessionsResult {
    pub sessions: Vec<SessionInfo>,
}

/// Params of `agent/forkSession`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForkSessionParams {
    pub session_id: String,
    /// A user message's id (the `messageId` its prompt was answered with, or its entry id in
    /// the session file).
    pub message_id: String,
}

/// Result of `agent/forkSession`: the new session, and the text of the message it was forked
/// before (to edit and send again).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ForkSessionResult {
    pub session_id: String,
    pub cwd: String,
    pub text: Option<String>,
}

pub use crate::core::journal::review::{FileChange, NotReverted, Reverted, RunChanges};

/// Params of `agent/runChanges`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunChangesParams {
    pub session_id: String,
    /// Default: the last run that changed files.
    #[serde(default)]
    pub run_id: Option<String>,
    /// Only the changes of the subagent this `task` call ran (`runId` is then not needed).
    #[serde(default)]
    pub task_call_id: Option<String>,
}

/// Params of `agent/revert` (and ACP's `_agent-lsp/revert`): a run, or a checkpoint (everything
/// since a user message).
pub use crate::core::journal::review::RevertRequest as RevertParams;

/// Result of `agent/revert`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RevertResult {
    #[serde(flatten)]
    pub reverted: Reverted,
    /// The fork made with `fork: true`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fork: Option<ForkSessionResult>,
}

/// Params and result of `agent/renameSession`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RenameSessionParams {
    pub session_id: String,
    pub name: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn prompt_params_accept_text_or_blocks() {
        let p: PromptParams = serde_json::from_value(json!({"message":"hi"})).unwrap();
        assert_eq!(p.message.text(), "hi");
        let p: PromptParams =
            serde_json::from_value(json!({"sessionId":"s","streamingBehavior":"followUp",
            "message":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}))
            .unwrap();
        assert_eq!(p.message.text(), "a\nb");
        assert_eq!(p.streaming_behavior, Some(StreamingBehavior::FollowUp));
    }

    #[test]
    fn queue_result_is_flat_camel_case() {
        let r = QueueResult {
            session_id: "s".into(),
            run_id: "r".into(),
            message_id: "m".into(),
            disposition: Disposition::FollowUp,
            queues: Queues {
                steering: vec![],
                follow_up: vec![QueuedMessage {
                    message_id: "m".into(),
                    text: "t".into(),
                }],
            },
        };
        assert_eq!(
            serde_json::to_value(r).unwrap(),
            json!({"sessionId":"s","runId":"r","messageId":"m",
            "disposition":"followUp","steering":[],"followUp":[{"messageId":"m","text":"t"}]})
        );
    }

    #[test]
    fn preview_is_tagged() {
        let p = Preview::Command {
            command: "ls".into(),
            cwd: "/".into(),
        };
        assert_eq!(
            serde_json::to_value(p).unwrap(),
            json!({"type":"command","command":"ls","cwd":"/"})
        );
    }

    /// `word` occurs in `doc` with no identifier character right before or after it.
    fn contains_word(doc: &str, word: &str) -> bool {
        let ident = |c: char| c.is_alphanumeric() || c == '_';
        doc.match_indices(word).any(|(i, _)| {
            let before = doc[..i].chars().next_back();
            let after = doc[i + word.len()..].chars().next();
            !before.is_some_and(ident) && !after.is_some_and(ident)
        })
    }

    /// Drift check: every method, command, event type and wire field is documented.
    #[test]
    fn protocol_md_documents_every_name() {
        let doc = include_str!("../../protocol.md");
        let methods = [
            method::PROMPT,
            method::STEER,
            method::FOLLOW_UP,
            method::ABORT,
            method::CLEAR_QUEUE,
            method::REMOVE_QUEUED,
            method::NEW_SESSION,
            method::GET_STATE,
            method::GET_MESSAGES,
            method::EVENT,
            method::BEFORE_TOOL_CALL,
            method::SAVE_DOCUMENTS,
            method::DIAGNOSTICS,
            method::GET_DOCUMENT,
            method::MCP_STATUS,
            method::LIST_MODELS,
            method::SET_MODEL,
            method::SET_THINKING_LEVEL,
            method::SET_QUEUE_MODES,
            method::SET_SANDBOX,
            method::GET_STATS,
            method::LIST_SESSIONS,
            method::FORK_SESSION,
            method::RENAME_SESSION,
            method::LANGUAGE_REQUEST,
        ];
        let events = [
            "queue_update",
            "agent_settled",
            "agent_start",
            "agent_end",
            "turn_start",
            "turn_end",
            "message_start",
            "message_update",
            "message_end",
            "message_discard",
            "tool_execution_start",
            "tool_execution_update",
            "tool_execution_end",
            "provider_retry",
            "mcp_update",
            "model_update",
            "loop_guard",
        ];
        let fields = [
            "sessionId",
            "runId",
            "messageId",
            "disposition",
            "streamingBehavior",
            "steering",
            "followUp",
            "aborted",
            "cwd",
            "model",
            "isStreaming",
            "messageCount",
            "lastSeq",
            "sessionFile",
            "messages",
            "seq",
            "event",
            "toolCallId",
            "toolName",
            "args",
            "kind",
            "title",
            "preview",
            "decision",
            "reason",
            "terminate",
            "uris",
            "saved",
            "approval",
            "approvalTimeoutMs",
            "editTimeoutMs",
            "extraRoots",
            "deltaIntervalMs",
            "protocolVersion",
            "events",
            "approvals",
            "saveDocuments",
            "allowAlways",
            "blockAlways",
            "started",
            "steered",
            "removed",
            "diagnostics",
            "languageFeatures",
            "languageTimeoutMs",
            "servers",
            "paths",
            "uri",
            "mcpServers",
            "startupTimeoutMs",
            "toolTimeoutMs",
            "servers",
            "state",
            "untrusted",
            "maxTurns",
            "loopGuard",
            "warnAt",
            "stopAt",
            "stopReason",
            "thinkingLevel",
            "steeringMode",
            "followUpMode",
            "models",
            "contextWindow",
            "maxTokens",
            "thinkingLevels",
            "level",
            "one-at-a-time",
            "userMessages",
            "assistantMessages",
            "toolCalls",
            "toolResults",
            "totalMessages",
            "cacheRead",
            "cacheWrite",
            "contextUsage",
            "percent",
            "sessions",
            "created",
            "modified",
            "file",
            "text",
            "guard",
            "action",
            "warned",
            "stopped",
            "repeated_call",
            "max_turns",
            "count",
        ];
        let all = methods
            .iter()
            .chain(&command::ALL)
            .chain(&events)
            .chain(&fields);
        for name in all {
            assert!(
                contains_word(doc, name),
                "protocol.md does not document {name}"
            );
        }
        assert!(doc.contains(&format!("\"protocolVersion\": {PROTOCOL_VERSION}")));
        for kind in [
            ToolKind::Read,
            ToolKind::Edit,
            ToolKind::Delete,
            ToolKind::Move,
            ToolKind::Search,
            ToolKind::Execute,
            ToolKind::Network,
            ToolKind::Other,
        ] {
            assert!(doc.contains(kind.as_str()), "{}", kind.as_str());
        }
    }
}
