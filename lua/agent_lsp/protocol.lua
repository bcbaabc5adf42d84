--- agent_lsp.protocol: the agent protocol as the Neovim client sees it.
---
--- MIRROR: this file mirrors `protocol.md` at the repository root (the source of truth, kept in
--- sync with `src/lsp/protocol.rs`). When the protocol changes, change it there first, then
--- here. Event payloads are pi's AgentEvent shapes (`src/agent/event.rs`), not redefined here.

local M = {}

--- The protocol version this client speaks (`experimental.agent.protocolVersion`).
M.PROTOCOL_VERSION = 1

--- Client -> server requests.
M.methods = {
  prompt = "agent/prompt",
  steer = "agent/steer",
  follow_up = "agent/followUp",
  abort = "agent/abort",
  clear_queue = "agent/clearQueue",
  new_session = "agent/newSession",
  get_state = "agent/getState",
  get_messages = "agent/getMessages",
  get_document = "agent/getDocument",
  remove_queued = "agent/removeQueued",
  mcp_status = "agent/mcpStatus",
  mcp_ask_trust = "agent/mcpAskTrust",
  list_models = "agent/listModels",
  set_model = "agent/setModel",
  set_thinking_level = "agent/setThinkingLevel",
  set_queue_modes = "agent/setQueueModes",
  set_sandbox = "agent/setSandbox",
  get_stats = "agent/getStats",
  list_sessions = "agent/listSessions",
  fork_session = "agent/forkSession",
  rename_session = "agent/renameSession",
  list_commands = "agent/listCommands",
  compact = "agent/compact",
  run_changes = "agent/runChanges",
  revert = "agent/revert",
  list_jobs = "agent/listJobs",
  kill_job = "agent/killJob",
  job_output = "agent/jobOutput",
}

--- Client -> server notifications. `agent/diagnostics {uri, diagnostics: lsp.Diagnostic[]}`
--- forwards the editor's diagnostics (advertised with `experimental.agent.diagnostics`); the
--- daemon then offers the model its `diagnostics` tool.
M.client_notifications = {
  diagnostics = "agent/diagnostics",
}

--- Server -> client traffic.
M.server = {
  event = "$/agentEvent",
  before_tool_call = "agent/beforeToolCall",
  save_documents = "agent/saveDocuments",
  ask_user = "agent/askUser",
  -- {sessionId, runId, toolCallId, method, params} -> {servers, result}: the editor's other
  -- language servers answer one of `language_features` for the model's `lsp_*` tools.
  language_request = "agent/languageRequest",
  cancel_request = "$/cancelRequest",
}

--- `agent/askUser` actions.
M.ask_actions = { accept = "accept", decline = "decline", cancel = "cancel" }

--- `agent/beforeToolCall` decisions.
M.decisions = {
  allow = "allow",
  allow_always = "allowAlways",
  block = "block",
  block_always = "blockAlways",
}

--- `agent/prompt` streaming behaviours and the dispositions it answers with.
M.streaming_behavior = { steer = "steer", follow_up = "followUp" }
M.dispositions = {
  started = "started",
  steered = "steered",
  follow_up = "followUp",
  command = "command",
  expanding = "expanding",
}

--- `agent/beforeToolCall` result `scope` of an "always" answer (protocol.md §4.2, §3.23); the
--- request's `alwaysRules {session, project, user}` names the rules each one saves.
M.scopes = { session = "session", project = "project", user = "user" }

--- Tool kinds carried by `agent/beforeToolCall.kind`.
M.tool_kinds = { "read", "edit", "delete", "move", "search", "execute", "network", "other" }

--- Error codes of client -> server requests (protocol.md §3).
M.errors = {
  invalid_params = -32602,
  method_not_found = -32601,
  agent_busy = -32001,
  not_initialized = -32002,
  no_model = -32003,
  compaction_failed = -32004,
}

--- `agent/beforeToolCall.preview` types: `{type="diff", path, paths?, diff}` (`paths`: every file
--- of an edit of several, `lsp_rename` with apply; one ---/+++ header per file in `diff`),
--- `{type="command", command, cwd}`,
--- `{type="fetch", url, host}` (kind "network": `web_fetch`; its allowAlways is remembered per host).
M.preview_types = { diff = "diff", command = "command", fetch = "fetch" }

