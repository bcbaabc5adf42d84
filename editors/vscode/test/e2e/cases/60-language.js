//! Issue 36, the editor lends its language servers: the daemon's `lsp_*` tools ask VS Code
//! (`agent/languageRequest`), which answers with its built-in TypeScript features on the user's
//! unsaved buffer. A small TypeScript project (lang/: tsconfig.json, a.ts exporting greet, b.ts
//! importing and calling it); three lines typed above greet in a.ts, not saved, so its definition
//! is on line 4 of the buffer but line 1 on disk. The model's lsp_definition, lsp_references and
//! lsp_workspace_symbols results name the buffer's places; lsp_document_symbols of notes.txt says
//! no language server answers for it; lsp_rename proposes, then applies after the approval (its
//! card lists both files), and both buffers change. With agentLsp.followAgent on, a `read` shows
//! its file at its line without taking the focus from the chat. The README's picture of a
//! references result and the rename approval is taken here. The mock answers with
//! 60-language.json's responses, in order; the tool results the model got are read from the
//! mock's recorded requests.
'use strict';

exports.register = ({ testCase, until, runCommand, readTraces, text, openFile, editorText, send, fs, path, workspace, artifacts, picture }) => {
  const settled = (f) => until('run settled', async () => (await text(f, '#state')) === 'idle', 60000);
  const requests = () => fs.readFileSync(process.env.MOCK_LOG, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  /** The tool result the model got for `callId`, as the mock recorded the next request. */
  function resultFor(callId) {
    for (const r of requests().reverse()) {
      const m = (r.body.messages ?? []).find((x) => x.role === 'tool' && x.tool_call_id === callId);
      if (m) return typeof m.content === 'string' ? m.content : JSON.stringify(m.content);
    }
    return undefined;
  }
  function expectResult(callId, wants) {
    const got = resultFor(callId);
    for (const w of wants) if (!got?.includes(w)) throw new Error(`${callId}: the model got no "${w}" in: ${got}`);
    return got;
  }
  /**
   * Turns agentLsp.followAgent on or off in the Settings editor, as a user does, and waits for
   * the extension to say so in its log (it takes effect without a restart).
   */
  async function setFollow(page, on) {
    const before = (readTraces().match(/Follow the agent: (on|off)/g) ?? []).length;
    await runCommand(page, 'Preferences: Open User Settings');
    await page.locator('.settings-editor').waitFor({ timeout: 15000 });
    await page.keyboard.press('Control+A');
    await page.keyboard.type('agentLsp.followAgent');
    const box = page.locator('.setting-item-contents[data-key="agentLsp.followAgent"] .setting-value-checkbox, .setting-item[data-key="agentLsp.followAgent"] .setting-value-checkbox').first();
    await box.waitFor({ timeout: 15000 });
    if ((await box.getAttribute('aria-checked')) !== String(on)) await box.click();
    await until(`followAgent ${on ? 'on' : 'off'} in the log`, async () => {
      const said = readTraces().match(/Follow the agent: (on|off)/g) ?? [];
      return said.length > before && said[said.length - 1] === `Follow the agent: ${on ? 'on' : 'off'}`;
    }, 20000, 200);
    await page.keyboard.press('Control+W');
  }
  const sidebarWidth = async (page) => (await page.locator('.part.sidebar').boundingBox()).width;
  /** Drags the side bar's edge (the sash on its right border) until the side bar is `width` wide. */
  async function setSidebarWidth(page, width) {
    const box = await page.locator('.part.sidebar').boundingBox();
    const x = box.x + box.width;
    const y = box.y + box.height / 2;
    await page.mouse.move(x, y);
    await page.mouse.down();
    await page.mouse.move(box.x + width, y, { steps: 8 });
    await page.mouse.up();
    await until(`the side bar ${width}px wide`, async () => Math.abs((await sidebarWidth(page)) - width) < 8, 5000);
  }
  /** The side bar's view header named `title` (its `aria-expanded` says whether it is open). */
  const viewHeader = (page, title) => page.locator('.part.sidebar .pane-header').filter({ has: page.locator('.title', { hasText: new RegExp(`^${title}$`, 'i') }) }).first();
  /** Folds the named views that are open; returns those it folded. */
  async function foldViews(page, titles) {
    const folded = [];
    for (const title of titles) {
      const header = viewHeader(page, title);
      if ((await header.count()) === 0 || (await header.getAttribute('aria-expanded')) !== 'true') continue;
      await header.click();
      await until(`${title} folded`, async () => (await header.getAttribute('aria-expanded')) === 'false', 5000);
      folded.push(title);
    }
    // No focus ring on the last header clicked.
    await page.evaluate(() => document.activeElement?.blur());
    return folded;
  }
  async function unfoldViews(page, titles) {
    for (const title of titles) {
      const header = viewHeader(page, title);
      await header.click();
      await until(`${title} open`, async () => (await header.getAttribute('aria-expanded')) === 'true', 5000);
    }
  }
  const dir = path.join(workspace, 'lang');
  const A = path.join(dir, 'a.ts');
  const B = path.join(dir, 'b.ts');

  testCase('lsp_definition, lsp_references and lsp_workspace_symbols answer from the unsaved TypeScript buffer; a plain text file has no language server', async ({ page, ctx }) => {
    const f = ctx.frame;
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'tsconfig.json'), '{"compilerOptions": {"strict": true, "target": "ES2020", "module": "commonjs"}, "include": ["*.ts"]}\n');
    fs.writeFileSync(A, 'export function greet(name: string): string {\n  return `Hello, ${name}!`;\n}\n');
    fs.writeFileSync(B, "import { greet } from './a';\n\nexport function main(): void {\n  console.log(greet('world'));\n}\n");
    await runCommand(page, 'Agent: New Session');
    await until('an empty chat', async () => (await f.locator('#empty').isVisible()) && (await f.locator('.msg').count()) === 0, 10000);
    await openFile(page, 'b.ts', B);
    await openFile(page, 'a.ts', A);
    // Three lines above greet, typed and not saved: greet's definition moves to line 4 of the
    // buffer (still line 1 on disk).
    await page.locator('.editor-group-container.active .monaco-editor .view-lines').first().click();
    await page.keyboard.press('Control+Home');
    await page.keyboard.type('export const PUNCTUATION = 1;');
    await page.keyboard.press('Enter');
    await page.keyboard.type('export const EXCLAIM = true;');
    await page.keyboard.press('Enter');
    await page.keyboard.press('Enter');
    // The cursor after them: the start of greet's line, now line 4.
    await page.locator('.statusbar-item', { hasText: 'Ln 4, Col 1' }).first().waitFor({ timeout: 10000 });
    await until('the typed lines above greet', async () => (await editorText(page)).includes('export const EXCLAIM = true;'), 10000);
    if (fs.readFileSync(A, 'utf8').includes('PUNCTUATION')) throw new Error('a.ts was saved');
    // TypeScript's server starts slowly here: its document symbols (the breadcrumbs' symbol at the
    // cursor, in greet) show it answers before the model asks.
    await until('TypeScript\'s symbols of a.ts', async () => (await page.locator('.editor-group-container.active .breadcrumbs-control').innerText()).includes('greet'), 120000, 250);
    await send(f, 'Where is greet defined and used?');
    await until('the answer', async () => (await text(f, '.msg.assistant .md')).includes('notes.txt has no language server.'), 120000);
    await settled(f);
    // The buffer's line 4, column 17 (`export function ` is 16 characters), not the disk's line 1.
    expectResult('call_lsp_def', ['1 definition:', 'lang/a.ts:4:17: export function greet(name: string): string {']);
    const refs = expectResult('call_lsp_refs', ['3 references in 2 files:', 'lang/a.ts:4:17:', 'lang/b.ts:1:10:', "lang/b.ts:4:15: console.log(greet('world'));"]);
    if (refs.includes('lang/a.ts:1:')) throw new Error(`a reference from the disk's a.ts: ${refs}`);
    // TypeScript's workspace symbol spans the whole declaration (from `export`), named `greet()`.
    expectResult('call_lsp_wsym', ['1 symbol matching "greet":', 'lang/a.ts:4:1: function greet']);
    expectResult('call_lsp_none', ['No language server in the editor answers', 'notes.txt']);
    // The cards name their places; the references card shows the grouped result.
    const card = f.locator('.tool[data-tool="call_lsp_refs"]');
    if (!(await card.locator('.tool-target').innerText()).includes('lang/b.ts:4 greet')) throw new Error(`the card's target: ${await card.locator('.tool-target').innerText()}`);
    await card.locator('summary').click();
    await until('the references shown', async () => (await card.locator('pre.output').innerText().catch(() => '')).includes('lang/b.ts:4:15'), 5000);
    // VS Code's log says what it asked and that TypeScript answered ("servers [vscode]"), and
    // that nobody answers for plain text.
    const traces = readTraces();
    if (!/agent\/languageRequest textDocument\/definition \S*lang\/b\.ts:4:\d+: 1 result\(s\), servers \[vscode\]/.test(traces)) throw new Error('the output channel does not show the definition request');
    if (!/agent\/languageRequest textDocument\/documentSymbol \S*notes\.txt: 0 result\(s\), servers \[\]/.test(traces)) throw new Error('the output channel does not show notes.txt without servers');
  });

  testCase('lsp_rename proposes edits across both files, and applies them after the approval (its card lists the files)', async ({ page, ctx }) => {
    const f = ctx.frame;
    await openFile(page, 'a.ts', A);
    await send(f, 'Rename greet to welcome');
    const card = f.locator('.approval');
    await card.waitFor({ timeout: 60000 });
    // Renamed at its declaration in a.ts, the editor shown (TypeScript takes the rename
    // preferences of e2e.sh's settings for a file shown in an editor): the import and the call too.
    expectResult('call_lsp_rename', ['Renaming greet to welcome would change 3 places in 2 files (not applied', 'lang/a.ts:4:17: export function welcome(name: string): string {', "lang/b.ts:1:10: import { welcome } from './a';", "lang/b.ts:4:15: console.log(welcome('world'));"]);
    const shown = await card.innerText();
    for (const want of ['Rename greet to welcome in 2 files', 'Changes 2 files: lang/a.ts, lang/b.ts', '+export function welcome(name: string): string {', "+  console.log(welcome('world'));"]) {
      if (!shown.includes(want)) throw new Error(`the card lacks "${want}": ${shown}`);
    }
    // The picture, in a wider side bar: the proposed rename's places (its card unfolded) above
    // the approval of the rename that applies them.
    const proposed = f.locator('.tool[data-tool="call_lsp_rename"]');
    await proposed.locator('summary').click();
    await until('the proposed places shown', async () => (await proposed.locator('pre.output').innerText().catch(() => '')).includes('lang/b.ts:4:15'), 5000);
    const narrow = await sidebarWidth(page);
    await setSidebarWidth(page, 600);
    // The views under the chat, opened by earlier cases, folded for the picture's room.
    const folded = await foldViews(page, ['Changes', 'MCP Servers']);
    await f.evaluate(() => { const t = document.getElementById('transcript'); t.scrollTop = t.scrollHeight; });
    await page.screenshot({ path: path.join(artifacts, '60-rename-approval.png') });
    await picture(page, 'language', ['.part.sidebar']);
    await unfoldViews(page, folded);
    await setSidebarWidth(page, narrow);
    // "Open diff": both files in VS Code's multi-file diff editor, now ↔ proposed.
    await card.locator('button[data-action="approvalDiff"]').click();
    const tab = page.locator('.tab.active', { hasText: 'Rename greet to welcome in 2 files (proposed)' });
    await tab.waitFor({ timeout: 15000 });
    await until('both files in the diff', async () => {
      const t = await page.locator('.editor-group-container.active').innerText();
      return t.includes('a.ts') && t.includes('b.ts') && t.includes('welcome');
    }, 15000);
    await page.keyboard.press('Control+W');
    await card.locator('button[data-decision="allow"]').click();
    await until('the answer', async () => (await text(f, '.msg.assistant .md')).includes('Renamed greet to welcome in both files.'), 60000);
    await settled(f);
    expectResult('call_lsp_rename_apply', ['Renamed greet to welcome: 3 places in 2 files.']);
    // Both buffers changed (a.ts keeps the lines typed above, now saved: saveAfterEdit "always").
    await openFile(page, 'a.ts', A);
    await until('a.ts renamed', async () => {
      const t = await editorText(page);
      return t.includes('export function welcome(name: string)') && t.includes('PUNCTUATION') && !t.includes('greet');
    }, 15000);
    await openFile(page, 'b.ts', B);
    await until('b.ts renamed', async () => {
      const t = await editorText(page);
      return t.includes("import { welcome } from './a';") && t.includes("console.log(welcome('world'));");
    }, 15000);
    await page.screenshot({ path: path.join(artifacts, '61-renamed.png') });
  });

  testCase('with agentLsp.followAgent on, the file the agent reads is shown at its line; the chat keeps the focus', async ({ page, ctx }) => {
    const f = ctx.frame;
    await setFollow(page, true);
    try {
      await openFile(page, 'a.ts', A);
      await send(f, 'Show me main');
      await until('b.ts shown', async () => (await page.locator('.tab.active', { hasText: 'b.ts' }).count()) === 1, 30000);
      // At the line `read` started at (offset 3), the cursor there.
      await page.locator('.statusbar-item', { hasText: 'Ln 3, Col 1' }).first().waitFor({ timeout: 10000 });
      await until('the answer', async () => (await text(f, '.msg.assistant .md')).includes('main prints a welcome.'), 30000);
      await settled(f);
      if (!(await f.evaluate(() => document.hasFocus() && document.activeElement?.id === 'input'))) throw new Error('the chat input lost the focus');
      await page.screenshot({ path: path.join(artifacts, '62-follow.png') });
    } finally {
      await setFollow(page, false);
    }
  });
};
