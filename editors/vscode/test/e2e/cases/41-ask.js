//! Issue 34, questions for the user (`agent/askUser`): the model's `ask_user` is answered in a
//! quick pick (an option with its description; a typed answer; several options and a typed one;
//! the title's decline button; Escape), the chat shows the question and the answer, and the answer reaches the model (the
//! mock's recorded requests). Aborting the run while the pick is open closes it (the daemon's
//! `$/cancelRequest`). The mock answers with 41-ask.json's responses, in order.
'use strict';

exports.register = ({ testCase, until, runCommand, text, send, fs, path, artifacts }) => {
  const settled = (f) => until('run settled', async () => (await text(f, '#state')) === 'idle', 30000);
  const requests = () => fs.readFileSync(process.env.MOCK_LOG, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  /** The tool result the model got for `callId` (its text, as the mock recorded the request). */
  function resultFor(callId) {
    for (const r of requests().reverse()) {
      const m = (r.body.messages ?? []).find((x) => x.role === 'tool' && x.tool_call_id === callId);
      if (m) return typeof m.content === 'string' ? m.content : JSON.stringify(m.content);
    }
    return undefined;
  }
  const widget = (page) => page.locator('.quick-input-widget');
  const pickTitle = (page, words) => page.locator('.quick-input-widget .quick-input-title', { hasText: words });
  const rowNamed = (page, label) => page.locator('.quick-input-list .monaco-list-row').filter({ has: page.locator('.label-name', { hasText: new RegExp(`^${label}$`) }) }).first();
  const question = (f, words) => f.locator('.question', { hasText: words });

  async function newSession(page, f) {
    await runCommand(page, 'Notifications: Clear All Notifications');
    await runCommand(page, 'Agent: New Session');
    await until('an empty chat', async () => (await f.locator('#empty').isVisible()) && (await f.locator('.msg').count()) === 0, 10000);
  }

  testCase('ask_user: an option picked in the quick pick reaches the model; the chat shows the question and the answer', async ({ page, ctx }) => {
    const f = ctx.frame;
    await newSession(page, f);
    await send(f, 'Set up the database');
    await pickTitle(page, 'The agent asks: Which database should I use?').waitFor({ timeout: 30000 });
    const pg = rowNamed(page, 'Postgres');
    await pg.waitFor({ timeout: 10000 });
    if (!(await pg.innerText()).includes('the production one')) throw new Error(`the option lacks its description: ${await pg.innerText()}`);
    const q = question(f, 'Which database should I use?');
    await until('the question in the chat', async () => (await q.innerText()).includes('Waiting for your answer'), 10000);
    if (!(await q.innerText()).includes('The agent asks')) throw new Error(`the chat's question: ${await q.innerText()}`);
    await page.screenshot({ path: path.join(artifacts, '43-ask-pick.png') });
    await rowNamed(page, 'SQLite').click();
    await until('the answer in the chat', async () => (await q.innerText()).includes('You answered: SQLite'), 10000);
    await until('the model\'s reply', async () => (await text(f, '.msg.assistant .md')).includes('SQLite it is.'), 30000);
    await settled(f);
    const got = resultFor('call_ask_db');
    if (!got?.includes('The user answered: SQLite')) throw new Error(`the model got: ${got}`);
  });

  testCase('ask_user: a typed answer, and several options with a typed one, reach the model', async ({ page, ctx }) => {
    const f = ctx.frame;
    // Only text allowed, no options: straight to the input box.
    await send(f, 'Create the table');
    const input = page.locator('.quick-input-widget input');
    await until('the input box', async () => (await widget(page).isVisible()) && (await widget(page).innerText()).includes('What should the table be called?'), 30000);
    await input.fill('accounts_2026');
    await input.press('Enter');
    await until('the model\'s reply', async () => (await text(f, '.msg.assistant .md')).includes('Calling it as you said.'), 30000);
    await settled(f);
    if (!resultFor('call_ask_name')?.includes('The user answered: accounts_2026')) throw new Error(`the model got: ${resultFor('call_ask_name')}`);
    if (!(await question(f, 'What should the table be called?').innerText()).includes('You answered: “accounts_2026”')) throw new Error('the chat lacks the typed answer');
    // Several options, and words of one's own.
    await send(f, 'Run the checks');
    await pickTitle(page, 'Which checks should run?').waitFor({ timeout: 30000 });
    // A click on a row of a multiple choice checks it.
    for (const label of ['lint', 'e2e']) await rowNamed(page, label).click();
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'Type an answer…' }).first().click();
    await until('three checked', async () => (await widget(page).innerText()).includes('3 Selected'), 5000);
    await input.press('Enter');
    await until('the input box for the typed part', async () => (await widget(page).isVisible()) && !(await rowNamed(page, 'lint').isVisible()), 10000);
    await input.fill('and the benches');
    await input.press('Enter');
    await until('the model\'s reply', async () => (await text(f, '.msg.assistant .md')).includes('Running those checks.'), 30000);
    await settled(f);
    const got = resultFor('call_ask_checks') ?? '';
    for (const want of ['The user selected: lint, e2e', 'The user added: and the benches']) if (!got.includes(want)) throw new Error(`the model's answer lacks "${want}": ${got}`);
    if (got.includes('unit tests')) throw new Error(`an unchecked option reached the model: ${got}`);
  });

  testCase('ask_user: the title button declines, Escape cancels; aborting the run closes the open pick', async ({ page, ctx }) => {
    const f = ctx.frame;
    await send(f, 'Design the logo');
    await pickTitle(page, 'Which colour for the logo?').waitFor({ timeout: 30000 });
    await page.locator('.quick-input-widget .quick-input-titlebar [aria-label="Decline to answer"]').first().click();
    await until('the pick closed', async () => widget(page).isHidden(), 10000);
    await until('the model\'s reply', async () => (await text(f, '.msg.assistant .md')).includes('I will pick one myself.'), 30000);
    await settled(f);
    if (!(await question(f, 'Which colour for the logo?').innerText()).includes('You declined to answer.')) throw new Error('the chat does not say the question was declined');
    if (!(resultFor('call_ask_decline') ?? '').includes('The user gave no answer.')) throw new Error(`the model got: ${resultFor('call_ask_decline')}`);
    await send(f, 'Carry on');
    await pickTitle(page, 'Shall I go on?').waitFor({ timeout: 30000 });
    await page.keyboard.press('Escape');
    await until('the pick closed', async () => widget(page).isHidden(), 10000);
    await until('the model\'s reply', async () => (await text(f, '.msg.assistant .md')).includes('I will wait, then.'), 30000);
    await settled(f);
    if (!(await question(f, 'Shall I go on?').innerText()).includes('Not answered.')) throw new Error('the chat does not say the question went unanswered');
    const got = resultFor('call_ask_skip') ?? '';
    if (!got.includes('The question was cancelled')) throw new Error(`the model did not read a cancelled question: ${got}`);
    // The run is aborted while the pick waits: the daemon's $/cancelRequest closes it.
    await send(f, 'Deploy it');
    await pickTitle(page, 'Deploy now?').waitFor({ timeout: 30000 });
    await f.locator('#stop').click();
    await until('the pick closed by the abort', async () => widget(page).isHidden(), 15000);
    await settled(f);
    if (!(await question(f, 'Deploy now?').innerText()).includes('Not answered.')) throw new Error('the chat does not say the question went unanswered');
  });
};
