/**
 * Entry point: activates the chat view, the commands and the daemon connection.
 */

import * as vscode from 'vscode';
import { CHAT_VIEW_ID, ChatViewProvider } from './chatView';
import { Controller } from './controller';
import { runDoctor } from './doctor';
import { runLogin } from './login';
import { DIFF_SCHEME } from './diffs';
import { registerReview } from './review';
import { registerSessionActions } from './sessionActions';
import { type ContextItem, selectionLines } from './shared/context';
import { RESTART_SETTINGS } from './shared/settings';

let controller: Controller | undefined;

function relative(uri: vscode.Uri): string {
  return vscode.workspace.asRelativePath(uri, false);
}

async function ask(title: string, placeHolder: string): Promise<string | undefined> {
  const text = await vscode.window.showInputBox({ title, placeHolder, ignoreFocusOut: true });
  return text && text.trim() !== '' ? text : undefined;
}

function selectionContext(editor: vscode.TextEditor): ContextItem | undefined {
  const sel = editor.selection;
  const doc = editor.document;
  if (sel.isEmpty) return undefined;
  const lines = selectionLines(sel.start.line, sel.end.line, sel.end.character);
  return { path: relative(doc.uri), ...lines, text: doc.getText(sel), languageId: doc.languageId };
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel('agent-lsp');
  const c = new Controller(output, context.extensionPath);
  controller = c;
  const chat = new ChatViewProvider(context.extensionUri, c);
  c.revealView = () => chat.reveal();
  context.subscriptions.push(
    output, c,
    vscode.window.registerWebviewViewProvider(CHAT_VIEW_ID, chat, { webviewOptions: { retainContextWhenHidden: true } }),
    vscode.workspace.registerTextDocumentContentProvider(DIFF_SCHEME, c.snapshots),
    vscode.commands.registerCommand('agentLsp.openChat', () => chat.reveal(false)),
    vscode.commands.registerCommand('agentLsp.prompt', async () => {
      const text = await ask('Agent: Prompt', c.running ? 'The agent is running: this steers it' : 'What should the agent do?');
      if (text) await c.send(c.running ? 'steer' : 'prompt', text);
    }),
    vscode.commands.registerCommand('agentLsp.steer', async () => {
      const text = await ask('Agent: Steer', 'Delivered after the current tool call');
      if (text) await c.send('steer', text);
    }),
    vscode.commands.registerCommand('agentLsp.followUp', async () => {
      const text = await ask('Agent: Follow Up', 'Delivered when the agent would stop');
      if (text) await c.send('followUp', text);
    }),
    vscode.commands.registerCommand('agentLsp.abort', () => c.abort()),
    vscode.commands.registerCommand('agentLsp.newSession', () => c.newSession()),
    vscode.commands.registerCommand('agentLsp.switchSession', () => c.switchSession()),
    vscode.commands.registerCommand('agentLsp.switchModel', () => c.controls.pickModel()),
    vscode.commands.registerCommand('agentLsp.setThinkingLevel', () => c.controls.pickThinkingLevel()),
    vscode.commands.registerCommand('agentLsp.compact', async () => {
      const instructions = await vscode.window.showInputBox({
        title: 'Agent: Compact', ignoreFocusOut: true,
        prompt: 'Replaces the older conversation by a summary. What should the summary keep? (optional; Enter for none)',
      });
      if (instructions !== undefined) await c.compact(instructions.trim() || undefined);
    }),
    vscode.commands.registerCommand('agentLsp.refreshMcp', () => c.mcp.refresh()),
    vscode.commands.registerCommand('agentLsp.mcpAskTrust', () => c.mcp.askTrust()),
    vscode.commands.registerCommand('agentLsp.showSandboxStatus', () => c.showSandboxStatus()),
    vscode.commands.registerCommand('agentLsp.showJobs', () => c.jobs.show()),
    vscode.commands.registerCommand('agentLsp.restart', () => c.restart()),
    vscode.commands.registerCommand('agentLsp.doctor', () => runDoctor(output, context.extensionPath)),
    vscode.commands.registerCommand('agentLsp.login', () => { runLogin(output, context.extensionPath); }),
    vscode.commands.registerCommand('agentLsp.addSelection', () => {
      const editor = vscode.window.activeTextEditor;
      const item = editor && selectionContext(editor);
      if (!item) { void vscode.window.showInformationMessage('Select some text in an editor first.'); return; }
      c.addContext(item);
    }),
    vscode.commands.registerCommand('agentLsp.addFile', async (uri?: vscode.Uri) => {
      let target = uri instanceof vscode.Uri ? uri : vscode.window.activeTextEditor?.document.uri;
      if (!target) {
        const picked = await vscode.window.showOpenDialog({ canSelectMany: false, openLabel: 'Add to prompt' });
        target = picked?.[0];
      }
      if (!target) return;
      const doc = await vscode.workspace.openTextDocument(target);
      c.addContext({ path: relative(target), text: doc.getText(), languageId: doc.languageId });
    }),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (RESTART_SETTINGS.some((k) => e.affectsConfiguration(`agentLsp.${k}`))) void c.restart();
    }),
  );
  registerReview(context, c);
  registerSessionActions(context, c);
  await c.start();
}

export async function deactivate(): Promise<void> {
  const c = controller;
  controller = undefined;
  await c?.client?.stop().catch(() => undefined);
}

