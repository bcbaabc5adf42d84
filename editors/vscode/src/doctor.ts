/**
 * "Agent: Run Doctor": `agent-lsp doctor` for the workspace, run as the daemon runs (the same
 * binary, environment and folder), its report written to the agent-lsp output channel.
 */
import * as vscode from 'vscode';
import { execFile } from 'child_process';
import { readConfig } from './client';
import { resolveBinary } from './shared/binary';

export async function runDoctor(output: vscode.OutputChannel): Promise<void> {
  const config = readConfig();
  output.show(true);
  const command = resolveBinary(config.serverPath, process.env.PATH ?? '', config.cwd);
  if (!command) {
    output.appendLine(`agent-lsp doctor: the binary was not found (agentLsp.serverPath = "${config.serverPath}"). Install agent-lsp or set "agentLsp.serverPath" to its full path.`);
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
  output.appendLine(`agent-lsp doctor (${command}):`);
  output.append(report.endsWith('\n') ? report : report + '\n');
}
