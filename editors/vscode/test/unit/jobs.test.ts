//! Background jobs: the reducer keeps each job's latest state (`job_update`, `agent/getState.jobs`,
//! `agent/killJob`) and its output last read; the Jobs section renders status, command, stop and output.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AgentEventParams, Job } from '../../src/protocol';
import { initialState, reduce, runningJobs } from '../../src/shared/chatState';
import { jobBodyHtml, jobDuration, jobsSummary, jobStatusText, jobsTitleHtml, jobSummaryHtml } from '../../src/shared/jobs';

const tick: Job = { jobId: 'j1', command: 'while true; do echo tick; sleep 0.2; done', status: 'running', startedAt: 1000 };
const update = (seq: number, job: Job, sessionId = 's1'): AgentEventParams => ({ sessionId, runId: 'r1', seq, event: { type: 'job_update', job } });

test('job_update adds a job, then changes it in place; its output stays until read again', () => {
  let s = reduce(initialState(), { type: 'event', params: update(1, tick) });
  s = reduce(s, { type: 'event', params: update(2, { jobId: 'j2', command: 'make watch', status: 'running', startedAt: 2000 }) });
  assert.deepEqual(s.jobs.map((j) => j.jobId), ['j1', 'j2']);
  s = reduce(s, { type: 'jobOutput', output: { jobId: 'j1', output: 'tick\ntick\n', truncated: false } });
  s = reduce(s, { type: 'event', params: update(3, { ...tick, status: 'killed', endedAt: 5000 }) });
  assert.deepEqual(s.jobs[0], { ...tick, status: 'killed', endedAt: 5000, output: 'tick\ntick\n', truncated: false });
  assert.deepEqual(runningJobs(s).map((j) => j.jobId), ['j2']);
  // agent/killJob's answer is the same shape.
  s = reduce(s, { type: 'job', job: { jobId: 'j2', command: 'make watch', status: 'killed', startedAt: 2000, endedAt: 6000 } });
  assert.equal(runningJobs(s).length, 0);
});

test('output of a job not known is dropped; another session\'s job_update changes nothing', () => {
  let s = reduce(initialState('s1'), { type: 'jobOutput', output: { jobId: 'nope', output: 'x', truncated: false } });
  assert.deepEqual(s.jobs, []);
  s = reduce(s, { type: 'event', params: update(1, tick, 's2') });
  assert.deepEqual(s.jobs, []);
});

test('agent/getState.jobs replaces the list and keeps the output read of jobs still there; a new session has none', () => {
  let s = reduce(initialState(), { type: 'event', params: update(1, tick) });
  s = reduce(s, { type: 'jobOutput', output: { jobId: 'j1', output: 'tick\n', truncated: true } });
  s = reduce(s, { type: 'jobs', jobs: [{ ...tick, status: 'exited', exitCode: 0, endedAt: 3000 }, { jobId: 'j3', command: 'ls', status: 'failed', startedAt: 1 }] });
  assert.equal(s.jobs[0].output, 'tick\n');
  assert.equal(s.jobs[0].status, 'exited');
  assert.equal(s.jobs[1].output, undefined);
  assert.deepEqual(reduce(s, { type: 'reset', sessionId: 's9' }).jobs, []);
});

test('status words, durations and the section title', () => {
  assert.equal(jobStatusText({ status: 'running' }), 'running');
  assert.equal(jobStatusText({ status: 'exited', exitCode: 0 }), 'exited 0');
  assert.equal(jobStatusText({ status: 'exited', exitCode: 2 }), 'exited 2');
  assert.equal(jobStatusText({ status: 'killed' }), 'killed');
  assert.equal(jobStatusText({ status: 'failed', exitCode: null }), 'failed');
  assert.equal(jobStatusText({ status: 'failed', exitCode: 125 }), 'failed 125');
  assert.equal(jobStatusText({ status: 'killed', exitCode: null }), 'killed');
  assert.equal(jobStatusText({ status: 'exited', exitCode: null }), 'exited');
  assert.equal(jobDuration({ startedAt: 1000, endedAt: 5500 }, 0), '4s');
  assert.equal(jobDuration({ startedAt: 0 }, 125_000), '2m 05s');
  assert.equal(jobsSummary([{ status: 'running' }, { status: 'killed' }, { status: 'exited' }]), '1 running · 2 ended');
  assert.equal(jobsSummary([{ status: 'running' }]), '1 running');
});

test('the Jobs section: a running job has a stop button; its output is escaped and says when it was cut', () => {
  const running = { ...tick, command: 'echo <b>', output: 'a < b\n', truncated: true };
  const ended = { jobId: 'j2', command: 'make', status: 'exited' as const, exitCode: 1, startedAt: 0, endedAt: 1 };
  assert.equal(jobsTitleHtml([running, ended]), '<span class="jobs-label">Jobs</span> <span class="jobs-count">1 running · 1 ended</span>');
  const head = jobSummaryHtml(running);
  assert.ok(head.includes('<span class="job-command" title="echo &lt;b&gt;">echo &lt;b&gt;</span>'), head);
  assert.ok(head.includes('<span class="badge">running</span><button class="mini danger" title="Stop this job (agent/killJob)" data-action="killJob" data-job="j1">Stop</button>'), head);
  const endedHead = jobSummaryHtml(ended);
  assert.ok(endedHead.includes('<span class="badge">exited 1</span>') && !endedHead.includes('killJob'), endedHead);
  assert.equal(jobBodyHtml(running), '<pre class="output"><span class="job-cut">… (earlier output cut)</span>\na &lt; b\n</pre>');
  assert.ok(jobBodyHtml({ ...tick }).includes('Reading its output…'));
  assert.ok(jobBodyHtml({ ...tick, output: '' }).includes('No output yet.'));
  assert.equal(jobBodyHtml({ ...tick, output: 'x', truncated: false }), '<pre class="output">x</pre>');
});
