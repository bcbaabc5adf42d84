//! The chat reducer folds pi's event stream (as the daemon sends it) into the transcript.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AgentEvent, AgentEventParams, AssistantMessage, BeforeToolCallParams } from '../../src/protocol';
import { type ChatState, initialState, pendingApprovals, reduce } from '../../src/shared/chatState';

const usage = (input: number, output: number, total = 0) => ({ input, output, cacheRead: 0, cacheWrite: 0, totalTokens: input + output, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total } });
const assistant = (content: AssistantMessage['content'], stopReason: AssistantMessage['stopReason'] = 'stop', extra: Partial<AssistantMessage> = {}): AssistantMessage =>
  ({ role: 'assistant', content, api: 'openai-completions', provider: 'mock', model: 'mock-model', usage: usage(10, 5, 0.002), stopReason, timestamp: 1, ...extra });

function feed(events: AgentEvent[], state: ChatState = initialState(), sessionId = 's1', from = 1): ChatState {
  events.forEach((event, i) => { state = reduce(state, { type: 'event', params: { sessionId, runId: 'r1', seq: from + i, event } as AgentEventParams }); });
  return state;
}

const readRun: AgentEvent[] = [
  { type: 'agent_start' },
  { type: 'turn_start' },
  { type: 'message_start', message: { role: 'user', content: [{ type: 'text', text: 'read notes.txt' }], timestamp: 1 } },
  { type: 'message_end', message: { role: 'user', content: [{ type: 'text', text: 'read notes.txt' }], timestamp: 1 } },
  { type: 'message_start', message: assistant([], 'pending') },
  { type: 'message_update', assistantMessageEvent: { type: 'text_start', contentIndex: 0 } },
  { type: 'message_update', assistantMessageEvent: { type: 'text_delta', contentIndex: 0, delta: 'Read' } },
  { type: 'message_update', assistantMessageEvent: { type: 'text_delta', contentIndex: 0, delta: 'ing.' } },
  { type: 'message_update', assistantMessageEvent: { type: 'toolcall_start', contentIndex: 1, id: 'call_1', toolName: 'read' } },
  { type: 'message_update', assistantMessageEvent: { type: 'toolcall_delta', contentIndex: 1, delta: '{"path":' } },
  { type: 'message_update', assistantMessageEvent: { type: 'toolcall_delta', contentIndex: 1, delta: ' "notes.txt"}' } },
];

test('streams text deltas and tool-call argument deltas into the current assistant message', () => {
  const s = feed(readRun);
  assert.equal(s.running, true);
  assert.equal(s.sessionId, 's1');
  assert.deepEqual(s.items.map((i) => i.kind), ['user', 'assistant']);
  const a = s.items[1];
  assert.ok(a.kind === 'assistant' && a.streaming);
  assert.deepEqual(a.blocks[0], { type: 'text', text: 'Reading.' });
  assert.deepEqual(a.blocks[1], { type: 'tool', toolCallId: 'call_1' });
  assert.equal(s.tools.call_1.argsText, '{"path": "notes.txt"}');
  assert.equal(s.tools.call_1.status, 'streaming');
});

