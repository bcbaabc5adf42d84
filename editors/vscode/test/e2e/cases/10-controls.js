//! Issue 18, controls and context: thinking level, context use and cost, `/` and `@` completion,
//! images, compaction (manual and automatic) and the MCP servers view with its trust prompt.
//! Runs after driver.js's and 05-review's cases (the chat shows the first session, switched to mock/other-model
//! by "Switch Model …"); the mock answers with 10-controls.json's responses, in order.
'use strict';

// A 1×1 PNG.
const DOT = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';

exports.register = ({ testCase, until, runCommand, text, send, fs, path, workspace, artifacts }) => {
  const lastRequest = () => fs.readFileSync(process.env.MOCK_LOG, 'utf8').trim().split('\n').pop();
  const statusItem = (page) => page.locator('.statusbar-item', { hasText: 'mock/other-model' }).first();
  const settled = (f) => until('run settled', async () => (await text(f, '#state')) === 'idle', 30000);

  testCase('the thinking level switches live; model, context use and cost stay visible', async ({ page, ctx }) => {
    const f = ctx.frame;
    await runCommand(page, 'Agent: Set Thinking Level');
    const rows = page.locator('.quick-input-list .monaco-list-row');
    await until('the levels of the model', async () => (await rows.count()) === 4, 10000);
    // A row's accessible name is "label, description" (the list reuses row elements, so their
    // inner text may hold a hidden detail line of an earlier picker).
    const levels = (await rows.evaluateAll((rs) => rs.map((r) => r.getAttribute('aria-label') ?? ''))).map((l) => l.split(',')[0].replace(/^check\s+/, '').trim()); // the current one: "check  off"
    if (levels.join(',') !== 'off,low,medium,high') throw new Error(`unexpected levels: ${levels.join(',')}`);
    await rows.filter({ has: page.locator('.label-name', { hasText: /^high$/ }) }).first().click();
    await until('the footer shows the level', async () => (await text(f, '#usage')).includes('thinking high'), 10000);
    await until('the status bar shows the level', async () => (await statusItem(page).innerText()).includes('thinking high'), 10000);
    await send(f, 'Think hard about notes.txt');
    await until('the answer', async () => (await text(f, '.msg.assistant .md')).includes('Thought it through.'), 30000);
    await settled(f);
    if (!lastRequest().includes('"reasoning_effort":"high"')) throw new Error(`the request does not carry the level: ${lastRequest().slice(0, 400)}`);
    // agent/getStats after the run: tokens / window (percent) and the cost at the model's prices.
    const bar = await until('context use and cost in the status bar', async () => {
      const t = await statusItem(page).innerText();
      return /ctx [\d.]+k \/ 20k \(\d+%\)/.test(t) && /\$0\.0[1-9]/.test(t) ? t : undefined;
    }, 15000);
    const footer = await text(f, '#usage');
    if (!/ctx [\d.]+k \/ 20k \(\d+%\)/.test(footer)) throw new Error(`the footer lacks the context use: ${footer}`);
    console.log(`[controls] status bar: ${bar.replace(/\s+/g, ' ')}`);
    await page.screenshot({ path: path.join(artifacts, '10-controls.png') });
  });

  testCase('"/" completes the session\'s slash commands with their hints; choosing one inserts it', async ({ ctx }) => {
    const f = ctx.frame;
    const input = f.locator('#input');
    await input.click();
    await input.fill('');
    await input.pressSequentially('/');
    const rows = f.locator('#completions li');
    await until('the built-in commands', async () => {
      const all = await text(f, '#completions');
      return all.includes('/compact') && all.includes('[instructions]') && all.includes('/model') && all.includes('/review');
    }, 10000);
    await input.pressSequentially('rev');
    await until('only the template', async () => (await rows.count()) === 1, 10000);
    const row = await rows.first().innerText();
    if (!row.includes('<file>') || !row.includes('Review one file')) throw new Error(`the template row lacks hint or description: ${row}`);
    await input.press('Enter'); // chooses, does not send
    await until('the command inserted', async () => (await input.inputValue()) === '/review ', 5000);
    if (!(await f.locator('#completions').isHidden())) throw new Error('the popup stayed open');
    await input.pressSequentially('notes.txt');
    await input.press('Enter');
    await until('the answer', async () => (await text(f, '.msg.assistant .md')).includes('Reviewed notes.txt'), 30000);
    await settled(f);
    if (!lastRequest().includes('Review notes.txt carefully.')) throw new Error('the template was not expanded for the model');
    // `/model` alone answers without a run: the chat says which model the session uses.
    await input.fill('/model');
    await until('the /model row', async () => (await text(f, '#completions')).includes('[provider/id]'), 10000);
    await input.press('Enter'); // accepts the completion ("/model ")
    await until('the command accepted', async () => (await input.inputValue()) === '/model ', 5000);
    await input.press('Enter'); // sends it
    await until('the model notice', async () => (await text(f, '.notice')).includes('Model: mock/other-model, thinking high.'), 10000);
  });

  testCase('"@" completes workspace files (fuzzy, .gitignore respected) and attaches the chosen one', async ({ ctx }) => {
    const f = ctx.frame;
    fs.writeFileSync(path.join(workspace, '.gitignore'), 'ignored-*.txt\n');
    fs.writeFileSync(path.join(workspace, 'ignored-secret.txt'), 'do not list me\n');
    const input = f.locator('#input');
    await input.click();
    await input.fill('');
    await input.pressSequentially('Summarise @');
    const listed = await until('the workspace files', async () => {
      const t = await text(f, '#completions');
      return t.includes('notes.txt') && t.includes('data.json') ? t : undefined;
    }, 15000);
    if (listed.includes('ignored-secret.txt')) throw new Error('a .gitignore\'d file is offered');
    await input.pressSequentially('nts');
    await until('notes.txt first', async () => (await f.locator('#completions li').first().innerText()).includes('notes.txt'), 10000);
    await input.press('Tab');
    await until('the file chip', async () => (await text(f, '#contexts')).includes('notes.txt'), 10000);
    if ((await input.inputValue()) !== 'Summarise @notes.txt ') throw new Error(`unexpected input: ${await input.inputValue()}`);
    await input.press('Enter');
    await until('the answer', async () => (await text(f, '.msg.assistant .md')).includes('notes.txt has two lines.'), 30000);
    await settled(f);
    if (!lastRequest().includes('<context path=\\"notes.txt\\">')) throw new Error('the request has no context block for notes.txt');
  });

  testCase('an image pasted or dropped into the input is sent as an image block', async ({ ctx }) => {
    const f = ctx.frame;
    await f.evaluate((b64) => {
      const file = (name) => {
        const dt = new DataTransfer();
        dt.items.add(new File([Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))], name, { type: 'image/png' }));
        return dt;
      };
      document.getElementById('input').dispatchEvent(new ClipboardEvent('paste', { clipboardData: file('pasted-dot.png'), bubbles: true, cancelable: true }));
      document.querySelector('.composer').dispatchEvent(new DragEvent('drop', { dataTransfer: file('dropped-dot.png'), bubbles: true, cancelable: true }));
    }, DOT);
    await until('two image chips', async () => {
      const t = await text(f, '#contexts');
      return t.includes('image: pasted-dot.png (70 B)') && t.includes('image: dropped-dot.png');
    }, 10000);
    await send(f, 'What is in the images?');
    await until('the answer', async () => (await text(f, '.msg.assistant .md')).includes('A single dot.'), 30000);
    await settled(f);
    const request = lastRequest();
    if (request.split(`data:image/png;base64,${DOT}`).length !== 3) throw new Error(`the request does not carry both images: ${request.slice(-600)}`);
    if ((await f.locator('.msg.user').last().locator('.chip', { hasText: 'image' }).count()) !== 2) throw new Error('the sent message does not show its images');
  });

  // Both compactions below cut inside a long answer (a split turn), so each makes two summary
  // requests, the history's and the cut turn's start (10-controls.json has a response for each).
  testCase('Agent: Compact summarises the conversation; the chat marks it with the summary folded', async ({ page, ctx }) => {
    const f = ctx.frame;
    await runCommand(page, 'Agent: Compact');
    const box = page.locator('.quick-input-widget input');
    await box.waitFor({ timeout: 10000 });
    await box.fill('keep the file names');
    await box.press('Enter');
    const marker = f.locator('.compaction.done').last();
    await marker.waitFor({ timeout: 30000 });
    const title = await marker.locator('summary').innerText();
    if (!/Conversation compacted on request · [\d.]+k → [\d.]+k? tokens/.test(title)) throw new Error(`unexpected marker: ${title}`);
    if (await marker.locator('.compaction-summary').isVisible()) throw new Error('the summary should start folded');
    await marker.locator('summary').click();
    await until('the summary unfolded', async () => (await marker.locator('.compaction-summary').innerText()).includes('Check the mock scenario.'), 5000);
    if (!lastRequest().includes('keep the file names')) throw new Error('the summary request lacks the instructions');
    // Until a response reports the new size, the context use is unknown.
    await until('the context use reset', async () => (await statusItem(page).innerText()).includes('ctx ? / 20k'), 10000);
    await page.screenshot({ path: path.join(artifacts, '11-compacted.png') });
  });

  testCase('an automatic compaction (context nearly full) is marked in the chat too', async ({ ctx }) => {
    const f = ctx.frame;
    await send(f, 'Write a long answer');
    await until('the long answer', async () => (await text(f, '.msg.assistant .md')).includes('Paragraph 419'), 30000);
    await settled(f);
    await send(f, 'And now?');
    await until('the automatic marker', async () => (await text(f, '.compaction.done summary')).includes('Conversation compacted automatically (the context was nearly full)'), 30000);
    await until('the answer', async () => (await text(f, '.msg.assistant .md')).includes('Answered after compacting.'), 30000);
    await settled(f);
  });

  testCase('a project\'s .mcp.json asks naming its servers, a "no" can be asked again from the MCP view; the view shows state, error and tools live', async ({ page, ctx }) => {
    const f = ctx.frame;
    const echo = process.env.MOCK_MCP_BIN;
    fs.writeFileSync(path.join(workspace, '.mcp.json'), JSON.stringify({ mcpServers: { echo: { command: echo }, broken: { command: '/nonexistent/mcp-server' } } }));
    try {
      // Open the view first (it starts collapsed): the current session has no servers.
      const header = page.locator('.pane-header', { hasText: 'MCP Servers' });
      if ((await header.getAttribute('aria-expanded')) !== 'true') await header.click();
      const pane = page.locator('.pane', { has: header });
      // (No session at all when the earlier cases did not run: E2E_ONLY.)
      await until('the empty view', async () => /This session has no MCP servers|No session yet/.test(await pane.innerText()), 10000);
      await runCommand(page, 'Agent: New Session');
      const dialog = page.locator('.monaco-dialog-box');
      await dialog.waitFor({ timeout: 20000 });
      const asked = await dialog.innerText();
      for (const want of ['.mcp.json', `echo: ${echo}`, 'broken: /nonexistent/mcp-server']) {
        if (!asked.includes(want)) throw new Error(`the trust prompt does not name ${want}: ${asked}`);
      }
      const row = (label) => page.locator('.monaco-list-row', { has: page.locator('.label-name', { hasText: new RegExp(`^${label}$`) }) }).first();
      // While the dialog asks, the view already lists the new session's servers, not started.
      await until('echo listed as not allowed', async () => (await row('echo').innerText()).includes('not allowed for this project'), 10000);
      await page.screenshot({ path: path.join(artifacts, '12-mcp-trust.png') });
      // "Don't Allow" first: remembered, the servers stay stopped…
      await dialog.locator('.monaco-button', { hasText: /^Don't Allow$/ }).click();
      await dialog.waitFor({ state: 'detached', timeout: 10000 });
      // The daemon remembers the answer before it would start anything: once the trust file
      // holds it, a server that was going to start would have been started.
      const trustFile = path.join(process.env.XDG_STATE_HOME, 'agent-lsp', 'mcp-trust.json');
      await until('the refusal remembered', () => fs.existsSync(trustFile) && fs.readFileSync(trustFile, 'utf8').includes('"allowed": false'), 10000);
      if (!(await row('echo').innerText()).includes('not allowed for this project')) throw new Error('a refused server started');
      // …until the user changes their mind with the server's shield action: the same question again.
      await row('echo').hover();
      await page.screenshot({ path: path.join(artifacts, '12b-mcp-ask-again.png') });
      await row('echo').locator('.action-label[aria-label^="Trust the Project"]').click();
      await dialog.waitFor({ timeout: 20000 });
      if (!(await dialog.innerText()).includes(`echo: ${echo}`)) throw new Error(`the second trust prompt does not name echo: ${await dialog.innerText()}`);
      await dialog.locator('.monaco-button', { hasText: /^Allow$/ }).click();
      await dialog.waitFor({ state: 'detached', timeout: 10000 });
      // Then mcp_update events change it in place (nobody refreshes the view).
      await until('echo ready with its tool', async () => (await row('echo').innerText()).includes('ready · 1 tool'), 20000);
      await until('its tool listed', async () => (await row('timed_echo').count()) === 1, 10000);
      await until('broken failed', async () => (await row('broken').innerText()).includes('failed'), 20000);
      const tree = await pane.innerText();
      if (!/nonexistent|No such file|not found/i.test(tree)) throw new Error(`the failed server shows no error: ${tree}`);
      await page.screenshot({ path: path.join(artifacts, '13-mcp-view.png') });
      if (await f.locator('.msg').count() !== 0) throw new Error('the new session is not empty');
    } finally {
      fs.rmSync(path.join(workspace, '.mcp.json'), { force: true });
    }
  });
};
