//! Item rendering: model text is escaped, tool cards carry status, approvals carry their buttons.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { initialState, reduce } from '../../src/shared/chatState';
import { UNSAVED_WARNING, alwaysLabel, localWarning, renderItem, siteOf, toolTarget } from '../../src/shared/render';

test('approval cards show the diff and the four decisions; model text is escaped', () => {
  let s = initialState('s1');
  s = reduce(s, { type: 'approvalRequest', requestId: 'approval-1', params: {
    sessionId: 's1', runId: 'r', toolCallId: 'c1', toolName: 'edit', kind: 'edit', title: 'Edit <a.txt>',
    args: { path: 'a.txt', edits: [] }, preview: { type: 'diff', path: '/w/a.txt', diff: '@@ -1 +1 @@\n-<old>\n+new\n' } } });
  const html = renderItem(s, s.items[0], new Set());
  for (const d of ['allow', 'allowAlways', 'block']) assert.ok(html.includes(`data-decision="${d}"`), d);
  assert.ok(html.includes('Reject with reason'));
  assert.ok(html.includes('<span class="del">-&lt;old&gt;</span>'));
  assert.ok(html.includes('Edit &lt;a.txt&gt;'));
  assert.ok(!html.includes('<old>'));
  assert.ok(html.includes('status-approval'));
});

test('an approval that saves the user\'s unsaved changes says so; others do not', () => {
  const card = (savesUnsavedChanges?: boolean) => {
    let s = initialState('s1');
    s = reduce(s, { type: 'approvalRequest', requestId: 'approval-1', params: {
      sessionId: 's1', runId: 'r', toolCallId: 'c1', toolName: 'edit', kind: 'edit', title: 'Edit a.txt',
      args: { path: 'a.txt', edits: [] }, preview: { type: 'diff', path: '/w/a.txt', diff: '@@ -1 +1 @@\n-a\n+b\n' },
      savesUnsavedChanges } });
    return renderItem(s, s.items[0], new Set());
  };
  assert.ok(card(true).includes(UNSAVED_WARNING));
  assert.ok(!card(undefined).includes(UNSAVED_WARNING));
  assert.ok(!card(false).includes(UNSAVED_WARNING));
});

test('a command\'s approval says how it runs: sandboxed, unsandboxed, or asking to leave the sandbox', () => {
  const card = (sandbox?: Record<string, unknown>) => {
    let s = initialState('s1');
    s = reduce(s, { type: 'approvalRequest', requestId: 'approval-1', params: {
      sessionId: 's1', runId: 'r', toolCallId: 'c1', toolName: 'bash', kind: 'execute', title: 'Run ls',
      args: { command: 'ls' }, preview: { type: 'command', command: 'ls', cwd: '/w' },
      sandbox: sandbox as never } });
    return renderItem(s, s.items[0], new Set());
  };
  assert.ok(card({ sandboxed: true, mode: 'workspaceWrite', network: false }).includes('Sandboxed: writes only inside the workspace (not its protected paths, such as .git) and its temporary directory; no network.'));
  assert.ok(card({ sandboxed: true, mode: 'workspaceWrite', network: true }).includes('; full network.'));
  assert.ok(card({ sandboxed: true, mode: 'readOnly', network: false }).includes('Sandboxed: writes nowhere but its temporary directory; no network.'));
  assert.ok(card({ sandboxed: false, mode: 'off', network: true }).includes('Runs with your full rights (no sandbox).'));
  assert.ok(card({ sandboxed: false, mode: 'workspaceWrite', network: false, justification: 'needs <npm>' }).includes('Runs outside the sandbox, with your full rights. The agent says: needs &lt;npm&gt;'));
  assert.ok(card({ sandboxed: false, mode: 'off', network: true, unavailable: 'Landlock ABI 4 is missing' }).includes('The sandbox is unavailable (Landlock ABI 4 is missing): runs with your full rights.'));
  assert.ok(!card(undefined).includes('approval-sandbox'));
});

test('a sandboxed command\'s approval names its network allowlist and everything not isolated here', () => {
  const card = (sandbox: Record<string, unknown>) => {
    let s = initialState('s1');
    s = reduce(s, { type: 'approvalRequest', requestId: 'approval-1', params: {
      sessionId: 's1', runId: 'r', toolCallId: 'c1', toolName: 'bash', kind: 'execute', title: 'Run cargo fetch',
      args: { command: 'cargo fetch' }, preview: { type: 'command', command: 'cargo fetch', cwd: '/w' }, sandbox: sandbox as never } });
    return renderItem(s, s.items[0], new Set());
  };
  const allowlist = card({ sandboxed: true, mode: 'workspaceWrite', network: false, allowedDomains: ['crates.io', '*.npmjs.org'],
    layers: ['Landlock ABI 7', 'user/mount/pid/ipc namespaces', 'seccomp', 'allowlist proxy'] });
  assert.ok(allowlist.includes('; network only to crates.io, *.npmjs.org.'), allowlist);
  assert.ok(allowlist.includes('<div class="approval-sandbox layers">Layers: Landlock ABI 7, user/mount/pid/ipc namespaces, seccomp, allowlist proxy.</div>'), allowlist);
  assert.ok(!allowlist.includes('Not isolated here'), 'nothing to list on a machine with every layer');
  assert.ok(card({ sandboxed: true, mode: 'workspaceWrite', network: false, allowedDomains: [] }).includes('; no network (the allowlist names no host).'));
  const gaps = card({ sandboxed: true, mode: 'workspaceWrite', network: false, allowedDomains: ['crates.io'], notIsolated: [
    'System V IPC of your other processes: no IPC namespace', 'the shared /tmp <and> more'] });
  assert.ok(gaps.includes('<div class="approval-sandbox gaps">Not isolated here:<ul><li>System V IPC of your other processes: no IPC namespace</li><li>the shared /tmp &lt;and&gt; more</li></ul></div>'), gaps);
  assert.ok(gaps.includes('network only to crates.io'), gaps);
  // A command that runs unsandboxed has no sandbox to fall short, and no layers.
  const outside = card({ sandboxed: false, mode: 'off', network: true, notIsolated: ['x'], layers: ['seccomp'] });
  assert.ok(!outside.includes('Not isolated here') && !outside.includes('Layers:'), outside);
});

