//! Issue 34, the web tools' approvals (kind `network`): the card shows the URL and its host,
//! "Always allow" says which host it covers, and a local address is named as such. Every call is
//! rejected, so nothing leaves the machine. The mock answers with 42-web.json's responses.
'use strict';

exports.register = ({ testCase, until, text, send, path, artifacts }) => {
  const settled = (f) => until('run settled', async () => (await text(f, '#state')) === 'idle', 30000);

  testCase('a web_fetch approval shows the URL and "Always allow" for its site; a local address says so', async ({ page, ctx }) => {
    const f = ctx.frame;
    await send(f, 'Read the serde docs');
    let card = f.locator('.approval');
    await card.waitFor({ timeout: 30000 });
    let shown = await card.innerText();
    for (const want of ['https://docs.rs/serde', 'from docs.rs']) if (!shown.includes(want)) throw new Error(`the card lacks "${want}": ${shown}`);
    // The "always" buttons name the rule they save: the site.
    if (!(await card.locator('button[data-decision="allowAlways"][data-scope="project"]').innerText()).includes('WebFetch(domain:docs.rs)')) throw new Error(`"Always allow" does not name the host: ${shown}`);
    if (shown.includes('local network')) throw new Error(`docs.rs is called local: ${shown}`);
    await page.screenshot({ path: path.join(artifacts, '44-web-approval.png') });
    await card.locator('button[data-decision="block"]').click();
    await until('the answer', async () => (await text(f, '.msg.assistant .md')).includes('Not fetched, then.'), 30000);
    await settled(f);
    await send(f, 'Check the local status page');
    card = f.locator('.approval');
    await card.waitFor({ timeout: 30000 });
    shown = await card.innerText();
    for (const want of ['http://localhost:9/status', 'localhost:9 is this machine or a local network: approving lets the agent read from it.']) if (!shown.includes(want)) throw new Error(`the card lacks "${want}": ${shown}`);
    await card.locator('button[data-decision="block"]').click();
    await until('the answer', async () => (await text(f, '.msg.assistant .md')).includes('Left it alone.'), 30000);
    await settled(f);
  });
};
