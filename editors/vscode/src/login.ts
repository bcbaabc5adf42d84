/**
 * "Agent: Log In": `agent-lsp login` in a terminal, with the daemon's binary and environment:
 * the user picks a provider and pastes its key (echo off); the daemon stores it for the user
 * (readable only by them, hidden from sandboxed commands) and new sessions use it.
 */
import * as vscode from 'vscode';
import { BinaryMissingError, daemonBinary, readConfig } from './client';

export function runLogin(output: vscode.OutputChannel, extensionPath: string): vscode.Terminal | undefined {
  const config = readConfig();
  let command: string;
  try {
    ({ command } = daemonBinary(config, extensionPath));
  } catch (e) {
    if (!(e instanceof BinaryMissingError)) throw e;
    output.appendLine(`agent-lsp login: ${e.message}`);
    void vscode.window.showErrorMessage(`agent-lsp: ${e.message}`);
    return undefined;
  }
  const terminal = vscode.window.createTerminal({
    name: 'agent-lsp login',
    shellPath: command,
    shellArgs: ['login'],
    env: config.env,
    cwd: config.cwd,
  });
  terminal.show(false);
  return terminal;
}
