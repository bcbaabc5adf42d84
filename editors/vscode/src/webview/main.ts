/**
 * The chat webview: renders the chat state (kept in step with the host by running the same
 * reducer on forwarded actions), and turns input into messages for the host.
 */

import { type ChatState, initialState, reduce } from '../shared/chatState';
import { cost, tokens } from '../shared/format';
import { actionForKey, primaryLabel } from '../shared/input';
import { escapeHtml } from '../shared/markdown';
import type { HostToView, ViewStatus, ViewToHost } from '../shared/messages';
import type { ControlsView } from '../shared/controls';
import type { ApprovalScope } from '../protocol';
import { jobBodyHtml, jobFold, jobsTitleHtml, jobSummaryHtml } from '../shared/jobs';
import { renderPlan } from '../shared/plan';
import { renderItem } from '../shared/render';
import { CompletionPopup } from './completionPopup';
import { acceptImages } from './images';

declare function acquireVsCodeApi(): { postMessage(msg: ViewToHost): void };
const vscode = acquireVsCodeApi();
const post = (m: ViewToHost) => vscode.postMessage(m);

let state: ChatState = initialState();
let contexts: string[] = [];
let status: ViewStatus = { connection: 'starting' };
let controls: ControlsView | undefined;
/** Folds the user opened (tool cards, thinking): kept across re-renders of an item. */
const open = new Set<string>();
/** The plan is unfolded unless the user folded it. */
let planFolded = false;
const rendered = new Map<string, string>();

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const transcript = $<HTMLDivElement>('transcript');
const input = $<HTMLTextAreaElement>('input');
const sendBtn = $<HTMLButtonElement>('send');
const followBtn = $<HTMLButtonElement>('followup');
const stopBtn = $<HTMLButtonElement>('stop');

/** The HTML last written into each chrome element (queue, chips, usage, banner). */
const chromeHtml = new WeakMap<HTMLElement, string>();

/**
 * Replaces an element's HTML only when it changed. Rewriting it at every frame of a streaming
 * answer would replace its buttons under the pointer, and a click whose press and release land
 * on different elements is lost (removing a queued message or a context chip while the agent
 * streams).
 */
function setHtml(el: HTMLElement, html: string): void {
  if (chromeHtml.get(el) === html) return;
  chromeHtml.set(el, html);
  el.innerHTML = html;
}

let scheduled = false;
function schedule(): void {
  if (scheduled) return;
  scheduled = true;
  requestAnimationFrame(() => { scheduled = false; render(); });
}

function nearBottom(): boolean {
  return transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 60;
}

function renderTranscript(): void {
  const stick = nearBottom();
  const seen = new Set<string>();
  let prev: Element | null = null;
  for (const item of state.items) {
    seen.add(item.key);
    const html = renderItem(state, item, open);
    let el = transcript.querySelector<HTMLElement>(`:scope > [data-key="${item.key}"]`);
    if (!el) {
      el = document.createElement('div');
      el.dataset.key = item.key;
      el.className = 'item';
      if (prev) prev.after(el); else transcript.prepend(el);
    }
    if (rendered.get(item.key) !== html) {
      const reasonOpen = el.querySelector<HTMLElement>('.reason-row:not([hidden])');
      const reasonText = reasonOpen?.querySelector<HTMLInputElement>('input')?.value;
      el.innerHTML = html;
      rendered.set(item.key, html);
      if (reasonOpen) {
        const row = el.querySelector<HTMLElement>('.reason-row');
        if (row) { row.hidden = false; const i = row.querySelector<HTMLInputElement>('input'); if (i) i.value = reasonText ?? ''; }
      }
    }
    prev = el;
  }
  for (const el of Array.from(transcript.querySelectorAll<HTMLElement>(':scope > [data-key]'))) {
    if (!seen.has(el.dataset.key ?? '')) { rendered.delete(el.dataset.key ?? ''); el.remove(); }
  }
  $('empty').hidden = state.items.length > 0;
  if (stick) transcript.scrollTop = transcript.scrollHeight;
}