test('a full run: tool status, result, usage totals, context size and settle', () => {
  let s = feed(readRun);
  s = feed([
    { type: 'message_end', message: assistant([{ type: 'text', text: 'Reading.' }, { type: 'toolCall', id: 'call_1', name: 'read', arguments: { path: 'notes.txt' } }], 'toolUse') },
    { type: 'tool_execution_start', toolCallId: 'call_1', toolName: 'read', args: { path: 'notes.txt' } },
    { type: 'tool_execution_update', toolCallId: 'call_1', toolName: 'read', args: { path: 'notes.txt' }, partialResult: { content: [{ type: 'text', text: 'alp' }] } },
    { type: 'tool_execution_end', toolCallId: 'call_1', toolName: 'read', result: { content: [{ type: 'text', text: 'alpha\nbeta\n' }] }, isError: false, durationMs: 4 },
    { type: 'turn_start' },
    { type: 'message_start', message: assistant([], 'pending') },
    { type: 'message_update', assistantMessageEvent: { type: 'text_delta', contentIndex: 0, delta: 'It says **alpha**.' } },
    { type: 'message_end', message: assistant([{ type: 'text', text: 'It says **alpha**.' }]) },
    { type: 'agent_end', messages: [] },
    { type: 'agent_settled', aborted: false },
  ], s, 's1', readRun.length + 1);
  assert.equal(s.running, false);
  assert.equal(s.tools.call_1.status, 'done');
  assert.equal(s.tools.call_1.output, 'alpha\nbeta\n');
  assert.equal(s.tools.call_1.durationMs, 4);
  assert.equal(s.tools.call_1.args.path, 'notes.txt');
  assert.deepEqual(s.items.map((i) => i.kind), ['user', 'assistant', 'assistant']);
  const last = s.items[2];
  assert.ok(last.kind === 'assistant' && !last.streaming);
  assert.deepEqual(last.blocks, [{ type: 'text', text: 'It says **alpha**.' }]);
  assert.equal(s.totals.input, 20);
  assert.equal(s.totals.output, 10);
  assert.ok(Math.abs(s.totals.cost - 0.004) < 1e-12);
  assert.equal(s.contextTokens, 15);
  assert.equal(s.model, 'mock-model');
});

test('events of other sessions and replayed seqs are ignored', () => {
  let s = feed(readRun.slice(0, 3));
  s = feed([{ type: 'message_start', message: { role: 'user', content: 'other', timestamp: 1 } }], s, 's2', 10);
  s = feed([{ type: 'message_start', message: { role: 'user', content: 'dup', timestamp: 1 } }], s, 's1', 2);
  assert.deepEqual(s.items.map((i) => (i.kind === 'user' ? i.text : i.kind)), ['read notes.txt']);
  assert.equal(s.lastSeq, 3);
});

test('thinking streams open and closes when done', () => {
  const s = feed([
    { type: 'agent_start' },
    { type: 'message_start', message: assistant([], 'pending') },
    { type: 'message_update', assistantMessageEvent: { type: 'thinking_start', contentIndex: 0 } },
    { type: 'message_update', assistantMessageEvent: { type: 'thinking_delta', contentIndex: 0, delta: 'hmm' } },
  ]);
  const a = s.items[0];
  assert.ok(a.kind === 'assistant');
  assert.deepEqual(a.blocks[0], { type: 'thinking', text: 'hmm', done: false });
  const s2 = feed([{ type: 'message_update', assistantMessageEvent: { type: 'thinking_end', contentIndex: 0, content: 'hmm.' } }], s, 's1', 5);
  const a2 = s2.items[0];
  assert.ok(a2.kind === 'assistant');
  assert.deepEqual(a2.blocks[0], { type: 'thinking', text: 'hmm.', done: true });
});

test('queue_update replaces both queues', () => {
  const s = feed([{ type: 'queue_update', steering: [{ messageId: 'm1', text: 'only unit tests' }], followUp: [{ messageId: 'm2', text: 'then commit' }] }]);
  assert.deepEqual(s.queue, { steering: [{ id: 'm1', text: 'only unit tests' }], followUp: [{ id: 'm2', text: 'then commit' }] });
});

const approvalParams: BeforeToolCallParams = {
  sessionId: 's1', runId: 'r1', toolCallId: 'call_2', toolName: 'edit', kind: 'edit', title: 'Edit a.txt',
  args: { path: 'a.txt', edits: [{ oldText: 'a', newText: 'b' }] },
  preview: { type: 'diff', path: '/w/a.txt', diff: '--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+b\n' },
};

test('approval requests attach to their tool and resolve to running or blocked', () => {
  let s = feed([{ type: 'agent_start' }, { type: 'message_start', message: assistant([], 'pending') },
    { type: 'message_update', assistantMessageEvent: { type: 'toolcall_end', contentIndex: 0, toolCall: { type: 'toolCall', id: 'call_2', name: 'edit', arguments: approvalParams.args } } }]);
  s = reduce(s, { type: 'approvalRequest', requestId: 'approval-1', params: approvalParams });
  assert.equal(s.tools.call_2.status, 'approval');
  assert.equal(s.tools.call_2.approval?.diff, approvalParams.preview?.type === 'diff' ? approvalParams.preview.diff : '');
  assert.equal(pendingApprovals(s).length, 1);
  s = reduce(s, { type: 'approvalDone', requestId: 'approval-1', outcome: 'blocked', reason: 'not now' });
  assert.equal(s.tools.call_2.status, 'blocked');
  assert.equal(s.tools.call_2.blockedReason, 'not now');
  assert.equal(pendingApprovals(s).length, 0);
});

