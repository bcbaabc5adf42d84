//! Review and revert (protocol.md §3.16), checkpoints, forks and sessions (§3.12) in the real
//! editor. Each case starts with a New Session, so none depends on the chat the earlier cases left.
//! It runs before 10-controls (whose compactions summarise the first session away) and ends on
//! the first session, where 10-controls goes on.
'use strict';

exports.register = ({ testCase, until, runCommand, text, send, openFile, readTraces, log, fs, path, workspace, picture }) => {
  const ws = (name) => path.join(workspace, name);

  async function newSession(page, f) {
    // Toasts left by earlier cases would cover the pictures and the notifications looked for here.
    await runCommand(page, 'Notifications: Clear All Notifications');
    await runCommand(page, 'Agent: New Session');
    await until('an empty chat', async () => (await f.locator('#empty').isVisible()) && (await f.locator('.msg').count()) === 0, 10000);
  }

  /** Allows `n` approvals one after the other, each card by its request id. */
  async function allow(f, n) {
    for (let i = 0; i < n; i++) {
      const card = f.locator('.approval').first();
      await card.waitFor({ timeout: 30000 });
      const rid = await card.getAttribute('data-request');
      await card.locator('button[data-decision="allow"]').click();
      await until(`approval ${rid} answered`, async () => (await f.locator(`.approval[data-request="${rid}"]`).count()) === 0, 10000);
    }
  }

  /** The Changes view's pane in the Agent side bar. */
  const changesPane = (page) => page.locator('.part.sidebar .pane', { has: page.locator('.pane-header', { hasText: /changes/i }) });
  const changeRow = (page, name) => changesPane(page).locator('.monaco-list-row', { hasText: name });

  const toast = (page, words) => page.locator('.notifications-toasts .notification-list-item', { hasText: words });

  /** Picks the row of an open quick pick by typing its label (a click can race with the list's layout). */
  async function pick(page, title, label) {
    await page.locator('.quick-input-widget .quick-input-title', { hasText: title }).waitFor({ timeout: 10000 });
    const input = page.locator('.quick-input-widget input');
    await input.fill(label);
    // Enter takes the first row: wait until it is the one labelled exactly so.
    await until(`"${label}" first`, async () => {
      const names = await page.locator('.quick-input-list .monaco-list-row .label-name').allInnerTexts();
      return names.length >= 1 && names[0].trim() === label;
    }, 10000);
    await input.press('Enter');
  }

  testCase('the Changes view lists a run\'s files with their diffs; Revert This File asks before overwriting your change; Revert This Run', async ({ page, ctx }) => {
    const f = ctx.frame;
    await newSession(page, f);
    fs.writeFileSync(ws('review.txt'), 'one\ntwo\nthree\n');
    await send(f, 'Change review.txt and create made.txt');
    await allow(f, 2);
    await until('the answer', async () => (await text(f, '.msg.assistant .md')).includes('created made.txt'), 30000);
    await until('run settled', async () => (await text(f, '#state')) === 'idle');
    await until('made.txt on disk', () => fs.existsSync(ws('made.txt')), 10000);

    await runCommand(page, 'Agent: Show Changes');
    await until('both files listed', async () => (await changeRow(page, 'review.txt').count()) === 1 && (await changeRow(page, 'made.txt').count()) === 1, 15000);
    const reviewRow = await changeRow(page, 'review.txt').innerText();
    const madeRow = await changeRow(page, 'made.txt').innerText();
    if (!reviewRow.includes('modified') || !madeRow.includes('created')) throw new Error(`rows do not say what changed: ${JSON.stringify([reviewRow, madeRow])}`);

    // The diff editor: the file before the run (original side) ↔ the file now.
    await changeRow(page, 'review.txt').click();
    await page.locator('.tab.active', { hasText: 'before the run' }).waitFor({ timeout: 10000 });
    const side = (which) => page.locator(`.editor-group-container.active .monaco-diff-editor .editor.${which} .view-lines`).first();
    const original = await until('the before side', async () => { const t = (await side('original').innerText()).replace(/\u00a0/g, ' '); return t.includes('two') ? t : undefined; }, 10000);
    const modified = (await side('modified').innerText()).replace(/\u00a0/g, ' ');
    if (original.includes('TWO') || !modified.includes('TWO')) throw new Error(`the diff sides are wrong: ${JSON.stringify([original, modified])}`);
    await picture(page, 'review', ['.part.sidebar', '.part.editor']);

    // Your own change after the agent's, typed into the diff's right side (the file itself):
    // reverting the file asks first, then overwrites it.
    await side('modified').click();
    await page.keyboard.press('Control+End');
    await page.keyboard.type('mine');
    const now = async () => (await side('modified').innerText()).replace(/\u00a0/g, ' ');
    await until('the user change', async () => (await now()).includes('mine'));
    const row = changeRow(page, 'review.txt');
    await row.hover();
    await row.locator('.action-label[aria-label="Revert This File"]').click();
    const ask = toast(page, 'Changed since the agent changed them: review.txt');
    await ask.waitFor({ timeout: 15000 });
    await ask.locator('.monaco-button', { hasText: 'Revert Anyway' }).click();
    let buf = '';
    await until('review.txt as before the run', async () => {
      buf = await now();
      return buf.includes('two') && !buf.includes('TWO') && !buf.includes('mine');
    }, 15000).catch(() => { throw new Error(`buffer after the revert: ${JSON.stringify(buf)}`); });
    if (!fs.existsSync(ws('made.txt'))) throw new Error('reverting one file reverted another');

    // A created file the user has open is deleted through the editor, which closes its tab.
    await openFile(page, 'made.txt', ws('made.txt'));
    await runCommand(page, 'Agent: Revert This Run');
    await until('made.txt removed (it was created by the run)', () => !fs.existsSync(ws('made.txt')), 15000);
    await toast(page, 'Reverted').first().waitFor({ timeout: 10000 });
    await until('the tab of made.txt closed', async () => (await page.locator('.tab', { hasText: 'made.txt' }).count()) === 0, 10000);
    await openFile(page, 'before the run');
    await page.keyboard.press('Control+W');
  });

  testCase('a file the run deleted shows its old content; one too large to keep is listed as not revertible and skipped', async ({ page, ctx }) => {
    const f = ctx.frame;
    await newSession(page, f);
    fs.writeFileSync(ws('gone.txt'), 'to be deleted\n');
    fs.writeFileSync(ws('big.log'), 'x'.repeat(1536 * 1024)); // over the 1 MiB the daemon keeps
    await send(f, 'Clean up');
    await allow(f, 1);
    await until('the answer', async () => (await text(f, '.msg.assistant .md')).includes('Cleaned up.'), 30000);
    await until('run settled', async () => (await text(f, '#state')) === 'idle');
    if (fs.existsSync(ws('gone.txt'))) throw new Error('the command did not delete gone.txt');

    await runCommand(page, 'Agent: Show Changes');
    await until('both files listed', async () => (await changeRow(page, 'gone.txt').count()) === 1 && (await changeRow(page, 'big.log').count()) === 1, 15000);
    const gone = await changeRow(page, 'gone.txt').innerText();
    const big = await changeRow(page, 'big.log').innerText();
    if (!gone.includes('deleted') || !big.includes('not revertible')) throw new Error(`rows do not say what changed: ${JSON.stringify([gone, big])}`);
    await changeRow(page, 'big.log').hover();
    if (await changeRow(page, 'big.log').locator('.action-label[aria-label="Revert This File"]').count() !== 0) throw new Error('a file that cannot be reverted offers Revert This File');

    await changeRow(page, 'gone.txt').click();
    await page.locator('.tab.active', { hasText: 'before the run' }).waitFor({ timeout: 10000 });
    const side = (which) => page.locator(`.editor-group-container.active .monaco-diff-editor .editor.${which} .view-lines`).first();
    await until('the deleted content on the before side', async () => (await side('original').innerText()).replace(/\u00a0/g, ' ').includes('to be deleted'), 10000);
    await page.keyboard.press('Control+W');

    await runCommand(page, 'Agent: Revert This Run');
    await until('gone.txt back', () => fs.existsSync(ws('gone.txt')) && fs.readFileSync(ws('gone.txt'), 'utf8') === 'to be deleted\n', 15000);
    await toast(page, 'Skipped big.log').first().waitFor({ timeout: 10000 });
  });

  testCase('Restore to Here on a user message reverts the later runs and rewinds the conversation; Fork from Here', async ({ page, ctx }) => {
    const f = ctx.frame;
    await newSession(page, f);
    await send(f, 'Write step.txt');
    await allow(f, 1);
    await until('step one', async () => (await text(f, '.msg.assistant .md')).includes('Wrote step one.'), 30000);
    await until('run settled', async () => (await text(f, '#state')) === 'idle');
    await send(f, 'Now step two');
    await allow(f, 1);
    await until('step two', async () => (await text(f, '.msg.assistant .md')).includes('Wrote step two.'), 30000);
    await until('run settled', async () => (await text(f, '#state')) === 'idle');
    await until('step 2 on disk', () => fs.existsSync(ws('step.txt')) && fs.readFileSync(ws('step.txt'), 'utf8').includes('step 2'), 10000);

    const second = f.locator('.msg.user', { has: f.locator('.bubble', { hasText: 'Now step two' }) });
    await second.hover();
    await second.locator('button[data-action="restore"]').click();
    await pick(page, 'Restore to here', 'Restore Files and Conversation');
    await until('step.txt back at step 1', () => fs.readFileSync(ws('step.txt'), 'utf8') === 'step 1\n', 15000)
      .catch(() => { throw new Error(`step.txt after the restore: ${JSON.stringify(fs.readFileSync(ws('step.txt'), 'utf8'))}`); });
    await until('the conversation before that message', async () => (await f.locator('.msg.user .bubble', { hasText: 'Now step two' }).count()) === 0
      && (await f.locator('.msg.user .bubble', { hasText: 'Write step.txt' }).count()) === 1, 15000);
    if (!(await text(f, '.msg.assistant .md')).includes('Wrote step one.')) throw new Error('the rewound conversation lost its first answer');
    await until('the message back in the input', async () => (await f.locator('#input').inputValue()) === 'Now step two', 5000);

    // In the fork (its messages' ids come from agent/getMessages): restore the files only, to
    // before the first message. The file that run created goes; the conversation stays.
    await f.locator('#input').fill('');
    const first = f.locator('.msg.user', { has: f.locator('.bubble', { hasText: 'Write step.txt' }) });
    await first.hover();
    await first.locator('button[data-action="restore"]').click();
    await pick(page, 'Restore to here', 'Restore Files');
    await until('step.txt removed', () => !fs.existsSync(ws('step.txt')), 15000);
    if (await f.locator('.msg.user .bubble', { hasText: 'Write step.txt' }).count() !== 1) throw new Error('restoring only the files changed the conversation');

    // Fork from the first message: a new session with nothing before it, the text to send again.
    await first.hover();
    await first.locator('button[data-action="fork"]').click();
    await until('the fork: an empty chat', async () => (await f.locator('.msg').count()) === 0, 15000);
    await until('the forked message in the input', async () => (await f.locator('#input').inputValue()) === 'Write step.txt', 5000);
    await f.locator('#input').fill('');
  });

  testCase('Rename Session; Switch Session shows titles and last activity; a resumed session looks as it did live', async ({ page, ctx }) => {
    const f = ctx.frame;
    await newSession(page, f);
    await send(f, 'Count to five slowly');
    await until('streaming text', async () => (await text(f, '.msg.assistant.streaming .md')).length > 10, 30000, 50);
    await f.locator('#input').press('Escape');
    await until('run settled', async () => (await text(f, '#state')) === 'idle', 15000);
    const liveNotices = await f.locator('.notice', { hasText: 'Run aborted.' }).count();
    if (liveNotices !== 1) throw new Error(`the aborted run is marked ${liveNotices} times live`);

    await runCommand(page, 'Agent: Rename Session');
    const box = page.locator('.quick-input-widget input');
    await box.waitFor({ timeout: 10000 });
    await until('the current title in the box', async () => (await box.inputValue()) === 'Count to five slowly', 5000);
    await box.fill('Counting session');
    await box.press('Enter');
    await page.locator('.quick-input-widget').waitFor({ state: 'hidden', timeout: 10000 });
    await newSession(page, f);

    await runCommand(page, 'Agent: Switch Session');
    const pickerTitle = page.locator('.quick-input-widget .quick-input-title', { hasText: 'Switch agent session' });
    await pickerTitle.waitFor({ timeout: 10000 });
    const rows = page.locator('.quick-input-list .monaco-list-row');
    await until('the sessions', async () => (await rows.count()) >= 3, 10000);
    const labels = (await rows.allInnerTexts()).map((t) => t.replace(/\s+/g, ' ').trim());
    log('session picker:', JSON.stringify(labels));
    if (labels.some((l) => /\b[0-9a-f]{8}-[0-9a-f]{4}-/.test(l))) throw new Error(`the picker shows session ids: ${JSON.stringify(labels)}`);
    const counting = labels.find((l) => l.includes('Counting session'));
    if (!counting || !/just now|minute/.test(counting)) throw new Error(`the renamed session lacks its name or last activity: ${counting}`);
    if (!labels.some((l) => l.includes('Change review.txt and create made.txt'))) throw new Error('an unnamed session is not titled by its first prompt');
    const shownCount = Number((/(\d+) messages?/.exec(counting) ?? [])[1]);
    await pick(page, 'Switch agent session', 'Counting session');
    await until('the resumed transcript', async () => (await f.locator('.msg.user .bubble', { hasText: 'Count to five slowly' }).count()) === 1, 15000);
    const notices = await f.locator('.notice', { hasText: 'Run aborted.' }).count();
    if (notices !== 1) throw new Error(`the resumed aborted run is marked ${notices} times, not once`);
    // The picker's count is the daemon's agent/getState count (the language client's trace).
    const states = readTraces().split("Received response 'agent/getState").slice(1).map((c) => (/"messageCount": (\d+)/.exec(c) ?? [])[1]).filter(Boolean);
    const stateCount = Number(states[states.length - 1]);
    if (!(shownCount > 0) || shownCount !== stateCount) throw new Error(`the picker says ${shownCount} messages, agent/getState ${stateCount}`);

    // The first session of this file, resumed from the Explorer: the chat opens, showing its
    // tool lines with their paths and results.
    await runCommand(page, 'View: Show Explorer');
    await until('the Explorer shown', async () => /explorer/i.test(await page.locator('.part.sidebar .title-label').first().innerText()), 10000);
    await runCommand(page, 'Agent: Switch Session');
    await pick(page, 'Switch agent session', 'Change review.txt and create made.txt');
    await until('the review session', async () => (await f.locator('.msg.user .bubble', { hasText: 'Change review.txt' }).count()) === 1, 15000);
    await until('the chat shown again', async () => /agent/i.test(await page.locator('.part.sidebar .title-label').first().innerText()), 10000);
    const targets = (await f.locator('.tool.status-done .tool-target').allInnerTexts()).map((t) => t.trim());
    if (!targets.includes('review.txt') || !targets.includes('made.txt')) throw new Error(`the resumed tool lines lost their paths: ${targets.join(', ')}`);
    if (await f.locator('.tool.status-done button[data-action="openDiff"]').count() < 2) throw new Error('the resumed edits offer no diff');
    const out = await f.locator('.tool', { hasText: 'made.txt' }).locator('pre.output').first().textContent();
    if (!out || out.trim() === '') throw new Error('the resumed tool line lost its result');

    // The first session of the run (driver.js): aborted once while streaming, once while an
    // approval was pending. Resumed, each run is marked once.
    await runCommand(page, 'Agent: Switch Session');
    await pick(page, 'Switch agent session', 'Say hello');
    await until('the first session', async () => (await f.locator('.msg.user .bubble', { hasText: 'Build the project' }).count()) === 1, 15000);
    const marks = await f.locator('.notice', { hasText: 'Run aborted.' }).count();
    if (marks !== 2) throw new Error(`two aborted runs are marked ${marks} times`);
  });
};