function renderQueue(): void {
  const rows: string[] = [];
  for (const [queue, label] of [['steering', 'Steer'], ['followUp', 'Follow-up']] as const) {
    state.queue[queue].forEach((q, i) => rows.push(`<li><span class="qkind">${label}</span><span class="qtext">${escapeHtml(q.text)}</span><button class="icon" title="Remove" data-action="removeQueued" data-queue="${queue}" data-index="${i}">×</button></li>`));
  }
  const el = $('queue');
  el.hidden = rows.length === 0;
  setHtml(el, rows.length ? `<div class="queue-title">Queued</div><ul>${rows.join('')}</ul>` : '');
}

/** The model's plan above the chat (§3.18), hidden while it has none. */
function renderPlanPanel(): void {
  const el = $('plan');
  el.hidden = state.plan.length === 0;
  setHtml(el, renderPlan(state.plan, !planFolded));
}

/** The session's background jobs (hidden while it has none); an open job shows its newest output. */
function renderJobsPanel(): void {
  const el = $('jobs');
  el.hidden = state.jobs.length === 0;
  let title = el.querySelector<HTMLElement>(':scope > .jobs-title');
  if (!title) { title = document.createElement('div'); title.className = 'jobs-title'; el.prepend(title); }
  setHtml(title, jobsTitleHtml(state.jobs));
  const seen = new Set<string>();
  let prev: Element = title;
  for (const job of state.jobs) {
    seen.add(job.jobId);
    let row = el.querySelector<HTMLElement>(`:scope > .job[data-job="${CSS.escape(job.jobId)}"]`);
    if (!row) {
      row = document.createElement('div');
      row.dataset.job = job.jobId;
      row.innerHTML = `<details data-fold="${escapeHtml(jobFold(job.jobId))}"><summary></summary><div class="job-body"></div></details>`;
      prev.after(row);
    }
    row.className = `job status-${job.status}`;
    const details = row.querySelector('details') as HTMLDetailsElement;
    const isOpen = open.has(jobFold(job.jobId));
    if (details.open !== isOpen) details.open = isOpen;
    setHtml(details.querySelector('summary') as HTMLElement, jobSummaryHtml(job));
    const body = details.querySelector<HTMLElement>('.job-body') as HTMLElement;
    const before = chromeHtml.get(body);
    setHtml(body, isOpen ? jobBodyHtml(job) : '');
    // Follow the newest output, as a terminal does.
    if (chromeHtml.get(body) !== before) body.querySelectorAll<HTMLElement>('pre.output').forEach((pre) => { pre.scrollTop = pre.scrollHeight; });
    prev = row;
  }
  for (const row of Array.from(el.querySelectorAll<HTMLElement>(':scope > .job'))) if (!seen.has(row.dataset.job ?? '')) row.remove();
}

/** Opens a job's output (its fold) and has the host read it while it is open. */
function openJob(jobId: string): void {
  open.add(jobFold(jobId));
  post({ type: 'watchJob', jobId, open: true });
  schedule();
  requestAnimationFrame(() => $('jobs').querySelector(`[data-job="${CSS.escape(jobId)}"]`)?.scrollIntoView({ block: 'nearest' }));
}

