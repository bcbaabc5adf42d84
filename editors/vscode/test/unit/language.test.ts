//! The editor's language servers for the agent (agent/languageRequest): positions between the
//! negotiated encoding and VS Code's UTF-16, VS Code's results as LSP JSON, which extensions
//! serve a language, the rename approval's several files, and following the agent.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { raceCancellation } from '../../src/shared/cancel';
import { initialState, reduce } from '../../src/shared/chatState';
import { changedRange, followTarget, symbolColumn } from '../../src/shared/follow';
import {
  convertColumn, identityMap, LANGUAGE_METHODS, languageExtensions, lspSymbolKind, negotiatedEncoding, type PositionMap, resultUris,
  serversFor, toLspDocumentSymbols, toLspHovers, toLspLocations, toLspWorkspaceEdit, toLspWorkspaceSymbols, workspaceEditEntries,
} from '../../src/shared/languageResults';
import { afterFromDiff, changedFiles, pairWithPaths, splitDiff } from '../../src/shared/multiDiff';
import { filesLine, linkLocations, renderItem, renderTool, toolTarget } from '../../src/shared/render';

/** A `vscode.Uri` stand-in: only its string form is read. */
const uri = (s: string) => ({ toString: () => s });
const r = (l1: number, c1: number, l2: number, c2: number) => ({ start: { line: l1, character: c1 }, end: { line: l2, character: c2 } });

test('the seven methods are advertised, each once', () => {
  assert.deepEqual([...LANGUAGE_METHODS].sort(), [
    'textDocument/definition', 'textDocument/documentSymbol', 'textDocument/hover', 'textDocument/implementation',
    'textDocument/references', 'textDocument/rename', 'workspace/symbol',
  ]);
});

test('columns convert between UTF-8, UTF-16 and UTF-32 on the line\'s text', () => {
  const line = 'const é = "😀"; greet();';
  // "greet" starts after: `const ` (6) `é` (1 UTF-16, 2 UTF-8) ` = "` (4) 😀 (2 UTF-16, 4 UTF-8, 1 UTF-32) `"; ` (3).
  const g16 = line.indexOf('greet');
  assert.equal(g16, 16);
  assert.equal(convertColumn(line, g16, 'utf-16', 'utf-8'), 19);
  assert.equal(convertColumn(line, 19, 'utf-8', 'utf-16'), 16);
  assert.equal(convertColumn(line, g16, 'utf-16', 'utf-32'), 15);
  assert.equal(convertColumn(line, 15, 'utf-32', 'utf-16'), 16);
  assert.equal(convertColumn(line, 7, 'utf-16', 'utf-16'), 7);
  // Inside a code point: its start; past the end: the end.
  assert.equal(convertColumn(line, 7, 'utf-8', 'utf-16'), 6);
  assert.equal(convertColumn(line, 8, 'utf-8', 'utf-16'), 7);
  assert.equal(convertColumn('ab', 9, 'utf-8', 'utf-16'), 2);
  assert.equal(negotiatedEncoding('utf-8'), 'utf-8');
  assert.equal(negotiatedEncoding(undefined), 'utf-16');
  assert.equal(negotiatedEncoding('utf-16'), 'utf-16');
});

test('definitions: Locations and LocationLinks become Locations (the link\'s selection range), duplicates once', () => {
  const got = toLspLocations([
    { uri: uri('file:///p/a.ts'), range: r(2, 16, 2, 21) },
    { targetUri: uri('file:///p/a.ts'), targetRange: r(2, 0, 4, 1), targetSelectionRange: r(2, 16, 2, 21), originSelectionRange: r(0, 9, 0, 14) },
    { targetUri: uri('file:///p/c.ts'), targetRange: r(7, 0, 9, 1) },
  ], identityMap);
  assert.deepEqual(got, [
    { uri: 'file:///p/a.ts', range: r(2, 16, 2, 21) },
    { uri: 'file:///p/c.ts', range: r(7, 0, 9, 1) },
  ]);
  assert.deepEqual(toLspLocations(undefined, identityMap), []);
  // Positions go through the map (the negotiated encoding), per document.
  const plusOne: PositionMap = (u, p) => ({ line: p.line, character: u.endsWith('a.ts') ? p.character + 1 : p.character });
  assert.deepEqual(toLspLocations([{ uri: uri('file:///p/a.ts'), range: r(1, 2, 1, 3) }], plusOne), [{ uri: 'file:///p/a.ts', range: r(1, 3, 1, 4) }]);
});

