/**
 * The side-bar chat: a webview view whose HTML loads the bundled `dist/webview.js` and
 * `media/chat.css` under a strict content security policy, and routes its messages to the
 * controller.
 */

import * as vscode from 'vscode';
import type { Controller } from './controller';
import type { HostToView, ViewToHost } from './shared/messages';

export const CHAT_VIEW_ID = 'agentLsp.chat';

function nonce(): string {
  const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let s = '';
  for (let i = 0; i < 32; i++) s += chars.charAt(Math.floor(Math.random() * chars.length));
  return s;
}

export class ChatViewProvider implements vscode.WebviewViewProvider {
  private view: vscode.WebviewView | undefined;

  constructor(private readonly extensionUri: vscode.Uri, private readonly controller: Controller) {}

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    const webview = view.webview;
    webview.options = { enableScripts: true, localResourceRoots: [vscode.Uri.joinPath(this.extensionUri, 'dist'), vscode.Uri.joinPath(this.extensionUri, 'media')] };
    webview.html = this.html(webview);
    webview.onDidReceiveMessage((m: ViewToHost) => this.onMessage(m));
    view.onDidDispose(() => { if (this.view === view) { this.view = undefined; this.controller.detachView(); } });
  }

  /** Shows the chat; `preserveFocus` keeps the keyboard where the user is typing. */
  reveal(preserveFocus = true): void {
    if (this.view) {
      this.view.show(preserveFocus);
      if (!preserveFocus) void this.view.webview.postMessage({ type: 'focusInput' } satisfies HostToView);
    } else {
      void vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
    }
  }

  private post(m: HostToView): void { void this.view?.webview.postMessage(m); }

  private onMessage(m: ViewToHost): void {
    const c = this.controller;
    switch (m.type) {
      case 'ready': c.attachView((msg) => this.post(msg)); break;
      case 'send': void c.send(m.mode, m.text); break;
      case 'abort': void c.abort(); break;
      case 'approve': c.answerApproval(m.requestId, m.decision, m.reason, m.scope); break;
      case 'openDiff': void c.openToolDiff(m.toolCallId); break;
      case 'approvalDiff': void c.openApprovalDiff(m.requestId); break;
      case 'openLocation': void c.openLocation(m.path, m.line, m.column); break;
      case 'removeQueued': void c.removeQueued(m.queue, m.index); break;
      case 'removeContext': c.removeContext(m.index); break;
      case 'restore': void vscode.commands.executeCommand('agentLsp.restoreToMessage', m.messageId); break;
      case 'fork': void vscode.commands.executeCommand('agentLsp.forkFromMessage', m.messageId); break;
      case 'complete': void c.complete(m.requestId, m.kind, m.query); break;
      case 'attachFile': void c.attachFile(m.path); break;
      case 'attachImage': c.attachImage(m.name, m.mimeType, m.data); break;
      case 'watchJob': c.jobs.watch(m.jobId, m.open); break;
      case 'killJob': void c.jobs.kill(m.jobId); break;
      case 'command':
        if (m.command === 'openSettings') void vscode.commands.executeCommand('workbench.action.openSettings', 'agentLsp.serverPath');
        else void vscode.commands.executeCommand(`agentLsp.${m.command}`);
        break;
    }
  }

  private html(webview: vscode.Webview): string {
    const n = nonce();
    const script = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, 'dist', 'webview.js'));
    const style = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, 'media', 'chat.css'));
    return `<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${webview.cspSource}; script-src 'nonce-${n}'; img-src ${webview.cspSource} data:;">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${style}"><title>Agent</title></head>
<body data-running="false" data-connection="starting">
<div id="banner" class="banner" hidden></div>
<div id="plan" class="plan" aria-label="The agent's plan" hidden></div>
<div id="jobs" class="jobs" aria-label="Background jobs" hidden></div>
<div id="transcript" class="transcript" aria-live="polite">
  <div id="empty" class="empty"><div class="empty-title">Ask the agent</div><div class="empty-hint">Enter sends · Shift+Enter new line · / commands · @ files · paste an image<br>While it works: Enter steers · Alt+Enter queues a follow-up · Esc stops</div></div>
</div>
<div id="queue" class="queue" hidden></div>
<div class="composer">
  <div id="contexts" class="contexts"></div>
  <ul id="completions" class="completions" role="listbox" hidden></ul>
  <textarea id="input" rows="2" placeholder="Ask the agent…" aria-label="Message the agent"></textarea>
  <div class="composer-row">
    <span class="meta"><span id="state" class="state">starting</span></span>
    <span class="buttons">
      <button id="stop" class="danger" title="Stop (Esc)" hidden>Stop</button>
      <button id="followup" title="Queue as follow-up (Alt+Enter)" hidden>Follow up</button>
      <button id="send" class="primary" title="Send (Enter)">Send</button>
    </span>
  </div>
  <div id="usage" class="usage"></div>
</div>
<script nonce="${n}" src="${script}"></script>
</body></html>`;
  }
}