function renderChrome(): void {
  const conn = status.connection;
  document.body.dataset.running = String(state.running);
  document.body.dataset.connection = conn;
  sendBtn.textContent = primaryLabel(state.running);
  sendBtn.title = state.running ? 'Steer the running agent (Enter)' : 'Send (Enter)';
  followBtn.hidden = !state.running;
  stopBtn.hidden = !state.running;
  const t = state.totals;
  // The live controls (model picker, thinking level, context use from agent/getStats) when the
  // host has them; the transcript's own totals otherwise.
  const model = controls?.model ?? state.model ?? '';
  const modelHtml = `<button class="link model" title="Model: click to switch" data-action="command" data-command="switchModel">${escapeHtml(model || 'model')}</button>`;
  const thinking = controls && controls.thinkingLevels.length > 1
    ? ` <button class="link thinking" title="Thinking level: click to change" data-action="command" data-command="setThinkingLevel">thinking ${escapeHtml(controls.thinkingLevel ?? 'off')}</button>` : '';
  const ctx = controls?.context
    ? `<span class="ctx${(controls.percent ?? 0) >= 80 ? ' high' : ''}" title="Context: tokens in use / the model's window">ctx ${escapeHtml(controls.context)}</span>`
    : `<span class="ctx" title="Context size of the last request">ctx ${tokens(state.contextTokens)}</span>`;
  // The session's command sandbox (agent/getState.sandbox); a click shows every layer.
  const sb = controls?.sandbox;
  const sandbox = sb ? ` <button class="link sandbox${sb.warn ? ' warn' : ''}" title="The command sandbox: click for its layers and what it does not isolate here" data-action="command" data-command="showSandboxStatus">${escapeHtml(sb.text)}</button>` : '';
  setHtml($('usage'), `${modelHtml}${thinking}<span title="Input tokens (incl. cache)">↑${tokens(t.input + t.cacheRead + t.cacheWrite)}</span> <span title="Output tokens">↓${tokens(t.output)}</span> <span class="cost" title="Cost">${cost(controls?.cost ?? t.cost)}</span> ${ctx}${sandbox}`);
  const banner = $('banner');
  const msg = conn === 'missing' || conn === 'error' || conn === 'stopped' ? status.message ?? 'The agent daemon is not running.' : '';
  banner.hidden = msg === '';
  setHtml(banner, msg ? `${escapeHtml(msg)} <button class="link" data-action="command" data-command="${conn === 'missing' ? 'openSettings' : 'restart'}">${conn === 'missing' ? 'Open settings' : 'Restart'}</button>` : '');
  $('state').textContent = state.running ? 'running' : conn === 'ready' ? 'idle' : conn;
  setHtml($('contexts'), contexts.map((c, i) => `<span class="chip">${escapeHtml(c)}<button class="icon" title="Remove" data-action="removeContext" data-index="${i}">×</button></span>`).join(''));
}

function render(): void {
  renderPlanPanel();
  renderJobsPanel();
  renderTranscript();
  renderQueue();
  renderChrome();
}

function send(mode: 'prompt' | 'steer' | 'followUp'): void {
  const text = input.value.trim();
  if (text === '') return;
  post({ type: 'send', mode, text });
  input.value = '';
  autosize();
}

function autosize(): void {
  input.style.height = 'auto';
  input.style.height = `${Math.min(input.scrollHeight, 200)}px`;
}

const popup = new CompletionPopup(input, $<HTMLUListElement>('completions'), post, autosize);
acceptImages(input, document.querySelector<HTMLElement>('.composer') ?? input, post);

input.addEventListener('input', () => { autosize(); popup.update(); });
input.addEventListener('click', () => popup.update());
input.addEventListener('blur', () => popup.hide());
input.addEventListener('keyup', (e) => { if (e.key === 'ArrowLeft' || e.key === 'ArrowRight' || e.key === 'Home' || e.key === 'End') popup.update(); });
input.addEventListener('keydown', (e) => {
  if (!e.isComposing && popup.handleKey(e)) { e.preventDefault(); e.stopPropagation(); return; }
  const a = actionForKey(e, state.running, input.value);
  if (a === 'none' || a === 'newline') return;
  e.preventDefault();
  if (a === 'abort') post({ type: 'abort' }); else send(a);
});
document.addEventListener('keydown', (e) => {
  if (e.key === 'Escape' && state.running && e.target !== input) { e.preventDefault(); post({ type: 'abort' }); }
});
sendBtn.addEventListener('click', () => send(state.running ? 'steer' : 'prompt'));
followBtn.addEventListener('click', () => send('followUp'));
stopBtn.addEventListener('click', () => post({ type: 'abort' }));

// Remember folds the user toggles (not the ones a render opens), so re-renders keep them.
document.addEventListener('click', (e) => {
  const t = e.target as HTMLElement;
  if (t.closest('button')) return;
  const d = t.closest('summary')?.parentElement as HTMLDetailsElement | null | undefined;
  const fold = d?.dataset.fold;
  if (!d || !fold) return;
  if (fold === 'plan') { planFolded = d.open; return; }
  const job = d.closest<HTMLElement>('.job')?.dataset.job;
  if (job !== undefined) {
    // A job's output is read only while its fold is open.
    if (d.open) { open.delete(fold); post({ type: 'watchJob', jobId: job, open: false }); schedule(); } else openJob(job);
    return;
  }
  if (d.open) open.delete(fold); else open.add(fold);
}, true);

