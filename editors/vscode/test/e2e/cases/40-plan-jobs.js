//! Issue 34 in the real editor: the model's plan (`todo_write`, protocol.md §3.18) as the
//! checklist above the chat, updated by `plan_update`, gone in a new session and back from
//! `agent/getState.plan` when the session is shown again, resumed after a daemon restart, or
//! the view reloads; a background job (`bash {background: true}`) in the Jobs section, running
//! with its output, stopped with its Stop button, listed by "Agent: Show Jobs". The mock answers
//! with 40-plan-jobs.json's responses, in order.
'use strict';

exports.register = ({ testCase, until, runCommand, chatFrame, text, send, fs, path, artifacts }) => {
  const settled = (f) => until('run settled', async () => (await text(f, '#state')) === 'idle', 30000);
  const requests = () => fs.readFileSync(process.env.MOCK_LOG, 'utf8').trim().split('\n').map((l) => JSON.parse(l));

  /** The checklist as the user reads it: the count and one "mark text" line per item. */
  async function plan(f) {
    if (await f.locator('#plan').isHidden()) return undefined;
    const count = (await f.locator('#plan .plan-count').innerText()).trim();
    const items = await f.locator('#plan li.todo').evaluateAll((lis) => lis.map((li) => `${li.className.replace('todo status-', '')} ${li.innerText.replace(/\s+/g, ' ').trim()}`));
    return { count, items };
  }
  const planIs = (f, count, items) => until(`the plan ${count}`, async () => {
    const p = await plan(f);
    return p && p.count === count && JSON.stringify(p.items) === JSON.stringify(items) ? p : undefined;
  }, 15000);
  const noPlan = (f) => until('no plan shown', async () => f.locator('#plan').isHidden(), 15000);

  const FIRST = ['in_progress ▸ Read the parser', 'pending ○ Fix the off-by-one', 'pending ○ Run the tests'];
  const SECOND = ['completed ✓ Read the parser', 'in_progress ▸ Fix the off-by-one', 'pending ○ Run the tests'];

  async function newSession(page, f) {
    await runCommand(page, 'Notifications: Clear All Notifications');
    await runCommand(page, 'Agent: New Session');
    await until('an empty chat', async () => (await f.locator('#empty').isVisible()) && (await f.locator('.msg').count()) === 0, 10000);
  }

  /** Switch Session to the session titled `title` (typed, so the row is the only one left). */
  async function switchTo(page, title) {
    await runCommand(page, 'Agent: Switch Session');
    await page.locator('.quick-input-widget .quick-input-title', { hasText: 'Switch agent session' }).waitFor({ timeout: 10000 });
    const input = page.locator('.quick-input-widget input');
    await input.fill(title);
    await until(`"${title}" first`, async () => {
      const names = await page.locator('.quick-input-list .monaco-list-row .label-name').allInnerTexts();
      return names.length >= 1 && names[0].trim() === title;
    }, 10000);
    await input.press('Enter');
  }

  testCase('the plan shows as a checklist above the chat and follows each todo_write', async ({ page, ctx }) => {
    const f = ctx.frame;
    await newSession(page, f);
    await noPlan(f);
    await send(f, 'Plan the parser fix');
    await until('the answer', async () => (await text(f, '.msg.assistant .md')).includes('Planned three steps.'), 30000);
    await settled(f);
    await planIs(f, '0/3', FIRST);
    // todo_write changes nothing on disk: no approval was asked, and its card says what it did.
    if (!(await text(f, '.tool-target')).includes('0/3 done')) throw new Error(`the todo_write card: ${await text(f, '.tool')}`);
    await send(f, 'Go on');
    await until('the answer', async () => (await text(f, '.msg.assistant .md')).includes('fixing the off-by-one next'), 30000);
    await settled(f);
    await planIs(f, '1/3', SECOND);
    await page.screenshot({ path: path.join(artifacts, '40-plan.png') });
    // The model read the checklist back as the tool's result.
    const answered = requests().filter((r) => JSON.stringify(r.body).includes('call_plan2'));
    const result = JSON.stringify(answered.pop()?.body.messages.find((m) => m.role === 'tool' && m.tool_call_id === 'call_plan2'));
    if (!result.includes('Plan updated (1/3 done)')) throw new Error(`the model did not get the plan back: ${result}`);
    // Folding it keeps it folded through the next render; unfolding shows the items again.
    await f.locator('#plan summary').click();
    await until('the plan folded', async () => !(await f.locator('#plan li.todo').first().isVisible()), 5000);
    await f.locator('#plan summary').click();
    await until('the plan unfolded', async () => f.locator('#plan li.todo').first().isVisible(), 5000);
  });

  testCase('a new session has no plan; switching back, resuming after a restart and reloading the view restore it', async ({ page, ctx }) => {
    let f = ctx.frame;
    await newSession(page, f);
    await noPlan(f);
    await switchTo(page, 'Plan the parser fix');
    await until('the planned session back', async () => (await text(f, '.msg.user .bubble')).includes('Go on'), 15000);
    await planIs(f, '1/3', SECOND);
    // A restarted daemon has no session open: the plan comes back from the session file.
    await runCommand(page, 'Agent: Restart Daemon');
    await until('an empty chat', async () => (await f.locator('.msg').count()) === 0 && (await text(f, '#state')) === 'idle', 30000);
    await noPlan(f);
    await switchTo(page, 'Plan the parser fix');
    await until('the resumed session', async () => (await text(f, '.msg.user .bubble')).includes('Go on'), 15000);
    await planIs(f, '1/3', SECOND);
    // A reloaded view gets the host's state and the daemon's plan again.
    await runCommand(page, 'Developer: Reload Webviews');
    await until('the old chat view gone', async () => f.isDetached(), 20000);
    f = ctx.frame = await chatFrame(page);
    await until('the transcript back', async () => (await text(f, '.msg.user .bubble')).includes('Go on'), 20000);
    await planIs(f, '1/3', SECOND);
  });

  /** The job whose command has `words`, as the Jobs section shows it. */
  const jobRow = (f, words) => f.locator('#jobs .job', { hasText: words });
  const ticks = async (job) => ((await job.locator('pre.output').innerText().catch(() => '')).match(/^tick$/gm) ?? []).length;

  testCase('a background job runs in the Jobs section with its output; Stop kills it; Agent: Show Jobs lists it', async ({ page, ctx }) => {
    const f = ctx.frame;
    await newSession(page, f);
    if (!(await f.locator('#jobs').isHidden())) throw new Error('a new session shows jobs');
    await send(f, 'Start the ticker');
    const card = f.locator('.approval');
    await card.waitFor({ timeout: 30000 });
    if (!(await card.innerText()).includes('echo tick')) throw new Error(`the approval is not for the ticker: ${await card.innerText()}`);
    await card.locator('button[data-decision="allow"]').click();
    await until('the answer', async () => (await text(f, '.msg.assistant .md')).includes('The ticker runs in the background.'), 30000);
    await settled(f);
    const job = jobRow(f, 'echo tick');
    await until('the job running', async () => (await job.locator('.badge').innerText()) === 'running', 15000);
    if (!(await text(f, '#jobs .jobs-count')).includes('1 running')) throw new Error(`the section's count: ${await text(f, '#jobs')}`);
    // Unfolded, its output is read (agent/jobOutput) and read again while it runs.
    await job.locator('summary').click();
    await until('ticks in its output', async () => (await ticks(job)) >= 2, 15000);
    const seen = await ticks(job);
    await until('more ticks while it runs', async () => (await ticks(job)) > seen, 15000);
    await page.screenshot({ path: path.join(artifacts, '41-job-running.png') });
    // Folded, its output is not shown; Agent: Show Jobs lists it, running, and choosing it opens
    // its output in the chat again.
    await job.locator('summary').click();
    await until('the job folded', async () => (await job.locator('pre.output').count()) === 0, 5000);
    await runCommand(page, 'Agent: Show Jobs');
    await page.locator('.quick-input-widget .quick-input-title', { hasText: 'Background jobs of this session' }).waitFor({ timeout: 10000 });
    const row = page.locator('.quick-input-list .monaco-list-row', { hasText: 'echo tick' }).first();
    await row.waitFor({ timeout: 10000 });
    if (!(await row.innerText()).includes('running')) throw new Error(`the Show Jobs row: ${await row.innerText()}`);
    await row.click();
    await until('its output open again', async () => (await ticks(job)) >= 2, 15000);
    // Stop: agent/killJob, and the job shows killed, without a stop button, its output kept.
    await job.locator('button[data-action="killJob"]').click();
    await until('the job killed', async () => (await job.locator('.badge').innerText()) === 'killed', 15000);
    if (await job.locator('button[data-action="killJob"]').count() !== 0) throw new Error('a killed job still has a stop button');
    if ((await ticks(job)) < 2) throw new Error('the killed job lost its output');
    if (!(await text(f, '#jobs .jobs-count')).includes('1 ended')) throw new Error(`the section's count: ${await text(f, '#jobs')}`);
    await page.screenshot({ path: path.join(artifacts, '42-job-killed.png') });
    // The model was told the job started (the bash result), in the request after the call.
    const after = requests().filter((r) => JSON.stringify(r.body).includes('call_job')).pop();
    const result = JSON.stringify(after?.body.messages.find((m) => m.role === 'tool' && m.tool_call_id === 'call_job'));
    if (!/job/i.test(result ?? '')) throw new Error(`the model did not get the job's start: ${result}`);
  });
};
