/**
 * The agent protocol between this extension and the `agent-lsp` daemon, version 1.
 *
 * MIRROR of `protocol.md` at the repository root (the source of truth, kept with the daemon's
 * `src/lsp/protocol.rs`): every type here copies a method, event or field documented there.
 * Change `protocol.md` first, then this file. Events are pi's `AgentEvent` shapes
 * (`src/agent/event.rs`). `agent/diagnostics` is this client's proposal (see its comment).
 *
 * This module has no dependency on `vscode` so that the webview and unit tests can import it.
 */

// ---------------------------------------------------------------- pi's message model

export interface TextContent { type: 'text'; text: string }
export interface ThinkingContent { type: 'thinking'; thinking: string; redacted?: boolean }
export interface ImageContent { type: 'image'; data: string; mimeType: string }
export interface ToolCall {
  type: 'toolCall';
  id: string;
  name: string;
  arguments: Record<string, unknown>;
  argumentsError?: string;
}
export type ContentBlock = TextContent | ThinkingContent | ImageContent | ToolCall;

export interface Cost { input: number; output: number; cacheRead: number; cacheWrite: number; total: number }
export interface Usage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  reasoning?: number;
  totalTokens: number;
  cost: Cost;
}

export type StopReason = 'pending' | 'stop' | 'length' | 'toolUse' | 'error' | 'aborted' | 'deferred';

export interface UserMessage { role: 'user'; content: string | ContentBlock[]; timestamp: number }
export interface SystemMessage { role: 'system'; content: string | ContentBlock[]; timestamp: number }
export interface AssistantMessage {
  role: 'assistant';
  content: ContentBlock[];
  api: string;
  provider: string;
  model: string;
  usage: Usage;
  stopReason: StopReason;
  errorMessage?: string;
  timestamp: number;
}
export interface ToolResultMessage {
  role: 'toolResult';
  toolCallId: string;
  toolName: string;
  content: ContentBlock[];
  details?: unknown;
  isError: boolean;
  timestamp: number;
}
export type AgentMessage = UserMessage | SystemMessage | AssistantMessage | ToolResultMessage
  | { role: string; [key: string]: unknown };

export interface AgentToolResult {
  content: ContentBlock[];
  details?: unknown;
  structuredContent?: unknown;
  isError?: boolean;
}

// ---------------------------------------------------------------- events (pi's AgentEvent)

export type AssistantMessageEvent =
  | { type: 'start'; partial: AssistantMessage }
  | { type: 'text_start'; contentIndex: number }
  | { type: 'text_delta'; contentIndex: number; delta: string }
  | { type: 'text_end'; contentIndex: number; content: string }
  | { type: 'thinking_start'; contentIndex: number }
  | { type: 'thinking_delta'; contentIndex: number; delta: string }
  | { type: 'thinking_end'; contentIndex: number; content: string }
  | { type: 'toolcall_start'; contentIndex: number; id: string; toolName: string }
  | { type: 'toolcall_delta'; contentIndex: number; delta: string }
  | { type: 'toolcall_end'; contentIndex: number; toolCall: ToolCall }
  | { type: 'retry'; attempt: number; maxAttempts: number; delayMs: number; errorMessage: string }
  | { type: 'done'; reason: StopReason; message: AssistantMessage }
  | { type: 'error'; reason: StopReason; error: AssistantMessage };

/** protocol.md §3: a queued message (`queue_update`, queue responses); text blocks joined. */
export interface QueuedMessage { messageId: string; text: string }

