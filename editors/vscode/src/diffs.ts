/**
 * VS Code diff views for the agent's edits: a read-only content provider serves snapshots
 * ("before" texts captured when an edit tool starts, "proposed" texts computed for approvals), and
 * `vscode.diff` shows them against the real file.
 */

import * as path from 'node:path';
import * as vscode from 'vscode';

export const DIFF_SCHEME = 'agent-lsp-diff';

export class SnapshotStore implements vscode.TextDocumentContentProvider {
  private readonly texts = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  /** Stores a text and returns a URI whose file name keeps the original extension (for highlighting). */
  put(key: string, file: vscode.Uri, text: string): vscode.Uri {
    const uri = vscode.Uri.from({ scheme: DIFF_SCHEME, path: `/${key}/${path.basename(file.fsPath)}` });
    this.texts.set(uri.toString(), text);
    this.changed.fire(uri);
    return uri;
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? '';
  }

  dispose(): void { this.changed.dispose(); this.texts.clear(); }
}

/** The current text of a file: the open buffer (unsaved edits included) or the disk; '' if absent. */
export async function currentText(uri: vscode.Uri): Promise<string> {
  const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
  if (doc) return doc.getText();
  try {
    return new TextDecoder().decode(await vscode.workspace.fs.readFile(uri));
  } catch {
    return '';
  }
}

/** Resolves a tool's `path` argument against the session's working directory. */
export function resolveToolUri(p: string, cwd: string | undefined): vscode.Uri {
  if (p.startsWith('file://')) return vscode.Uri.parse(p);
  return vscode.Uri.file(path.isAbsolute(p) || !cwd ? p : path.join(cwd, p));
}

export async function showDiff(left: vscode.Uri, right: vscode.Uri, title: string): Promise<void> {
  await vscode.commands.executeCommand('vscode.diff', left, right, title, { preview: true });
}

/** Shows a unified diff as a read-only document when no side-by-side view can be built. */
export async function showUnifiedDiff(diff: string): Promise<void> {
  const doc = await vscode.workspace.openTextDocument({ content: diff, language: 'diff' });
  await vscode.window.showTextDocument(doc, { preview: true });
}
