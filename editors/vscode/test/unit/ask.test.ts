//! agent/askUser: the quick pick's rows, the answer they make, the question and its answer in the chat.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AskUserParams } from '../../src/protocol';
import { answerLine, answerOf, asker, askRows, textOnly, TYPE_ROW } from '../../src/shared/ask';
import { initialState, reduce } from '../../src/shared/chatState';
import { renderQuestion } from '../../src/shared/render';

const params = (extra: Partial<AskUserParams> = {}): AskUserParams => ({
  sessionId: 's1', runId: 'r1', toolCallId: 'call_ask', question: 'Which database?',
  options: [{ label: 'Postgres', description: 'the production one' }, { label: 'SQLite' }], multiSelect: false, allowText: false, ...extra,
});

test('rows: each option with its description, then the typing row when text is allowed', () => {
  assert.deepEqual(askRows(params()), [{ label: 'Postgres', description: 'the production one' }, { label: 'SQLite' }]);
  const rows = askRows(params({ allowText: true }));
  assert.deepEqual(rows[2], { label: `$(edit) ${TYPE_ROW}`, typed: true, alwaysShow: true });
  assert.equal(textOnly(params({ allowText: true })), false);
  assert.equal(textOnly(params({ options: [], allowText: true })), true);
  assert.equal(textOnly(params({ options: undefined, allowText: false })), false);
});

test('who asks: the agent, or the MCP server named in source', () => {
  assert.equal(asker(params()), 'The agent asks');
  assert.equal(asker(params({ source: { mcpServer: 'fs' } })), 'MCP server fs asks');
});

test('answers: chosen labels, typed text, both; nothing is a cancel', () => {
  const [pg, lite, typed] = askRows(params({ allowText: true }));
  assert.deepEqual(answerOf([pg]), { action: 'accept', selected: ['Postgres'] });
  assert.deepEqual(answerOf([pg, lite]), { action: 'accept', selected: ['Postgres', 'SQLite'] });
  assert.deepEqual(answerOf([typed], 'MySQL 8'), { action: 'accept', text: 'MySQL 8' });
  assert.deepEqual(answerOf([lite, typed], 'and a cache'), { action: 'accept', selected: ['SQLite'], text: 'and a cache' });
  assert.deepEqual(answerOf([typed], '   '), { action: 'cancel' });
  assert.deepEqual(answerOf([]), { action: 'cancel' });
});

test('the question in the chat: pending, then its answer; declined and cancelled say so', () => {
  let s = reduce(initialState('s1'), { type: 'question', requestId: 'q1', params: params({ multiSelect: true, allowText: true, source: { mcpServer: 'db' } }) });
  const q = s.items[0];
  assert.ok(q.kind === 'question' && q.status === 'pending' && q.mcpServer === 'db');
  let html = renderQuestion(q);
  assert.ok(html.includes('MCP server db asks <span class="question-how">(several answers allowed)</span>'), html);
  assert.ok(html.includes('<div class="question-text">Which database?</div>'), html);
  assert.ok(html.includes('<li><span class="option-label">Postgres</span> <span class="option-description">the production one</span></li>'), html);
  assert.ok(html.includes('Waiting for your answer'), html);
  s = reduce(s, { type: 'questionDone', requestId: 'q1', result: { action: 'accept', selected: ['Postgres'], text: 'v16' } });
  html = renderQuestion(s.items[0] as typeof q);
  assert.ok(html.includes('class="question status-answered"'), html);
  assert.ok(html.includes('<li class="chosen"><span class="option-label">Postgres</span>'), html);
  assert.ok(html.includes('You answered: Postgres, “v16”'), html);
  // Settled once: a late cancel changes nothing.
  s = reduce(s, { type: 'questionDone', requestId: 'q1', result: { action: 'cancel' } });
  assert.equal((s.items[0] as typeof q).status, 'answered');
  assert.equal(answerLine('declined'), 'You declined to answer.');
  assert.equal(answerLine('cancelled'), 'Not answered.');
});

test('another session\'s question is not shown in this chat', () => {
  const s = reduce(initialState('s1'), { type: 'question', requestId: 'q1', params: params({ sessionId: 's2' }) });
  assert.equal(s.items.length, 0);
});
