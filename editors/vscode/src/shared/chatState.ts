/**
 * The chat view model and its reducer: `$/agentEvent` notifications, approvals and local notices
 * in, a transcript the webview renders out.
 *
 * The same pure reducer runs in the extension host (which keeps the authoritative state and
 * answers commands such as "is a run active?") and in the webview (which applies the forwarded
 * actions incrementally), so a re-created webview gets a snapshot and then stays in step.
 * No `vscode` or DOM dependency: unit-tested with Node's test runner.
 */

import type {
  AgentEventParams, AgentMessage, AlwaysRules, AskUserOption, AskUserParams, AskUserResult, AssistantMessage, BeforeToolCallParams,
  CompactionReason, ContentBlock, Job, JobOutputResult, QueuedMessage, TodoItem, ToolResultMessage, Usage,
} from '../protocol';
import { changedFiles } from './multiDiff';
import { sandboxGaps, sandboxLayers, sandboxNote } from './sandbox';
import { applySubagentEvent, type SubagentRun } from './subagent';
import { hookLevel, hookLine } from './hooks';

export type ToolEvent = Extract<import('../protocol').AgentEvent, { type: 'tool_execution_start' | 'tool_execution_update' | 'tool_execution_end' }>;

export type ToolStatus = 'streaming' | 'approval' | 'running' | 'done' | 'error' | 'blocked' | 'aborted';

export interface ToolItem {
  id: string;
  name: string;
  args: Record<string, unknown>;
  /** Raw argument JSON while the model is still streaming it. */
  argsText: string;
  status: ToolStatus;
  /** Streamed partial output (tool_execution_update), replaced by the result at the end. */
  output: string;
  durationMs?: number;
  approval?: PendingApproval;
  /** Why the tool was blocked, when it was. */
  blockedReason?: string;
  /** Set when this tool changed a file: the view offers a diff button. */
  editPath?: string;
  /** For a `task` call: its child agent's steps (§3.24), as its `subagent_event`s arrive. */
  subagent?: SubagentRun;
  /** For a child agent's call: the `task` call it is a step of (not a block of any message). */
  parentId?: string;
}

export interface PendingApproval {
  requestId: string;
  kind: string;
  title: string;
  diff?: string;
  /** For a change of several files (`lsp_rename` with apply): the files, as the diff names them. */
  files?: string[];
  command?: string;
  cwd?: string;
  /** Approving also saves the user's unsaved changes in that file. */
  savesUnsavedChanges?: boolean;
  /** For bash: how the command runs once approved (§3.17), in words. */
  sandboxNote?: string;
  /** For a sandboxed command: the layers it runs in here (`Landlock ABI 7`, `seccomp`, …). */
  sandboxLayers?: string[];
  /** For a sandboxed command: what the sandbox does not keep it from on this machine. */
  sandboxGaps?: string[];
  /** For the web tools (kind `network`): the URL asked for, and the host an "always" answer covers. */
  url?: string;
  host?: string;
  /** The URL's host is this machine or a local network. */
  local?: boolean;
  /** For `web_search`: the query that would be sent. */
  query?: string;
  /** The rules an "always" answer saves per scope (§4.2); absent when the call cannot be remembered. */
  alwaysRules?: AlwaysRules;
}

export type AssistantBlock =
  | { type: 'text'; text: string }
  | { type: 'thinking'; text: string; done: boolean }
  | { type: 'tool'; toolCallId: string };

export type ChatItem =
  /** `messageId`: the session file entry id `agent/prompt` answered with (§3.12), when known. */
  | { kind: 'user'; key: string; text: string; contexts: string[]; messageId?: string }
  | { kind: 'assistant'; key: string; blocks: AssistantBlock[]; streaming: boolean; model?: string; error?: string; stopReason?: string }
  | { kind: 'notice'; key: string; level: 'info' | 'warning' | 'error'; text: string }
  | CompactionItem
  | QuestionItem;

/**
 * A question for the user (`agent/askUser`): answered in a quick pick, shown in the chat with
 * who asks (the model, or an MCP server) and, once settled, the answer.
 */
export interface QuestionItem {
  kind: 'question';
  key: string;
  requestId: string;
  question: string;
  options: AskUserOption[];
  multiSelect: boolean;
  allowText: boolean;
  /** The MCP server that asks; absent when the model asks. */
  mcpServer?: string;
  status: 'pending' | 'answered' | 'declined' | 'cancelled';
  /** The chosen labels and typed text, once answered. */
  selected?: string[];
  text?: string;
}

