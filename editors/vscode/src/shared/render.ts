/**
 * HTML for each chat item, as strings: the webview diffs them per item key and replaces only the
 * items whose HTML changed. Pure (no DOM) so rendering is unit-testable; all model text goes
 * through `escapeHtml` or the safe Markdown renderer.
 */

import type { AssistantBlock, ChatItem, ChatState, CompactionItem, PendingApproval, QuestionItem, ToolItem } from './chatState';
import { answerLine, asker } from './ask';
import { toolPath } from './chatState';
import { diffLines } from './edits';
import { duration, tokens } from './format';
import { escapeHtml, renderMarkdown } from './markdown';
import type { ApprovalScope, TodoItem } from '../protocol';
import { planCount } from './plan';
import { NOT_ISOLATED } from './sandbox';
import type { SubagentRun } from './subagent';

const STATUS_LABEL: Record<ToolItem['status'], string> = {
  streaming: 'preparing', approval: 'needs approval', running: 'running', done: 'done',
  error: 'failed', blocked: 'blocked', aborted: 'aborted',
};

/** An `lsp_*` call's place: `src/b.ts:5 greet`, a rename's new name after an arrow. */
function lspTarget(path: string, a: Record<string, unknown>): string {
  const line = typeof a.line === 'number' || typeof a.line === 'string' ? `:${a.line}${a.column !== undefined && a.symbol === undefined ? `:${String(a.column)}` : ''}` : '';
  const symbol = typeof a.symbol === 'string' ? ` ${a.symbol}` : '';
  const rename = typeof a.newName === 'string' ? ` → ${a.newName}${a.apply === true ? '' : ' (proposed)'}` : '';
  return `${path}${line}${symbol}${rename}`;
}

/**
 * An `lsp_*` result with each place it names (`path:line:col:` at a line's start, 1-based) as a
 * link that opens the file there.
 */
export function linkLocations(text: string): string {
  return text.split('\n').map((line) => {
    const m = /^([^\s:][^:]*):(\d+):(\d+)(?=:|$)/.exec(line);
    if (!m) return escapeHtml(line);
    const [place, file, l, c] = m;
    return `<a class="loc" href="#" data-action="openLocation" data-path="${escapeHtml(file)}" data-line="${l}" data-column="${c}">${escapeHtml(place)}</a>${escapeHtml(line.slice(place.length))}`;
  }).join('\n');
}

/** What the tool acts on, for the card header: a path, a command or a pattern. */
export function toolTarget(tool: ToolItem): string {
  const a = tool.args ?? {};
  if (tool.name === 'todo_write' && Array.isArray(a.todos)) return `${planCount(a.todos as TodoItem[])} done`;
  const path = toolPath(a);
  if (path && tool.name.startsWith('lsp_')) return lspTarget(path, a);
  if (path) return path;
  for (const k of ['command', 'pattern', 'query', 'url', 'question', 'description']) if (typeof a[k] === 'string') return a[k] as string;
  return '';
}

function renderDiff(diff: string): string {
  return `<pre class="diff">${diffLines(diff).map((l) => `<span class="${l.cls}">${escapeHtml(l.text) || ' '}</span>`).join('')}</pre>`;
}

/** Shown on an approval whose edit would save the user's own unsaved changes too. */
export const UNSAVED_WARNING = 'Approving also saves your unsaved changes in this file.';

/** Shown on a fetch whose host is this machine or a local network (a request the web could not make). */
export function localWarning(host: string): string {
  return `${host} is this machine or a local network: approving lets the agent read from it.`;
}

/**
 * The site an "always" answer for a fetch covers: the URL's host, with its port when it is not
 * the scheme's default (what `URL.host` gives); the preview's host when the URL does not parse.
 */
export function siteOf(url: string | undefined, host: string | undefined): string | undefined {
  try { return url ? new URL(url).host || host : host; } catch { return host; }
}

