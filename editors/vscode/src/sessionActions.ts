/**
 * Session commands beyond switching (protocol.md §3.12): "Fork from Here" on a user message
 * (`agent/forkSession`: a new session with the conversation before it, the message's text back
 * in the input) and "Rename Session" (`agent/renameSession`).
 */

import * as vscode from 'vscode';
import type { Controller } from './controller';
import { type ForkSessionResult, type ListSessionsResult, Methods } from './protocol';

async function forkFromMessage(c: Controller, messageId: string): Promise<void> {
  const client = c.client;
  const sessionId = c.sessionId;
  if (!client?.isRunning() || !sessionId || !messageId) return;
  try {
    const r = await client.sendRequest<ForkSessionResult>(Methods.forkSession, { sessionId, messageId });
    await c.loadSession(r.sessionId);
    if (r.text) c.fillInput(r.text);
  } catch (e) {
    c.reportError(e);
  }
}

/** The shown session's title as the session list has it (its name, else its first prompt). */
async function currentTitle(c: Controller, sessionId: string): Promise<string> {
  try {
    const r = await c.client?.sendRequest<ListSessionsResult>(Methods.listSessions, {});
    return r?.sessions.find((s) => s.sessionId === sessionId)?.title ?? '';
  } catch {
    return '';
  }
}

async function renameSession(c: Controller): Promise<void> {
  const client = c.client;
  const sessionId = c.sessionId;
  if (!client?.isRunning()) { void vscode.window.showErrorMessage(c.status.message ?? 'The agent daemon is not running.'); return; }
  if (!sessionId) { void vscode.window.showInformationMessage('Send a prompt first: there is no session to rename yet.'); return; }
  const name = await vscode.window.showInputBox({
    title: 'Agent: Rename Session', value: await currentTitle(c, sessionId), ignoreFocusOut: true,
    prompt: 'The name Switch Session shows for this session',
  });
  if (name === undefined) return;
  if (name.trim() === '') { void vscode.window.showInformationMessage('A session name cannot be empty.'); return; }
  try {
    await client.sendRequest(Methods.renameSession, { sessionId, name: name.trim() });
  } catch (e) {
    c.reportError(e);
  }
}

export function registerSessionActions(context: vscode.ExtensionContext, c: Controller): void {
  context.subscriptions.push(
    vscode.commands.registerCommand('agentLsp.forkFromMessage', (messageId: string) => forkFromMessage(c, messageId)),
    vscode.commands.registerCommand('agentLsp.renameSession', () => renameSession(c)),
  );
}