export type AgentEvent =
  | { type: 'agent_start' }
  | { type: 'agent_end'; messages: AgentMessage[] }
  | { type: 'turn_start' }
  | { type: 'turn_end'; message: AssistantMessage; toolResults: ToolResultMessage[] }
  | { type: 'message_start'; message: AgentMessage }
  | { type: 'message_update'; assistantMessageEvent: AssistantMessageEvent; usage?: Usage }
  | { type: 'message_end'; message: AgentMessage }
  | { type: 'message_discard'; message: AssistantMessage; reason: string }
  | { type: 'tool_execution_start'; toolCallId: string; toolName: string; args: Record<string, unknown> }
  | { type: 'tool_execution_update'; toolCallId: string; toolName: string; args: Record<string, unknown>; partialResult: AgentToolResult }
  | { type: 'tool_execution_end'; toolCallId: string; toolName: string; result: AgentToolResult; isError: boolean; durationMs?: number }
  | { type: 'provider_retry'; attempt: number; maxAttempts: number; delayMs: number; errorMessage: string }
  | { type: 'queue_update'; steering: QueuedMessage[]; followUp: QueuedMessage[] }
  | { type: 'agent_settled'; aborted: boolean; stopReason?: LoopGuardKind }
  | ({ type: 'model_update' } & LiveSettings)
  | { type: 'loop_guard'; guard: LoopGuardKind; action: 'warned' | 'stopped'; count: number; toolName?: string; message: string }
  | { type: 'commands_update'; commands: CommandInfo[] }
  | { type: 'mcp_update'; servers: McpServerStatus[] }
  | { type: 'command_error'; command: string; message: string }
  | { type: 'compaction_start'; reason: CompactionReason }
  | { type: 'compaction_end'; reason: CompactionReason; result?: CompactionResult; aborted: boolean; willRetry: boolean; errorMessage?: string }
  | { type: 'changes_update'; runId: string | null; files: FileChange[] }
  | { type: 'plan_update'; todos: TodoItem[] }
  | { type: 'job_update'; job: Job }
  /** One loop event of a `task` call's child agent (§3.24), between the call's start and end. */
  | { type: 'subagent_event'; parentToolCallId: string; agent: string; event: AgentEvent }
  /** A hook that ran (§3.22). */
  | ({ type: 'hook' } & HookRun);

/** What a hook did (§3.22): `outcome` allow | deny | ask | block | continue | error | timeout. */
export interface HookRun {
  event: string;
  hook: string;
  outcome: string;
  message?: string;
  durationMs: number;
  toolCallId?: string;
  additionalContext?: string;
}

/** Where an item of the model's plan stands (§3.18). */
export type TodoStatus = 'pending' | 'in_progress' | 'completed';
/** One item of the model's plan (`todo_write`, `plan_update`, `agent/getState.plan`; §3.18). */
export interface TodoItem { content: string; status: TodoStatus }

/** Where a background job stands: `failed` is one that could not run (no exit code). */
export type JobStatus = 'running' | 'exited' | 'killed' | 'failed';
/** A background job (`bash {background: true}`; `job_update`, `agent/getState.jobs`, `agent/listJobs`); times in ms since the epoch. */
export interface Job { jobId: string; command: string; status: JobStatus; exitCode?: number | null; startedAt: number; endedAt?: number }
/** `agent/listJobs`, `agent/killJob`, `agent/jobOutput` params (`jobId` for the last two). */
export interface JobParams { sessionId: string; jobId: string }
export interface ListJobsResult { jobs: Job[] }
export interface KillJobResult { job: Job }
/** The last bytes (at most 64 KiB) the job printed; `truncated` when there was more before. */
export interface JobOutputResult { jobId: string; output: string; truncated: boolean }

/** One file a run changed (`agent/runChanges`, `changes_update`; §3.16). */
export interface FileChange { path: string; change: 'created' | 'modified' | 'deleted'; diff: string; userChanged: boolean; revertible: boolean; reason?: string }
/** Result of `agent/revert` (§3.16). */
export interface RevertResult { reverted: string[]; conflicts: { path: string; reason: string }[]; skipped: { path: string; reason: string }[]; fork?: { sessionId: string; cwd: string; text: string | null } }

/** One slash command (`agent/listCommands`, `commands_update`; §3.14). */
export interface CommandInfo { name: string; description: string; source: 'builtin' | 'prompt' | 'skill' | 'mcp'; argumentHint?: string }
/** Why a compaction ran (§3.15). */
export type CompactionReason = 'manual' | 'threshold' | 'overflow';
/** pi's `CompactionResult`: the result of `agent/compact` and of `compaction_end`. */
export interface CompactionResult {
  summary: string;
  firstKeptEntryId: string;
  tokensBefore: number;
  estimatedTokensAfter: number;
  usage?: Usage;
  details: { readFiles: string[]; modifiedFiles: string[] };
}
/** `agent/compact` params. */
export interface CompactParams { sessionId: string; instructions?: string }

/** `$/agentEvent` notification params. */
export interface AgentEventParams { sessionId: string; runId: string | null; seq: number; event: AgentEvent }

// ---------------------------------------------------------------- client → server requests

export type PromptMessage = string | ContentBlock[];