/** "Always allow", or for a web fetch "Always allow for <site>" (the daemon remembers it per site). */
export function alwaysLabel(a: Pick<PendingApproval, 'host' | 'url'>): string {
  const site = siteOf(a.url, a.host);
  return site ? `Always allow for ${site}` : 'Always allow';
}

export const SCOPE_LABEL: Record<ApprovalScope, string> = { session: 'this session', project: 'this project', user: 'me' };

/**
 * "Always allow: this session / this project / me" (§4.2 `alwaysRules`), each button with the
 * rules it saves; undefined when the daemon sent no rules (the single "Always allow" then).
 */
export function alwaysScopes(a: Pick<PendingApproval, 'requestId' | 'alwaysRules'>): string | undefined {
  const rules = a.alwaysRules;
  if (!rules) return undefined;
  const scopes = (['session', 'project', 'user'] as const).filter((s) => (rules[s] ?? []).length > 0);
  if (scopes.length === 0) return undefined;
  const rid = escapeHtml(a.requestId);
  const buttons = scopes.map((s) => `<button data-action="approve" data-decision="allowAlways" data-scope="${s}" data-request="${rid}" title="Saves ${escapeHtml(rules[s].join(', '))}">${SCOPE_LABEL[s]} <code class="rules">${escapeHtml(rules[s].join(', '))}</code></button>`).join('');
  return `<div class="approval-always"><span>Always allow:</span>${buttons}</div>`;
}

/** The files a change of several files touches, in one line above its diff. */
export function filesLine(files: readonly string[]): string {
  return `Changes ${files.length} files: ${files.join(', ')}`;
}

function renderApproval(tool: ToolItem, a: PendingApproval): string {
  const rid = escapeHtml(a.requestId);
  const preview = a.diff ? renderDiff(a.diff)
    : a.command ? `<pre class="command"><span class="prompt">$</span> ${escapeHtml(a.command)}${a.cwd ? `\n<span class="cwd">in ${escapeHtml(a.cwd)}</span>` : ''}</pre>`
      : a.url ? `<pre class="fetch"><span class="prompt">fetch</span> ${escapeHtml(a.url)}${a.host ? `\n<span class="cwd">from ${escapeHtml(a.host)}</span>` : ''}</pre>`
        : a.query !== undefined ? `<pre class="fetch"><span class="prompt">search the web for</span> ${escapeHtml(a.query)}</pre>`
          : `<pre class="args">${escapeHtml(JSON.stringify(tool.args, null, 2))}</pre>`;
  const diffBtn = a.diff || tool.name === 'edit' || tool.name === 'write'
    ? `<button class="link" data-action="approvalDiff" data-request="${rid}">Open diff</button>` : '';
  return `<div class="approval" data-request="${rid}">
<div class="approval-title"><span class="codicon-warn">⚠</span> ${escapeHtml(a.title || `Allow ${tool.name}?`)} ${diffBtn}</div>
${a.files ? `<div class="approval-files">${escapeHtml(filesLine(a.files))}</div>\n` : ''}${a.savesUnsavedChanges ? `<div class="approval-warning">${UNSAVED_WARNING}</div>\n` : ''}${a.local ? `<div class="approval-warning">${escapeHtml(localWarning(siteOf(a.url, a.host) ?? 'This address'))}</div>\n` : ''}${a.sandboxNote ? `<div class="approval-sandbox">${escapeHtml(a.sandboxNote)}</div>\n` : ''}${a.sandboxLayers?.length ? `<div class="approval-sandbox layers">Layers: ${escapeHtml(a.sandboxLayers.join(', '))}.</div>\n` : ''}${a.sandboxGaps?.length ? `<div class="approval-sandbox gaps">${NOT_ISOLATED}<ul>${a.sandboxGaps.map((g) => `<li>${escapeHtml(g)}</li>`).join('')}</ul></div>\n` : ''}${preview}
<div class="approval-actions">
<button class="primary" data-action="approve" data-decision="allow" data-request="${rid}">Allow</button>
${alwaysScopes(a) ? '' : `<button data-action="approve" data-decision="allowAlways" data-request="${rid}">${escapeHtml(alwaysLabel(a))}</button>\n`}<button data-action="approve" data-decision="block" data-request="${rid}">Reject</button>
<button data-action="rejectReason" data-request="${rid}">Reject with reason…</button>
</div>
${alwaysScopes(a) ?? ''}
<div class="reason-row" hidden><input class="reason" type="text" placeholder="Tell the agent why (it sees this)"><button data-action="rejectWithReason" data-request="${rid}">Reject</button></div>
</div>`;
}

