/**
 * The run review's pure parts: the "before" text of a changed file rebuilt from the unified diff
 * `agent/runChanges` gives (protocol.md §3.16), and the words the Changes view and the revert
 * commands show. No `vscode` dependency: unit-tested with Node's test runner.
 *
 * Why rebuild the before-image from the diff: the daemon sends no before-image itself (only the
 * diff from it to the content now, an open buffer included), and the blobs it keeps next to the
 * session file are named by hashes the client is not told. The diff is computed against the
 * text the editor has now, so applying it backwards to that text gives the before-image exactly.
 */

import type { FileChange, RevertResult } from '../protocol';

export class DiffApplyError extends Error {}

interface Hunk { oldStart: number; newStart: number; lines: string[] }

function parseHunks(diff: string): Hunk[] {
  const hunks: Hunk[] = [];
  let cur: Hunk | undefined;
  const lines = diff.split('\n');
  if (diff.endsWith('\n')) lines.pop();
  for (const line of lines) {
    const m = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
    if (m) {
      cur = { oldStart: Number(m[1]), newStart: Number(m[2]), lines: [] };
      hunks.push(cur);
    } else if (cur && /^[ +\-\\]/.test(line)) {
      cur.lines.push(line);
    } else if (cur && line === '') {
      cur.lines.push(' '); // an empty context line that lost its leading space
    }
  }
  return hunks;
}

/**
 * The text a unified diff was made from, given the text it leads to (`now`). Lines are compared
 * exactly; a hunk that does not match `now` throws DiffApplyError (the file changed since the
 * diff was made).
 */
export function beforeFromDiff(diff: string, now: string): string {
  const hunks = parseHunks(diff);
  const nowLines = now === '' ? [] : now.split('\n');
  const nowEndsWithNewline = now.endsWith('\n');
  if (nowEndsWithNewline) nowLines.pop();
  // Empty now (a deleted file): the before-image's last line has a newline unless marked.
  let beforeEndsWithNewline = nowEndsWithNewline || now === '';
  let beforeMarked = false;
  const out: string[] = [];
  let at = 0; // next line of `now` not yet copied (0-based)
  for (const h of hunks) {
    const start = h.newStart === 0 ? 0 : h.newStart - 1;
    if (start < at) throw new DiffApplyError('overlapping hunks');
    out.push(...nowLines.slice(at, start));
    at = start;
    let last: '+' | '-' | ' ' | undefined;
    for (const l of h.lines) {
      const tag = l[0];
      const text = l.slice(1);
      if (tag === '\\') { // "\ No newline at end of file" after the line it is about
        // After a removed or a context line: the before-image ends without one. After an added
        // line only the text now does: the before-image has one unless a marker said otherwise.
        if (last === '+') { if (!beforeMarked) beforeEndsWithNewline = true; } else { beforeEndsWithNewline = false; beforeMarked = true; }
        continue;
      }
      if (tag === '-') { out.push(text); last = '-'; continue; }
      if (nowLines[at] !== text) throw new DiffApplyError(`line ${at + 1} differs from the diff`);
      if (tag === ' ') out.push(text);
      at++;
      last = tag as '+' | ' ';
    }
  }
  out.push(...nowLines.slice(at));
  if (out.length === 0) return '';
  return out.join('\n') + (beforeEndsWithNewline ? '\n' : '');
}

const CHANGE_WORD: Record<FileChange['change'], string> = { created: 'created', modified: 'modified', deleted: 'deleted' };

/** The tree item's description: what the run did, and what stands in the way of a revert. */
export function changeDescription(c: FileChange, dir: string): string {
  const parts = [dir, CHANGE_WORD[c.change]];
  if (c.userChanged) parts.push('changed since');
  if (!c.revertible) parts.push('not revertible');
  return parts.filter((p) => p !== '').join(' · ');
}

export function changeTooltip(c: FileChange): string {
  const lines = [`${c.path}`, `The run ${CHANGE_WORD[c.change]} this file.`];
  if (c.userChanged) lines.push('It changed since the agent changed it: reverting asks before overwriting that.');
  if (!c.revertible) lines.push(`Not revertible: ${c.reason ?? 'its content before the run is unknown'}.`);
  return lines.join('\n');
}

/** What a revert did, in one line for a notification (undefined when it did nothing to report). */
export function revertSummary(r: RevertResult, relative: (p: string) => string): string {
  const parts: string[] = [];
  if (r.reverted.length > 0) parts.push(`Reverted ${r.reverted.map(relative).join(', ')}.`);
  if (r.skipped.length > 0) parts.push(`Skipped ${r.skipped.map((s) => `${relative(s.path)} (${s.reason})`).join(', ')}.`);
  if (parts.length === 0 && r.conflicts.length === 0) parts.push('Nothing to revert.');
  return parts.join(' ');
}

/** The conflict question: which files changed since the agent changed them. */
export function conflictQuestion(r: RevertResult, relative: (p: string) => string): string {
  return `Changed since the agent changed them: ${r.conflicts.map((c) => `${relative(c.path)} (${c.reason})`).join(', ')}. Revert them anyway?`;
}