--- Session events added to pi's AgentEvent stream by the daemon.
M.session_events = {
  queue_update = "queue_update",
  agent_settled = "agent_settled",
  model_update = "model_update",
  loop_guard = "loop_guard",
  commands_update = "commands_update",
  command_error = "command_error",
  compaction_start = "compaction_start",
  compaction_end = "compaction_end",
  changes_update = "changes_update",
  plan_update = "plan_update",
  job_update = "job_update",
  -- {parentToolCallId, agent, event}: a loop event of a `task` call's child (§3.24).
  subagent_event = "subagent_event",
  -- {event, hook, outcome, message?, durationMs, toolCallId?, additionalContext?} (§3.22).
  hook = "hook",
}

--- The LSP methods the plugin answers through `agent/languageRequest` (advertised as
--- `experimental.agent.languageFeatures`), each with the tool it gives the model.
M.language_features = {
  "textDocument/definition", -- lsp_definition
  "textDocument/references", -- lsp_references
  "textDocument/hover", -- lsp_hover
  "textDocument/documentSymbol", -- lsp_document_symbols
  "workspace/symbol", -- lsp_workspace_symbols
  "textDocument/implementation", -- lsp_implementations
  "textDocument/rename", -- lsp_rename
}

--- The tool that runs a subagent (protocol.md §3.24).
M.task_tool = "task"

--- The tool the model writes its plan with (protocol.md §3.18).
M.plan_tool = "todo_write"