export interface PromptParams {
  sessionId?: string;
  message: PromptMessage;
  streamingBehavior?: 'steer' | 'followUp';
}
export interface PromptResult {
  sessionId: string;
  runId: string;
  messageId: string;
  disposition: 'started' | 'steered' | 'followUp' | 'command' | 'expanding';
  /** For `command` / `expanding` (§3.14): the slash command that answered. */
  command?: string;
  /** `/model`'s answer (§3.14). */
  model?: ModelInfo;
  thinkingLevel?: ThinkingLevel;
}

/** `agent/steer`, `agent/followUp` (§3.2): when the session is idle the message starts a run. */
export interface QueueParams { sessionId: string; message: PromptMessage }
export interface QueueResult extends PromptResult { steering: QueuedMessage[]; followUp: QueuedMessage[] }

/** `agent/clearQueue` (§3.4): the removed messages. */
export interface ClearQueueResult { steering: QueuedMessage[]; followUp: QueuedMessage[] }

/** `agent/removeQueued` (§3.4.1): removes one queued message by id. */
export interface RemoveQueuedParams { sessionId: string; messageId: string }
/** Whether it was still queued (not yet delivered), and both queues after the call. */
export interface RemoveQueuedResult { removed: boolean; steering: QueuedMessage[]; followUp: QueuedMessage[] }

export interface SessionParams { sessionId: string }
export interface AbortResult { aborted: boolean }
/** §3.5: `resume` continues a stored session (id, unique id prefix or file path). */
export interface NewSessionParams { cwd?: string; resume?: string; maxTurns?: number }
export interface NewSessionResult { sessionId: string; cwd: string }

/** `agent/getState` (§3.6). */
export interface SessionState {
  sessionId: string;
  cwd: string;
  model: { provider: string; id: string } | null;
  thinkingLevel: ThinkingLevel;
  steeringMode: QueueMode;
  followUpMode: QueueMode;
  isStreaming: boolean;
  runId: string | null;
  steering: QueuedMessage[];
  followUp: QueuedMessage[];
  messageCount: number;
  lastSeq: number;
  sessionFile?: string | null;
  /** The command sandbox (§3.17). */
  sandbox?: SandboxStatus;
  /** The model's plan (§3.18; `[]` when it has none). */
  plan?: TodoItem[];
  /** The session's background jobs, running and ended. */
  jobs?: Job[];
}

/** `agent/getState`'s `sandbox` (§3.6, §3.17). */
export interface SandboxStatus {
  /** false where this machine cannot enforce it (then `reason`): commands that would run sandboxed ask. */
  available: boolean;
  reason?: string;
  mode: SandboxMode;
  /** Unrestricted network for sandboxed commands (false for none and for an allowlist). */
  network: boolean;
  /** The network allowlist (reached through the daemon's proxy), when only some hosts. */
  allowedDomains?: string[];
  /** The mode was set (initializationOptions, agent/setSandbox), not the default for unasked commands. */
  explicit: boolean;
  /** What this machine offers and what a command gets under the current mode. */
  layers?: SandboxLayers;
  /** In plain words, what a sandboxed command is not kept from here (empty: nothing). */
  notIsolated?: string[];
  /** Hosts the allowlist proxy refused (`host:port`). */
  refusedHosts?: string[];
}

/** `agent/getState.sandbox.layers` (§3.17): `available` on this machine, `active` for a command now. */
export interface SandboxLayers {
  landlock: { available: boolean; active: boolean; abi?: number; ioctlDev?: boolean; scopes?: boolean; unixSockets?: boolean; reason?: string };
  namespaces: { available: boolean; active: boolean; kinds?: string[]; reason?: string };
  seccomp: { available: boolean; active: boolean; reason?: string };
  proxy: { available: boolean; active: boolean };
}

/** `sandboxNetwork` (§1.1, §3.17): none, the user's, or only these domains through the daemon's proxy. */
export type SandboxNetwork = boolean | string[];

export type SandboxMode = 'workspaceWrite' | 'readOnly' | 'off';

/** `agent/setSandbox` (§3.17): `sandbox: null` returns to the default. */
export interface SetSandboxParams { sessionId: string; sandbox: SandboxMode | null; sandboxNetwork?: SandboxNetwork }
export interface SetSandboxResult { sessionId: string; sandbox: SandboxStatus }

/** `agent/getDocument` (§3.8): the server's mirror of an open document. */
export interface GetDocumentResult { uri: string; version: number; text: string }

/** `agent/getMessages` (§3.7). */
/** `messageIds` (parallel to `messages`): each user message's session file entry id (§3.7, §3.12). */
export interface GetMessagesResult { sessionId: string; messages: AgentMessage[]; messageIds?: (string | null)[] }