export function renderTool(tool: ToolItem | undefined, open: boolean, tools: ChatState['tools'] = {}, folds: Set<string> = new Set()): string {
  if (!tool) return '';
  const id = escapeHtml(tool.id);
  const target = toolTarget(tool);
  const out = tool.output || (tool.status === 'streaming' ? tool.argsText : '');
  const steps = tool.subagent ? renderSubagent(tool.subagent, tools, folds) : '';
  // A task's answer is its child's last words, already the last step.
  const last = tool.subagent?.steps[tool.subagent.steps.length - 1];
  const repeated = last?.type === 'text' && last.text.trim() === out.trim();
  const shownOut = out.length > 20000 ? `${out.slice(0, 20000)}\n…` : out;
  const body = steps + (out && !repeated ? `<pre class="output">${tool.name.startsWith('lsp_') ? linkLocations(shownOut) : escapeHtml(shownOut)}</pre>` : '');
  const blocked = tool.status === 'blocked' && tool.blockedReason ? `<div class="blocked-reason">Rejected: ${escapeHtml(tool.blockedReason)}</div>` : '';
  const diffBtn = tool.editPath ? `<button class="mini" title="Open the change in VS Code's diff view" data-action="openDiff" data-tool="${id}">Diff</button>` : '';
  const approval = tool.approval ? renderApproval(tool, tool.approval) : '';
  const isOpen = open || tool.status === 'running' || tool.status === 'error' ? ' open' : '';
  return `<div class="tool status-${tool.status}" data-tool="${id}">
<details${isOpen} data-fold="${id}"><summary><span class="dot"></span><span class="tool-name">${escapeHtml(tool.name)}</span> <span class="tool-target">${escapeHtml(target)}</span><span class="spacer"></span>${diffBtn}<span class="badge">${STATUS_LABEL[tool.status]}</span><span class="dur">${duration(tool.durationMs)}</span></summary>${body}</details>${blocked}${approval}</div>`;
}

/** A `task` call's child agent: its tool calls (cards of their own) and what it says, in order. */
export function renderSubagent(run: SubagentRun, tools: ChatState['tools'], folds: Set<string>): string {
  const steps = run.steps.map((s) => (s.type === 'text'
    ? `<div class="subagent-text md">${renderMarkdown(s.text)}</div>`
    : renderTool(tools[s.toolCallId], folds.has(s.toolCallId), tools, folds))).join('');
  const calls = run.steps.filter((s) => s.type === 'tool').length;
  const head = `<div class="subagent-head">${escapeHtml(run.agent)} agent${run.running ? ' working…' : ''} · ${calls} tool call${calls === 1 ? '' : 's'}</div>`;
  return `<div class="subagent">${head}${steps}</div>`;
}

function renderBlock(state: ChatState, b: AssistantBlock | undefined, key: string, i: number, open: Set<string>): string {
  if (!b) return '';
  if (b.type === 'text') return `<div class="md">${renderMarkdown(b.text)}</div>`;
  if (b.type === 'thinking') {
    const fold = `${key}-t${i}`;
    const o = open.has(fold) || !b.done ? ' open' : '';
    return `<details class="thinking"${o} data-fold="${fold}"><summary>${b.done ? 'Thought' : 'Thinking…'}</summary><div class="thinking-body">${escapeHtml(b.text)}</div></details>`;
  }
  return renderTool(state.tools[b.toolCallId], open.has(b.toolCallId), state.tools, open);
}