--- Shapes (protocol.md):
---   agent/prompt      {sessionId?, message, streamingBehavior?} -> {sessionId, runId, messageId, disposition}
---   agent/steer|followUp {sessionId, message} -> {sessionId, runId, messageId, disposition, steering, followUp}
---   agent/abort       {sessionId} -> {aborted}
---   agent/clearQueue  {sessionId} -> {steering, followUp}
---   agent/removeQueued {sessionId, messageId} -> {removed, steering, followUp}
---   agent/newSession  {cwd?, resume?, maxTurns?} -> {sessionId, cwd}   (resume: a stored session id, prefix or file)
---   agent/getState    {sessionId} -> {sessionId, cwd, model{provider,id}, thinkingLevel, steeringMode, followUpMode, isStreaming, runId, steering, followUp, messageCount, lastSeq, sessionFile, contextFiles, sandbox, plan}   (messageCount: the stored messages, as listSessions counts them; sandbox below; plan: Todo[])
---   agent/listModels  {} -> {models: [{provider, id, name, api, contextWindow, maxTokens, reasoning, thinkingLevels, input, cost}]}
---   agent/setModel    {sessionId, model} -> {model, thinkingLevel}   (from the next request, also mid-run)
---   agent/setThinkingLevel {sessionId, level} -> {model, thinkingLevel}
---   agent/setQueueModes {sessionId, steering?, followUp?} -> {steering, followUp}   ("all" | "one-at-a-time")
---   agent/setSandbox  {sessionId, sandbox, sandboxNetwork?} -> {sessionId, sandbox}   (sandboxNetwork: true | false | {domain…})
---   sandbox (getState, setSandbox) {available, reason?, mode, network, allowedDomains?, explicit,
---                     layers{landlock{available, active, abi, ioctlDev, scopes, unixSockets},
---                     namespaces{available, active, kinds?, reason?}, seccomp{available, active, reason?},
---                     proxy{available, active}}, notIsolated: string[], refusedHosts?}
---   agent/getStats    {sessionId} -> {sessionFile, sessionId, userMessages, assistantMessages, toolCalls, toolResults, totalMessages, tokens, cost, contextUsage}
---   agent/listSessions {cwd?} -> {sessions: [{sessionId, title, name, cwd, created, modified, messageCount, file}]}
---   agent/forkSession {sessionId, messageId} -> {sessionId, cwd, text}
---   agent/renameSession {sessionId, name} -> {sessionId, name}
---   agent/listCommands {sessionId} -> {commands: [{name, description, source, argumentHint?}]}
---   agent/compact     {sessionId, instructions?} -> {summary, firstKeptEntryId, tokensBefore, estimatedTokensAfter, usage?, details}   (after compaction_start/compaction_end)
---   agent/runChanges  {sessionId, runId?} -> {runId, files: [{path, change, diff, userChanged, revertible, reason?}]}
---   agent/revert      {sessionId, runId?|messageId?, paths?, force?, fork?} -> {reverted, conflicts, skipped, fork?}
---   agent/mcpStatus   {sessionId} -> {sessionId, servers: [{name, state, error?, tools}]}   (state: starting|ready|failed|disabled|untrusted)
---   agent/getMessages {sessionId} -> {sessionId, messages, messageIds}   (messageIds: parallel to messages, a user message's entry id, else null)
---   agent/getDocument {uri} -> {uri, version, text}   (the daemon's mirror of an open document)
---   $/agentEvent      {sessionId, runId, seq, event}
---   agent/beforeToolCall {sessionId, runId, toolCallId, toolName, args, kind, title, preview?,
---     savesUnsavedChanges?, sandbox?{sandboxed, mode, network, allowedDomains?, justification?,
---     unavailable?, layers?, notIsolated?}}   (layers: {"Landlock ABI 7", "…namespaces", "seccomp", …})
---                     -> {decision, reason?, terminate?}
---   agent/saveDocuments {uris} -> {saved}
---   agent/askUser     {sessionId, runId, toolCallId?, question, options?: [{label, description?}],
---                     multiSelect, allowText, source?{mcpServer}} -> {action, selected?, text?}
---                     (action: accept | decline | cancel; $/cancelRequest when the run is aborted)
---   session events    model_update {model, thinkingLevel}, mcp_update {servers}, commands_update {commands},
---                     compaction_start {reason}, compaction_end {reason, result?, aborted, willRetry, errorMessage?},
---                     plan_update {todos: Todo[]}   (the whole plan, before the todo_write's tool_execution_end)
---   Todo              {content, status}   (status: pending | in_progress | completed)
---   job_update        {job: Job}   (a background job started or ended)
---   Job               {jobId, command, status, exitCode?, startedAt, endedAt?}   (status: running | exited | killed | failed; times in ms)
---   agent/listJobs    {sessionId} -> {jobs: Job[]}
---   agent/killJob     {sessionId, jobId} -> {job: Job}
---   agent/jobOutput   {sessionId, jobId} -> {jobId, output, truncated}   (the last 64 KiB the job printed)
---   todo_write        tool {todos: Todo[]}; its result's details {todos} is the plan as stored
---   MCP trust         agent/beforeToolCall with toolName "mcp_servers", runId "", args {project,
---                     servers: [{name, command}], changes: string[]}   (changes: since the last answer; {} for a first question)
---   QueuedMessage     {messageId, text}
---   agent/languageRequest {sessionId, runId, toolCallId, method, params} -> {servers: string[], result}
---                     (params: the standard LSP params of `method`, positions in the connection's
---                     negotiated encoding; servers: the language servers asked, [] = none answers
---                     `method` for that file; result: their results merged, positions converted
---                     back; an error reply fails the tool with its message)

--- JSON-RPC error code for a request the client cancelled or a server request that was cancelled.
M.REQUEST_CANCELLED = -32800

--- The client capability object sent under `capabilities.experimental.agent`. `askUser` says
--- the plugin answers the model's questions (`agent/askUser`).
--- `diagnostics` says the plugin forwards the editor's diagnostics (`agent/diagnostics`), which
--- lets the daemon offer the model its `diagnostics` tool. `languageFeatures` lists the LSP
--- methods the plugin answers with the editor's other language servers (`agent/languageRequest`),
--- which gives the model its `lsp_*` tools.
---@param forward_diagnostics boolean?
---@return table
function M.client_capability(forward_diagnostics)
  return {
    events = true,
    approvals = true,
    saveDocuments = true,
    askUser = true,
    diagnostics = forward_diagnostics == true,
    languageFeatures = vim.deepcopy(M.language_features),
  }
end

return M