/** A background job of the session, with the output last read (`agent/jobOutput`). */
export interface JobItem extends Job {
  output?: string;
  /** The job printed more than `output` holds (the daemon keeps the last 64 KiB). */
  truncated?: boolean;
}

/**
 * A compaction marker: where the older conversation was replaced by a summary (§3.15), manual
 * or automatic; `earlier` is one found in a resumed session's history (its reason is not stored).
 */
export interface CompactionItem {
  kind: 'compaction';
  key: string;
  reason: CompactionReason | 'earlier';
  status: 'running' | 'done' | 'failed' | 'aborted';
  summary?: string;
  tokensBefore?: number;
  tokensAfter?: number;
  error?: string;
}

export interface QueueEntry { id?: string; text: string }

export interface ChatState {
  sessionId?: string;
  running: boolean;
  items: ChatItem[];
  tools: Record<string, ToolItem>;
  queue: { steering: QueueEntry[]; followUp: QueueEntry[] };
  totals: { input: number; output: number; cacheRead: number; cacheWrite: number; cost: number };
  /** Tokens in the context as of the last assistant response. */
  contextTokens: number;
  model?: string;
  lastSeq: number;
  /** Monotonic counter for item keys (stable across host and webview: both run the reducer). */
  nextKey: number;
  /** Ids of sent messages whose user message has not started yet, with their text to match. */
  pendingMessageIds: { id: string; text: string }[];
  /** The model's plan (§3.18): replaced whole by each `plan_update`; empty when it has none. */
  plan: TodoItem[];
  /** The session's background jobs in the order they started (`job_update`, `agent/getState.jobs`). */
  jobs: JobItem[];
}

export type ChatAction =
  | { type: 'event'; params: AgentEventParams }
  | { type: 'approvalRequest'; requestId: string; params: BeforeToolCallParams }
  | { type: 'approvalDone'; requestId: string; outcome: 'allowed' | 'blocked' | 'cancelled'; reason?: string }
  | { type: 'reset'; sessionId?: string }
  | { type: 'hydrate'; sessionId: string; messages: AgentMessage[]; messageIds?: (string | null)[] }
  | { type: 'notice'; level: 'info' | 'warning' | 'error'; text: string }
  | { type: 'model'; model: string }
  | { type: 'messageId'; messageId: string; text: string }
  | { type: 'dropMessageId'; messageId: string }
  /** The plan as `agent/getState` reports it (a resumed or switched-to session). */
  | { type: 'plan'; todos: TodoItem[] }
  /** The jobs as `agent/getState` or `agent/listJobs` report them. */
  | { type: 'jobs'; jobs: Job[] }
  | { type: 'job'; job: Job }
  | { type: 'jobOutput'; output: JobOutputResult }
  | { type: 'question'; requestId: string; params: AskUserParams }
  | { type: 'questionDone'; requestId: string; result: AskUserResult };

export function initialState(sessionId?: string): ChatState {
  return {
    sessionId, running: false, items: [], tools: {}, queue: { steering: [], followUp: [] },
    totals: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cost: 0 }, contextTokens: 0,
    lastSeq: 0, nextKey: 1, pendingMessageIds: [], plan: [], jobs: [],
  };
}

/** Applies one action in place and returns the same state (cheap for long transcripts). */
export function reduce(state: ChatState, action: ChatAction): ChatState {
  switch (action.type) {
    case 'event': return applyEvent(state, action.params);
    case 'approvalRequest': return applyApprovalRequest(state, action.requestId, action.params);
    case 'approvalDone': return applyApprovalDone(state, action);
    case 'reset': return initialStateKeepingModel(state, action.sessionId);
    case 'hydrate': return hydrate(state, action.sessionId, action.messages, action.messageIds);
    case 'notice': pushNotice(state, action.level, action.text); return state;
    case 'model': state.model = action.model; return state;
    case 'messageId': return noteMessageId(state, action.messageId, action.text);
    case 'dropMessageId':
      state.pendingMessageIds = state.pendingMessageIds.filter((p) => p.id !== action.messageId);
      return state;
    case 'plan': state.plan = planOf(action.todos); return state;
    case 'jobs': state.jobs = (action.jobs ?? []).map((j) => ({ ...state.jobs.find((o) => o.jobId === j.jobId), ...j })); return state;
    case 'job': upsertJob(state, action.job); return state;
    case 'jobOutput': {
      const job = state.jobs.find((j) => j.jobId === action.output.jobId);
      if (job) { job.output = action.output.output; job.truncated = action.output.truncated; }
      return state;
    }
    case 'question': return addQuestion(state, action.requestId, action.params);
    case 'questionDone': return settleQuestion(state, action.requestId, action.result);
  }
}