test('hovers: Markdown, MarkedString code as a fenced block, empty ones dropped', () => {
  const got = toLspHovers([
    { contents: [{ value: '```typescript\nfunction greet(name: string): string\n```' }, 'Says hello.'], range: r(4, 9, 4, 14) },
    { contents: [{ language: 'ts', value: 'let x: number' }] },
    { contents: [''] },
  ], 'file:///p/b.ts', identityMap);
  assert.deepEqual(got, [
    { contents: { kind: 'markdown', value: '```typescript\nfunction greet(name: string): string\n```\n\nSays hello.' }, range: r(4, 9, 4, 14) },
    { contents: { kind: 'markdown', value: '```ts\nlet x: number\n```' } },
  ]);
  assert.deepEqual(toLspHovers(undefined, 'file:///p/b.ts', identityMap), []);
});

test('document symbols keep their nesting; kinds move from VS Code\'s 0-based to LSP\'s 1-based', () => {
  // vscode.SymbolKind: Class 4, Method 5, Function 11 → LSP Class 5, Method 6, Function 12.
  assert.equal(lspSymbolKind(11), 12);
  const got = toLspDocumentSymbols([
    { name: 'Greeter', kind: 4, detail: '', range: r(0, 0, 5, 1), selectionRange: r(0, 13, 0, 20), location: { uri: uri('file:///p/a.ts'), range: r(0, 0, 5, 1) },
      children: [{ name: 'hello', kind: 5, range: r(1, 2, 3, 3), selectionRange: r(1, 2, 1, 7), children: [] }] },
    { name: 'greet', kind: 11, tags: [1], range: r(7, 0, 9, 1), selectionRange: r(7, 16, 7, 21), children: [] },
  ], 'file:///p/a.ts', identityMap);
  assert.deepEqual(got, [
    { name: 'Greeter', kind: 5, range: r(0, 0, 5, 1), selectionRange: r(0, 13, 0, 20), children: [{ name: 'hello', kind: 6, range: r(1, 2, 3, 3), selectionRange: r(1, 2, 1, 7) }] },
    { name: 'greet', kind: 12, tags: [1], range: r(7, 0, 9, 1), selectionRange: r(7, 16, 7, 21) },
  ]);
  // Without ranges (SymbolInformation only): their locations.
  assert.deepEqual(toLspDocumentSymbols([{ name: 'x', kind: 12, containerName: 'm', location: { uri: uri('file:///p/a.ts'), range: r(1, 4, 1, 5) } }], 'file:///p/a.ts', identityMap),
    [{ name: 'x', kind: 13, containerName: 'm', location: { uri: 'file:///p/a.ts', range: r(1, 4, 1, 5) } }]);
});

test('workspace symbols: SymbolInformation, a location without a range keeps its uri alone, duplicates once', () => {
  const sym = { name: 'greet', kind: 11, containerName: '"a"', location: { uri: uri('file:///p/a.ts'), range: r(2, 16, 2, 21) } };
  const got = toLspWorkspaceSymbols([sym, sym, { name: 'Later', kind: 4, location: { uri: uri('file:///p/c.ts') } }], identityMap);
  assert.deepEqual(got, [
    { name: 'greet', kind: 12, containerName: '"a"', location: { uri: 'file:///p/a.ts', range: r(2, 16, 2, 21) } },
    { name: 'Later', kind: 5, location: { uri: 'file:///p/c.ts' } },
  ]);
});

