/**
 * Finds the daemon binary: an absolute path as given, a relative path against the workspace, a
 * bare name on `PATH`. Returns undefined when nothing executable is there, so the extension can
 * say so clearly instead of failing inside the language client.
 */

import * as fs from 'node:fs';
import * as path from 'node:path';

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

export function resolveBinary(configured: string, pathEnv: string, cwd?: string): string | undefined {
  const name = configured.trim();
  if (name === '') return undefined;
  if (path.isAbsolute(name)) return isExecutable(name) ? name : undefined;
  if (name.includes('/') || name.includes(path.sep)) {
    const full = path.resolve(cwd ?? process.cwd(), name);
    return isExecutable(full) ? full : undefined;
  }
  for (const dir of pathEnv.split(path.delimiter)) {
    if (dir === '') continue;
    const full = path.join(dir, name);
    if (isExecutable(full)) return full;
  }
  return undefined;
}