document.addEventListener('click', (e) => {
  const btn = (e.target as HTMLElement).closest<HTMLElement>('[data-action]');
  if (!btn) return;
  // Buttons sit inside <summary>: do not toggle the card.
  e.preventDefault();
  const d = btn.dataset;
  switch (d.action) {
    case 'approve':
      post({ type: 'approve', requestId: d.request ?? '', decision: d.decision as 'allow' | 'allowAlways' | 'block', ...(d.scope ? { scope: d.scope as ApprovalScope } : {}) });
      break;
    case 'rejectReason': {
      const row = btn.closest('.approval')?.querySelector<HTMLElement>('.reason-row');
      if (row) { row.hidden = false; row.querySelector<HTMLInputElement>('input')?.focus(); }
      break;
    }
    case 'rejectWithReason': {
      const reason = btn.closest('.reason-row')?.querySelector<HTMLInputElement>('input')?.value.trim();
      post({ type: 'approve', requestId: d.request ?? '', decision: 'block', reason: reason || undefined });
      break;
    }
    case 'openDiff': post({ type: 'openDiff', toolCallId: d.tool ?? '' }); break;
    case 'approvalDiff': post({ type: 'approvalDiff', requestId: d.request ?? '' }); break;
    case 'openLocation': post({ type: 'openLocation', path: d.path ?? '', line: Number(d.line), column: Number(d.column) }); break;
    case 'removeQueued': post({ type: 'removeQueued', queue: d.queue as 'steering' | 'followUp', index: Number(d.index) }); break;
    case 'removeContext': post({ type: 'removeContext', index: Number(d.index) }); break;
    case 'restore': post({ type: 'restore', messageId: d.message ?? '' }); break;
    case 'fork': post({ type: 'fork', messageId: d.message ?? '' }); break;
    case 'command': post({ type: 'command', command: d.command as 'restart' }); break;
    case 'killJob': post({ type: 'killJob', jobId: d.job ?? '' }); break;
    default: break;
  }
});
document.addEventListener('keydown', (e) => {
  const t = e.target as HTMLElement;
  if (e.key === 'Enter' && t.classList.contains('reason')) {
    e.preventDefault();
    t.closest('.reason-row')?.querySelector<HTMLButtonElement>('button')?.click();
  }
});

window.addEventListener('message', (e: MessageEvent<HostToView>) => {
  const m = e.data;
  switch (m.type) {
    case 'snapshot':
      // A snapshot replaces the whole transcript (another session, a restarted daemon): swap it
      // in one step. Emptying it here and filling it at the next frame would show an empty (or,
      // after an earlier incremental render, a complete-then-empty) transcript in between.
      state = m.state; contexts = m.contexts; status = m.status;
      // Another session (or a restarted daemon): its jobs are other jobs.
      // Those still shown are read again (the host stopped watching when the session was shown).
      for (const f of [...open]) if (f.startsWith('job:') && !state.jobs.some((j) => jobFold(j.jobId) === f)) open.delete(f);
      for (const j of state.jobs) if (open.has(jobFold(j.jobId))) post({ type: 'watchJob', jobId: j.jobId, open: true });
      rendered.clear(); transcript.querySelectorAll(':scope > [data-key]').forEach((el) => el.remove());
      render();
      return;
    case 'action': state = reduce(state, m.action); break;
    case 'contexts': contexts = m.contexts; break;
    case 'status': status = m.status; break;
    case 'controls': controls = m.controls; break;
    case 'completions': popup.receive(m.requestId, m.items); return;
    case 'openJob': openJob(m.jobId); return;
    case 'focusInput':
      if (m.text !== undefined) { input.value = m.text; autosize(); }
      input.focus();
      break;
  }
  schedule();
});

post({ type: 'ready' });
render();