function initialStateKeepingModel(prev: ChatState, sessionId?: string): ChatState {
  const next = initialState(sessionId);
  next.model = prev.model;
  return next;
}

function key(state: ChatState): string { return `k${state.nextKey++}`; }

export function pushNotice(state: ChatState, level: 'info' | 'warning' | 'error', text: string): void {
  state.items.push({ kind: 'notice', key: key(state), level, text });
}

/** The text of user content: strings as they are, text blocks joined; images noted. */
export function contentText(content: string | ContentBlock[] | undefined): string {
  if (content === undefined) return '';
  if (typeof content === 'string') return content;
  return content.map((b) => (b.type === 'text' ? b.text : b.type === 'image' ? '[image]' : '')).filter((t) => t !== '').join('\n');
}

/** Splits a user message into its typed text and the context blocks added from the editor. */
export function splitUserContent(content: string | ContentBlock[] | undefined): { text: string; contexts: string[] } {
  if (content === undefined || typeof content === 'string') return { text: content ?? '', contexts: [] };
  const texts: string[] = [];
  const contexts: string[] = [];
  for (const b of content) {
    if (b.type === 'image') { contexts.push(`image (${b.mimeType})`); continue; }
    if (b.type !== 'text') continue;
    const m = /^<context path="([^"]*)"(?: lines="([^"]*)")?>/.exec(b.text);
    if (!m) { texts.push(b.text); continue; }
    const [start, end] = (m[2] ?? '').split('-');
    contexts.push(!m[2] ? m[1] : start === end || !end ? `${m[1]}:${start}` : `${m[1]}:${start}-${end}`);
  }
  return { text: texts.join('\n'), contexts };
}

export function queueEntry(q: QueuedMessage): QueueEntry {
  return { id: q.messageId, text: q.text ?? '' };
}

/** The assistant message being streamed: the last streaming one since the last user message. */
function currentAssistant(state: ChatState): Extract<ChatItem, { kind: 'assistant' }> | undefined {
  for (let i = state.items.length - 1; i >= 0; i--) {
    const it = state.items[i];
    if (it.kind === 'user') return undefined;
    if (it.kind === 'assistant' && it.streaming) return it;
  }
  return undefined;
}

export function ensureTool(state: ChatState, id: string, name: string): ToolItem {
  let tool = state.tools[id];
  if (!tool) {
    tool = { id, name, args: {}, argsText: '', status: 'streaming', output: '' };
    state.tools[id] = tool;
  }
  return tool;
}

/** The file a tool touches, when its arguments name one (pi's read/write/edit use `path`). */
export function toolPath(args: Record<string, unknown>): string | undefined {
  const p = args.path ?? args.file_path ?? args.filePath;
  return typeof p === 'string' ? p : undefined;
}

export function isEditTool(name: string): boolean {
  return name === 'edit' || name === 'write';
}

export function resultText(blocks: ContentBlock[] | undefined): string {
  return (blocks ?? []).map((b) => (b.type === 'text' ? b.text : b.type === 'image' ? '[image]' : '')).join('\n');
}

function addUsage(state: ChatState, usage: Usage | undefined): void {
  if (!usage) return;
  state.totals.input += usage.input ?? 0;
  state.totals.output += usage.output ?? 0;
  state.totals.cacheRead += usage.cacheRead ?? 0;
  state.totals.cacheWrite += usage.cacheWrite ?? 0;
  state.totals.cost += usage.cost?.total ?? 0;
  const ctx = usage.totalTokens || (usage.input + usage.output + usage.cacheRead + usage.cacheWrite);
  if (ctx > 0) state.contextTokens = ctx;
}

/**
 * An approval can reach the client before the events of the message that made the tool call
 * (they travel on different paths in the daemon). The approval then shows the tool on its own;
 * once the message places the tool, that stand-alone block is dropped so the card shows once.
 */