/** One MCP server of a session (`agent/mcpStatus`, `mcp_update`; §3.10). */
export interface McpServerStatus {
  name: string;
  state: 'starting' | 'ready' | 'failed' | 'disabled' | 'untrusted';
  error?: string;
  tools: string[];
}

/** `agent/mcpStatus` (§3.10). */
export interface McpStatusResult { sessionId: string; servers: McpServerStatus[] }

/** `agent/mcpAskTrust` (§3.10): whether the user is asked again about the project's servers. */
export interface McpAskTrustResult { sessionId: string; asked: boolean }

export type ThinkingLevel = 'off' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh';
export type QueueMode = 'one-at-a-time' | 'all';
/** §3.13: the loop guard that warned or stopped a run. */
export type LoopGuardKind = 'repeated_call' | 'max_turns';

/** A model of `agent/listModels` (§3.11); `cost` in USD per million tokens. */
export interface ModelInfo {
  provider: string;
  id: string;
  name: string;
  api: string;
  contextWindow: number;
  maxTokens: number;
  reasoning: boolean;
  thinkingLevels: ThinkingLevel[];
  input: ('text' | 'image')[];
  cost: { input: number; output: number; cacheRead: number; cacheWrite: number };
}
export interface ListModelsResult { models: ModelInfo[] }
/** `agent/setModel`, `agent/setThinkingLevel` (§3.11) and the `model_update` event. */
export interface LiveSettings { model: ModelInfo; thinkingLevel: ThinkingLevel }
export interface SetModelParams { sessionId: string; model: string }
export interface SetThinkingLevelParams { sessionId: string; level: ThinkingLevel }
export interface SetQueueModesParams { sessionId: string; steering?: QueueMode; followUp?: QueueMode }
export interface QueueModesResult { steering: QueueMode; followUp: QueueMode }
/** `agent/getStats` (§3.11): pi's `get_session_stats`. */
export interface SessionStats {
  sessionFile: string | null;
  sessionId: string;
  userMessages: number;
  assistantMessages: number;
  toolCalls: number;
  toolResults: number;
  totalMessages: number;
  tokens: { input: number; output: number; cacheRead: number; cacheWrite: number; total: number };
  cost: number;
  contextUsage: { tokens: number | null; contextWindow: number; percent: number | null } | null;
}
/** A stored session (`agent/listSessions`, §3.12). */
export interface SessionInfo {
  sessionId: string;
  title: string;
  name: string | null;
  cwd: string;
  created: string;
  modified: string;
  messageCount: number;
  file: string;
}
export interface ListSessionsParams { cwd?: string }
export interface ListSessionsResult { sessions: SessionInfo[] }
/** §3.12: `messageId` is the user message's session entry id. */
export interface ForkSessionParams { sessionId: string; messageId: string }
export interface ForkSessionResult { sessionId: string; cwd: string; text: string | null }
export interface RenameSessionParams { sessionId: string; name: string }

/** JSON-RPC error codes of §3. */
export const ErrorCodes = { parseError: -32700, invalidRequest: -32600, invalidParams: -32602, methodNotFound: -32601, agentBusy: -32001, notInitialized: -32002, noModel: -32003, compactionFailed: -32004 } as const;

/** `initializationOptions` (§1.1). */
export interface InitializationOptions {
  model?: string;
  approval?: Record<string, 'allow' | 'ask' | 'block'>;
  approvalTimeoutMs?: number;
  editTimeoutMs?: number;
  /** When a buffer the agent edited is saved (§4.4; default "ifClean"). */
  saveAfterEdit?: 'ifClean' | 'always' | 'never';
  cwd?: string;
  /** Pace of streamed deltas on `$/agentEvent` in ms (§1.1; default 16, 0 = every delta at once). */
  deltaIntervalMs?: number;
  /** MCP servers whose tools sessions offer (§1.1, §3.10). */
  mcpServers?: Record<string, unknown>;
  /** The turn limit and the repeated-call guard (§3.13). */
  maxTurns?: number;
  loopGuard?: { warnAt?: number; stopAt?: number };
  /** The command sandbox (§3.17; unset: workspaceWrite for commands that run unasked). */
  sandbox?: SandboxMode;
  /** What sandboxed commands may reach: false (default), true, or a domain allowlist. */
  sandboxNetwork?: SandboxNetwork;
  /** Variables sandboxed commands keep although they hold model keys (unset: settings.json `sandbox.env`). */
  sandboxEnv?: string[];
  /** Paths kept read-only in every writable root (unset: settings.json `sandbox.protectedPaths`, else the built-in list). */
  sandboxProtectedPaths?: string[];
  /** How long the daemon waits for an `agent/languageRequest` answer (§1.1, §4.6; default 15000). */
  languageTimeoutMs?: number;
}