test('an approval with no rendered tool call still shows up, and abort clears it', () => {
  let s = feed([{ type: 'agent_start' }]);
  s = reduce(s, { type: 'approvalRequest', requestId: 'approval-9', params: { ...approvalParams, toolName: 'bash', kind: 'execute', args: { command: 'rm -rf build' }, preview: { type: 'command', command: 'rm -rf build', cwd: '/w' } } });
  assert.equal(s.items.length, 1);
  assert.equal(s.tools.call_2.approval?.command, 'rm -rf build');
  s = reduce(s, { type: 'approvalDone', requestId: 'approval-9', outcome: 'cancelled' });
  s = feed([{ type: 'tool_execution_end', toolCallId: 'call_2', toolName: 'bash', result: { content: [{ type: 'text', text: 'Operation aborted' }] }, isError: true },
    { type: 'message_start', message: { role: 'toolResult', toolCallId: 'call_2', toolName: 'bash', content: [{ type: 'text', text: 'Operation aborted' }], isError: true, timestamp: 1 } },
    { type: 'message_end', message: { role: 'toolResult', toolCallId: 'call_2', toolName: 'bash', content: [{ type: 'text', text: 'Operation aborted' }], isError: true, timestamp: 1 } },
    { type: 'agent_end', messages: [] }, { type: 'agent_settled', aborted: true }], s, 's1', 2);
  assert.equal(s.tools.call_2.status, 'aborted');
  assert.equal(s.tools.call_2.approval, undefined);
  assert.equal(s.running, false);
  const last = s.items[s.items.length - 1];
  assert.ok(last.kind === 'notice' && /aborted/i.test(last.text));
});

test('edit tools that succeed offer a diff; failed ones do not', () => {
  const s = feed([
    { type: 'agent_start' },
    { type: 'tool_execution_start', toolCallId: 'e1', toolName: 'edit', args: { path: 'a.txt', edits: [] } },
    { type: 'tool_execution_end', toolCallId: 'e1', toolName: 'edit', result: { content: [{ type: 'text', text: 'ok' }] }, isError: false },
    { type: 'tool_execution_start', toolCallId: 'e2', toolName: 'write', args: { path: 'b.txt', content: 'x' } },
    { type: 'tool_execution_end', toolCallId: 'e2', toolName: 'write', result: { content: [{ type: 'text', text: 'denied' }] }, isError: true },
  ]);
  assert.equal(s.tools.e1.editPath, 'a.txt');
  assert.equal(s.tools.e2.editPath, undefined);
  assert.equal(s.tools.e2.status, 'error');
});

test('a tool that ends while its approval is open was cancelled', () => {
  let s = feed([{ type: 'agent_start' }]);
  s = reduce(s, { type: 'approvalRequest', requestId: 'approval-1', params: approvalParams });
  s = feed([{ type: 'tool_execution_end', toolCallId: 'call_2', toolName: 'edit', result: { content: [{ type: 'text', text: 'Operation aborted' }] }, isError: true }], s, 's1', 2);
  assert.equal(s.tools.call_2.status, 'aborted');
  assert.equal(pendingApprovals(s).length, 0);
  s = reduce(s, { type: 'approvalDone', requestId: 'approval-1', outcome: 'cancelled' });
  assert.equal(s.tools.call_2.status, 'aborted');
});

test('model errors are shown on the message', () => {
  const s = feed([{ type: 'agent_start' }, { type: 'message_start', message: assistant([], 'pending') },
    { type: 'message_end', message: assistant([], 'error', { errorMessage: '401 Unauthorized' }) }]);
  const a = s.items[0];
  assert.ok(a.kind === 'assistant' && a.error === '401 Unauthorized');
});