export function adoptTool(state: ChatState, owner: ChatItem | undefined, toolCallId: string): void {
  state.items = state.items.filter((it) => {
    if (it === owner || it.kind !== 'assistant') return true;
    const before = it.blocks.length;
    it.blocks = it.blocks.filter((b) => !(b.type === 'tool' && b.toolCallId === toolCallId));
    return it.blocks.length > 0 || before === 0;
  });
}

function adoptBlocks(state: ChatState, item: Extract<ChatItem, { kind: 'assistant' }>): void {
  for (const b of item.blocks) if (b?.type === 'tool') adoptTool(state, item, b.toolCallId);
}

function assistantBlocks(state: ChatState, msg: AssistantMessage): AssistantBlock[] {
  const blocks: AssistantBlock[] = [];
  for (const b of msg.content ?? []) {
    if (b.type === 'text') blocks.push({ type: 'text', text: b.text });
    else if (b.type === 'thinking') blocks.push({ type: 'thinking', text: b.thinking, done: true });
    else if (b.type === 'toolCall') {
      const tool = ensureTool(state, b.id, b.name);
      tool.args = b.arguments ?? {};
      if (tool.status === 'streaming') tool.status = 'running';
      blocks.push({ type: 'tool', toolCallId: b.id });
    }
  }
  return blocks;
}

function applyEvent(state: ChatState, p: AgentEventParams): ChatState {
  if (state.sessionId === undefined) state.sessionId = p.sessionId;
  if (p.sessionId !== state.sessionId) return state;
  if (typeof p.seq === 'number') {
    if (p.seq <= state.lastSeq) return state; // duplicate or replayed
    state.lastSeq = p.seq;
  }
  const ev = p.event;
  switch (ev.type) {
    case 'agent_start':
      state.running = true;
      break;
    case 'message_start':
      onMessageStart(state, ev.message);
      break;
    case 'message_update':
      onMessageUpdate(state, ev.assistantMessageEvent);
      break;
    case 'message_end':
      onMessageEnd(state, ev.message);
      break;
    case 'message_discard': {
      const cur = currentAssistant(state);
      if (cur) state.items = state.items.filter((it) => it !== cur);
      pushNotice(state, 'warning', `Response withdrawn (${ev.reason}); retrying.`);
      break;
    }
    case 'tool_execution_start':
    case 'tool_execution_update':
    case 'tool_execution_end':
      applyToolEvent(state, ev);
      break;
    case 'subagent_event':
      applySubagentEvent({ ensureTool, applyToolEvent, adoptTool }, state, ev.parentToolCallId, ev.agent, ev.event);
      break;
    case 'hook':
      pushNotice(state, hookLevel(ev.outcome), hookLine(ev));
      break;
    case 'provider_retry':
      pushNotice(state, 'warning', `Provider error: ${ev.errorMessage}. Retrying (${ev.attempt}/${ev.maxAttempts}) in ${Math.round(ev.delayMs / 100) / 10}s.`);
      break;
    case 'queue_update':
      state.queue = { steering: (ev.steering ?? []).map(queueEntry), followUp: (ev.followUp ?? []).map(queueEntry) };
      break;
    case 'agent_end':
      break;
    case 'agent_settled':
      onSettled(state, ev.aborted);
      break;
    case 'compaction_start':
      state.items.push({ kind: 'compaction', key: key(state), reason: ev.reason, status: 'running' });
      break;
    case 'compaction_end':
      onCompactionEnd(state, ev);
      break;
    case 'model_update':
      state.model = ev.model.id;
      break;
    case 'plan_update':
      state.plan = planOf(ev.todos);
      break;
    case 'job_update':
      if (ev.job) upsertJob(state, ev.job);
      break;
    default:
      break;
  }
  return state;
}

/** A tool's start, partial output and end (the session's calls and a subagent's alike). */
export function applyToolEvent(state: ChatState, ev: ToolEvent): ToolItem {
  switch (ev.type) {
    case 'tool_execution_start': {
      const tool = ensureTool(state, ev.toolCallId, ev.toolName);
      tool.args = ev.args ?? tool.args;
      if (tool.status !== 'approval') tool.status = 'running';
      return tool;
    }
    case 'tool_execution_update': {
      const tool = ensureTool(state, ev.toolCallId, ev.toolName);
      tool.output = resultText(ev.partialResult?.content);
      if (tool.status === 'streaming') tool.status = 'running';
      return tool;
    }
    case 'tool_execution_end': {
      const tool = ensureTool(state, ev.toolCallId, ev.toolName);
      tool.output = resultText(ev.result?.content);
      tool.durationMs = ev.durationMs;
      // A rejected or cancelled call keeps that status: its error result only echoes it. A call
      // that ends while its approval is still open was cancelled (abort ends it before the
      // server's $/cancelRequest reaches us).
      if (tool.status === 'approval') tool.status = ev.isError ? 'aborted' : 'done';
      else if (tool.status !== 'blocked' && tool.status !== 'aborted') tool.status = ev.isError ? 'error' : 'done';
      tool.approval = undefined;
      const path = toolPath(tool.args);
      if (!ev.isError && isEditTool(tool.name) && path) tool.editPath = path;
      return tool;
    }
  }
}