/** A checkpoint's actions, on a user message whose session file entry id is known (§3.12, §3.16). */
function userActions(messageId: string | undefined): string {
  if (!messageId) return '';
  const id = escapeHtml(messageId);
  return `<div class="msg-actions"><button class="link" title="Revert the files the agent changed since this message (optionally rewinding the conversation too)" data-action="restore" data-message="${id}">Restore to here</button><button class="link" title="A new session with the conversation before this message; its text goes back in the input" data-action="fork" data-message="${id}">Fork from here</button></div>`;
}

const COMPACTION_REASON: Record<CompactionItem['reason'], string> = {
  manual: 'on request', threshold: 'automatically (the context was nearly full)',
  overflow: 'automatically (the context overflowed)', earlier: 'earlier in this session',
};

/** The marker where the conversation was compacted; the summary folds open (a `<details>`). */
export function renderCompaction(item: CompactionItem, open: boolean): string {
  const reason = COMPACTION_REASON[item.reason];
  if (item.status === 'running') return `<div class="compaction running"><span class="compaction-title">Compacting the conversation ${reason}…</span></div>`;
  if (item.status !== 'done') {
    const why = item.status === 'aborted' ? 'cancelled' : `failed${item.error ? `: ${escapeHtml(item.error)}` : ''}`;
    return `<div class="compaction failed"><span class="compaction-title">Compaction ${why}</span></div>`;
  }
  const sizes = item.tokensBefore !== undefined && item.tokensAfter !== undefined
    ? ` · ${tokens(item.tokensBefore)} → ${tokens(item.tokensAfter)} tokens` : '';
  return `<div class="compaction done"><details${open ? ' open' : ''} data-fold="${item.key}"><summary><span class="compaction-title">Conversation compacted ${reason}${sizes}</span> <span class="compaction-hint">summary</span></summary><div class="md compaction-summary">${renderMarkdown(item.summary ?? '')}</div></details></div>`;
}

/** A question for the user (`agent/askUser`): who asks, the question, its options and the answer. */
export function renderQuestion(q: QuestionItem): string {
  const options = q.options.length === 0 ? '' : `<ul class="question-options">${q.options.map((o) => `<li${q.selected?.includes(o.label) ? ' class="chosen"' : ''}><span class="option-label">${escapeHtml(o.label)}</span>${o.description ? ` <span class="option-description">${escapeHtml(o.description)}</span>` : ''}</li>`).join('')}</ul>`;
  // Typed words are welcome for almost every question (ask_user always takes them): only a
  // multiple choice is worth a note.
  const how = q.multiSelect ? 'several answers allowed' : '';
  return `<div class="question status-${q.status}"><div class="question-title"><span class="question-mark">?</span> ${escapeHtml(asker({ source: q.mcpServer ? { mcpServer: q.mcpServer } : undefined }))}${how ? ` <span class="question-how">(${how})</span>` : ''}</div><div class="question-text">${escapeHtml(q.question)}</div>${options}<div class="question-answer">${escapeHtml(answerLine(q.status, q.selected, q.text))}</div></div>`;
}

export function renderItem(state: ChatState, item: ChatItem, open: Set<string>): string {
  switch (item.kind) {
    case 'user': {
      const chips = item.contexts.map((c) => `<span class="chip">${escapeHtml(c)}</span>`).join('');
      return `<div class="msg user"><div class="bubble">${escapeHtml(item.text)}</div>${chips ? `<div class="chips">${chips}</div>` : ''}${userActions(item.messageId)}</div>`;
    }
    case 'assistant': {
      const blocks = item.blocks.map((b, i) => renderBlock(state, b, item.key, i, open)).join('');
      const err = item.error ? `<div class="error">${escapeHtml(item.error)}</div>` : '';
      return `<div class="msg assistant${item.streaming ? ' streaming' : ''}">${blocks}${err}</div>`;
    }
    case 'notice':
      return `<div class="notice ${item.level}">${escapeHtml(item.text)}</div>`;
    case 'compaction':
      return renderCompaction(item, open.has(item.key));
    case 'question':
      return renderQuestion(item);
  }
}
