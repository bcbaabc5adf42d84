//! A `task` call's child agent (§3.24): its `subagent_event`s become the task card's steps; its
//! approval sits in that card; hook runs (§3.22) are one line of the chat; "always" per scope.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AgentEvent, AgentEventParams, AssistantMessage, BeforeToolCallParams } from '../../src/protocol';
import { type ChatState, initialState, reduce } from '../../src/shared/chatState';
import { alwaysScopes, renderItem } from '../../src/shared/render';
import { hookLine } from '../../src/shared/hooks';

const usage = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
const assistant = (content: AssistantMessage['content']): AssistantMessage =>
  ({ role: 'assistant', content, api: 'openai-completions', provider: 'mock', model: 'm', usage, stopReason: 'stop', timestamp: 1 });
const child = (event: AgentEvent): AgentEvent => ({ type: 'subagent_event', parentToolCallId: 'task1', agent: 'explore', event });

function feed(events: AgentEvent[], state: ChatState = initialState()): ChatState {
  events.forEach((event) => { state = reduce(state, { type: 'event', params: { sessionId: 's1', runId: 'r1', seq: state.lastSeq + 1, event } as AgentEventParams }); });
  return state;
}

const taskCall = assistant([{ type: 'toolCall', id: 'task1', name: 'task', arguments: { description: 'Find the notes', prompt: 'find' } }]);
const start: AgentEvent[] = [
  { type: 'agent_start' },
  { type: 'message_start', message: taskCall },
  { type: 'message_end', message: taskCall },
  { type: 'tool_execution_start', toolCallId: 'task1', toolName: 'task', args: { description: 'Find the notes', prompt: 'find' } },
  child({ type: 'agent_start' }),
  child({ type: 'message_start', message: assistant([]) }),
  child({ type: 'message_update', assistantMessageEvent: { type: 'text_delta', contentIndex: 0, delta: 'Looking ' } as never }),
  child({ type: 'message_update', assistantMessageEvent: { type: 'text_delta', contentIndex: 0, delta: 'around.' } as never }),
  child({ type: 'message_end', message: assistant([{ type: 'text', text: 'Looking around.' }, { type: 'toolCall', id: 'c1', name: 'read', arguments: { path: 'notes.txt' } }]) }),
  child({ type: 'tool_execution_start', toolCallId: 'c1', toolName: 'read', args: { path: 'notes.txt' } }),
];

test('a subagent\'s steps fold into its task card, live, and no message places its calls', () => {
  let s = feed(start);
  const run = s.tools.task1.subagent;
  assert.equal(run?.agent, 'explore');
  assert.deepEqual(run?.steps, [{ type: 'text', text: 'Looking around.', streaming: false }, { type: 'tool', toolCallId: 'c1' }]);
  assert.equal(s.tools.c1.parentId, 'task1');
  assert.equal(s.tools.c1.status, 'running');
  s = feed([
    child({ type: 'tool_execution_end', toolCallId: 'c1', toolName: 'read', result: { content: [{ type: 'text', text: 'alpha' }] }, isError: false }),
    child({ type: 'message_end', message: assistant([{ type: 'text', text: 'It says alpha.' }]) }),
    child({ type: 'agent_end', messages: [] }),
    { type: 'tool_execution_end', toolCallId: 'task1', toolName: 'task', result: { content: [{ type: 'text', text: 'It says alpha.' }] }, isError: false },
  ], s);
  assert.equal(s.tools.c1.status, 'done');
  assert.equal(s.tools.task1.subagent?.steps.length, 3);
  assert.equal(s.tools.task1.subagent?.running, false);
  const html = renderItem(s, s.items.find((i) => i.kind === 'assistant')!, new Set());
  for (const want of ['class="subagent"', 'explore agent', '1 tool call', 'data-tool="c1"', 'Looking around.', 'It says alpha.', 'Find the notes']) assert.ok(html.includes(want), want);
  assert.equal(s.items.filter((i) => i.kind === 'assistant').length, 1);
});

test('a child\'s approval shows in the task card, also when it comes before the child\'s event', () => {
  let s = feed(start.slice(0, 9));
  const params: BeforeToolCallParams = { sessionId: 's1', runId: 'r1', toolCallId: 'c1', toolName: 'read', args: { path: 'notes.txt' }, kind: 'read', title: 'Read notes.txt',
    alwaysRules: { session: ['read'], project: ['Read(/notes.txt)'], user: ['Read(//p/notes.txt)'] } };
  s = reduce(s, { type: 'approvalRequest', requestId: 'approval-1', params });
  assert.equal(s.items.filter((i) => i.kind === 'assistant').length, 2, 'shown on its own until its event');
  s = feed([start[9]], s);
  assert.equal(s.items.filter((i) => i.kind === 'assistant').length, 1);
  const html = renderItem(s, s.items[0], new Set());
  assert.ok(html.includes('data-scope="project"'), html);
  assert.ok(html.includes('Read(/notes.txt)'), html);
});

test('"Always allow" offers the scopes that have rules, each with its rules; none without alwaysRules', () => {
  const html = alwaysScopes({ requestId: 'r', alwaysRules: { session: ['bash'], project: ['Bash(npm test:*)'], user: [] } }) ?? '';
  assert.ok(html.includes('data-scope="session"') && html.includes('this session'), html);
  assert.ok(html.includes('this project <code class="rules">Bash(npm test:*)</code>'), html);
  assert.ok(!html.includes('data-scope="user"'), html);
  assert.equal(alwaysScopes({ requestId: 'r' }), undefined);
});

test('a hook run is one line of the chat', () => {
  const s = feed([{ type: 'hook', event: 'PreToolUse', hook: './check.sh', outcome: 'deny', message: 'no rm -rf', durationMs: 12, toolCallId: 'c' }]);
  const last = s.items[s.items.length - 1];
  assert.deepEqual(last.kind === 'notice' && [last.level, last.text], ['warning', 'PreToolUse hook ./check.sh denied the call: no rm -rf (12 ms)']);
  assert.equal(hookLine({ event: 'SessionStart', hook: 'init.sh', outcome: 'continue', additionalContext: 'x', durationMs: 3 }), 'SessionStart hook init.sh ran and added context (3 ms)');
});
