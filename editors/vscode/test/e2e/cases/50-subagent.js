//! Issue 35, subagents and "always" scopes: a `task` call's child agent shows its steps (its tool
//! calls with their status, what it says) folded inside the task card, live; the child's own
//! approval appears in that card and offers "Always allow" for this session, this project or
//! me, each with the rule it saves; the project answer lands in the project's
//! .agent-lsp/settings.local.json. The README's picture of a subagent is taken here. The mock
//! answers with 50-subagent.json's responses, in order (the parent's, then the child's).
'use strict';

exports.register = ({ testCase, until, runCommand, text, send, fs, path, workspace, artifacts, picture }) => {
  testCase('a task call shows its subagent\'s steps folded inside it; the child\'s approval saves a project rule', async ({ page, ctx }) => {
    const f = ctx.frame;
    await runCommand(page, 'Agent: New Session');
    await until('an empty chat', async () => (await f.locator('#empty').isVisible()) && (await f.locator('.msg').count()) === 0, 10000);
    await send(f, 'Count the lines of notes.txt with a subagent');
    const task = f.locator('.tool[data-tool="call_task_1"]');
    // The child's bash call asks: its card is inside the task card, after the child's read.
    const card = task.locator('.approval');
    await card.waitFor({ timeout: 30000 });
    const steps = task.locator('.subagent');
    await until('the child\'s read and words', async () => (await task.locator('.tool[data-tool="call_child_read"].status-done').count()) === 1
      && (await text(f, '.tool[data-tool="call_task_1"] .subagent-text')).includes('I will read the file first.'), 10000);
    if (!(await steps.innerText()).includes('general agent')) throw new Error(`the steps do not name the agent: ${await steps.innerText()}`);
    if (!(await task.locator('.tool-target').first().innerText()).includes('Count the lines of notes.txt')) throw new Error('the task card lacks its description');
    const project = card.locator('button[data-decision="allowAlways"][data-scope="project"]');
    const rule = await project.innerText();
    if (!rule.includes('this project') || !rule.includes('Bash(wc notes.txt:*)')) throw new Error(`the project button: ${rule}`);
    for (const s of ['session', 'user']) if (await card.locator(`button[data-scope="${s}"]`).count() !== 1) throw new Error(`no ${s} button`);
    await page.screenshot({ path: path.join(artifacts, '50-subagent-approval.png') });
    await project.click();
    await until('the answer', async () => (await text(f, '.msg.assistant > .md')).includes('The general agent counted them'), 30000);
    await until('run settled', async () => (await text(f, '#state')) === 'idle', 30000);
    const saved = fs.readFileSync(path.join(workspace, '.agent-lsp', 'settings.local.json'), 'utf8');
    if (!JSON.parse(saved).permissions?.allow?.includes('Bash(wc notes.txt:*)')) throw new Error(`the project's settings: ${saved}`);
    // Done, the task card folds; opened, it shows the child's steps.
    const summary = task.locator(':scope > details > summary');
    if (await task.locator(':scope > details[open]').count() === 0) await summary.click();
    await until('the steps shown', async () => (await steps.isVisible()) && (await task.locator('.tool[data-tool="call_child_wc"].status-done').count()) === 1, 10000);
    const shown = await steps.innerText();
    for (const want of ['I will read the file first.', 'notes.txt has 3 lines.', 'wc notes.txt', '2 tool calls']) if (!shown.includes(want)) throw new Error(`the steps lack "${want}": ${shown}`);
    await picture(page, 'subagent', ['.part.sidebar']);
  });
};
