//! Issue 18's controls and context: the live-controls text, the model picker's rows, the chat
//! input's completions (triggers, fuzzy ranking, .gitignore globs), images as content blocks,
//! and the compaction marker in the transcript.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AgentEvent, AgentEventParams, CommandInfo, ModelInfo, SessionStats } from '../../src/protocol';
import { COMPACTION_PREFIX, initialState, reduce, splitUserContent } from '../../src/shared/chatState';
import { applyCompletion, commandCompletions, completionTrigger, fileCompletions, fuzzyScore, gitignoreGlobs } from '../../src/shared/completion';
import { buildMessage, contextLabel } from '../../src/shared/context';
import { contextUse, controlsView, modelRows, statusBarText, typedModel } from '../../src/shared/controls';
import { renderItem } from '../../src/shared/render';

const model = (provider: string, id: string, extra: Partial<ModelInfo> = {}): ModelInfo => ({
  provider, id, name: id, api: 'openai-completions', contextWindow: 20000, maxTokens: 4096, reasoning: false,
  thinkingLevels: ['off'], input: ['text'], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, ...extra,
});
const stats = (tokens: number | null, percent: number | null, cost = 0.0123): SessionStats => ({
  sessionFile: null, sessionId: 's1', userMessages: 1, assistantMessages: 1, toolCalls: 0, toolResults: 0, totalMessages: 2,
  tokens: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, total: 2 }, cost, contextUsage: { tokens, contextWindow: 20000, percent },
});

test('context use reads tokens / window (percent), "?" after a compaction, nothing without a window', () => {
  assert.deepEqual(contextUse(stats(2400, 12.04)), { text: '2.4k / 20k (12%)', percent: 12 });
  assert.deepEqual(contextUse(stats(null, null)), { text: '? / 20k' });
  assert.equal(contextUse({ ...stats(1, 1), contextUsage: null }), undefined);
});

test('the status bar shows model, thinking level (only for a reasoning model), context and cost', () => {
  const reasoning = model('mock', 'other-model', { reasoning: true, thinkingLevels: ['off', 'low', 'medium', 'high'] });
  assert.equal(statusBarText(controlsView(reasoning, 'high', stats(2400, 12))), '$(sparkle) mock/other-model · thinking high · ctx 2.4k / 20k (12%) · $0.01');
  assert.equal(statusBarText(controlsView(model('openai', 'mock-model'), 'off', stats(100, 0.5, 0))), '$(sparkle) openai/mock-model · ctx 100 / 20k (1%) · $0');
  assert.equal(statusBarText(controlsView(undefined, undefined, undefined)), '$(sparkle) Agent: no session yet');
  // getState names the model without its levels until listModels knows it.
  assert.deepEqual(controlsView({ provider: 'x', id: 'y' }, 'off', undefined).thinkingLevels, []);
});

test('the model picker lists the current model first, with window, prices and abilities; a typed provider/id is offered', () => {
  const models = [model('openai', 'gpt-4.1', { cost: { input: 2, output: 8, cacheRead: 0, cacheWrite: 0 }, input: ['text', 'image'], contextWindow: 1047576 }), model('mock', 'other-model', { reasoning: true })];
  const rows = modelRows(models, 'mock/other-model');
  assert.deepEqual(rows.map((r) => [r.spec, r.current]), [['mock/other-model', true], ['openai/gpt-4.1', false]]);
  assert.equal(rows[0].detail, 'context 20k · reasoning');
  assert.equal(rows[1].detail, 'context 1.0M · $2/$8 per Mtok · images');
  assert.equal(typedModel('ollama/qwen3:8b', models), 'ollama/qwen3:8b');
  assert.equal(typedModel('openai/gpt-4.1', models), undefined);
  assert.equal(typedModel('gpt', models), undefined);
});

test('"/" completes only at the start of the message, "@" at the start of a word', () => {
  assert.deepEqual(completionTrigger('/com', 4), { kind: 'command', query: 'com', start: 0, end: 4 });
  assert.equal(completionTrigger('say /com', 8), undefined);
  assert.equal(completionTrigger('/compact now', 12), undefined);
  assert.deepEqual(completionTrigger('look at @src/ma please', 15), { kind: 'file', query: 'src/ma', start: 8, end: 15 });
  assert.deepEqual(completionTrigger('@', 1), { kind: 'file', query: '', start: 0, end: 1 });
  assert.equal(completionTrigger('mail me@example.com', 19), undefined);
  // The caret inside a word replaces the whole word.
  assert.deepEqual(completionTrigger('@notes.txt x', 3), { kind: 'file', query: 'no', start: 0, end: 10 });
});

test('choosing a completion replaces the token and leaves one space after it', () => {
  const t = completionTrigger('fix @not', 8);
  assert.ok(t);
  assert.deepEqual(applyCompletion('fix @not', t, '@notes.txt'), { text: 'fix @notes.txt ', caret: 15 });
  const c = completionTrigger('/rev file', 4);
  assert.ok(c);
  assert.deepEqual(applyCompletion('/rev file', c, '/review'), { text: '/review file', caret: 8 });
});