test('rename: one versioned TextDocumentEdit per file (null for a file not open); file operations kept; nothing is null', () => {
  const edit = {
    entries: () => [[uri('file:///p/a.ts'), [{ range: r(2, 16, 2, 21), newText: 'welcome' }]]] as never,
    _allEntries: () => [
      { _type: 2, uri: uri('file:///p/a.ts'), edit: { range: r(2, 16, 2, 21), newText: 'welcome' } },
      { _type: 2, uri: uri('file:///p/b.ts'), edit: { range: r(0, 9, 0, 14), newText: 'welcome' } },
      { _type: 2, uri: uri('file:///p/a.ts'), edit: { range: r(9, 2, 9, 7), newText: 'welcome' } },
    ],
  };
  const versions: Record<string, number> = { 'file:///p/a.ts': 7 };
  assert.deepEqual(toLspWorkspaceEdit(workspaceEditEntries(edit), (u) => versions[u] ?? null, identityMap), { documentChanges: [
    { textDocument: { uri: 'file:///p/a.ts', version: 7 }, edits: [{ range: r(2, 16, 2, 21), newText: 'welcome' }, { range: r(9, 2, 9, 7), newText: 'welcome' }] },
    { textDocument: { uri: 'file:///p/b.ts', version: null }, edits: [{ range: r(0, 9, 0, 14), newText: 'welcome' }] },
  ] });
  // A file renamed with the symbol reaches the daemon as a resource operation (which it refuses).
  const withFile = { entries: () => [] as never, _allEntries: () => [{ _type: 1, from: uri('file:///p/greet.ts'), to: uri('file:///p/welcome.ts') }, { _type: 1, to: uri('file:///p/new.ts') }] };
  assert.deepEqual(toLspWorkspaceEdit(workspaceEditEntries(withFile), () => null, identityMap), { documentChanges: [
    { kind: 'rename', oldUri: 'file:///p/greet.ts', newUri: 'file:///p/welcome.ts' }, { kind: 'create', uri: 'file:///p/new.ts' },
  ] });
  // Only the public entries(): text edits.
  const publicOnly = { entries: () => [[uri('file:///p/b.ts'), [{ range: r(0, 0, 0, 1), newText: 'x' }]]] as never };
  assert.deepEqual(workspaceEditEntries(publicOnly), [{ type: 'text', uri: 'file:///p/b.ts', edit: { range: r(0, 0, 0, 1), newText: 'x' } }]);
  assert.equal(toLspWorkspaceEdit([], () => null, identityMap), null);
});

test('the documents a result names (to read their lines for another encoding)', () => {
  assert.deepEqual(resultUris([
    { uri: uri('file:///p/a.ts'), range: r(0, 0, 0, 1) }, { targetUri: uri('file:///p/b.ts') },
    { name: 's', location: { uri: uri('file:///p/c.ts') } }, { uri: 'file:///p/a.ts' },
  ]).sort(), ['file:///p/a.ts', 'file:///p/b.ts', 'file:///p/c.ts']);
});

test('servers: "vscode" when something answered or an extension with code starts for the language; [] for plaintext', () => {
  const exts = [
    { id: 'vscode.typescript-language-features', packageJSON: { main: './dist/extension', activationEvents: ['onLanguage:typescript', 'onLanguage:javascript'] } },
    { id: 'vscode.typescript-basics', packageJSON: { contributes: { languages: [{ id: 'typescript' }] } } }, // a grammar: no code
    { id: 'me.foo-lang', packageJSON: { main: './out/main.js', contributes: { languages: [{ id: 'foo' }] } } },
    { id: 'vscode.emmet', packageJSON: { main: './dist/node/emmetNodeMain', activationEvents: ['onLanguage'] } },
    { id: 'agent-lsp.agent-lsp', packageJSON: { main: './dist/extension.js', activationEvents: ['onLanguage:plaintext'] } },
  ];
  assert.deepEqual(languageExtensions(exts, 'typescript', 'agent-lsp.agent-lsp'), ['vscode.typescript-language-features']);
  assert.deepEqual(languageExtensions(exts, 'foo', 'agent-lsp.agent-lsp'), ['me.foo-lang']);
  assert.deepEqual(languageExtensions(exts, 'plaintext', 'agent-lsp.agent-lsp'), []);
  assert.deepEqual(serversFor(false, []), []);
  assert.deepEqual(serversFor(false, ['vscode.typescript-language-features']), ['vscode']);
  assert.deepEqual(serversFor(true, []), ['vscode']);
});