test('hydrate rebuilds a session from agent/getMessages', () => {
  const s = reduce(initialState(), { type: 'hydrate', sessionId: 's9', messages: [
    { role: 'user', content: [{ type: 'text', text: '<context path="src/a.ts" lines="3-4">\n```ts\nx\n```\n</context>' }, { type: 'text', text: 'explain' }], timestamp: 1 },
    assistant([{ type: 'toolCall', id: 't1', name: 'edit', arguments: { path: 'a.txt' } }], 'toolUse'),
    { role: 'toolResult', toolCallId: 't1', toolName: 'edit', content: [{ type: 'text', text: 'done' }], isError: false, timestamp: 2 },
    assistant([{ type: 'text', text: 'Done.' }]),
  ] });
  assert.equal(s.sessionId, 's9');
  const u = s.items[0];
  assert.ok(u.kind === 'user');
  assert.equal(u.text, 'explain');
  assert.deepEqual(u.contexts, ['src/a.ts:3-4']);
  assert.equal(s.tools.t1.status, 'done');
  assert.equal(s.tools.t1.editPath, 'a.txt');
  assert.equal(s.items.length, 3);
  assert.equal(s.totals.output, 10);
});

test('message_discard withdraws the streamed response', () => {
  const s = feed([{ type: 'agent_start' }, { type: 'message_start', message: assistant([], 'pending') },
    { type: 'message_update', assistantMessageEvent: { type: 'text_delta', contentIndex: 0, delta: 'fake' } },
    { type: 'message_discard', message: assistant([{ type: 'text', text: 'fake' }]), reason: 'fake tool call in text' }]);
  assert.deepEqual(s.items.map((i) => i.kind), ['notice']);
});

test('an approval that arrives before its message shows once, inside that message', () => {
  let s = feed([{ type: 'agent_start' }, { type: 'message_start', message: { role: 'user', content: 'build', timestamp: 1 } }]);
  s = reduce(s, { type: 'approvalRequest', requestId: 'approval-1', params: { ...approvalParams, toolCallId: 'call_b', toolName: 'bash', kind: 'execute', args: { command: 'make build' }, preview: { type: 'command', command: 'make build', cwd: '/w' } } });
  assert.deepEqual(s.items.map((i) => i.kind), ['user', 'assistant']);
  s = feed([
    { type: 'message_start', message: assistant([], 'pending') },
    { type: 'message_update', assistantMessageEvent: { type: 'text_delta', contentIndex: 0, delta: 'Building.' } },
    { type: 'message_update', assistantMessageEvent: { type: 'toolcall_start', contentIndex: 1, id: 'call_b', toolName: 'bash' } },
    { type: 'message_update', assistantMessageEvent: { type: 'toolcall_delta', contentIndex: 1, delta: '{}' } },
  ], s, 's1', 3);
  const toolBlocks = s.items.flatMap((it) => (it.kind === 'assistant' ? it.blocks.filter((b) => b.type === 'tool') : []));
  assert.equal(toolBlocks.length, 1);
  assert.deepEqual(s.items.map((i) => i.kind), ['user', 'assistant']);
  const a = s.items[1];
  assert.ok(a.kind === 'assistant' && a.streaming && a.blocks[0].type === 'text');
  assert.equal(s.tools.call_b.status, 'approval');
  assert.equal(s.tools.call_b.approval?.command, 'make build');
  s = feed([{ type: 'message_end', message: assistant([{ type: 'text', text: 'Building.' }, { type: 'toolCall', id: 'call_b', name: 'bash', arguments: { command: 'make build' } }], 'toolUse') }], s, 's1', 7);
  assert.equal(s.items.length, 2);
  assert.equal(s.tools.call_b.status, 'approval');
});

