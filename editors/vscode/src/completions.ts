/**
 * Answers the chat input's completion requests: `/` from `agent/listCommands` (built-ins,
 * prompt templates, skills, MCP prompts; kept current by `commands_update`, protocol.md §3.14)
 * and `@` from the workspace's files (workspaceFiles.ts).
 */

import type { LanguageClient } from 'vscode-languageclient/node';
import { type AgentEventParams, type CommandInfo, Methods } from './protocol';
import { commandCompletions, type CompletionItem, type CompletionKind, fileCompletions } from './shared/completion';
import { WorkspaceFiles } from './workspaceFiles';

/** The built-ins, for a chat that has no session yet (the daemon lists them per session). */
const BUILTIN: CommandInfo[] = [
  { name: 'compact', description: 'Summarize the conversation so far to free context', source: 'builtin', argumentHint: '[instructions]' },
  { name: 'model', description: 'Show the model, or switch to another', source: 'builtin', argumentHint: '[provider/id]' },
];

export class ChatCompletions {
  private commands: { sessionId: string; list: CommandInfo[] } | undefined;
  readonly files = new WorkspaceFiles();

  constructor(private readonly client: () => LanguageClient | undefined, private readonly sessionId: () => string | undefined) {}

  onEvent(p: AgentEventParams): void {
    if (p.event.type === 'commands_update') this.commands = { sessionId: p.sessionId, list: p.event.commands };
  }

  async complete(kind: CompletionKind, query: string): Promise<CompletionItem[]> {
    if (kind === 'file') return fileCompletions(query, await this.files.list());
    return commandCompletions(query, await this.commandList());
  }

  private async commandList(): Promise<CommandInfo[]> {
    const sessionId = this.sessionId();
    const client = this.client();
    if (!sessionId || !client?.isRunning()) return BUILTIN;
    if (this.commands?.sessionId === sessionId) return this.commands.list;
    try {
      const r = await client.sendRequest<{ commands: CommandInfo[] }>(Methods.listCommands, { sessionId });
      this.commands = { sessionId, list: r.commands };
      return r.commands;
    } catch {
      return BUILTIN;
    }
  }
}
