//! Pending approvals: answered once, cancelled by the server's $/cancelRequest or by abort.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApprovalRegistry, type Cancellation } from '../../src/approvals';
import type { BeforeToolCallParams } from '../../src/protocol';

const params = (sessionId = 's1', toolCallId = 'c1'): BeforeToolCallParams =>
  ({ sessionId, runId: 'r', toolCallId, toolName: 'bash', args: { command: 'ls' }, kind: 'execute', title: 'Run: ls', preview: { type: 'command', command: 'ls', cwd: '/w' } });

function token(): Cancellation & { cancel(): void } {
  const listeners: (() => void)[] = [];
  const t = { isCancellationRequested: false, onCancellationRequested: (l: () => void) => { listeners.push(l); }, cancel: () => { t.isCancellationRequested = true; listeners.forEach((l) => l()); } };
  return t;
}

function registry() {
  const log: string[] = [];
  const reg = new ApprovalRegistry({
    requested: (id, p) => log.push(`req ${id} ${p.toolCallId}`),
    settled: (id, outcome, reason) => log.push(`done ${id} ${outcome}${reason ? ` ${reason}` : ''}`),
  });
  return { reg, log };
}

test('an answer resolves the request once; a second answer is ignored', async () => {
  const { reg, log } = registry();
  const p = reg.ask(params());
  assert.equal(reg.size, 1);
  assert.equal(reg.answer('approval-1', { decision: 'allowAlways' }), true);
  assert.deepEqual(await p, { decision: 'allowAlways' });
  assert.equal(reg.answer('approval-1', { decision: 'block' }), false);
  assert.deepEqual(log, ['req approval-1 c1', 'done approval-1 allowed']);
});

test('reject with a reason passes the reason through', async () => {
  const { reg, log } = registry();
  const p = reg.ask(params());
  reg.answer('approval-1', { decision: 'block', reason: 'use the test script' });
  assert.deepEqual(await p, { decision: 'block', reason: 'use the test script' });
  assert.equal(log[1], 'done approval-1 blocked use the test script');
});

test('$/cancelRequest settles the card as cancelled and a late click does nothing', async () => {
  const { reg, log } = registry();
  const t = token();
  const p = reg.ask(params(), t);
  t.cancel();
  assert.equal((await p).decision, 'block');
  assert.equal(reg.size, 0);
  assert.equal(reg.answer('approval-1', { decision: 'allow' }), false);
  assert.deepEqual(log, ['req approval-1 c1', 'done approval-1 cancelled']);
});

test('a settled run cancels only its own session\'s approvals', async () => {
  const { reg } = registry();
  const a = reg.ask(params('s1', 'a'));
  reg.ask(params('s2', 'b'));
  reg.cancelSession('s1');
  assert.equal((await a).decision, 'block');
  assert.equal(reg.size, 1);
  assert.equal(reg.get('approval-2')?.toolCallId, 'b');
});