/**
 * Records the id `agent/prompt` (or steer, follow-up) answered with for a message: on its user
 * item if that already started (the response comes first, but be tolerant), else until it starts.
 */
function noteMessageId(state: ChatState, id: string, text: string): ChatState {
  const last = [...state.items].reverse().find((it) => it.kind === 'user');
  if (last?.kind === 'user' && last.messageId === undefined && last.text === text && state.pendingMessageIds.length === 0) {
    last.messageId = id;
  } else {
    state.pendingMessageIds.push({ id, text });
  }
  return state;
}

function takeMessageId(state: ChatState, text: string): string | undefined {
  const i = state.pendingMessageIds.findIndex((p) => p.text === text);
  if (i < 0) return undefined;
  return state.pendingMessageIds.splice(i, 1)[0].id;
}

/** The text a compaction summary has as a message of the model's context (pi's prefix). */
export const COMPACTION_PREFIX = 'The conversation history before this point was compacted into the following summary:\n\n<summary>\n';

function onCompactionEnd(state: ChatState, ev: Extract<import('../protocol').AgentEvent, { type: 'compaction_end' }>): void {
  let item: CompactionItem | undefined;
  for (let i = state.items.length - 1; i >= 0 && !item; i--) {
    const it = state.items[i];
    if (it.kind === 'compaction' && it.status === 'running') item = it;
  }
  if (!item) {
    item = { kind: 'compaction', key: key(state), reason: ev.reason, status: 'running' };
    state.items.push(item);
  }
  if (ev.result) {
    item.status = 'done';
    item.summary = ev.result.summary;
    item.tokensBefore = ev.result.tokensBefore;
    item.tokensAfter = ev.result.estimatedTokensAfter;
    // The next response reports the new size; until then the old one would mislead.
    state.contextTokens = ev.result.estimatedTokensAfter;
  } else {
    item.status = ev.aborted ? 'aborted' : 'failed';
    item.error = ev.errorMessage;
  }
}

function onMessageStart(state: ChatState, message: AgentMessage): void {
  if (message.role === 'user') {
    const content = (message as { content?: string | ContentBlock[] }).content;
    const whole = contentText(content);
    if (whole.startsWith(COMPACTION_PREFIX)) {
      const summary = whole.slice(COMPACTION_PREFIX.length).replace(/\n<\/summary>$/, '');
      state.items.push({ kind: 'compaction', key: key(state), reason: 'earlier', status: 'done', summary });
      return;
    }
    const { text, contexts } = splitUserContent(content);
    const messageId = takeMessageId(state, text);
    state.items.push(messageId ? { kind: 'user', key: key(state), text, contexts, messageId } : { kind: 'user', key: key(state), text, contexts });
  } else if (message.role === 'assistant') {
    const a = message as AssistantMessage;
    const item: ChatItem = { kind: 'assistant', key: key(state), blocks: assistantBlocks(state, a), streaming: true, model: a.model };
    state.items.push(item);
    adoptBlocks(state, item);
    if (a.model) state.model = a.model;
  }
}

