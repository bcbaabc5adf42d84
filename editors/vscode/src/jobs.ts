/**
 * The shown session's background jobs on the host side: their output is read with
 * `agent/jobOutput` while the user has a job's fold open in the chat (when it opens, at each
 * `job_update` of that job, and every `REFRESH_MS` while it still runs: a job's output arrives
 * without events); the stop button is `agent/killJob`; "Agent: Show Jobs" lists them
 * (`agent/listJobs`) in a quick pick that opens the chosen job's output in the chat.
 */

import * as vscode from 'vscode';
import type { LanguageClient } from 'vscode-languageclient/node';
import {
  type AgentEventParams, type Job, type JobOutputResult, type JobParams, type KillJobResult, type ListJobsResult, Methods,
} from './protocol';
import type { ChatAction } from './shared/chatState';
import { jobDuration, jobStatusText } from './shared/jobs';

/** How often a running job's open output is read again. */
export const REFRESH_MS = 1000;

export interface JobsHost {
  client(): LanguageClient | undefined;
  sessionId(): string | undefined;
  jobs(): Job[];
  dispatch(action: ChatAction): void;
  /** Shows the chat with this job's output open. */
  openJob(jobId: string): void;
  reportError(e: unknown): void;
}

export class JobsController implements vscode.Disposable {
  /** Jobs whose output the user looks at, each with its refresh timer while it runs. */
  private readonly watched = new Map<string, ReturnType<typeof setInterval> | undefined>();
  /** A read in flight per job: another one asked meanwhile runs after it (`again`), not beside it. */
  private readonly reading = new Set<string>();
  private readonly again = new Set<string>();

  constructor(private readonly host: JobsHost) {}

  /** The view opened (`on`) or closed a job's output. */
  watch(jobId: string, on: boolean): void {
    if (!on) { this.unwatch(jobId); return; }
    if (!this.watched.has(jobId)) this.watched.set(jobId, undefined);
    void this.read(jobId);
    this.schedule(jobId);
  }

  /** Another session is shown, or the view went away: nothing is watched any more. */
  reset(): void {
    for (const id of [...this.watched.keys()]) this.unwatch(id);
  }

  onEvent(p: AgentEventParams): void {
    if (p.event.type !== 'job_update' || p.sessionId !== this.host.sessionId()) return;
    const jobId = p.event.job.jobId;
    if (!this.watched.has(jobId)) return;
    // Its last output once it ended; the timer goes with it.
    void this.read(jobId);
    this.schedule(jobId);
  }

  /** The jobs of the shown session again (a session shown, resumed, or the view re-created). */
  async refresh(): Promise<void> {
    const client = this.host.client();
    const sessionId = this.host.sessionId();
    if (!sessionId || !client?.isRunning()) return;
    try {
      const r = await client.sendRequest<ListJobsResult>(Methods.listJobs, { sessionId });
      if (this.host.sessionId() === sessionId) this.host.dispatch({ type: 'jobs', jobs: r.jobs ?? [] });
    } catch (e) {
      // A daemon without jobs (older than issue 34) has nothing to list.
      if ((e as { code?: number })?.code !== -32601) this.host.reportError(e);
    }
  }

  async kill(jobId: string): Promise<void> {
    const client = this.host.client();
    const sessionId = this.host.sessionId();
    if (!sessionId || !client?.isRunning()) return;
    try {
      const params: JobParams = { sessionId, jobId };
      const r = await client.sendRequest<KillJobResult>(Methods.killJob, params);
      if (r?.job && this.host.sessionId() === sessionId) this.host.dispatch({ type: 'job', job: r.job });
      if (this.watched.has(jobId)) { void this.read(jobId); this.schedule(jobId); }
    } catch (e) {
      this.host.reportError(e);
    }
  }

  /** "Agent: Show Jobs": the session's jobs, newest first; the chosen one's output opens in the chat. */
  async show(): Promise<void> {
    await this.refresh();
    const jobs = [...this.host.jobs()].reverse();
    if (jobs.length === 0) { void vscode.window.showInformationMessage('No background jobs in this session.'); return; }
    const now = Date.now();
    const stop: vscode.QuickInputButton = { iconPath: new vscode.ThemeIcon('debug-stop'), tooltip: 'Stop this job' };
    const pick = vscode.window.createQuickPick<vscode.QuickPickItem & { job: Job }>();
    pick.title = 'Background jobs of this session';
    pick.placeholder = 'A job shows its output in the chat';
    pick.items = jobs.map((job) => ({
      label: `${job.status === 'running' ? '$(loading~spin)' : job.status === 'exited' && job.exitCode === 0 ? '$(pass)' : '$(circle-slash)'} ${job.command}`,
      description: `${jobStatusText(job)} · ${jobDuration(job, now)}`,
      buttons: job.status === 'running' ? [stop] : [],
      job,
    }));
    pick.onDidTriggerItemButton((e) => { void this.kill(e.item.job.jobId); pick.hide(); });
    pick.onDidAccept(() => {
      const job = pick.activeItems[0]?.job;
      pick.hide();
      if (job) this.host.openJob(job.jobId);
    });
    pick.onDidHide(() => pick.dispose());
    pick.show();
  }

  private unwatch(jobId: string): void {
    const timer = this.watched.get(jobId);
    if (timer) clearInterval(timer);
    this.watched.delete(jobId);
  }

  /** A refresh timer while the watched job runs, none once it ended. */
  private schedule(jobId: string): void {
    if (!this.watched.has(jobId)) return;
    const running = this.host.jobs().find((j) => j.jobId === jobId)?.status === 'running';
    const timer = this.watched.get(jobId);
    if (running && !timer) this.watched.set(jobId, setInterval(() => void this.read(jobId), REFRESH_MS));
    if (!running && timer) { clearInterval(timer); this.watched.set(jobId, undefined); }
  }

  private async read(jobId: string): Promise<void> {
    const client = this.host.client();
    const sessionId = this.host.sessionId();
    if (!sessionId || !client?.isRunning()) return;
    // The job may have printed (or ended) since the read in flight began: read once more after it.
    if (this.reading.has(jobId)) { this.again.add(jobId); return; }
    this.reading.add(jobId);
    try {
      const params: JobParams = { sessionId, jobId };
      const output = await client.sendRequest<JobOutputResult>(Methods.jobOutput, params);
      if (this.host.sessionId() === sessionId && this.watched.has(jobId)) this.host.dispatch({ type: 'jobOutput', output });
    } catch (e) {
      this.unwatch(jobId);
      this.host.reportError(e);
    } finally {
      this.reading.delete(jobId);
      if (this.again.delete(jobId) && this.watched.has(jobId)) void this.read(jobId);
    }
  }

  dispose(): void { this.reset(); }
}
