//! Issue 33: "Agent: Log In" runs `agent-lsp login` (the bundled daemon) in a terminal: the user
//! picks a provider, pastes a key that is not echoed, and the key is stored for them only
//! ($XDG_CONFIG_HOME/agent-lsp/credentials/keys.json, mode 0600).
'use strict';

exports.register = ({ testCase, until, runCommand, fs, path }) => {
  testCase('Agent: Log In stores a pasted key for the user, without echoing it', async ({ page }) => {
    const file = path.join(process.env.XDG_CONFIG_HOME, 'agent-lsp', 'credentials', 'keys.json');
    if (fs.existsSync(file)) throw new Error(`${file} exists before the login`);
    const key = 'sk-e2e-login-5d2f';
    await runCommand(page, "Agent: Log In (Store a Provider's Key)");
    const screen = () => page.locator('.terminal-wrapper.active .xterm-rows').first().textContent();
    await until('the provider question in the login terminal', async () => (await screen())?.includes('Provider [1]:'), 30000);
    await page.locator('.terminal-wrapper.active .xterm').first().click();
    await page.keyboard.type('openai');
    await page.keyboard.press('Enter');
    await until('the hidden key prompt', async () => (await screen())?.includes('(input hidden)'), 20000);
    await page.keyboard.type(key);
    await page.keyboard.press('Enter');
    const stored = await until('the stored key', async () => {
      try { return JSON.parse(fs.readFileSync(file, 'utf8')); } catch { return undefined; }
    }, 20000);
    if (stored.OPENAI_API_KEY !== key) throw new Error(`stored ${JSON.stringify(Object.keys(stored))}, not the pasted key`);
    const mode = fs.statSync(file).mode & 0o777;
    if (mode !== 0o600) throw new Error(`keys.json has mode ${mode.toString(8)}, not 600`);
    const text = await until('the login result', async () => {
      const t = await screen();
      return t?.includes('Stored OPENAI_API_KEY') ? t : undefined;
    }, 20000);
    if (text.includes(key)) throw new Error('the key was echoed in the terminal');
    await runCommand(page, 'Terminal: Kill the Active Terminal Instance');
  });
};
