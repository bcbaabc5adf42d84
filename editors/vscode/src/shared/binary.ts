/**
 * Finds the daemon binary, in this order (rust-analyzer's: an explicit setting, else the server
 * the platform VSIX carries, and here `PATH` last):
 *
 * 1. `agentLsp.serverPath` when the user set it (read from the user's settings only, see
 *    `settings.ts`): an absolute path as given, a relative path against the workspace, a bare name
 *    on `PATH`. A set value is the user's choice: when nothing executable is there the lookup fails
 *    and says so rather than starting some other daemon.
 * 2. The bundled `<extension>/server/agent-lsp` (`agent-lsp.exe` on Windows), if executable.
 * 3. `agent-lsp` on `PATH`.
 *
 * Pure but for the file system (unit-tested): the answer says which branch found the binary, or
 * every place looked at, so the extension can say so clearly instead of failing inside the
 * language client.
 */

import * as fs from 'node:fs';
import * as path from 'node:path';

/** The one-line installs, for the messages that say the binary is missing. */
export const INSTALL_COMMAND = "curl --proto '=https' --tlsv1.2 -LsSf https://github.com/agent-lsp/agent-lsp/releases/latest/download/agent-lsp-installer.sh | sh";
export const INSTALL_CARGO = 'cargo binstall agent-lsp';

function isExecutable(file: string): boolean {
  try {
    const st = fs.statSync(file);
    if (!st.isFile()) return false;
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Names a bare command may have on disk: on Windows also with `.exe`. */
function candidates(name: string, platform: NodeJS.Platform): string[] {
  return platform === 'win32' && path.extname(name) === '' ? [name, `${name}.exe`] : [name];
}

/**
 * One configured value: an absolute path as given, a relative path against `cwd`, a bare name on
 * `PATH`. Undefined when nothing executable is there.
 */
export function resolveBinary(configured: string, pathEnv: string, cwd?: string, platform: NodeJS.Platform = process.platform): string | undefined {
  const name = configured.trim();
  if (name === '') return undefined;
  if (path.isAbsolute(name)) return isExecutable(name) ? name : undefined;
  if (name.includes('/') || name.includes(path.sep)) {
    const full = path.resolve(cwd ?? process.cwd(), name);
    return isExecutable(full) ? full : undefined;
  }
  for (const dir of pathEnv.split(path.delimiter)) {
    if (dir === '') continue;
    for (const file of candidates(name, platform)) {
      const full = path.join(dir, file);
      if (isExecutable(full)) return full;
    }
  }
  return undefined;
}

/** Where the platform VSIX carries the daemon (rust-analyzer's layout). */
export function bundledBinary(extensionPath: string, platform: NodeJS.Platform = process.platform): string {
  return path.join(extensionPath, 'server', platform === 'win32' ? 'agent-lsp.exe' : 'agent-lsp');
}

export interface DaemonLookup {
  /** `agentLsp.serverPath` from the user's settings; empty when not set. */
  serverPath: string;
  /** The extension's folder (`ExtensionContext.extensionPath`). */
  extensionPath: string;
  pathEnv: string;
  cwd?: string;
  platform?: NodeJS.Platform;
}

export type DaemonBinary =
  | { found: true; command: string; source: 'setting' | 'bundled' | 'path'; why: string }
  | { found: false; source: 'setting' | 'default'; looked: string[] };

export function findDaemon(l: DaemonLookup): DaemonBinary {
  const platform = l.platform ?? process.platform;
  const configured = l.serverPath.trim();
  if (configured !== '') {
    const command = resolveBinary(configured, l.pathEnv, l.cwd, platform);
    if (command) return { found: true, command, source: 'setting', why: `agentLsp.serverPath is "${configured}"` };
    const where = path.isAbsolute(configured) ? 'no executable file there'
      : configured.includes('/') || configured.includes(path.sep) ? `no executable file at ${path.resolve(l.cwd ?? process.cwd(), configured)}`
        : 'not on PATH';
    return { found: false, source: 'setting', looked: [`agentLsp.serverPath "${configured}" (${where})`] };
  }
  const bundled = bundledBinary(l.extensionPath, platform);
  if (isExecutable(bundled)) return { found: true, command: bundled, source: 'bundled', why: 'bundled with the extension; agentLsp.serverPath is not set' };
  const onPath = resolveBinary('agent-lsp', l.pathEnv, l.cwd, platform);
  if (onPath) return { found: true, command: onPath, source: 'path', why: 'found on PATH; agentLsp.serverPath is not set and this VSIX carries no server' };
  return {
    found: false, source: 'default', looked: [
      'agentLsp.serverPath (not set)',
      `the bundled ${bundled} (${fs.existsSync(bundled) ? 'not executable' : 'absent: this VSIX carries no server'})`,
      'agent-lsp on PATH (not found)',
    ],
  };
}

/** What to tell the user when `findDaemon` found nothing: where it looked and the one-line install. */
export function missingMessage(r: Extract<DaemonBinary, { found: false }>): string {
  const install = `install agent-lsp in one line: ${INSTALL_COMMAND} (or: ${INSTALL_CARGO})`;
  const fix = r.source === 'setting'
    ? `Set "agentLsp.serverPath" to the full path of an agent-lsp binary, or clear it to use the bundled server, else agent-lsp on PATH (${install}).`
    : `Install the platform VSIX (it carries the server), or ${install}, or set "agentLsp.serverPath" to its full path.`;
  return `The agent-lsp binary was not found. Looked at: ${r.looked.join('; ')}. ${fix}`;
}
