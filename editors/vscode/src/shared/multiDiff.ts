/**
 * A unified diff that covers several files (the approval of `lsp_rename` with `apply`: one
 * ---/+++ header per file, protocol.md §3.25): split per file, the files it names, and each
 * file's proposed text built from its current text, for VS Code's multi-file diff editor. Pure.
 */

import { beforeFromDiff } from './changes';

export interface FileDiff { oldPath: string; newPath: string; text: string }

const HUNK = /^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@/;

/** A header's path without git's `a/` / `b/` prefix or a tab-separated timestamp. */
function headerPath(rest: string): string {
  const p = rest.split('\t')[0].trim();
  return /^[ab]\//.test(p) ? p.slice(2) : p;
}

/**
 * The diff's files in order. Hunk lines are counted (`@@ -a,b +c,d @@`), so a removed line that
 * reads `-- x` (shown as `--- x`) is not taken for the next file's header.
 */
export function splitDiff(diff: string): FileDiff[] {
  const files: FileDiff[] = [];
  const lines = diff.split('\n');
  if (diff.endsWith('\n')) lines.pop();
  let cur: { oldPath: string; newPath: string; lines: string[] } | undefined;
  let oldLeft = 0;
  let newLeft = 0;
  const flush = (): void => { if (cur) files.push({ oldPath: cur.oldPath, newPath: cur.newPath, text: `${cur.lines.join('\n')}\n` }); };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (oldLeft > 0 || newLeft > 0) {
      const tag = line[0] ?? ' ';
      if (tag !== '+' ) oldLeft--;
      if (tag !== '-') newLeft--;
      if (tag === '\\') { oldLeft++; newLeft++; } // "\ No newline at end of file" counts for neither
      cur?.lines.push(line);
      continue;
    }
    if (line.startsWith('--- ') && lines[i + 1]?.startsWith('+++ ')) {
      flush();
      cur = { oldPath: headerPath(line.slice(4)), newPath: headerPath(lines[i + 1].slice(4)), lines: [line, lines[i + 1]] };
      i++;
      continue;
    }
    const m = HUNK.exec(line);
    if (m) { oldLeft = m[1] === undefined ? 1 : Number(m[1]); newLeft = m[2] === undefined ? 1 : Number(m[2]); }
    cur?.lines.push(line);
  }
  flush();
  return files;
}

/** The path a file's section is about (the new one, the old one for a deletion). */
export function diffPath(f: FileDiff): string {
  return f.newPath === '/dev/null' ? f.oldPath : f.newPath;
}

/**
 * One file's diff the other way round: applied backwards it gives the text after the change.
 * Its ---/+++ header is the part before the first hunk; after that, `--- x` is a removed line.
 */
export function reverseDiff(diff: string): string {
  let inHunks = false;
  return diff.split('\n').map((l) => {
    const m = /^@@ -(\S+) \+(\S+) @@(.*)$/.exec(l);
    if (m) { inHunks = true; return `@@ -${m[2]} +${m[1]} @@${m[3]}`; }
    if (!inHunks) return l;
    if (l.startsWith('+')) return `-${l.slice(1)}`;
    if (l.startsWith('-')) return `+${l.slice(1)}`;
    return l;
  }).join('\n');
}

/** The text a file's diff leads to from `before` (its text now); DiffApplyError when it does not fit. */
export function afterFromDiff(diff: string, before: string): string {
  return beforeFromDiff(reverseDiff(diff), before);
}

/**
 * Pairs each file of the diff with its absolute path among `paths` (the one ending with the
 * header's path; else the path at the same place in the list).
 */
export function pairWithPaths(files: readonly FileDiff[], paths: readonly string[]): { path: string; diff: FileDiff }[] {
  return files.flatMap((f, i) => {
    const rel = diffPath(f);
    const path = paths.find((p) => p === rel || p.endsWith(`/${rel}`)) ?? paths[i];
    return path ? [{ path, diff: f }] : [];
  });
}

/** The files a multi-file preview changes, as its headers name them (relative), else its `paths`. */
export function changedFiles(diff: string, paths: readonly string[]): string[] {
  const named = splitDiff(diff).map(diffPath);
  return named.length === paths.length ? named : [...paths];
}
