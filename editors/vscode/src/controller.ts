/**
 * The extension's core: owns the daemon connection, the chat state of the current session, the
 * pending approvals and the context items, and implements what the commands and the chat view
 * ask for (prompt, steer, follow-up, abort, sessions, diffs).
 */

import * as vscode from 'vscode';
import type { LanguageClient } from 'vscode-languageclient/node';
import { ApprovalRegistry } from './approvals';
import { askUser } from './askUser';
import { JobsController } from './jobs';
import { BinaryMissingError, createClient, readConfig } from './client';
import { ChatCompletions } from './completions';
import { LiveControls } from './controls';
import { askMcpTrust, McpServersView } from './mcpView';
import { currentText, resolveToolUri, showDiff, showUnifiedDiff, SnapshotStore } from './diffs';
import { DiagnosticsForwarder, saveDocuments } from './documents';
import { FollowAgent } from './follow';
import { answerLanguageRequest } from './languageRequests';
import { negotiatedEncoding } from './shared/languageResults';
import {
  type AgentEventParams, type ApprovalDecision, type ApprovalScope, type AskUserParams, type AskUserResult, type BeforeToolCallParams, type CompactionResult, ErrorCodes,
  type FileChange, type GetMessagesResult, type ListSessionsResult, Methods, type NewSessionResult,
  type PromptResult, type QueueResult, type RemoveQueuedParams, type RemoveQueuedResult, type SessionState,
} from './protocol';
import { type ChatAction, type ChatState, initialState, isEditTool, reduce, splitUserContent, toolPath } from './shared/chatState';
import { buildMessage, type ContextItem, contextLabel } from './shared/context';
import { EditPreviewError, proposedContent } from './shared/edits';
import { DiffApplyError } from './shared/changes';
import { afterFromDiff, pairWithPaths, splitDiff } from './shared/multiDiff';
import { UNSAVED_WARNING } from './shared/render';
import { isMcpTrustRequest } from './shared/mcpTrust';
import { sandboxNoteLine, sandboxStatusLines, sandboxSummary } from './shared/sandbox';
import { sessionChoices } from './shared/sessions';
import type { HostToView, ViewStatus } from './shared/messages';

export type SendMode = 'prompt' | 'steer' | 'followUp';

export class Controller implements vscode.Disposable {
  state: ChatState = initialState();
  status: ViewStatus = { connection: 'starting' };
  contexts: ContextItem[] = [];
  client: LanguageClient | undefined;
  /** Sessions created or used on this connection, newest last (for Switch Session). */
  readonly sessions: string[] = [];
  readonly snapshots = new SnapshotStore();
  private readonly before = new Map<string, { uri: vscode.Uri; left: vscode.Uri }>();
  readonly approvals: ApprovalRegistry;
  readonly diagnostics: DiagnosticsForwarder;
  private view: ((m: HostToView) => void) | undefined;
  /** Shows the chat view (creating it if needed); set by the extension at activation. */
  revealView: (() => void) | undefined;
  private readonly sessionShown = new vscode.EventEmitter<string | undefined>();
  /** The chat shows another session (or none): the Changes view follows it. */
  readonly onDidShowSession = this.sessionShown.event;
  private shownSession: string | undefined;
  private readonly changesUpdated = new vscode.EventEmitter<{ sessionId: string; runId: string | null; files: FileChange[] }>();
  /** A run of the shown session changed files (`changes_update`, §3.16). */
  readonly onDidChangeFiles = this.changesUpdated.event;
  private readonly statusItem: vscode.StatusBarItem;
  /** Model, thinking level, context use and cost of the shown session (controls.ts). */
  readonly controls: LiveControls;
  readonly completions: ChatCompletions;
  readonly mcp: McpServersView;
  /** The shown session's background jobs: output while watched, stop, "Agent: Show Jobs". */
  readonly jobs: JobsController;
  /** `agentLsp.followAgent`: the editor shows what the agent reads and edits. */
  readonly follow: FollowAgent;
  private nextQuestion = 1;

