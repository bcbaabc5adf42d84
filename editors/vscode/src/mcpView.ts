/**
 * MCP in VS Code's idiom (protocol.md §3.10): a tree view "MCP Servers" in the Agent container,
 * one node per server of the shown session (state icon, error, its tools as children), read
 * with `agent/mcpStatus` and updated live by `mcp_update` events; and the trust prompt for a
 * project's `.mcp.json` as a modal dialog naming each server, its command line and what changed
 * since the last answer (`shared/mcpTrust.ts`), which a server not allowed for the project can
 * ask again (its unlock action, "Trust…", `agent/mcpAskTrust`).
 */

import * as vscode from 'vscode';
import type { LanguageClient } from 'vscode-languageclient/node';
import { ResponseError } from 'vscode-languageclient/node';
import {
  type AgentEventParams, type BeforeToolCallParams, type BeforeToolCallResult, type McpAskTrustResult,
  type McpServerStatus, type McpStatusResult, Methods,
} from './protocol';
import { mcpTrustText } from './shared/mcpTrust';

export const MCP_VIEW_ID = 'agentLsp.mcp';

type Node = { kind: 'server'; server: McpServerStatus } | { kind: 'tool'; server: string; tool: string } | { kind: 'error'; text: string };

const STATE_ICON: Record<McpServerStatus['state'], string> = {
  starting: 'loading~spin', ready: 'pass', failed: 'error', disabled: 'circle-slash', untrusted: 'shield',
};
const STATE_TEXT: Record<McpServerStatus['state'], string> = {
  starting: 'starting', ready: 'ready', failed: 'failed', disabled: 'disabled', untrusted: 'not allowed for this project',
};

export class McpServersView implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  private servers: McpServerStatus[] = [];
  private sessionId: string | undefined;
  private readonly changed = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly tree: vscode.TreeView<Node>;

  constructor(private readonly client: () => LanguageClient | undefined, private readonly currentSession: () => string | undefined) {
    this.tree = vscode.window.createTreeView(MCP_VIEW_ID, { treeDataProvider: this, showCollapseAll: true });
    this.updateMessage();
  }

  /** The shown session changed (or the daemon restarted): read its servers again. */
  async refresh(): Promise<void> {
    const sessionId = this.currentSession();
    const client = this.client();
    this.sessionId = sessionId;
    if (!sessionId || !client?.isRunning()) { this.show([]); return; }
    try {
      const r = await client.sendRequest<McpStatusResult>(Methods.mcpStatus, { sessionId });
      if (this.sessionId === sessionId) this.show(r.servers);
    } catch {
      this.show([]);
    }
  }

  /** The user asks to be asked again about the project's servers: the daemon's trust prompt follows. */
  async askTrust(): Promise<void> {
    const sessionId = this.sessionId;
    const client = this.client();
    if (!sessionId || !client?.isRunning()) return;
    try {
      const r = await client.sendRequest<McpAskTrustResult>(Methods.mcpAskTrust, { sessionId });
      if (!r.asked) void vscode.window.showInformationMessage('No MCP server of this project waits to be allowed.');
    } catch (e) {
      void vscode.window.showErrorMessage(`agent-lsp: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  onEvent(p: AgentEventParams): void {
    if (p.event.type !== 'mcp_update') return;
    if (this.sessionId !== undefined && p.sessionId !== this.sessionId) return;
    this.sessionId = p.sessionId;
    this.show(p.event.servers);
  }

  private show(servers: McpServerStatus[]): void {
    this.servers = servers;
    this.updateMessage();
    this.changed.fire(undefined);
  }

  private updateMessage(): void {
    this.tree.message = this.servers.length > 0 ? undefined
      : this.sessionId ? 'This session has no MCP servers (mcp.json, the project\'s .mcp.json or initializationOptions.mcpServers).'
        : 'No session yet: MCP servers start with the first session.';
    const ready = this.servers.filter((s) => s.state === 'ready').length;
    this.tree.description = this.servers.length ? `${ready}/${this.servers.length} ready` : undefined;
  }

  getChildren(node?: Node): Node[] {
    if (!node) return this.servers.map((server) => ({ kind: 'server', server }));
    if (node.kind !== 'server') return [];
    const s = node.server;
    const errors: Node[] = s.error ? [{ kind: 'error', text: s.error }] : [];
    return [...errors, ...s.tools.map((tool) => ({ kind: 'tool' as const, server: s.name, tool }))];
  }

  getTreeItem(node: Node): vscode.TreeItem {
    if (node.kind === 'error') {
      const item = new vscode.TreeItem(node.text, vscode.TreeItemCollapsibleState.None);
      item.iconPath = new vscode.ThemeIcon('warning');
      item.tooltip = node.text;
      return item;
    }
    if (node.kind === 'tool') {
      const item = new vscode.TreeItem(node.tool, vscode.TreeItemCollapsibleState.None);
      item.iconPath = new vscode.ThemeIcon('tools');
      item.description = `${node.server}__${node.tool}`;
      return item;
    }
    const s = node.server;
    const expandable = s.tools.length > 0 || s.error !== undefined;
    const item = new vscode.TreeItem(s.name, expandable ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None);
    // The state in the id: VS Code keeps an item's collapsed state by id, so a server first shown
    // without children (starting, not allowed) would stay collapsed once its tools arrive.
    item.id = `mcp-${s.name}-${s.state}`;
    item.iconPath = new vscode.ThemeIcon(STATE_ICON[s.state]);
    item.description = `${STATE_TEXT[s.state]}${s.state === 'ready' ? ` · ${s.tools.length} tool${s.tools.length === 1 ? '' : 's'}` : ''}`;
    item.tooltip = `${s.name}: ${STATE_TEXT[s.state]}${s.error ? `\n${s.error}` : ''}`;
    item.contextValue = `mcpServer.${s.state}`;
    return item;
  }

  dispose(): void {
    this.tree.dispose();
    this.changed.dispose();
  }
}

/**
 * Asks with a modal dialog. Allow starts them, Don't Allow keeps them stopped (both remembered
 * by the daemon); closing the dialog answers with an error, which leaves them stopped without
 * remembering, so the next session asks again.
 */
export async function askMcpTrust(p: BeforeToolCallParams): Promise<BeforeToolCallResult> {
  const { message, detail } = mcpTrustText(p);
  const choice = await vscode.window.showWarningMessage(message, { modal: true, detail }, 'Allow', "Don't Allow");
  if (choice === 'Allow') return { decision: 'allow' };
  if (choice === "Don't Allow") return { decision: 'block', reason: 'The user did not allow the project\'s MCP servers' };
  throw new ResponseError(-32800, 'The user closed the MCP trust prompt without answering');
}
