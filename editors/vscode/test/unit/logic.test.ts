//! Pure logic of the extension: input keys, context blocks, edit previews, Markdown, binary lookup,
//! the MCP trust dialog's text.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { resolveBinary } from '../../src/shared/binary';
import { buildMessage, contextBlock, contextLabel, selectionLines } from '../../src/shared/context';
import { diffLines, EditPreviewError, proposedContent } from '../../src/shared/edits';
import { cost, tokens } from '../../src/shared/format';
import { actionForKey } from '../../src/shared/input';
import { escapeHtml, renderMarkdown } from '../../src/shared/markdown';
import { isMcpTrustRequest, mcpTrustText } from '../../src/shared/mcpTrust';
import { splitUserContent } from '../../src/shared/chatState';

const key = (k: string, mods: Partial<{ shiftKey: boolean; altKey: boolean; ctrlKey: boolean; metaKey: boolean; isComposing: boolean }> = {}) =>
  ({ key: k, shiftKey: false, altKey: false, ctrlKey: false, metaKey: false, ...mods });

test('Enter prompts when idle and steers while running; Alt+Enter follows up; Escape aborts', () => {
  assert.equal(actionForKey(key('Enter'), false, 'hi'), 'prompt');
  assert.equal(actionForKey(key('Enter'), true, 'hi'), 'steer');
  assert.equal(actionForKey(key('Enter', { altKey: true }), true, 'hi'), 'followUp');
  assert.equal(actionForKey(key('Enter', { altKey: true }), false, 'hi'), 'prompt');
  assert.equal(actionForKey(key('Enter', { shiftKey: true }), true, 'hi'), 'newline');
  assert.equal(actionForKey(key('Enter'), false, '   '), 'none');
  assert.equal(actionForKey(key('Enter', { isComposing: true }), false, 'hi'), 'none');
  assert.equal(actionForKey(key('Escape'), true, ''), 'abort');
  assert.equal(actionForKey(key('Escape'), false, ''), 'none');
  assert.equal(actionForKey(key('a'), true, 'x'), 'none');
});

test('selections become context blocks with 1-based inclusive line ranges', () => {
  assert.deepEqual(selectionLines(2, 4, 0), { startLine: 3, endLine: 4 });
  assert.deepEqual(selectionLines(2, 4, 3), { startLine: 3, endLine: 5 });
  assert.deepEqual(selectionLines(2, 2, 0), { startLine: 3, endLine: 3 });
  const c = { path: 'src/a.ts', startLine: 3, endLine: 4, text: 'let x = 1;\nlet y = 2;', languageId: 'typescript' };
  assert.equal(contextLabel(c), 'src/a.ts:3-4');
  assert.equal(contextLabel({ path: 'b.md', text: '' }), 'b.md');
  const block = contextBlock(c);
  assert.equal(block.type, 'text');
  assert.equal((block as { text: string }).text, '<context path="src/a.ts" lines="3-4">\n```typescript\nlet x = 1;\nlet y = 2;\n```\n</context>');
  assert.equal(buildMessage('hi', []), 'hi');
  const msg = buildMessage('explain', [c]);
  assert.ok(Array.isArray(msg) && msg.length === 2 && msg[1].type === 'text');
  assert.deepEqual(splitUserContent(msg), { text: 'explain', contexts: ['src/a.ts:3-4'] });
  const one = buildMessage('why?', [{ path: 'data.json', startLine: 1, endLine: 1, text: '{}' }, { path: 'whole.md', text: '# x' }]);
  assert.deepEqual(splitUserContent(one), { text: 'why?', contexts: ['data.json:1', 'whole.md'] });
});

test('a context containing a code fence gets a longer fence', () => {
  const t = (contextBlock({ path: 'r.md', text: '```js\nx\n```' }) as { text: string }).text;
  assert.ok(t.includes('````\n```js'));
});

test('edit previews apply pi edit arguments to the current text', () => {
  assert.equal(proposedContent('edit', { path: 'a', edits: [{ oldText: 'beta', newText: 'BETA' }, { oldText: 'alpha', newText: 'ALPHA' }] }, 'alpha\nbeta\n'), 'ALPHA\nBETA\n');
  assert.equal(proposedContent('write', { path: 'a', content: 'new' }, 'old'), 'new');
  assert.throws(() => proposedContent('edit', { edits: [{ oldText: 'zzz', newText: 'y' }] }, 'abc'), EditPreviewError);
  assert.throws(() => proposedContent('bash', { command: 'ls' }, ''), EditPreviewError);
  assert.deepEqual(diffLines('--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n c\n').map((l) => l.cls), ['meta', 'meta', 'hunk', 'del', 'add', 'ctx']);
});

test('markdown escapes HTML and renders the common constructs', () => {
  assert.equal(escapeHtml('<a href="x">&'), '&lt;a href=&quot;x&quot;&gt;&amp;');
  assert.equal(renderMarkdown('<script>alert(1)</script>'), '<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>');
  assert.equal(renderMarkdown('It says **alpha** and `beta`.'), '<p>It says <strong>alpha</strong> and <code>beta</code>.</p>');
  assert.equal(renderMarkdown('# Title\n- one\n- two'), '<h3>Title</h3><ul><li>one</li><li>two</li></ul>');
  assert.equal(renderMarkdown('```rust\nfn main() { a < b }\n```'), '<pre class="code" data-lang="rust"><code>fn main() { a &lt; b }</code></pre>');
  // Half-streamed: an unclosed fence renders as code so far.
  assert.equal(renderMarkdown('text\n```\npartial'), '<p>text</p><pre class="code"><code>partial</code></pre>');
  assert.equal(renderMarkdown('[x](javascript:alert(1))'), '<p>[x](javascript:alert(1))</p>');
  assert.equal(renderMarkdown('see [docs](https://example.invalid/a)'), '<p>see <a href="https://example.invalid/a">docs</a></p>');
  assert.equal(renderMarkdown('1. a\n2. b\n\npara'), '<ol><li>a</li><li>b</li></ol><p>para</p>');
});