test('tool targets name the path, command or pattern', () => {
  const t = (args: Record<string, unknown>) => toolTarget({ id: 'x', name: 'n', args, argsText: '', status: 'done', output: '' });
  assert.equal(t({ path: 'a.rs' }), 'a.rs');
  assert.equal(t({ command: 'cargo test' }), 'cargo test');
  assert.equal(t({ pattern: 'TODO' }), 'TODO');
  assert.equal(t({}), '');
});

test('a user message with a known messageId offers Restore to here and Fork from here; one without does not', () => {
  const s = reduce(initialState(), { type: 'hydrate', sessionId: 's1', messages: [
    { role: 'user', content: 'kept', timestamp: 1 }, { role: 'user', content: 'unknown', timestamp: 1 }], messageIds: ['ab12"x', null] });
  const [known, unknown] = s.items.map((it) => renderItem(s, it, new Set()));
  assert.ok(known.includes('data-action="restore" data-message="ab12&quot;x"'), known);
  assert.ok(known.includes('data-action="fork" data-message="ab12&quot;x"'), known);
  assert.ok(!unknown.includes('data-action="restore"') && !unknown.includes('data-action="fork"'), unknown);
});

test('a web tool\'s approval shows the URL and its host; "Always allow" says for which host', () => {
  let s = initialState('s1');
  s = reduce(s, { type: 'approvalRequest', requestId: 'approval-7', params: {
    sessionId: 's1', runId: 'r', toolCallId: 'call_web', toolName: 'web_fetch', args: { url: 'https://docs.rs/serde?x=<1>' },
    kind: 'network', title: 'Fetch https://docs.rs/serde', preview: { type: 'fetch', url: 'https://docs.rs/serde?x=<1>', host: 'docs.rs' } } });
  assert.equal(s.tools.call_web.approval?.host, 'docs.rs');
  const html = renderItem(s, s.items[0], new Set());
  assert.ok(html.includes('<pre class="fetch"><span class="prompt">fetch</span> https://docs.rs/serde?x=&lt;1&gt;\n<span class="cwd">from docs.rs</span></pre>'), html);
  assert.ok(html.includes('data-decision="allowAlways" data-request="approval-7">Always allow for docs.rs</button>'), html);
  assert.equal(alwaysLabel({}), 'Always allow');
  // The site: a port that is not the scheme's default stays, the default one goes.
  assert.equal(siteOf('http://localhost:8000/x', 'localhost'), 'localhost:8000');
  assert.equal(siteOf('https://Docs.RS:443/serde', 'docs.rs'), 'docs.rs');
  assert.equal(siteOf('not a url', 'docs.rs'), 'docs.rs');
  assert.equal(alwaysLabel({ url: 'http://localhost:8000/', host: 'localhost' }), 'Always allow for localhost:8000');
});

test('a fetch of a local address says so; a web search shows its query', () => {
  let s = initialState('s1');
  s = reduce(s, { type: 'approvalRequest', requestId: 'approval-8', params: {
    sessionId: 's1', runId: 'r', toolCallId: 'call_local', toolName: 'web_fetch', args: { url: 'http://localhost:8000/' },
    kind: 'network', title: 'Fetch http://localhost:8000/', preview: { type: 'fetch', url: 'http://localhost:8000/', host: 'localhost:8000', local: true } } });
  s = reduce(s, { type: 'approvalRequest', requestId: 'approval-9', params: {
    sessionId: 's1', runId: 'r', toolCallId: 'call_search', toolName: 'web_search', args: { query: 'serde <derive>' },
    kind: 'network', title: 'Search the web: serde <derive>' } });
  const local = renderItem(s, s.items[0], new Set());
  assert.ok(local.includes('<div class="approval-warning">localhost:8000 is this machine or a local network: approving lets the agent read from it.</div>'), local);
  assert.ok(local.includes('Always allow for localhost:8000</button>'), local);
  const search = renderItem(s, s.items[1], new Set());
  assert.ok(search.includes('<pre class="fetch"><span class="prompt">search the web for</span> serde &lt;derive&gt;</pre>'), search);
  assert.ok(search.includes('data-request="approval-9">Always allow</button>'), search);
  assert.ok(!search.includes(localWarning('localhost:8000')), search);
});
