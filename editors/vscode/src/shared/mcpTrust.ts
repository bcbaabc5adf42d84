/**
 * The trust question for a project's `.mcp.json` (protocol.md §3.10) in words: the project, each
 * server with its command line, and what changed since the user's last answer. Pure: unit-tested.
 */

import type { BeforeToolCallParams, McpTrustArgs } from '../protocol';

/** The daemon's request to start a project's `.mcp.json` servers (§3.10). */
export function isMcpTrustRequest(p: BeforeToolCallParams): boolean {
  return p.toolName === 'mcp_servers' && p.runId === '';
}

/** The question's `args`, with every field checked (a missing one is empty). */
export function mcpTrustArgs(p: BeforeToolCallParams): McpTrustArgs {
  const a = (p.args ?? {}) as Partial<McpTrustArgs>;
  const servers = Array.isArray(a.servers) ? a.servers.filter((s) => s && typeof s.name === 'string') : [];
  const changes = Array.isArray(a.changes) ? a.changes.filter((c): c is string => typeof c === 'string' && c !== '') : [];
  return { project: typeof a.project === 'string' ? a.project : '', servers, changes };
}

/** The modal's text: the project, each server and its command line, and what changed. */
export function mcpTrustText(p: BeforeToolCallParams): { message: string; detail: string } {
  const { project, servers, changes = [] } = mcpTrustArgs(p);
  const changed = changes.length > 0 ? `\n\nChanged since your last answer:\n${changes.map((c) => `• ${c}`).join('\n')}` : '';
  return {
    message: `Start the MCP servers of ${project}/.mcp.json?${changes.length > 0 ? ' (changed since your last answer)' : ''}`,
    detail: `This project's .mcp.json starts ${servers.length === 1 ? 'this program' : 'these programs'} on your machine:\n\n${servers.map((s) => `• ${s.name}: ${s.command}`).join('\n')}${changed}\n\nYour answer is remembered for this project until the file's servers change. After Don't Allow, the unlock button of a server in MCP Servers asks again.`,
  };
}
