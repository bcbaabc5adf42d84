/**
 * Review and undo of a run (protocol.md §3.16): the "Changes" tree view lists the files the
 * shown session's last run changed, each opening VS Code's diff editor (before the run ↔ now);
 * "Revert This Run", "Revert This File" and "Restore to Here" (a user message's checkpoint) call
 * `agent/revert`, and files changed since the agent changed them are only overwritten when the
 * user says so.
 */

import * as path from 'node:path';
import * as vscode from 'vscode';
import type { LanguageClient } from 'vscode-languageclient/node';
import type { Controller } from './controller';
import { currentText, showDiff, showUnifiedDiff } from './diffs';
import { type FileChange, Methods, type RevertResult } from './protocol';
import { beforeFromDiff, changeDescription, changeTooltip, conflictQuestion, DiffApplyError, revertSummary } from './shared/changes';

export const CHANGES_VIEW_ID = 'agentLsp.changes';

interface RunChangesResult { runId: string | null; files: FileChange[] }
interface RevertParams { sessionId: string; runId?: string; messageId?: string; paths?: string[]; force?: boolean; fork?: boolean }

const relative = (p: string) => vscode.workspace.asRelativePath(p, false);

export class ChangesView implements vscode.TreeDataProvider<FileChange>, vscode.Disposable {
  private sessionId: string | undefined;
  private runId: string | null = null;
  private files: FileChange[] = [];
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly tree: vscode.TreeView<FileChange>;
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor(private readonly controller: Controller) {
    this.tree = vscode.window.createTreeView(CHANGES_VIEW_ID, { treeDataProvider: this, showCollapseAll: false });
    this.subscriptions.push(
      this.tree,
      controller.onDidShowSession((id) => { this.sessionId = id; void this.refresh(); }),
      controller.onDidChangeFiles((u) => {
        if (u.sessionId !== controller.sessionId) return;
        this.sessionId = u.sessionId;
        this.show(u.runId, u.files);
      }),
    );
  }

  getTreeItem(c: FileChange): vscode.TreeItem {
    const item = new vscode.TreeItem(vscode.Uri.file(c.path));
    item.id = c.path;
    const dir = path.dirname(relative(c.path));
    item.description = changeDescription(c, dir === '.' ? '' : dir);
    item.tooltip = changeTooltip(c);
    item.contextValue = c.revertible ? 'revertible' : 'notRevertible';
    item.command = { command: 'agentLsp.openChange', title: 'Open Change', arguments: [c] };
    return item;
  }

  getChildren(element?: FileChange): FileChange[] { return element ? [] : this.files; }

  private show(runId: string | null, files: FileChange[]): void {
    this.runId = runId;
    this.files = files;
    this.tree.badge = files.length > 0 ? { value: files.length, tooltip: `${files.length} file${files.length === 1 ? '' : 's'} changed by the last run` } : undefined;
    this.tree.description = runId ? `last run · ${files.length} file${files.length === 1 ? '' : 's'}` : undefined;
    this.changed.fire();
  }

  /** Asks the daemon for the shown session's last run that changed files. */
  async refresh(): Promise<void> {
    const client = this.controller.client;
    const sessionId = this.sessionId;
    if (!sessionId || !client?.isRunning()) { this.show(null, []); return; }
    try {
      const r = await client.sendRequest<RunChangesResult>(Methods.runChanges, { sessionId });
      if (this.sessionId === sessionId) this.show(r.runId, r.files);
    } catch (e) {
      this.controller.output.appendLine(`agent/runChanges failed: ${e instanceof Error ? e.message : String(e)}`);
      this.show(null, []);
    }
  }

  /** VS Code's diff editor: the file before the run (rebuilt from the diff) ↔ the file now. */
  async open(c: FileChange): Promise<void> {
    const client = requireClient(this.controller);
    const sessionId = this.sessionId;
    if (!client || !sessionId) return;
    // The list's diffs are empty (changes_update): ask for this run's diff against the text now.
    const r = await client.sendRequest<RunChangesResult>(Methods.runChanges, this.runId ? { sessionId, runId: this.runId } : { sessionId });
    const fresh = r.files.find((f) => f.path === c.path) ?? c;
    const uri = vscode.Uri.file(c.path);
    if (fresh.diff === '') {
      void vscode.window.showInformationMessage(`${relative(c.path)}: ${fresh.reason ?? 'no difference from before the run'}.`);
      if (fresh.change !== 'deleted') await vscode.window.showTextDocument(uri, { preview: true });
      return;
    }
    const now = fresh.change === 'deleted' ? '' : await currentText(uri);
    let before: string;
    try {
      before = beforeFromDiff(fresh.diff, now);
    } catch (e) {
      if (!(e instanceof DiffApplyError)) throw e;
      await showUnifiedDiff(fresh.diff); // the text moved on since the diff was made
      return;
    }
    const key = `run-${(this.runId ?? 'last').slice(0, 13)}`;
    const left = this.controller.snapshots.put(`${key}-before`, uri, before);
    const right = fresh.change === 'deleted' ? this.controller.snapshots.put(`${key}-deleted`, uri, '') : uri;
    await showDiff(left, right, `${relative(c.path)} (before the run ↔ now)`);
  }