function onMessageUpdate(state: ChatState, e: import('../protocol').AssistantMessageEvent): void {
  const cur = currentAssistant(state);
  if (!cur) return;
  const i = (e as { contentIndex?: number }).contentIndex ?? 0;
  switch (e.type) {
    case 'text_start': cur.blocks[i] = { type: 'text', text: '' }; break;
    case 'text_delta': {
      const b = cur.blocks[i];
      if (b && b.type === 'text') b.text += e.delta; else cur.blocks[i] = { type: 'text', text: e.delta };
      break;
    }
    case 'text_end': cur.blocks[i] = { type: 'text', text: e.content }; break;
    case 'thinking_start': cur.blocks[i] = { type: 'thinking', text: '', done: false }; break;
    case 'thinking_delta': {
      const b = cur.blocks[i];
      if (b && b.type === 'thinking') b.text += e.delta; else cur.blocks[i] = { type: 'thinking', text: e.delta, done: false };
      break;
    }
    case 'thinking_end': cur.blocks[i] = { type: 'thinking', text: e.content, done: true }; break;
    case 'toolcall_start': {
      ensureTool(state, e.id, e.toolName);
      cur.blocks[i] = { type: 'tool', toolCallId: e.id };
      adoptTool(state, cur, e.id);
      break;
    }
    case 'toolcall_delta': {
      const b = cur.blocks[i];
      if (b && b.type === 'tool') state.tools[b.toolCallId].argsText += e.delta;
      break;
    }
    case 'toolcall_end': {
      const tool = ensureTool(state, e.toolCall.id, e.toolCall.name);
      tool.args = e.toolCall.arguments ?? {};
      cur.blocks[i] = { type: 'tool', toolCallId: e.toolCall.id };
      adoptTool(state, cur, e.toolCall.id);
      break;
    }
    default: break;
  }
}

function onMessageEnd(state: ChatState, message: AgentMessage): void {
  if (message.role !== 'assistant') {
    if (message.role === 'toolResult') applyToolResult(state, message as ToolResultMessage);
    return;
  }
  const a = message as AssistantMessage;
  const cur = currentAssistant(state);
  const blocks = assistantBlocks(state, a);
  const item = cur ?? { kind: 'assistant' as const, key: key(state), blocks, streaming: false };
  if (!cur) state.items.push(item);
  item.blocks = blocks;
  adoptBlocks(state, item);
  item.streaming = false;
  item.stopReason = a.stopReason;
  item.model = a.model;
  // An aborted response needs no error box: the run's "aborted" notice follows.
  if (a.stopReason === 'error') item.error = a.errorMessage ?? 'The model request failed.';
  addUsage(state, a.usage);
}

function applyToolResult(state: ChatState, r: ToolResultMessage): void {
  const tool = state.tools[r.toolCallId];
  // Only fills in tools whose end was not seen (hydrated sessions): a final status stays.
  if (!tool || !['streaming', 'running', 'approval'].includes(tool.status)) return;
  tool.output = resultText(r.content);
  tool.status = tool.status === 'approval' && r.isError ? 'aborted' : r.isError ? 'error' : 'done';
}

function onSettled(state: ChatState, aborted: boolean): void {
  state.running = false;
  for (const it of state.items) if (it.kind === 'assistant') it.streaming = false;
  for (const tool of Object.values(state.tools)) {
    if (tool.status === 'running' || tool.status === 'streaming' || tool.status === 'approval') {
      tool.status = aborted ? 'aborted' : 'error';
      tool.approval = undefined;
    }
  }
  if (aborted) pushNotice(state, 'info', ABORTED_NOTICE);
}

/** A plan off the wire: an item without text is left out, one with an unknown status counts as pending. */
function planOf(todos: TodoItem[] | undefined): TodoItem[] {
  return (Array.isArray(todos) ? todos : [])
    .filter((t) => t && typeof t.content === 'string')
    .map((t) => ({ content: t.content, status: t.status === 'completed' || t.status === 'in_progress' ? t.status : 'pending' }));
}

/** A job's new state; its output stays until read again. A job not seen yet is added last. */
function upsertJob(state: ChatState, job: Job): void {
  const i = state.jobs.findIndex((j) => j.jobId === job.jobId);
  if (i < 0) state.jobs.push({ ...job });
  else state.jobs[i] = { ...state.jobs[i], ...job };
}

/** The jobs still running. */
export function runningJobs(state: ChatState): JobItem[] {
  return state.jobs.filter((j) => j.status === 'running');
}

function addQuestion(state: ChatState, requestId: string, p: AskUserParams): ChatState {
  if (state.sessionId !== undefined && p.sessionId !== state.sessionId) return state;
  const item: QuestionItem = {
    kind: 'question', key: key(state), requestId, question: p.question, options: p.options ?? [],
    multiSelect: p.multiSelect === true, allowText: p.allowText === true, status: 'pending',
  };
  if (p.source?.mcpServer) item.mcpServer = p.source.mcpServer;
  state.items.push(item);
  return state;
}

