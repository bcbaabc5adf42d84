/**
 * "Agent: Run Doctor": `agent-lsp doctor` for the workspace, run as the daemon runs (the same
 * binary, environment and folder), its report written to the agent-lsp output channel.
 */
import * as vscode from 'vscode';
import { execFile } from 'child_process';
import { BinaryMissingError, daemonBinary, readConfig } from './client';

export async function runDoctor(output: vscode.OutputChannel, extensionPath: string): Promise<void> {
  const config = readConfig();
  output.show(true);
  let command: string, why: string;
  try {
    ({ command, why } = daemonBinary(config, extensionPath));
  } catch (e) {
    if (!(e instanceof BinaryMissingError)) throw e;
    output.appendLine(`agent-lsp doctor: ${e.message}`);
    return;
  }
  const args = ['doctor'];
  if (config.cwd) args.push('--cwd', config.cwd);
  const model = config.initializationOptions.model;
  if (typeof model === 'string') args.push('--model', model);
  const report = await new Promise<string>((resolve) => {
    execFile(command, args, { env: { ...process.env, ...config.env }, cwd: config.cwd, timeout: 30000 },
      (error, stdout, stderr) => resolve(stdout || stderr || String(error ?? '')));
  });
  output.appendLine(`agent-lsp doctor (${command}: ${why}):`);
  output.append(report.endsWith('\n') ? report : report + '\n');
}