test('fuzzy matching keeps the order of the characters and ranks word starts and file names first', () => {
  assert.equal(fuzzyScore('xyz', 'notes.txt'), undefined);
  assert.ok(fuzzyScore('nt', 'notes.txt') !== undefined);
  const files = ['src/deep/other/notes_archive.md', 'docs/notes.txt', 'node_modules/x/note.js', 'notes.txt'];
  assert.deepEqual(fileCompletions('notes', files).map((i) => i.label).slice(0, 2), ['notes.txt', 'docs/notes.txt']);
  assert.equal(fileCompletions('notes', files)[0].insert, '@notes.txt');
  assert.deepEqual(fileCompletions('dnt', files).map((i) => i.label)[0], 'docs/notes.txt');
});

test('slash commands carry their description and argument hint; MCP prompts say so', () => {
  const commands: CommandInfo[] = [
    { name: 'compact', description: 'Summarize', source: 'builtin', argumentHint: '[instructions]' },
    { name: 'model', description: 'Show or switch', source: 'builtin', argumentHint: '[provider/id]' },
    { name: 'everything:args-prompt', description: 'Two arguments', source: 'mcp', argumentHint: '<city> [state]' },
  ];
  assert.deepEqual(commandCompletions('com', commands), [{ label: '/compact', insert: '/compact', hint: '[instructions]', detail: 'Summarize' }]);
  assert.equal(commandCompletions('args', commands)[0].detail, 'Two arguments (MCP prompt)');
  assert.equal(commandCompletions('', commands).length, 3);
});

test('the root .gitignore becomes exclude globs (negations skipped)', () => {
  assert.deepEqual(gitignoreGlobs('# c\nsecret.txt\nbuild/\n/dist\n*.log\nsrc/gen\n!keep.log\n'), [
    '**/secret.txt/**', '**/secret.txt', '**/build/**', 'dist/**', 'dist', '**/*.log/**', '**/*.log', 'src/gen/**', 'src/gen',
  ]);
});

test('an image attachment is an image content block, its chip names it; history shows it as a chip', () => {
  const img = { path: 'dot.png', text: '', image: { mimeType: 'image/png', data: 'iVBORw0KGgo=' } };
  assert.equal(contextLabel(img), 'image: dot.png (8 B)');
  assert.deepEqual(buildMessage('what is this?', [img]), [{ type: 'image', mimeType: 'image/png', data: 'iVBORw0KGgo=' }, { type: 'text', text: 'what is this?' }]);
  assert.deepEqual(splitUserContent([{ type: 'image', mimeType: 'image/png', data: 'x' }, { type: 'text', text: 'hi' }]), { text: 'hi', contexts: ['image (image/png)'] });
});

test('compaction: a marker while it runs, then the summary folded in a <details>; failures say why', () => {
  let s = initialState('s1');
  const ev = (seq: number, event: AgentEvent) => { s = reduce(s, { type: 'event', params: { sessionId: 's1', runId: null, seq, event } as AgentEventParams }); };
  ev(1, { type: 'compaction_start', reason: 'manual' });
  assert.match(renderItem(s, s.items[0], new Set()), /Compacting the conversation on request/);
  ev(2, { type: 'compaction_end', reason: 'manual', aborted: false, willRetry: false, result: { summary: '## Goal\nKeep **tests**', firstKeptEntryId: 'a', tokensBefore: 12000, estimatedTokensAfter: 900, details: { readFiles: [], modifiedFiles: [] } } });
  assert.equal(s.items.length, 1);
  const html = renderItem(s, s.items[0], new Set());
  assert.match(html, /<details data-fold="k1"><summary><span class="compaction-title">Conversation compacted on request · 12k → 900 tokens/);
  assert.match(html, /<strong>tests<\/strong>/);
  assert.equal(s.contextTokens, 900);
  ev(3, { type: 'compaction_start', reason: 'threshold' });
  ev(4, { type: 'compaction_end', reason: 'threshold', aborted: false, willRetry: false, errorMessage: 'Summarization failed: boom' });
  assert.match(renderItem(s, s.items[1], new Set()), /Compaction failed: Summarization failed: boom/);
});

test('a resumed session shows its earlier compaction as the marker, not as a user message', () => {
  const s = reduce(initialState(), { type: 'hydrate', sessionId: 's1', messages: [
    { role: 'user', content: [{ type: 'text', text: `${COMPACTION_PREFIX}the summary\n</summary>` }], timestamp: 1 },
    { role: 'user', content: 'next', timestamp: 2 },
  ] });
  assert.deepEqual(s.items.map((i) => i.kind), ['compaction', 'user']);
  const c = s.items[0];
  assert.ok(c.kind === 'compaction' && c.summary === 'the summary' && c.reason === 'earlier');
});

test('model_update shows the new model at once', () => {
  const s = reduce(initialState('s1'), { type: 'event', params: { sessionId: 's1', runId: null, seq: 1, event: { type: 'model_update', model: model('mock', 'other-model'), thinkingLevel: 'off' } } });
  assert.equal(s.model, 'other-model');
});

test('the footer shows the session\'s sandbox in short, warning when it leaves something out', () => {
  const sandbox = { available: true, mode: 'workspaceWrite' as const, network: false, allowedDomains: ['crates.io'], explicit: true, notIsolated: ['the shared /tmp'] };
  assert.deepEqual(controlsView(model('openai', 'm'), 'off', undefined, sandbox).sandbox, { text: 'sandbox: workspaceWrite · network: crates.io · 1 not isolated', warn: true });
  assert.equal(controlsView(model('openai', 'm'), 'off', undefined).sandbox, undefined, 'nothing before agent/getState answered');
});
