//! The model's plan (protocol.md §3.18): the reducer keeps the last `plan_update` (or
//! `agent/getState.plan`), and the checklist renders its marks and count.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AgentEventParams, TodoItem } from '../../src/protocol';
import { initialState, reduce } from '../../src/shared/chatState';
import { planCount, renderPlan } from '../../src/shared/plan';
import { toolTarget } from '../../src/shared/render';

const todos: TodoItem[] = [
  { content: 'Read the parser', status: 'completed' },
  { content: 'Fix the <bug>', status: 'in_progress' },
  { content: 'Run the tests', status: 'pending' },
];
const planEvent = (seq: number, items: TodoItem[], sessionId = 's1'): AgentEventParams =>
  ({ sessionId, runId: 'r1', seq, event: { type: 'plan_update', todos: items } });

test('plan_update replaces the whole plan; an empty one clears it', () => {
  let s = reduce(initialState(), { type: 'event', params: planEvent(1, todos) });
  assert.deepEqual(s.plan, todos);
  const next: TodoItem[] = [{ content: 'Read the parser', status: 'completed' }, { content: 'Fix the <bug>', status: 'completed' }];
  s = reduce(s, { type: 'event', params: planEvent(2, next) });
  assert.deepEqual(s.plan, next);
  s = reduce(s, { type: 'event', params: planEvent(3, []) });
  assert.deepEqual(s.plan, []);
});

test('another session\'s plan_update and a replayed one change nothing', () => {
  let s = reduce(initialState('s1'), { type: 'event', params: planEvent(2, todos) });
  s = reduce(s, { type: 'event', params: planEvent(1, []) });
  assert.deepEqual(s.plan, todos, 'a replayed seq is ignored');
  s = reduce(s, { type: 'event', params: planEvent(3, [], 's2') });
  assert.deepEqual(s.plan, todos, 'another session');
});

test('a new session starts without a plan; a resumed one takes agent/getState.plan', () => {
  let s = reduce(initialState(), { type: 'event', params: planEvent(1, todos) });
  s = reduce(s, { type: 'reset', sessionId: 's2' });
  assert.deepEqual(s.plan, []);
  s = reduce(s, { type: 'hydrate', sessionId: 's3', messages: [] });
  assert.deepEqual(s.plan, [], 'the messages do not carry the plan');
  s = reduce(s, { type: 'plan', todos });
  assert.deepEqual(s.plan, todos);
});

test('an item without text is left out, an unknown status counts as pending', () => {
  const odd = [{ content: 'ok', status: 'blocked' }, { status: 'pending' }, null] as unknown as TodoItem[];
  const s = reduce(initialState(), { type: 'plan', todos: odd });
  assert.deepEqual(s.plan, [{ content: 'ok', status: 'pending' }]);
  assert.deepEqual(reduce(initialState(), { type: 'plan', todos: undefined as unknown as TodoItem[] }).plan, []);
});

test('the checklist: marks per status, the count of completed items, text escaped; nothing without a plan', () => {
  assert.equal(planCount(todos), '1/3');
  assert.equal(planCount([]), '0/0');
  const html = renderPlan(todos, true);
  assert.ok(html.includes('<details class="plan-fold" data-fold="plan" open>'), html);
  assert.ok(html.includes('<span class="plan-count" title="Completed items of all">1/3</span>'), html);
  assert.ok(html.includes('<li class="todo status-completed"><span class="mark" role="img" aria-label="done">✓</span><span class="todo-text">Read the parser</span></li>'), html);
  assert.ok(html.includes('<li class="todo status-in_progress"><span class="mark" role="img" aria-label="in progress">▸</span><span class="todo-text">Fix the &lt;bug&gt;</span></li>'), html);
  assert.ok(html.includes('aria-label="pending">○</span><span class="todo-text">Run the tests</span>'), html);
  assert.ok(!renderPlan(todos, false).includes(' open>'), 'folded');
  assert.equal(renderPlan([], true), '');
});

test('the todo_write card names what the plan stands at', () => {
  assert.equal(toolTarget({ id: 'x', name: 'todo_write', args: { todos }, argsText: '', status: 'done', output: '' }), '1/3 done');
});
