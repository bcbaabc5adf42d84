/**
 * The workspace's files for `@` completion in the chat input, respecting `.gitignore`.
 *
 * Chosen: in a git repository, `git ls-files --cached --others --exclude-standard` (tracked
 * files plus untracked ones that no ignore rule covers: every `.gitignore` level, `.git/info/
 * exclude` and the global excludes, exactly as git applies them). Elsewhere (no repository, or
 * no git), `vscode.workspace.findFiles` with `files.exclude` plus the root `.gitignore` turned
 * into globs (shared/completion.ts `gitignoreGlobs`; negations are not expressible there).
 */

import { execFile } from 'node:child_process';
import * as vscode from 'vscode';
import { gitignoreGlobs } from './shared/completion';

const MAX_FILES = 20000;
const FRESH_MS = 5000;

export class WorkspaceFiles {
  private cached: { at: number; files: Promise<string[]> } | undefined;

  /** Workspace-relative paths of the first folder (empty without a folder). */
  list(): Promise<string[]> {
    if (this.cached && Date.now() - this.cached.at < FRESH_MS) return this.cached.files;
    const files = this.read();
    this.cached = { at: Date.now(), files };
    return files;
  }

  private async read(): Promise<string[]> {
    const folder = vscode.workspace.workspaceFolders?.[0];
    if (!folder) return [];
    const fromGit = await gitFiles(folder.uri.fsPath);
    if (fromGit) return fromGit;
    return findFiles(folder);
  }
}

function gitFiles(cwd: string): Promise<string[] | undefined> {
  return new Promise((resolve) => {
    execFile('git', ['ls-files', '--cached', '--others', '--exclude-standard', '-z'], { cwd, timeout: 10000, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout) => resolve(err ? undefined : stdout.split('\0').filter((f) => f !== '').slice(0, MAX_FILES)));
  });
}

async function findFiles(folder: vscode.WorkspaceFolder): Promise<string[]> {
  const excluded = Object.entries(vscode.workspace.getConfiguration('files', folder.uri).get<Record<string, boolean>>('exclude') ?? {})
    .filter(([, on]) => on === true).map(([glob]) => glob);
  let ignore = '';
  try {
    ignore = new TextDecoder().decode(await vscode.workspace.fs.readFile(vscode.Uri.joinPath(folder.uri, '.gitignore')));
  } catch {
    // no .gitignore
  }
  const globs = [...excluded, ...gitignoreGlobs(ignore), '**/.git/**'];
  const exclude = new vscode.RelativePattern(folder, `{${globs.join(',')}}`);
  const uris = await vscode.workspace.findFiles(new vscode.RelativePattern(folder, '**/*'), exclude, MAX_FILES);
  return uris.map((u) => vscode.workspace.asRelativePath(u, false)).sort();
}