test('follow the agent: read at its offset, edits by path, lsp_* at their line and symbol', () => {
  assert.deepEqual(followTarget('read', { path: 'src/a.ts', offset: 40, limit: 20 }), { path: 'src/a.ts', kind: 'read', line: 39 });
  assert.deepEqual(followTarget('read', { path: 'notes.txt' }), { path: 'notes.txt', kind: 'read', line: 0 });
  assert.deepEqual(followTarget('edit', { path: 'a.ts', edits: [] }), { path: 'a.ts', kind: 'edit' });
  assert.deepEqual(followTarget('write', { path: 'n.ts', content: '' }), { path: 'n.ts', kind: 'edit' });
  assert.deepEqual(followTarget('lsp_definition', { path: 'b.ts', line: 3, symbol: 'greet' }), { path: 'b.ts', kind: 'lsp', line: 2, symbol: 'greet' });
  assert.deepEqual(followTarget('lsp_hover', { path: 'b.ts', line: '3', column: 10 }), { path: 'b.ts', kind: 'lsp', line: 2, column: 9 });
  assert.deepEqual(followTarget('lsp_document_symbols', { path: 'a.ts' }), { path: 'a.ts', kind: 'lsp' });
  assert.equal(followTarget('lsp_workspace_symbols', { query: 'greet' }), undefined);
  assert.equal(followTarget('bash', { command: 'ls' }), undefined);
  assert.equal(followTarget('grep', { pattern: 'x', path: 'src' }), undefined);
});

test('a symbol is found as a whole word, the occurrence nearest the column', () => {
  const line = 'const greeting = greet(greet2(greet));';
  assert.equal(symbolColumn(line, 'greet'), 17);
  assert.equal(symbolColumn(line, 'greet', 35), 30);
  assert.equal(symbolColumn(line, 'greet', 0), 17);
  assert.equal(symbolColumn(line, 'welcome'), undefined);
  assert.equal(symbolColumn('$greet greet', 'greet'), 7);
});

test('the range an edit\'s changes cover afterwards', () => {
  // One replacement on a line.
  assert.deepEqual(changedRange([{ range: r(3, 4, 3, 9), text: 'world' }]), r(3, 4, 3, 9));
  // Two lines inserted at line 1, and a replacement further down reported against the old text.
  assert.deepEqual(changedRange([
    { range: r(10, 0, 10, 3), text: 'abc' },
    { range: r(1, 0, 1, 0), text: 'x\ny\n' },
  ]), r(1, 0, 12, 3));
  assert.equal(changedRange([]), undefined);
});

const RENAME_DIFF = [
  '--- a/src/a.ts', '+++ b/src/a.ts', '@@ -1,3 +1,3 @@', ' // greets', '-export function greet(name: string) {', '+export function welcome(name: string) {', '   return `hi ${name}`;',
  '--- a/b.ts', '+++ b/b.ts', '@@ -1,2 +1,2 @@', '-import { greet } from "./src/a";', '+import { welcome } from "./src/a";', '--- console.log(greet("x"));', '+-- console.log(welcome("x"));', '',
].join('\n');

test('a diff of several files splits per file (a removed "-- " line is no header), and each applies to its text', () => {
  const files = splitDiff(RENAME_DIFF);
  assert.deepEqual(files.map((f) => f.newPath), ['src/a.ts', 'b.ts']);
  assert.ok(files[1].text.endsWith('+-- console.log(welcome("x"));\n'), files[1].text);
  const a = '// greets\nexport function greet(name: string) {\n  return `hi ${name}`;\n}\n';
  assert.equal(afterFromDiff(files[0].text, a), '// greets\nexport function welcome(name: string) {\n  return `hi ${name}`;\n}\n');
  const b = 'import { greet } from "./src/a";\n-- console.log(greet("x"));\n';
  assert.equal(afterFromDiff(files[1].text, b), 'import { welcome } from "./src/a";\n-- console.log(welcome("x"));\n');
  assert.throws(() => afterFromDiff(files[0].text, 'something else\n'));
  assert.deepEqual(pairWithPaths(files, ['/w/b.ts', '/w/src/a.ts']).map((p) => p.path), ['/w/src/a.ts', '/w/b.ts']);
  assert.deepEqual(changedFiles(RENAME_DIFF, ['/w/src/a.ts', '/w/b.ts']), ['src/a.ts', 'b.ts']);
});

