/**
 * The session's background jobs (`bash {background: true}`) as a section above the chat: each
 * job's status, command, a stop button while it runs, and its output when its fold is open
 * (the host reads it with `agent/jobOutput` while it is). The webview puts the pieces into one
 * element per job and replaces only the piece that changed, so new output never replaces the
 * Stop button under the pointer. Pure, so it is unit-tested; every command and output goes
 * through `escapeHtml`.
 */

import type { Job } from '../protocol';
import type { JobItem } from './chatState';
import { escapeHtml } from './markdown';

/** The fold of a job's output, as the webview remembers it (its opening asks the host to watch the job). */
export function jobFold(jobId: string): string { return `job:${jobId}`; }

/** "running", "exited 0", "exited 2", "killed", "failed", "failed 125" (the sandbox could not start it). */
export function jobStatusText(job: Pick<Job, 'status' | 'exitCode'>): string {
  const code = typeof job.exitCode === 'number' ? ` ${job.exitCode}` : '';
  switch (job.status) {
    case 'running': return 'running';
    case 'exited': return `exited${code}`;
    case 'killed': return 'killed';
    case 'failed': return `failed${code}`;
    default: return String(job.status);
  }
}

/** How long it ran or runs ("4s", "2m 05s"); `now` for a running job. */
export function jobDuration(job: Pick<Job, 'startedAt' | 'endedAt'>, now: number): string {
  const ms = Math.max(0, (job.endedAt ?? now) - job.startedAt);
  const s = Math.floor(ms / 1000);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
}

/** The title's count: "1 running · 2 ended". */
export function jobsSummary(jobs: Pick<Job, 'status'>[]): string {
  const running = jobs.filter((j) => j.status === 'running').length;
  const ended = jobs.length - running;
  return [running ? `${running} running` : '', ended ? `${ended} ended` : ''].filter((p) => p !== '').join(' · ');
}

/** A job's summary line: its dot, command, status and (while it runs) its stop button. */
export function jobSummaryHtml(job: JobItem): string {
  const id = escapeHtml(job.jobId);
  const stop = job.status === 'running'
    ? `<button class="mini danger" title="Stop this job (agent/killJob)" data-action="killJob" data-job="${id}">Stop</button>` : '';
  return `<span class="dot"></span><span class="job-command" title="${escapeHtml(job.command)}">${escapeHtml(job.command)}</span><span class="spacer"></span><span class="badge">${escapeHtml(jobStatusText(job))}</span>${stop}`;
}

/** An unfolded job's output as last read (its newest lines last). */
export function jobBodyHtml(job: JobItem): string {
  if (job.output === undefined) return '<div class="job-empty">Reading its output…</div>';
  if (job.output === '') return '<div class="job-empty">No output yet.</div>';
  return `<pre class="output">${job.truncated ? '<span class="job-cut">… (earlier output cut)</span>\n' : ''}${escapeHtml(job.output)}</pre>`;
}

/** The section's title: "Jobs 1 running · 2 ended". */
export function jobsTitleHtml(jobs: Pick<Job, 'status'>[]): string {
  return `<span class="jobs-label">Jobs</span> <span class="jobs-count">${escapeHtml(jobsSummary(jobs))}</span>`;
}
