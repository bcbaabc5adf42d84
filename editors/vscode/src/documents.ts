/**
 * The editor side of the agent's file work: answers `agent/saveDocuments` by saving the open
 * documents, and forwards VS Code's diagnostics of documents the agent touched
 * (`agent/diagnostics`), so the model can see the errors its edits caused.
 */

import * as vscode from 'vscode';
import type { LanguageClient } from 'vscode-languageclient/node';
import { type DiagnosticsParams, Methods, type SaveDocumentsParams, type SaveDocumentsResult } from './protocol';

function sameUri(a: vscode.Uri, b: string): boolean {
  if (a.toString() === b) return true;
  try {
    const u = vscode.Uri.parse(b);
    return u.scheme === a.scheme && u.fsPath === a.fsPath;
  } catch {
    return false;
  }
}

export async function saveDocuments(params: SaveDocumentsParams): Promise<SaveDocumentsResult> {
  const saved: string[] = [];
  for (const uri of params?.uris ?? []) {
    const doc = vscode.workspace.textDocuments.find((d) => sameUri(d.uri, uri));
    // A document that is not open has nothing unsaved: the server wrote the disk already.
    if (!doc) continue;
    if (!doc.isDirty || await doc.save()) saved.push(uri);
  }
  return { saved };
}

/** Sends diagnostics for touched documents now and whenever they change (debounced). */
export class DiagnosticsForwarder implements vscode.Disposable {
  private readonly touched = new Set<string>();
  private readonly pending = new Set<string>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly sub: vscode.Disposable;

  constructor(private readonly client: () => LanguageClient | undefined, private readonly enabled: () => boolean) {
    this.sub = vscode.languages.onDidChangeDiagnostics((e) => {
      for (const uri of e.uris) if (this.touched.has(uri.toString())) this.pending.add(uri.toString());
      this.schedule();
    });
  }

  touch(uri: vscode.Uri): void {
    const key = uri.toString();
    if (!this.touched.has(key)) {
      this.touched.add(key);
      this.pending.add(key);
      this.schedule();
    }
  }

  private schedule(): void {
    if (this.pending.size === 0 || this.timer) return;
    this.timer = setTimeout(() => { this.timer = undefined; void this.flush(); }, 300);
  }

  private async flush(): Promise<void> {
    const client = this.client();
    const uris = [...this.pending];
    this.pending.clear();
    if (!client || !client.isRunning() || !this.enabled()) return;
    for (const key of uris) {
      const uri = vscode.Uri.parse(key);
      const diagnostics = await client.code2ProtocolConverter.asDiagnostics(vscode.languages.getDiagnostics(uri));
      const params: DiagnosticsParams = { uri: key, diagnostics: diagnostics as DiagnosticsParams['diagnostics'] };
      await client.sendNotification(Methods.diagnostics, params).catch(() => undefined);
    }
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    this.sub.dispose();
  }
}