test('a rename\'s approval lists its files above the diff; its card names the place and the new name', () => {
  let s = initialState('s1');
  s = reduce(s, { type: 'approvalRequest', requestId: 'approval-1', params: {
    sessionId: 's1', runId: 'r', toolCallId: 'call_rename', toolName: 'lsp_rename', kind: 'edit', title: 'Rename greet to welcome in 2 files',
    args: { path: 'b.ts', line: 1, symbol: 'greet', newName: 'welcome', apply: true },
    preview: { type: 'diff', path: '/w/src/a.ts', paths: ['/w/src/a.ts', '/w/b.ts'], diff: RENAME_DIFF } } });
  const html = renderItem(s, s.items[0], new Set());
  assert.ok(html.includes(`<div class="approval-files">${filesLine(['src/a.ts', 'b.ts'])}</div>`), html);
  assert.equal(filesLine(['src/a.ts', 'b.ts']), 'Changes 2 files: src/a.ts, b.ts');
  assert.ok(html.includes('<span class="add">+export function welcome(name: string) {</span>'));
  assert.ok(html.includes('data-action="approvalDiff"'));
  assert.equal(toolTarget(s.tools.call_rename), 'b.ts:1 greet → welcome');
  // A one-file diff has no list.
  s = reduce(initialState('s1'), { type: 'approvalRequest', requestId: 'approval-2', params: {
    sessionId: 's1', runId: 'r', toolCallId: 'c2', toolName: 'edit', kind: 'edit', title: 'Edit a.ts',
    args: { path: 'a.ts', edits: [] }, preview: { type: 'diff', path: '/w/a.ts', diff: '@@ -1 +1 @@\n-a\n+b\n' } } });
  assert.ok(!renderItem(s, s.items[0], new Set()).includes('approval-files'));
  assert.equal(toolTarget({ ...s.tools.c2, name: 'lsp_references', args: { path: 'b.ts', line: 3, symbol: 'greet' } }), 'b.ts:3 greet');
  assert.equal(toolTarget({ ...s.tools.c2, name: 'lsp_rename', args: { path: 'b.ts', line: 3, symbol: 'greet', newName: 'hi' } }), 'b.ts:3 greet → hi (proposed)');
  assert.equal(toolTarget({ ...s.tools.c2, name: 'lsp_workspace_symbols', args: { query: 'greet' } }), 'greet');
});

test('the places an lsp_* result names are links that open the file there; other lines stay text', () => {
  const out = '3 references in 2 files:\nlang/a.ts:4:17: export function greet(name: string): string {\nlang/b.ts:1:10: import { greet } from \'./a\';\n  function <greet> 4:17';
  const html = linkLocations(out);
  assert.ok(html.startsWith('3 references in 2 files:\n<a class="loc" href="#" data-action="openLocation" data-path="lang/a.ts" data-line="4" data-column="17">lang/a.ts:4:17</a>: export function greet'), html);
  assert.ok(html.includes('data-path="lang/b.ts" data-line="1" data-column="10"'));
  assert.ok(html.endsWith('  function &lt;greet&gt; 4:17'), html);
  const card = renderTool({ id: 'c1', name: 'lsp_references', args: { path: 'lang/b.ts', line: 4, symbol: 'greet' }, argsText: '', output: out, status: 'done' } as never, true);
  assert.ok(card.includes('data-action="openLocation"'), card);
  const other = renderTool({ id: 'c2', name: 'grep', args: { pattern: 'greet' }, argsText: '', output: 'lang/a.ts:4:17: x', status: 'done' } as never, true);
  assert.ok(!other.includes('openLocation'));
});

test('a request the daemon cancels is answered at once; the work\'s late result is dropped', async () => {
  const token = () => {
    const listeners: (() => void)[] = [];
    const t = { isCancellationRequested: false, onCancellationRequested: (l: () => void) => { listeners.push(l); return { dispose: () => listeners.splice(listeners.indexOf(l), 1) }; },
      cancel: () => { t.isCancellationRequested = true; [...listeners].forEach((l) => l()); }, listeners };
    return t;
  };
  let finish: (v: string) => void = () => undefined;
  const t1 = token();
  const raced = raceCancellation(new Promise<string>((r) => { finish = r; }), t1, () => new Error('Cancelled'));
  t1.cancel();
  await assert.rejects(raced, /Cancelled/);
  finish('late'); // ignored
  // Not cancelled: the work's result, and no listener left behind.
  const t2 = token();
  assert.equal(await raceCancellation(Promise.resolve('answer'), t2, () => new Error('Cancelled')), 'answer');
  assert.equal(t2.listeners.length, 0);
  await assert.rejects(raceCancellation(Promise.reject(new Error('You cannot rename this element.')), token(), () => new Error('Cancelled')), /cannot rename/);
  // Cancelled before it began.
  const t3 = token();
  t3.cancel();
  await assert.rejects(raceCancellation(Promise.reject(new Error('late failure')), t3, () => new Error('Cancelled')), /Cancelled/);
});