/**
 * `agent/diagnostics` notification (client → server, §2.1): the editor's latest diagnostics for
 * one document the agent touched; an empty list clears them. Sent only when the client advertised
 * `experimental.agent.diagnostics`, which makes the daemon offer the model its `diagnostics` tool.
 */
export interface DiagnosticsParams {
  uri: string;
  diagnostics: LspDiagnostic[];
}
export interface LspDiagnostic {
  range: { start: { line: number; character: number }; end: { line: number; character: number } };
  severity?: 1 | 2 | 3 | 4;
  code?: string | number;
  source?: string;
  message: string;
}

export const Methods = {
  prompt: 'agent/prompt',
  steer: 'agent/steer',
  followUp: 'agent/followUp',
  abort: 'agent/abort',
  clearQueue: 'agent/clearQueue',
  removeQueued: 'agent/removeQueued',
  newSession: 'agent/newSession',
  getState: 'agent/getState',
  getMessages: 'agent/getMessages',
  getDocument: 'agent/getDocument',
  mcpStatus: 'agent/mcpStatus',
  mcpAskTrust: 'agent/mcpAskTrust',
  listModels: 'agent/listModels',
  setModel: 'agent/setModel',
  setThinkingLevel: 'agent/setThinkingLevel',
  setQueueModes: 'agent/setQueueModes',
  setSandbox: 'agent/setSandbox',
  getStats: 'agent/getStats',
  listSessions: 'agent/listSessions',
  forkSession: 'agent/forkSession',
  renameSession: 'agent/renameSession',
  listCommands: 'agent/listCommands',
  compact: 'agent/compact',
  runChanges: 'agent/runChanges',
  revert: 'agent/revert',
  diagnostics: 'agent/diagnostics',
  listJobs: 'agent/listJobs',
  killJob: 'agent/killJob',
  jobOutput: 'agent/jobOutput',
  askUser: 'agent/askUser',
  languageRequest: 'agent/languageRequest',
  event: '$/agentEvent',
  beforeToolCall: 'agent/beforeToolCall',
  saveDocuments: 'agent/saveDocuments',
} as const;

// ---------------------------------------------------------------- server → client requests

export type ToolKind = 'read' | 'edit' | 'delete' | 'move' | 'search' | 'execute' | 'network' | 'other';

/**
 * §4.2: `{type:"diff", path, diff}` for edits, `{type:"command", command, cwd}` for bash,
 * `{type:"fetch", url, host}` for the web tools (an "always" answer covers that host).
 */
export type ApprovalPreview =
  /**
   * `paths`: every file the change touches (absolute), when it spans several (`lsp_rename` with
   * `apply`, §3.25): then `path` is the first of them and `diff` has a ---/+++ header per file.
   */
  | { type: 'diff'; path: string; diff: string; paths?: string[] }
  | { type: 'command'; command: string; cwd: string }
  /** `local`: the host is this machine or a local network (judged from the URL alone). */
  | { type: 'fetch'; url: string; host: string; local?: boolean };

export interface BeforeToolCallParams {
  sessionId: string;
  runId: string;
  toolCallId: string;
  toolName: string;
  args: Record<string, unknown>;
  kind: ToolKind;
  title: string;
  preview?: ApprovalPreview;
  /** Approving saves the file's buffer with the user's own unsaved changes (saveAfterEdit "always"). */
  savesUnsavedChanges?: boolean;
  /** For bash: whether the command runs sandboxed once approved (§3.17). */
  sandbox?: ApprovalSandbox;
  /** The rules an "always" answer saves in each scope (§4.2, §3.23); absent when the call cannot be remembered. */
  alwaysRules?: AlwaysRules;
}

/** Where an "always" answer is kept (§3.23): the session, the project's settings.local.json, the user's settings.json. */
export type ApprovalScope = 'session' | 'project' | 'user';
export type AlwaysRules = Record<ApprovalScope, string[]>;

