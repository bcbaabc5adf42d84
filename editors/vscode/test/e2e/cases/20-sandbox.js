//! Issue 30, the sandbox as the user sees it (protocol.md §3.17): a repository cannot loosen it
//! through its `.vscode/settings.json` (e2e.sh writes a hostile one into the workspace before
//! VS Code opens it: another daemon, LD_PRELOAD, `bash: allow`, `sandbox: off`); the user's own
//! sandbox settings (an allowlist, on a machine without namespaces) reach the daemon, the approval
//! card, the chat footer and "Agent: Show Sandbox Status"; and the MCP trust dialog names what
//! changed in `.mcp.json` since the last answer. The mock answers with 20-sandbox.json's responses.
'use strict';

exports.register = ({ testCase, until, runCommand, readTraces, text, send, log, fs, path, workspace, artifacts }) => {
  const settled = (f) => until('run settled', async () => (await text(f, '#state')) === 'idle', 30000);

  /** The JSON of each traced message of `kind` ("Sending request 'initialize", "Received response 'agent/getState"). */
  function traced(kind, field) {
    return readTraces().split(kind).slice(1).map((c) => {
      const start = c.indexOf(`${field}: `);
      const end = c.indexOf('\n}\n', start);
      return start < 0 || end < 0 ? undefined : JSON.parse(c.slice(start + field.length + 2, end + 2));
    }).filter((v) => v !== undefined);
  }
  const initializations = () => traced("Sending request 'initialize", 'Params');
  const states = () => traced("Received response 'agent/getState", 'Result');

  /** "Agent: Show Sandbox Status": the modal's text, closed again. */
  async function sandboxStatus(page) {
    await runCommand(page, 'Agent: Show Sandbox Status');
    const dialog = page.locator('.monaco-dialog-box');
    await dialog.waitFor({ timeout: 20000 });
    const shown = await dialog.innerText();
    return { shown, dialog };
  }
  async function closeDialog(page, dialog) {
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached', timeout: 10000 });
  }

  testCase('a workspace\'s .vscode/settings.json cannot change the daemon, its environment, the approvals or the sandbox', async ({ page, ctx }) => {
    const f = ctx.frame;
    const hostile = JSON.parse(fs.readFileSync(path.join(workspace, '.vscode', 'settings.json'), 'utf8'));
    if (hostile['agentLsp.sandbox'] !== 'off' || hostile['agentLsp.approval']?.bash !== 'allow') throw new Error('e2e.sh did not write the hostile workspace settings');
    // Every start of the daemon in this run got the user's options, none of the workspace's.
    const inits = initializations();
    if (inits.length === 0) throw new Error('no initialize traced');
    for (const init of inits) {
      const o = init.initializationOptions ?? {};
      for (const key of ['sandbox', 'approval', 'sandboxNetwork', 'sandboxEnv', 'sandboxProtectedPaths']) {
        if (key in o) throw new Error(`initialize carried the workspace's ${key}: ${JSON.stringify(o)}`);
      }
    }
    // The workspace's serverPath, serverArgs and env (LD_PRELOAD) never started anything.
    const traces = readTraces();
    for (const word of ['hostile-agent-lsp', '--hostile-argument', 'hostile.so']) if (traces.includes(word)) throw new Error(`the log mentions ${word}`);
    // The daemon's own word: the default sandbox, not "off" and not set.
    const { shown, dialog } = await sandboxStatus(page);
    for (const want of ['Mode: workspaceWrite (the default), for the commands that run without asking', 'Network: none.', 'Landlock ABI', 'Namespaces:', 'seccomp:', 'Not isolated here:']) {
      if (!shown.includes(want)) throw new Error(`the sandbox status lacks "${want}": ${shown}`);
    }
    await page.screenshot({ path: path.join(artifacts, '20-sandbox-status.png') });
    await closeDialog(page, dialog);
    const st = states().pop()?.sandbox;
    if (!st || st.mode !== 'workspaceWrite' || st.explicit !== false) throw new Error(`agent/getState.sandbox is not the default: ${JSON.stringify(st)}`);
    await until('the footer shows the default sandbox', async () => (await text(f, '#usage')).includes('sandbox: workspaceWrite (default) · no network'), 15000);
    // The workspace says bash is allowed; the user's policy asks.
    await send(f, 'Echo something');
    const card = f.locator('.approval');
    await card.waitFor({ timeout: 30000 });
    const asked = await card.innerText();
    if (!asked.includes('echo from-the-sandbox-case')) throw new Error(`the approval is not for the command: ${asked}`);
    if (!asked.includes('Runs with your full rights (no sandbox).')) throw new Error(`a hand-approved command under the default should run as approved: ${asked}`);
    await card.locator('button[data-decision="block"]').click();
    await until('the answer', async () => (await text(f, '.msg.assistant .md')).includes('Not run, then.'), 30000);
    await settled(f);
  });

  testCase('the user\'s sandbox settings reach the daemon: the card, the footer and the status name the allowlist and what is not isolated', async ({ page, ctx }) => {
    const f = ctx.frame;
    // The remote's settings (code-server's Settings editor keeps machine-scoped settings there,
    // its "Remote" tab): the user's own, a workspace cannot write them.
    const file = path.join(path.dirname(path.dirname(process.env.VSCODE_SETTINGS)), 'Machine', 'settings.json');
    const original = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : undefined;
    const before = initializations().length;
    const userEnv = JSON.parse(fs.readFileSync(process.env.VSCODE_SETTINGS, 'utf8'))['agentLsp.env'];
    const user = original ? JSON.parse(original) : {};
    user['agentLsp.sandbox'] = 'workspaceWrite';
    user['agentLsp.sandboxNetwork'] = ['crates.io', '*.npmjs.org'];
    // The model key the daemon has (agentLsp.env) is removed from sandboxed commands unless named.
    user['agentLsp.sandboxEnv'] = ['OPENAI_API_KEY'];
    // This machine has every layer: the daemon's test switch takes namespaces away, so that
    // notIsolated has something to say.
    user['agentLsp.env'] = { ...userEnv, AGENT_LSP_TEST_SANDBOX_NO_NAMESPACES: '1' };
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, JSON.stringify(user, null, 2));
    try {
      const init = await until('the daemon restarted with the user\'s sandbox', () => {
        const all = initializations();
        return all.length > before && all[all.length - 1].initializationOptions?.sandbox === 'workspaceWrite' ? all[all.length - 1] : undefined;
      }, 30000, 200);
      const o = init.initializationOptions;
      if (JSON.stringify(o.sandboxNetwork) !== '["crates.io","*.npmjs.org"]' || JSON.stringify(o.sandboxEnv) !== '["OPENAI_API_KEY"]') throw new Error(`initializationOptions: ${JSON.stringify(o)}`);
      await until('the daemon ready', async () => (await text(f, '#state')) === 'idle', 30000);
      await send(f, 'Fetch the crates');
      const card = f.locator('.approval');
      await card.waitFor({ timeout: 30000 });
      const asked = await card.innerText();
      for (const want of ['Sandboxed: writes only inside the workspace (not its protected paths, such as .git) and its temporary directory; network only to crates.io, *.npmjs.org.',
        'Layers: Landlock ABI', 'no namespaces', 'seccomp', 'Not isolated here:', 'System V IPC of your other processes', 'the network allowlist: without a network namespace commands get no network at all']) {
        if (!asked.includes(want)) throw new Error(`the approval lacks "${want}": ${asked}`);
      }
      await page.screenshot({ path: path.join(artifacts, '21-sandbox-approval.png') });
      await card.locator('button[data-decision="allow"]').click();
      await until('the answer', async () => (await text(f, '.msg.assistant .md')).includes('Fetched in the sandbox.'), 30000);
      await settled(f);
      const result = fs.readFileSync(process.env.MOCK_LOG, 'utf8').trim().split('\n').pop();
      // It ran (sandboxed, Landlock and seccomp only) and kept the key sandboxEnv names.
      if (!result.includes('sandboxed-ok key=test')) throw new Error(`the command did not run with the key: ${result.slice(-400)}`);
      const footer = await until('the footer names the sandbox', async () => {
        const t = await text(f, '#usage');
        return /sandbox: workspaceWrite · network: crates\.io, \*\.npmjs\.org · \d+ not isolated/.test(t) ? t : undefined;
      }, 15000);
      log('footer:', footer.replace(/\s+/g, ' '));
      // The footer's link opens the same status as the command.
      await f.locator('#usage button.sandbox').click();
      const dialog = page.locator('.monaco-dialog-box');
      await dialog.waitFor({ timeout: 20000 });
      const shown = await dialog.innerText();
      for (const want of ['Mode: workspaceWrite (set), for every command, those you approve too.', 'Network: only crates.io, *.npmjs.org, through the daemon\'s proxy.',
        'Namespaces: unavailable', 'Allowlist proxy: unavailable (it needs namespaces).', 'Not isolated here:', 'System V IPC of your other processes']) {
        if (!shown.includes(want)) throw new Error(`the sandbox status lacks "${want}": ${shown}`);
      }
      await page.screenshot({ path: path.join(artifacts, '22-sandbox-status-allowlist.png') });
      await closeDialog(page, dialog);
    } finally {
      fs.writeFileSync(file, original ?? '{}\n');
    }
    await until('the daemon back on the default sandbox', () => initializations().pop()?.initializationOptions?.sandbox === undefined, 30000, 200);
    await until('the daemon ready', async () => (await text(f, '#state')) === 'idle', 30000);
  });

  testCase('the MCP trust dialog names what changed in .mcp.json since the last answer', async ({ page }) => {
    const echo = process.env.MOCK_MCP_BIN;
    const mcp = path.join(workspace, '.mcp.json');
    const dialog = page.locator('.monaco-dialog-box');
    const ask = async () => {
      await runCommand(page, 'Agent: New Session');
      await dialog.waitFor({ timeout: 20000 });
      return dialog.innerText();
    };
    try {
      // A server no earlier answer covered: asked, and allowed.
      fs.writeFileSync(mcp, JSON.stringify({ mcpServers: { sbx: { command: echo } } }));
      const first = await ask();
      if (!first.includes(`sbx: ${echo}`)) throw new Error(`the trust prompt does not name sbx: ${first}`);
      await dialog.locator('.monaco-button', { hasText: /^Allow$/ }).click();
      await dialog.waitFor({ state: 'detached', timeout: 10000 });
      // The same server with a variable more in its environment: asked again, naming the change.
      fs.writeFileSync(mcp, JSON.stringify({ mcpServers: { sbx: { command: echo, env: { PYTHONPATH: '/nowhere' } } } }));
      const again = await ask();
      for (const want of ['(changed since your last answer)', 'Changed since your last answer:', 'sbx: env added PYTHONPATH', `sbx: ${echo}`]) {
        if (!again.includes(want)) throw new Error(`the second trust prompt lacks "${want}": ${again}`);
      }
      await page.screenshot({ path: path.join(artifacts, '23-mcp-trust-changed.png') });
      await dialog.locator('.monaco-button', { hasText: /^Don't Allow$/ }).click();
      await dialog.waitFor({ state: 'detached', timeout: 10000 });
    } finally {
      fs.rmSync(mcp, { force: true });
    }
  });
};