function settleQuestion(state: ChatState, requestId: string, r: AskUserResult): ChatState {
  const item = state.items.find((it): it is QuestionItem => it.kind === 'question' && it.requestId === requestId);
  if (!item || item.status !== 'pending') return state;
  item.status = r.action === 'accept' ? 'answered' : r.action === 'decline' ? 'declined' : 'cancelled';
  if (r.action === 'accept') {
    if (r.selected?.length) item.selected = [...r.selected];
    if (r.text !== undefined && r.text !== '') item.text = r.text;
  }
  return state;
}

/** The one mark of an aborted run, live and in a resumed transcript alike. */
export const ABORTED_NOTICE = 'Run aborted.';

function applyApprovalRequest(state: ChatState, requestId: string, p: BeforeToolCallParams): ChatState {
  if (state.sessionId !== undefined && p.sessionId !== state.sessionId) return state;
  const tool = ensureTool(state, p.toolCallId, p.toolName);
  if (p.args) tool.args = p.args;
  tool.status = 'approval';
  const preview = p.preview;
  tool.approval = {
    requestId, kind: p.kind, title: p.title,
    diff: preview?.type === 'diff' ? preview.diff : undefined,
    files: preview?.type === 'diff' && (preview.paths?.length ?? 0) > 1 ? changedFiles(preview.diff, preview.paths ?? []) : undefined,
    command: preview?.type === 'command' ? preview.command : undefined,
    cwd: preview?.type === 'command' ? preview.cwd : undefined,
    url: preview?.type === 'fetch' ? preview.url : undefined,
    host: preview?.type === 'fetch' ? preview.host : undefined,
    local: preview?.type === 'fetch' && preview.local === true ? true : undefined,
    query: p.kind === 'network' && typeof p.args?.query === 'string' ? p.args.query : undefined,
    savesUnsavedChanges: p.savesUnsavedChanges === true ? true : undefined,
    sandboxNote: sandboxNote(p.sandbox),
    sandboxLayers: sandboxLayers(p.sandbox).length > 0 ? sandboxLayers(p.sandbox) : undefined,
    sandboxGaps: sandboxGaps(p.sandbox).length > 0 ? sandboxGaps(p.sandbox) : undefined,
    alwaysRules: p.alwaysRules,
  };
  const shown = state.items.some((it) => it.kind === 'assistant' && it.blocks.some((b) => b.type === 'tool' && b.toolCallId === p.toolCallId));
  if (!shown && !tool.parentId) {
    // The approval came before the message that made the call: show the tool on its own until
    // that message places it (adoptTool).
    state.items.push({ kind: 'assistant', key: key(state), blocks: [{ type: 'tool', toolCallId: p.toolCallId }], streaming: false });
  }
  return state;
}

function applyApprovalDone(state: ChatState, a: Extract<ChatAction, { type: 'approvalDone' }>): ChatState {
  for (const tool of Object.values(state.tools)) {
    if (tool.approval?.requestId !== a.requestId) continue;
    tool.approval = undefined;
    if (a.outcome === 'allowed') tool.status = 'running';
    else if (a.outcome === 'blocked') { tool.status = 'blocked'; tool.blockedReason = a.reason; }
    else tool.status = 'aborted';
  }
  return state;
}

function hydrate(prev: ChatState, sessionId: string, messages: AgentMessage[], ids: (string | null)[] = []): ChatState {
  const state = initialStateKeepingModel(prev, sessionId);
  messages.forEach((m, i) => {
    if (m.role === 'user') {
      onMessageStart(state, m);
      const item = state.items[state.items.length - 1];
      const id = ids[i];
      if (item?.kind === 'user' && id) item.messageId = id;
    } else if (m.role === 'assistant') {
      onMessageStart(state, m);
      onMessageEnd(state, m);
      // Live, the run's agent_settled {aborted} marks it; stored, its aborted response does.
      if ((m as AssistantMessage).stopReason === 'aborted') pushNotice(state, 'info', ABORTED_NOTICE);
    } else if (m.role === 'toolResult') applyToolResult(state, m as ToolResultMessage);
  });
  for (const tool of Object.values(state.tools)) {
    if (tool.status === 'done' && isEditTool(tool.name)) tool.editPath = toolPath(tool.args);
    if (tool.status === 'running') tool.status = 'aborted';
  }
  return state;
}

/** True when some approval in the state is waiting for the user. */
export function pendingApprovals(state: ChatState): PendingApproval[] {
  return Object.values(state.tools).flatMap((t) => (t.approval ? [t.approval] : []));
}