  constructor(readonly output: vscode.OutputChannel, private readonly extensionPath: string) {
    this.controls = new LiveControls({
      client: () => this.client, sessionId: () => this.state.sessionId, ensureSession: () => this.ensureSession(),
      post: (m) => this.view?.(m), reportError: (e) => this.reportError(e),
    });
    this.completions = new ChatCompletions(() => this.client, () => this.state.sessionId);
    this.mcp = new McpServersView(() => this.client, () => this.state.sessionId);
    this.jobs = new JobsController({
      client: () => this.client, sessionId: () => this.state.sessionId, jobs: () => this.state.jobs,
      dispatch: (a) => this.dispatch(a), reportError: (e) => this.reportError(e),
      openJob: (jobId) => { this.revealView?.(); this.view?.({ type: 'openJob', jobId }); },
    });
    this.follow = new FollowAgent(() => readConfig().cwd, (line) => this.output.appendLine(line));
    this.statusItem = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 100);
    this.statusItem.command = 'agentLsp.openChat';
    this.statusItem.show();
    this.approvals = new ApprovalRegistry({
      requested: (requestId, params) => {
        void this.captureBefore(params.toolCallId, params.toolName, params.args);
        if (this.state.sessionId !== undefined && params.sessionId !== this.state.sessionId) {
          void this.askElsewhere(requestId, params);
          return;
        }
        this.dispatch({ type: 'approvalRequest', requestId, params });
        this.revealView?.();
      },
      settled: (requestId, outcome, reason) => this.dispatch({ type: 'approvalDone', requestId, outcome, reason }),
    });
    this.diagnostics = new DiagnosticsForwarder(() => this.client,
      () => vscode.workspace.getConfiguration('agentLsp').get<boolean>('forwardDiagnostics') ?? true);
  }

  // ------------------------------------------------------------------ view plumbing

  attachView(post: (m: HostToView) => void): void {
    this.view = post;
    // A new view has no job output open.
    this.jobs.reset();
    this.snapshot();
    void this.refreshFromState();
  }

  /**
   * Reads the shown session's plan and jobs again (`agent/getState`, §3.18) for a view that was
   * (re)created: the events kept them current so far, but the daemon's word is the one to show.
   */
  private async refreshFromState(): Promise<void> {
    const sessionId = this.state.sessionId;
    const client = this.client;
    if (!sessionId || !client?.isRunning()) return;
    try {
      const st = await client.sendRequest<SessionState>(Methods.getState, { sessionId });
      if (this.state.sessionId !== sessionId) return;
      const todos = st.plan ?? [];
      if (JSON.stringify(todos) !== JSON.stringify(this.state.plan)) this.dispatch({ type: 'plan', todos });
      if (st.jobs) this.dispatch({ type: 'jobs', jobs: st.jobs });
    } catch (e) {
      this.output.appendLine(`agent/getState failed: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  detachView(): void {
    this.view = undefined;
    this.jobs.reset();
  }

  /** An approval for a session the chat is not showing (a background run): ask in a notification. */
  private async askElsewhere(requestId: string, params: BeforeToolCallParams): Promise<void> {
    const sandbox = sandboxNoteLine(params.sandbox);
    const url = params.preview?.type === 'fetch' && !(params.title ?? '').includes(params.preview.url) ? ` (${params.preview.url})` : '';
    const warning = `${url}${params.savesUnsavedChanges ? ` ${UNSAVED_WARNING}` : ''}${sandbox ? ` ${sandbox}` : ''}`;
    const choice = await vscode.window.showWarningMessage(`Agent (session ${params.sessionId.slice(0, 8)}): ${params.title || params.toolName}${warning}`, 'Allow', 'Reject');
    this.approvals.answer(requestId, { decision: choice === 'Allow' ? 'allow' : 'block', reason: choice ? undefined : 'No answer from the user' });
  }

  private updateStatusItem(): void {
    const c = this.status.connection;
    const text = c !== 'ready' ? c : this.state.running ? 'running' : 'idle';
    this.statusItem.text = `${this.state.running ? '$(loading~spin)' : '$(comment-discussion)'} Agent: ${text}`;
    this.statusItem.tooltip = this.status.message ?? 'Open the agent chat';
  }

  snapshot(): void {
    this.view?.({ type: 'snapshot', state: this.state, contexts: this.contexts.map(contextLabel), status: this.status });
    this.noteShownSession();
    this.view?.({ type: 'controls', controls: this.controls.view });
  }

  private noteShownSession(): void {
    if (this.shownSession === this.state.sessionId) return;
    this.shownSession = this.state.sessionId;
    this.sessionShown.fire(this.shownSession);
  }

  /** The shown session changed: the controls, the MCP view and the jobs read it again. */
  private sessionChanged(): void {
    void this.controls.sessionChanged();
    void this.mcp.refresh();
    this.jobs.reset();
  }

  /** Puts text in the chat's input (a forked message, to edit and send again). */
  fillInput(text: string): void {
    this.revealView?.();
    this.view?.({ type: 'focusInput', text });
  }

  dispatch(action: ChatAction): void {
    const wasRunning = this.state.running;
    this.state = reduce(this.state, action);
    this.view?.({ type: 'action', action });
    if (wasRunning !== this.state.running) this.updateStatusItem();
    this.noteShownSession();
  }

  private setStatus(status: ViewStatus): void {
    this.status = status;
    this.view?.({ type: 'status', status });
    this.updateStatusItem();
  }

  private notice(level: 'info' | 'warning' | 'error', text: string): void {
    this.dispatch({ type: 'notice', level, text });
  }

  get sessionId(): string | undefined { return this.state.sessionId; }
  get running(): boolean { return this.state.running; }

  // ------------------------------------------------------------------ daemon lifecycle

  async start(): Promise<void> {
    this.setStatus({ connection: 'starting' });
    const config = readConfig();
    let client: LanguageClient;
    try {
      client = createClient(config, this.extensionPath, {
        onEvent: (p) => this.onEvent(p),
        // A project's .mcp.json asks once per project, outside any run: a modal, not a card.
        beforeToolCall: (p, token) => (isMcpTrustRequest(p) ? askMcpTrust(p) : this.approvals.ask(p, token)),
        saveDocuments: (p) => saveDocuments(p),
        askUser: (p, token) => this.askUser(p, token),
        languageRequest: (p, token) => answerLanguageRequest(p, token, {
          encoding: () => negotiatedEncoding(client?.initializeResult?.capabilities.positionEncoding),
          selfId: vscode.extensions.all.find((e) => e.extensionPath === this.extensionPath)?.id ?? 'agent-lsp.agent-lsp',
          log: (line) => this.output.appendLine(line),
        }),
      }, this.output);
    } catch (e) {
      const missing = e instanceof BinaryMissingError;
      const message = e instanceof Error ? e.message : String(e);
      this.setStatus({ connection: missing ? 'missing' : 'error', message });
      const choice = await vscode.window.showErrorMessage(message, missing ? 'Open Settings' : 'Show Log');
      if (choice === 'Open Settings') await vscode.commands.executeCommand('workbench.action.openSettings', 'agentLsp.serverPath');
      else if (choice === 'Show Log') this.output.show();
      return;
    }
    this.client = client;
    for (const problem of config.problems) {
      this.output.appendLine(`settings: ${problem}`);
      void vscode.window.showWarningMessage(`agent-lsp: ${problem}`, 'Open Settings').then((choice) => {
        if (choice) void vscode.commands.executeCommand('workbench.action.openSettings', problem.split(':')[0]);
      });
    }
    client.onDidChangeState((e) => {
      // 1 = Stopped, 2 = Running (vscode-languageclient's State enum).
      if (e.newState === 1 && this.client === client) this.setStatus({ connection: 'stopped', message: 'The agent daemon stopped. See the "agent-lsp" output for its log.' });
    });
    try {
      await client.start();
      this.setStatus({ connection: 'ready' });
    } catch (e) {
      const message = `The agent daemon failed to start: ${e instanceof Error ? e.message : String(e)}`;
      this.setStatus({ connection: 'error', message });
      void vscode.window.showErrorMessage(message, 'Show Log').then((c) => { if (c) this.output.show(); });
    }
  }

  async restart(): Promise<void> {
    const old = this.client;
    this.client = undefined;
    // Say so at once: the emptied chat below must not show the old daemon's "ready" (an idle
    // chat that cannot send) until the new daemon is up.
    this.setStatus({ connection: 'starting' });
    if (old) await old.stop().catch(() => undefined);
    this.state = initialState();
    this.sessions.length = 0;
    this.controls.reset();
    this.sessionChanged();
    this.snapshot();
    this.updateStatusItem();
    await this.start();
  }

  private requireClient(): LanguageClient | undefined {
    if (this.client?.isRunning()) return this.client;
    const msg = this.status.message ?? 'The agent daemon is not running.';
    void vscode.window.showErrorMessage(msg);
    return undefined;
  }

  private rememberSession(id: string): void {
    const i = this.sessions.indexOf(id);
    if (i >= 0) this.sessions.splice(i, 1);
    this.sessions.push(id);
  }

  // ------------------------------------------------------------------ events

  private onEvent(p: AgentEventParams): void {
    if (this.state.sessionId !== undefined && p.sessionId !== this.state.sessionId) return;
    const first = this.state.sessionId === undefined;
    const ev = p.event;
    if (ev.type === 'tool_execution_start') {
      void this.captureBefore(ev.toolCallId, ev.toolName, ev.args);
      const path = toolPath(ev.args ?? {});
      if (path) this.diagnostics.touch(resolveToolUri(path, readConfig().cwd));
    }
    this.dispatch({ type: 'event', params: p });
    if (ev.type === 'changes_update') this.changesUpdated.fire({ sessionId: p.sessionId, runId: ev.runId, files: ev.files });
    if (ev.type === 'agent_settled') this.approvals.cancelSession(p.sessionId);
    this.completions.onEvent(p);
    this.mcp.onEvent(p);
    this.jobs.onEvent(p);
    this.follow.onEvent(ev);
    if (first) this.sessionChanged(); else this.controls.onEvent(p);
  }

  /** Keeps the text an edit tool starts from, for the "Open diff" button after the edit. */
  private async captureBefore(toolCallId: string, toolName: string, args: Record<string, unknown>): Promise<void> {
    const p = toolPath(args ?? {});
    if (!p || !isEditTool(toolName) || this.before.has(toolCallId)) return;
    const uri = resolveToolUri(p, readConfig().cwd);
    this.before.set(toolCallId, { uri, left: uri });
    const left = this.snapshots.put(`before-${toolCallId}`, uri, await currentText(uri));
    this.before.set(toolCallId, { uri, left });
  }

  // ------------------------------------------------------------------ user actions

  async send(mode: SendMode, text: string): Promise<void> {
    const client = this.requireClient();
    if (!client || text.trim() === '') return;
    const message = buildMessage(text, this.contexts);
    const sessionId = this.state.sessionId;
    try {
      let result: PromptResult | QueueResult;
      if (mode === 'prompt' && !this.running) {
        result = await client.sendRequest<PromptResult>(Methods.prompt, sessionId ? { sessionId, message } : { message });
      } else if (sessionId) {
        const method = mode === 'followUp' ? Methods.followUp : Methods.steer;
        result = await client.sendRequest<QueueResult>(method, { sessionId, message });
      } else {
        const streamingBehavior = mode === 'followUp' ? 'followUp' : 'steer';
        result = await client.sendRequest<PromptResult>(Methods.prompt, { message, streamingBehavior });
      }
      this.rememberSession(result.sessionId);
      if (this.state.sessionId === undefined) { this.state.sessionId = result.sessionId; this.sessionChanged(); }
      // The id restore and fork need (§3.12): kept on the user message once it starts.
      if (result.messageId && result.sessionId === this.state.sessionId) {
        this.dispatch({ type: 'messageId', messageId: result.messageId, text: splitUserContent(message).text });
      }
      // `/model` alone sends nothing and no event: say which model the session uses.
      if (result.disposition === 'command' && result.command === 'model' && result.model) {
        this.notice('info', `Model: ${result.model.provider}/${result.model.id}${result.model.reasoning ? `, thinking ${result.thinkingLevel ?? 'off'}` : ''}.`);
      }
      this.contexts = [];
      this.view?.({ type: 'contexts', contexts: [] });
    } catch (e) {
      this.reportError(e);
      this.view?.({ type: 'focusInput', text });
    }
  }

  reportError(e: unknown): void {
    const code = (e as { code?: number })?.code;
    const message = e instanceof Error ? e.message : String(e);
    if (code === ErrorCodes.noModel) {
      this.notice('error', `No model is configured: ${message}`);
      void vscode.window.showErrorMessage(`agent-lsp: ${message}`, 'Log In', 'Open Settings', 'Run Doctor').then((c) => {
        if (c === 'Log In') void vscode.commands.executeCommand('agentLsp.login');
        if (c === 'Open Settings') void vscode.commands.executeCommand('workbench.action.openSettings', 'agentLsp');
        if (c === 'Run Doctor') void vscode.commands.executeCommand('agentLsp.doctor');
      });
    } else {
      this.notice('error', message);
    }
  }

  async abort(): Promise<void> {
    const sessionId = this.state.sessionId;
    const client = this.client;
    if (!sessionId || !client?.isRunning()) return;
    try {
      await client.sendRequest(Methods.abort, { sessionId });
    } catch (e) {
      this.reportError(e);
    }
  }

  /**
   * `agent/askUser`: the question in the chat (for the shown session) and in a quick pick; the
   * chat shows the answer once it is given, declined or cancelled (the server's `$/cancelRequest`
   * when the run is aborted closes the pick).
   */
  async askUser(p: AskUserParams, token: Parameters<typeof askUser>[1]): Promise<AskUserResult> {
    const requestId = `question-${this.nextQuestion++}`;
    const shown = this.state.sessionId === undefined || p.sessionId === this.state.sessionId;
    if (shown) { this.dispatch({ type: 'question', requestId, params: p }); this.revealView?.(); }
    let result: AskUserResult;
    try {
      result = await askUser(p, token, shown ? '' : ` (session ${p.sessionId.slice(0, 8)})`);
    } catch (e) {
      this.output.appendLine(`agent/askUser: ${e instanceof Error ? e.message : String(e)}`);
      result = { action: 'cancel' };
    }
    if (shown) this.dispatch({ type: 'questionDone', requestId, result });
    return result;
  }

  answerApproval(requestId: string, decision: ApprovalDecision, reason?: string, scope?: ApprovalScope): void {
    const always = decision === 'allowAlways' || decision === 'blockAlways';
    this.approvals.answer(requestId, { decision, ...(reason ? { reason } : {}), ...(always && scope ? { scope } : {}) });
  }

  /**
   * Removes one queued message by id (`agent/removeQueued`). A message the run took meanwhile is
   * not removed (`removed: false`); the `queue_update` that follows refreshes the view either way.
   */
  async removeQueued(queue: 'steering' | 'followUp', index: number): Promise<void> {
    const client = this.requireClient();
    const sessionId = this.state.sessionId;
    const messageId = this.state.queue[queue][index]?.id;
    if (!client || !sessionId || !messageId) return;
    try {
      const params: RemoveQueuedParams = { sessionId, messageId };
      const r = await client.sendRequest<RemoveQueuedResult>(Methods.removeQueued, params);
      if (r.removed) this.dispatch({ type: 'dropMessageId', messageId });
    } catch (e) {
      this.reportError(e);
    }
  }

  async newSession(): Promise<void> {
    const client = this.requireClient();
    if (!client) return;
    try {
      const r = await client.sendRequest<NewSessionResult>(Methods.newSession, { cwd: readConfig().cwd });
      this.rememberSession(r.sessionId);
      this.dispatch({ type: 'reset', sessionId: r.sessionId });
      this.sessionChanged();
    } catch (e) {
      this.reportError(e);
    }
  }

  /** The shown session's id, starting one first when the chat has none (a picker needs one). */
  async ensureSession(): Promise<string | undefined> {
    if (this.state.sessionId) return this.state.sessionId;
    await this.newSession();
    return this.state.sessionId;
  }

  /**
   * "Agent: Show Sandbox Status" (and the footer's sandbox link): the shown session's
   * `agent/getState.sandbox` in a modal, its mode, network, every layer, what it does not
   * isolate on this machine and the hosts its allowlist refused (protocol.md §3.17).
   */
  async showSandboxStatus(): Promise<void> {
    const client = this.requireClient();
    if (!client) return;
    const sessionId = await this.ensureSession();
    if (!sessionId) return;
    try {
      const st = await client.sendRequest<SessionState>(Methods.getState, { sessionId });
      if (!st.sandbox) { void vscode.window.showInformationMessage('This agent-lsp daemon does not report a command sandbox.'); return; }
      const { text } = sandboxSummary(st.sandbox);
      const choice = await vscode.window.showInformationMessage(`Command sandbox of this session (${text.replace(/^sandbox: /, '')})`,
        { modal: true, detail: sandboxStatusLines(st.sandbox).join('\n') }, 'Open Settings');
      if (choice) await vscode.commands.executeCommand('workbench.action.openSettings', 'agentLsp.sandbox');
    } catch (e) {
      this.reportError(e);
    }
  }

  /**
   * "Agent: Compact" (`agent/compact`, §3.15): the answer comes after `compaction_end`, which
   * already put the marker with its summary in the chat; a refusal becomes a notice.
   */
  async compact(instructions?: string): Promise<void> {
    const client = this.requireClient();
    const sessionId = this.state.sessionId;
    if (!client) return;
    if (!sessionId) { void vscode.window.showInformationMessage('Nothing to compact: the chat has no session yet.'); return; }
    try {
      await client.sendRequest<CompactionResult>(Methods.compact, instructions ? { sessionId, instructions } : { sessionId });
    } catch (e) {
      const code = (e as { code?: number })?.code;
      if (code === ErrorCodes.compactionFailed || code === ErrorCodes.agentBusy) this.notice('warning', `Not compacted: ${e instanceof Error ? e.message : String(e)}`);
      else this.reportError(e);
    }
  }

  /** Sessions the daemon stored for this workspace (`agent/listSessions`; empty when it fails). */
  private async storedSessions(client: LanguageClient): Promise<ListSessionsResult['sessions']> {
    const cwd = readConfig().cwd;
    try {
      const r = await client.sendRequest<ListSessionsResult>(Methods.listSessions, cwd ? { cwd } : {});
      return r.sessions;
    } catch (e) {
      this.output.appendLine(`agent/listSessions failed: ${e instanceof Error ? e.message : String(e)}`);
      return [];
    }
  }

  async switchSession(): Promise<void> {
    const client = this.requireClient();
    if (!client) return;
    const choices = sessionChoices(this.sessions, await this.storedSessions(client), this.state.sessionId, Date.now());
    if (choices.length === 0) { void vscode.window.showInformationMessage('No agent sessions yet for this workspace.'); return; }
    const items = choices.map((c) => ({ label: `${c.current ? '$(check) ' : ''}${c.label}`, description: c.description, choice: c }));
    const pick = await vscode.window.showQuickPick(items, { title: 'Switch agent session', placeHolder: 'Session (stored sessions are resumed)' });
    if (!pick || pick.choice.current) return;
    if (!pick.choice.open) {
      try {
        const r = await client.sendRequest<NewSessionResult>(Methods.newSession, { resume: pick.choice.id });
        await this.loadSession(r.sessionId);
      } catch (e) {
        this.reportError(e);
      }
      return;
    }
    await this.loadSession(pick.choice.id);
  }

  async loadSession(sessionId: string): Promise<void> {
    const client = this.requireClient();
    if (!client) return;
    try {
      const [msgs, st] = await Promise.all([
        client.sendRequest<GetMessagesResult>(Methods.getMessages, { sessionId }),
        client.sendRequest<SessionState>(Methods.getState, { sessionId }),
      ]);
      this.rememberSession(sessionId);
      // Build the whole switched-to state here and send the view one snapshot of it: forwarding
      // the hydrate action first would let the view show a transcript that the snapshot then
      // replaces (with a different lastSeq and run state).
      let next = reduce(this.state, { type: 'hydrate', sessionId, messages: msgs.messages, messageIds: msgs.messageIds });
      // Continue the event stream after what the messages already show.
      next.lastSeq = st.lastSeq;
      next.running = st.isStreaming;
      if (st.model) next = reduce(next, { type: 'model', model: st.model.id });
      // The plan and the jobs live in the session, not in its messages: a resumed session shows
      // its last plan, a shown one its jobs.
      next = reduce(next, { type: 'plan', todos: st.plan ?? [] });
      next = reduce(next, { type: 'jobs', jobs: st.jobs ?? [] });
      this.state = next;
      this.snapshot();
      this.updateStatusItem();
      // Resuming from the command palette (or a fork) shows the chat it opened.
      this.revealView?.();
      this.sessionChanged();
    } catch (e) {
      this.reportError(e);
    }
  }

  // ------------------------------------------------------------------ contexts

  addContext(c: ContextItem): void {
    this.contexts.push(c);
    this.view?.({ type: 'contexts', contexts: this.contexts.map(contextLabel) });
    this.revealView?.();
    this.view?.({ type: 'focusInput' });
  }

  /** A file chosen with `@` in the chat input, attached whole (as "Add File to Prompt"). */
  async attachFile(path: string): Promise<void> {
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
    const uri = folder ? vscode.Uri.joinPath(folder, path) : vscode.Uri.file(path);
    try {
      const doc = await vscode.workspace.openTextDocument(uri);
      this.addContext({ path, text: doc.getText(), languageId: doc.languageId });
    } catch (e) {
      this.notice('warning', `Could not attach ${path}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  /** An image pasted or dropped into the chat input: sent as an image block (§3, `Message`). */
  attachImage(name: string, mimeType: string, data: string): void {
    this.addContext({ path: name, text: '', image: { mimeType, data } });
  }

  async complete(requestId: number, kind: 'command' | 'file', query: string): Promise<void> {
    const items = await this.completions.complete(kind, query).catch(() => []);
    this.view?.({ type: 'completions', requestId, items });
  }

  removeContext(index: number): void {
    this.contexts.splice(index, 1);
    this.view?.({ type: 'contexts', contexts: this.contexts.map(contextLabel) });
  }

  // ------------------------------------------------------------------ diffs

  async openToolDiff(toolCallId: string): Promise<void> {
    const b = this.before.get(toolCallId);
    const tool = this.state.tools[toolCallId];
    if (b && b.left.scheme !== 'file') {
      await showDiff(b.left, b.uri, `${tool?.name ?? 'edit'}: ${vscode.workspace.asRelativePath(b.uri)} (before ↔ after)`);
      return;
    }
    const p = tool && toolPath(tool.args);
    if (p) await vscode.window.showTextDocument(resolveToolUri(p, readConfig().cwd), { preview: true });
  }

  /** A place an `lsp_*` result names (path relative to the workspace, 1-based line and column). */
  async openLocation(path: string, line: number, column: number): Promise<void> {
    const at = new vscode.Position(Math.max(0, line - 1), Math.max(0, column - 1));
    try {
      await vscode.window.showTextDocument(resolveToolUri(path, readConfig().cwd), { selection: new vscode.Range(at, at), preview: true });
    } catch (e) {
      this.notice('warning', `Could not open ${path}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  async openApprovalDiff(requestId: string): Promise<void> {
    const params: BeforeToolCallParams | undefined = this.approvals.get(requestId);
    if (!params) return;
    const diff = params.preview?.type === 'diff' ? params.preview.diff : undefined;
    const paths = params.preview?.type === 'diff' ? params.preview.paths ?? [] : [];
    if (diff && paths.length > 1) { await this.openMultiFileDiff(requestId, params.title || params.toolName, diff, paths); return; }
    const p = toolPath(params.args ?? {}) ?? (params.preview?.type === 'diff' ? params.preview.path : undefined);
    if (p) {
      const uri = resolveToolUri(p, readConfig().cwd);
      try {
        const proposed = proposedContent(params.toolName, params.args ?? {}, await currentText(uri));
        const right = this.snapshots.put(`proposed-${requestId}`, uri, proposed);
        await showDiff(uri, right, `${params.title || params.toolName} (proposed)`);
        return;
      } catch (e) {
        if (!(e instanceof EditPreviewError)) throw e;
      }
    }
    if (diff) await showUnifiedDiff(diff);
  }

  /**
   * A change of several files (`lsp_rename` with apply): VS Code's multi-file diff editor, each
   * file now (its buffer) against the text the diff makes of it; the unified diff as a document
   * when a file no longer matches it.
   */
  private async openMultiFileDiff(requestId: string, title: string, diff: string, paths: string[]): Promise<void> {
    try {
      const resources: [vscode.Uri, vscode.Uri, vscode.Uri][] = [];
      for (const [i, f] of pairWithPaths(splitDiff(diff), paths).entries()) {
        const uri = vscode.Uri.file(f.path);
        const right = this.snapshots.put(`proposed-${requestId}-${i}`, uri, afterFromDiff(f.diff.text, await currentText(uri)));
        resources.push([uri, uri, right]);
      }
      await vscode.commands.executeCommand('vscode.changes', `${title} (proposed)`, resources);
    } catch (e) {
      if (!(e instanceof DiffApplyError)) this.output.appendLine(`The multi-file diff failed: ${e instanceof Error ? e.message : String(e)}`);
      await showUnifiedDiff(diff);
    }
  }

  dispose(): void {
    this.statusItem.dispose();
    this.controls.dispose();
    this.mcp.dispose();
    this.jobs.dispose();
    this.follow.dispose();
    this.diagnostics.dispose();
    this.snapshots.dispose();
    this.sessionShown.dispose();
    this.changesUpdated.dispose();
    void this.client?.stop().catch(() => undefined);
  }
}