  /** Reverts the shown run, or only `file` of it. */
  async revert(file?: FileChange): Promise<void> {
    const sessionId = this.sessionId;
    if (!sessionId) return;
    if (!this.runId) { void vscode.window.showInformationMessage('No run of this session has changed files.'); return; }
    const params: RevertParams = { sessionId, runId: this.runId };
    if (file) params.paths = [file.path];
    await revertAsking(this.controller, params);
    await this.refresh();
  }

  /** The file a "Revert This File" from the palette means: the selected one, else a pick. */
  async pickFile(): Promise<FileChange | undefined> {
    if (this.tree.selection[0]) return this.tree.selection[0];
    if (this.files.length === 0) { void vscode.window.showInformationMessage('The last run changed no files.'); return undefined; }
    const pick = await vscode.window.showQuickPick(this.files.map((f) => ({ label: relative(f.path), description: f.change, file: f })), { title: 'Revert which file?' });
    return pick?.file;
  }

  dispose(): void {
    this.subscriptions.forEach((d) => d.dispose());
    this.changed.dispose();
  }
}

function requireClient(c: Controller): LanguageClient | undefined {
  if (c.client?.isRunning()) return c.client;
  void vscode.window.showErrorMessage(c.status.message ?? 'The agent daemon is not running.');
  return undefined;
}

/**
 * `agent/revert`, then, when files changed since the agent changed them, asks whether to
 * overwrite those too (a second call with `force` limited to them). Returns the first call's
 * result (its `fork`, if any), or undefined when the revert failed.
 */
async function revertAsking(c: Controller, params: RevertParams): Promise<RevertResult | undefined> {
  const client = requireClient(c);
  if (!client) return undefined;
  let first: RevertResult;
  try {
    first = await client.sendRequest<RevertResult>(Methods.revert, params);
  } catch (e) {
    void vscode.window.showErrorMessage(`Revert failed: ${e instanceof Error ? e.message : String(e)}`);
    return undefined;
  }
  let result = first;
  if (first.conflicts.length > 0) {
    const choice = await vscode.window.showWarningMessage(conflictQuestion(first, relative), 'Revert Anyway', 'Keep Them');
    if (choice === 'Revert Anyway') {
      const { fork: _fork, ...rest } = params;
      const forced = await client.sendRequest<RevertResult>(Methods.revert, { ...rest, paths: first.conflicts.map((x) => x.path), force: true });
      result = { reverted: [...first.reverted, ...forced.reverted], conflicts: forced.conflicts, skipped: [...first.skipped, ...forced.skipped] };
    }
  }
  const summary = revertSummary(result, relative);
  if (summary) void vscode.window.showInformationMessage(summary);
  return first;
}

/**
 * "Restore to Here" on a user message: reverts every run since it, and on request rewinds the
 * conversation too (`fork: true`): the chat then shows the fork, with the message back in the input.
 */
export async function restoreToMessage(c: Controller, view: ChangesView, messageId: string): Promise<void> {
  const sessionId = c.sessionId;
  if (!sessionId || !messageId) return;
  const picked = await vscode.window.showQuickPick([
    { label: 'Restore Files', detail: 'Revert the files the agent changed since this message; the conversation stays.', fork: false },
    { label: 'Restore Files and Conversation', detail: 'Also continue in a new session holding the conversation before this message.', fork: true },
  ], { title: 'Restore to here', placeHolder: 'What to restore to before this message' });
  if (!picked) return;
  const r = await revertAsking(c, picked.fork ? { sessionId, messageId, fork: true } : { sessionId, messageId });
  if (r?.fork) {
    await c.loadSession(r.fork.sessionId);
    if (r.fork.text) c.fillInput(r.fork.text);
  }
  await view.refresh();
}

export function registerReview(context: vscode.ExtensionContext, c: Controller): ChangesView {
  const view = new ChangesView(c);
  context.subscriptions.push(
    view,
    vscode.commands.registerCommand('agentLsp.showChanges', () => vscode.commands.executeCommand(`${CHANGES_VIEW_ID}.focus`)),
    vscode.commands.registerCommand('agentLsp.refreshChanges', () => view.refresh()),
    vscode.commands.registerCommand('agentLsp.openChange', (f?: FileChange) => (f ? view.open(f) : undefined)),
    vscode.commands.registerCommand('agentLsp.revertRun', () => view.revert()),
    vscode.commands.registerCommand('agentLsp.revertFile', async (f?: FileChange) => {
      const file = f ?? await view.pickFile();
      if (file) await view.revert(file);
    }),
    vscode.commands.registerCommand('agentLsp.restoreToMessage', (messageId: string) => restoreToMessage(c, view, messageId)),
  );
  return view;
}