test('token and cost formatting', () => {
  assert.equal(tokens(999), '999');
  assert.equal(tokens(1234), '1.2k');
  assert.equal(tokens(123456), '123k');
  assert.equal(tokens(2_500_000), '2.5M');
  assert.equal(cost(0), '$0');
  assert.equal(cost(0.0042), '$0.0042');
  assert.equal(cost(1.5), '$1.50');
});

test('the daemon binary is found by absolute path, relative path or PATH, and only if executable', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-lsp-bin-'));
  const exe = path.join(dir, 'agent-lsp');
  fs.writeFileSync(exe, '#!/bin/sh\n');
  fs.chmodSync(exe, 0o755);
  const plain = path.join(dir, 'not-exec');
  fs.writeFileSync(plain, '');
  assert.equal(resolveBinary(exe, '', undefined), exe);
  assert.equal(resolveBinary('agent-lsp', `/nonexistent${path.delimiter}${dir}`, undefined), exe);
  assert.equal(resolveBinary('./agent-lsp', '', dir), exe);
  assert.equal(resolveBinary(plain, '', undefined), undefined);
  assert.equal(resolveBinary('agent-lsp', '/nonexistent', undefined), undefined);
  assert.equal(resolveBinary('  ', dir, undefined), undefined);
  assert.equal(resolveBinary(dir, '', undefined), undefined);
  fs.rmSync(dir, { recursive: true });
});

test('Switch Session lists connection sessions first, then stored ones, each once, by title and last activity', async () => {
  const { sessionChoices, UNTITLED } = await import('../../src/shared/sessions');
  const info = (sessionId: string, title: string, modified: string, messageCount: number) =>
    ({ sessionId, title, name: null, cwd: '/w', created: '2026-11-30T06:00:00Z', modified, messageCount, file: `/x/${sessionId}.jsonl` });
  const stored = [info('s-new', 'fix tests', '2026-11-30T07:00:00.000Z', 2), info('s-old', 'Capitalise beta', '2026-11-30T06:10:00.000Z', 1)];
  const now = Date.parse('2026-11-30T07:05:00Z');
  const choices = sessionChoices(['s-new', 's-live'], stored, 's-live', now);
  assert.deepEqual(choices.map((c) => [c.id, c.open, c.current]), [['s-live', true, true], ['s-new', true, false], ['s-old', false, false]]);
  assert.equal(choices[0].label, UNTITLED, 'an open session with nothing stored yet');
  assert.equal(choices[0].description, 'open');
  assert.equal(choices[1].label, 'fix tests');
  assert.equal(choices[1].description, 'open · 2 messages · 5 minutes ago');
  assert.equal(choices[2].description, 'stored · 1 message · 55 minutes ago');
});

test('last activity reads as a relative time, then as a date', async () => {
  const { relativeTime } = await import('../../src/shared/sessions');
  const now = Date.parse('2026-11-30T12:00:00Z');
  assert.equal(relativeTime('2026-11-30T11:59:30Z', now), 'just now');
  assert.equal(relativeTime('2026-11-30T11:59:00Z', now), '1 minute ago');
  assert.equal(relativeTime('2026-11-30T09:00:00Z', now), '3 hours ago');
  assert.equal(relativeTime('2026-11-29T10:00:00Z', now), 'yesterday');
  assert.equal(relativeTime('2026-11-20T12:00:00Z', now), '10 days ago');
  assert.equal(relativeTime('2026-01-02T12:00:00Z', now), '2026-01-02');
  assert.equal(relativeTime(undefined, now), '');
  assert.equal(relativeTime('not a date', now), 'not a date');
});

test('the MCP trust dialog names the servers, their commands and what changed since the last answer', () => {
  const ask = (args: Record<string, unknown>) => mcpTrustText({ sessionId: 's', runId: '', toolCallId: 't', toolName: 'mcp_servers', kind: 'execute', title: 'Start…', args });
  const first = ask({ project: '/p', servers: [{ name: 'fs', command: 'npx fs-server .' }], changes: [] });
  assert.equal(first.message, 'Start the MCP servers of /p/.mcp.json?');
  assert.ok(first.detail.includes('• fs: npx fs-server .'), first.detail);
  assert.ok(!first.detail.includes('Changed since'), first.detail);
  const changed = ask({ project: '/p', servers: [{ name: 'fs', command: 'npx fs-server .' }, { name: 'db', command: 'db-server' }],
    changes: ['new server db', 'fs: env added PYTHONPATH'] });
  assert.equal(changed.message, 'Start the MCP servers of /p/.mcp.json? (changed since your last answer)');
  assert.ok(changed.detail.includes('these programs'), changed.detail);
  assert.ok(changed.detail.includes('Changed since your last answer:\n• new server db\n• fs: env added PYTHONPATH\n'), changed.detail);
  // An older daemon's args (no changes) and malformed ones still make a question.
  assert.ok(!ask({ project: '/p', servers: [] }).detail.includes('Changed since'));
  assert.equal(ask({ changes: 'x' }).message, 'Start the MCP servers of /.mcp.json?');
  assert.ok(isMcpTrustRequest({ sessionId: 's', runId: '', toolCallId: 't', toolName: 'mcp_servers', kind: 'execute', title: '', args: {} }));
});