/** `agent/beforeToolCall`'s `sandbox` (§4.2, §3.17). */
export interface ApprovalSandbox {
  sandboxed: boolean;
  mode: SandboxMode;
  /** Unrestricted network (false for none and for an allowlist). */
  network: boolean;
  /** The domains a sandboxed command may reach (a network allowlist). */
  allowedDomains?: string[];
  /** The model asks to rerun the command outside the sandbox, for this reason. */
  justification?: string;
  /** Why the sandbox cannot be used here. */
  unavailable?: string;
  /** The layers a sandboxed command runs in here (`Landlock ABI 7`, `…namespaces`, `seccomp`, `allowlist proxy`). */
  layers?: string[];
  /** What a sandboxed command is not kept from on this machine (absent when nothing). */
  notIsolated?: string[];
}

/**
 * `args` of the MCP trust question (`toolName` `mcp_servers`, `runId` "", §3.10): the project,
 * its servers waiting for trust with their command lines, and what changed since the user's last
 * answer (`[]` for a first question).
 */
export interface McpTrustArgs { project: string; servers: { name: string; command: string }[]; changes?: string[] }

export type ApprovalDecision = 'allow' | 'allowAlways' | 'block' | 'blockAlways';
/** `scope` (with allowAlways / blockAlways): where the rules of `alwaysRules` are saved; absent: the session. */
export interface BeforeToolCallResult { decision: ApprovalDecision; reason?: string; terminate?: boolean; scope?: ApprovalScope }

/** One answer `agent/askUser` offers. */
export interface AskUserOption { label: string; description?: string }
/**
 * `agent/askUser` (server → client, clients with `askUser`): the model (`ask_user`, with its
 * `toolCallId`) or an MCP server (`source`) asks the user a question.
 */
export interface AskUserParams {
  sessionId: string;
  runId: string;
  toolCallId?: string;
  question: string;
  options?: AskUserOption[];
  multiSelect: boolean;
  /** The user may type an answer of their own. */
  allowText: boolean;
  source?: { mcpServer: string };
}
/** `accept` with the chosen labels and/or typed text; `decline`: the user will not answer; `cancel`: dismissed. */
export interface AskUserResult { action: 'accept' | 'decline' | 'cancel'; selected?: string[]; text?: string }

export interface SaveDocumentsParams { uris: string[] }
/** §4.4: URIs not in `saved` are written by the server itself. */
export interface SaveDocumentsResult { saved: string[] }

/**
 * The LSP methods a client can answer through `agent/languageRequest` (§3.25), each giving the
 * model one tool: definition `lsp_definition`, references `lsp_references`, hover `lsp_hover`,
 * documentSymbol `lsp_document_symbols`, workspace/symbol `lsp_workspace_symbols`,
 * implementation `lsp_implementations`, rename `lsp_rename`.
 */
export type LanguageMethod =
  | 'textDocument/definition' | 'textDocument/references' | 'textDocument/hover' | 'textDocument/documentSymbol'
  | 'workspace/symbol' | 'textDocument/implementation' | 'textDocument/rename';

/** LSP's `Position`, `Range`, `Location` (positions in the connection's negotiated encoding). */
export interface LspPosition { line: number; character: number }
export interface LspRange { start: LspPosition; end: LspPosition }
export interface LspLocation { uri: string; range: LspRange }

/**
 * `agent/languageRequest` (server → client, §4.6): `params` are exactly the standard LSP params
 * of `method` (`{textDocument, position}`, plus `context` for references and `newName` for
 * rename; `{textDocument}` for documentSymbol; `{query}` for workspace/symbol).
 */
export interface LanguageRequestParams {
  sessionId: string;
  runId: string;
  toolCallId?: string;
  method: LanguageMethod;
  params: {
    textDocument?: { uri: string };
    position?: LspPosition;
    context?: { includeDeclaration: boolean };
    newName?: string;
    query?: string;
  };
}
/**
 * `servers`: the language servers asked that support the method for this document; `[]` means
 * none (the tool says "No language server in the editor answers …"). `result`: their merged
 * answer in LSP's shapes, positions in the negotiated encoding.
 */
export interface LanguageRequestResult { servers: string[]; result: unknown }

/** What the extension opts into (`capabilities.experimental.agent`). */
export interface AgentClientCapabilities {
  events: boolean;
  approvals: boolean;
  saveDocuments: boolean;
  diagnostics: boolean;
  askUser: boolean;
  /** §1.1, §4.6: the LSP methods answered through `agent/languageRequest`. */
  languageFeatures: LanguageMethod[];
}
