/**
 * "Follow the agent" (`agentLsp.followAgent`, default off): when a tool call of the shown
 * session starts reading (`read`), editing (`edit`, `write`) or asking the language servers
 * about (`lsp_*`) a file, the editor shows that file and its line, without taking the focus from
 * the chat input (`preserveFocus`), in a preview tab the next followed file replaces. An edit's
 * range is revealed once it lands: the document change that arrives while the call runs.
 */

import * as vscode from 'vscode';
import { resolveToolUri } from './diffs';
import type { AgentEvent } from './protocol';
import { changedRange, followTarget, symbolColumn } from './shared/follow';

export function followEnabled(): boolean {
  return vscode.workspace.getConfiguration('agentLsp').get<boolean>('followAgent') === true;
}

export class FollowAgent implements vscode.Disposable {
  /** Edit calls still running, by id: the document whose next change is revealed. */
  private readonly editing = new Map<string, string>();
  private readonly subs: vscode.Disposable[];

  constructor(private readonly cwd: () => string | undefined, private readonly log: (line: string) => void) {
    this.subs = [
      vscode.workspace.onDidChangeTextDocument((e) => this.onChange(e)),
      vscode.workspace.onDidChangeConfiguration((e) => {
        // Said in the log so one can see (and the e2e test wait for) the setting taking effect.
        if (e.affectsConfiguration('agentLsp.followAgent')) this.log(`Follow the agent: ${followEnabled() ? 'on' : 'off'}`);
      }),
    ];
  }

  /** A `$/agentEvent` of the shown session (a subagent's tool calls are followed too). */
  onEvent(ev: AgentEvent): void {
    if (ev.type === 'subagent_event') { this.onEvent(ev.event); return; }
    if (ev.type === 'tool_execution_end') { this.editing.delete(ev.toolCallId); return; }
    if (ev.type !== 'tool_execution_start' || !followEnabled()) return;
    const target = followTarget(ev.toolName, ev.args);
    if (!target) return;
    const uri = resolveToolUri(target.path, this.cwd());
    if (target.kind === 'edit') this.editing.set(ev.toolCallId, uri.toString());
    void this.show(uri, target.line, target.column, target.symbol).catch((e: unknown) => {
      // A file the call creates does not exist yet; its edit is shown when it lands.
      this.log(`Follow the agent: cannot show ${target.path}: ${e instanceof Error ? e.message : String(e)}`);
    });
  }

  private async show(uri: vscode.Uri, line?: number, column?: number, symbol?: string): Promise<void> {
    const doc = await vscode.workspace.openTextDocument(uri);
    let selection: vscode.Range | undefined;
    if (line !== undefined && doc.lineCount > 0) {
      const l = Math.min(line, doc.lineCount - 1);
      const text = doc.lineAt(l).text;
      const at = symbol ? symbolColumn(text, symbol, column) : undefined;
      const start = at ?? Math.min(column ?? 0, text.length);
      selection = new vscode.Range(l, start, l, at !== undefined && symbol ? at + symbol.length : start);
    }
    await this.reveal(doc, selection);
  }

  private async reveal(doc: vscode.TextDocument, selection: vscode.Range | undefined): Promise<void> {
    const editor = await vscode.window.showTextDocument(doc, { preserveFocus: true, preview: true, ...(selection ? { selection } : {}) });
    if (selection) editor.revealRange(selection, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
  }

  private onChange(e: vscode.TextDocumentChangeEvent): void {
    if (this.editing.size === 0 || e.contentChanges.length === 0) return;
    const key = e.document.uri.toString();
    if (![...this.editing.values()].includes(key) || !followEnabled()) return;
    const r = changedRange(e.contentChanges);
    if (!r) return;
    void this.reveal(e.document, new vscode.Range(r.start.line, r.start.character, r.end.line, r.end.character)).catch(() => undefined);
  }

  dispose(): void {
    for (const s of this.subs) s.dispose();
    this.editing.clear();
  }
}