test('a resumed transcript renders as the live one did: tool paths and results, one aborted mark', async () => {
  const { renderItem } = await import('../../src/shared/render');
  const user = (text: string) => ({ role: 'user' as const, content: [{ type: 'text' as const, text }], timestamp: 1 });
  const call = assistant([{ type: 'text', text: 'Editing.' }, { type: 'toolCall', id: 'call_e', name: 'edit', arguments: { path: 'notes.txt', edits: [] } }], 'toolUse');
  const result = { role: 'toolResult' as const, toolCallId: 'call_e', toolName: 'edit', content: [{ type: 'text' as const, text: 'Edited notes.txt' }], isError: false, timestamp: 1 };
  const done = assistant([{ type: 'text', text: 'Done.' }]);
  const aborted = assistant([{ type: 'text', text: 'Counting: one, two' }], 'aborted', { errorMessage: 'Operation aborted' });
  const live = feed([
    { type: 'agent_start' },
    { type: 'message_start', message: user('edit it') }, { type: 'message_end', message: user('edit it') },
    { type: 'message_start', message: assistant([], 'pending') }, { type: 'message_end', message: call },
    { type: 'tool_execution_start', toolCallId: 'call_e', toolName: 'edit', args: { path: 'notes.txt', edits: [] } },
    { type: 'tool_execution_end', toolCallId: 'call_e', toolName: 'edit', result: { content: result.content }, isError: false },
    { type: 'message_start', message: result }, { type: 'message_end', message: result },
    { type: 'message_start', message: assistant([], 'pending') }, { type: 'message_end', message: done },
    { type: 'agent_end', messages: [] }, { type: 'agent_settled', aborted: false },
    { type: 'agent_start' },
    { type: 'message_start', message: user('count') }, { type: 'message_end', message: user('count') },
    { type: 'message_start', message: assistant([], 'pending') }, { type: 'message_end', message: aborted },
    { type: 'agent_end', messages: [] }, { type: 'agent_settled', aborted: true },
  ]);
  const resumed = reduce(initialState(), { type: 'hydrate', sessionId: 's1', messages: [user('edit it'), call, result, done, user('count'), aborted] });
  const html = (s: ChatState) => s.items.map((it) => renderItem(s, it, new Set()));
  assert.deepEqual(html(resumed), html(live));
  const notices = resumed.items.filter((it) => it.kind === 'notice');
  assert.equal(notices.length, 1, 'the aborted run is marked once');
  assert.ok(html(resumed).some((h) => h.includes('notes.txt') && h.includes('Edited notes.txt') && h.includes('data-action="openDiff"')));
});

test('a sent message keeps the id agent/prompt answered with, for restore and fork', () => {
  let s = initialState('s1');
  s = reduce(s, { type: 'messageId', messageId: 'aa11', text: 'first' });
  s = reduce(s, { type: 'messageId', messageId: 'gone', text: 'removed from the queue' });
  s = reduce(s, { type: 'dropMessageId', messageId: 'gone' });
  s = reduce(s, { type: 'messageId', messageId: 'bb22', text: 'steer' });
  s = feed([
    { type: 'agent_start' },
    { type: 'message_start', message: { role: 'user', content: 'first', timestamp: 1 } },
    { type: 'message_start', message: { role: 'user', content: [{ type: 'text', text: 'steer' }], timestamp: 1 } },
    { type: 'message_start', message: { role: 'user', content: 'removed from the queue', timestamp: 1 } },
  ], s);
  const ids = s.items.flatMap((it) => (it.kind === 'user' ? [it.messageId] : []));
  assert.deepEqual(ids, ['aa11', 'bb22', undefined]);
  assert.deepEqual(s.pendingMessageIds, []);
  // The response normally comes first; an id that arrives after its message still lands on it.
  s = feed([{ type: 'message_start', message: { role: 'user', content: 'late', timestamp: 1 } }], s, 's1', 10);
  s = reduce(s, { type: 'messageId', messageId: 'cc33', text: 'late' });
  const last = s.items[s.items.length - 1];
  assert.ok(last.kind === 'user' && last.messageId === 'cc33');
});

test('a resumed session\'s user messages get the ids agent/getMessages lists beside them', () => {
  const user = (text: string) => ({ role: 'user' as const, content: text, timestamp: 1 });
  const s = reduce(initialState(), { type: 'hydrate', sessionId: 's1', messages: [user('a'), assistant([{ type: 'text', text: 'A' }]), user('b')], messageIds: ['id-a', null, null] });
  assert.deepEqual(s.items.flatMap((it) => (it.kind === 'user' ? [it.messageId] : [])), ['id-a', undefined]);
});
