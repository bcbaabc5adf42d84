/**
 * The chat input's completions, pure so they are unit-tested: which token at the caret asks for
 * one (`/name` at the start of the message: a slash command; `@path` after a space or at the
 * start: a workspace file), fuzzy matching and ranking, and the root `.gitignore` as globs for
 * workspaces that are not git repositories.
 */

import type { CommandInfo } from '../protocol';

export type CompletionKind = 'command' | 'file';

/** The token being completed: its kind, the text after the trigger and where it sits. */
export interface CompletionTrigger { kind: CompletionKind; query: string; start: number; end: number }

/** One row of the completion popup; `insert` replaces the token (trigger included). */
export interface CompletionItem { label: string; insert: string; detail?: string; hint?: string }

/**
 * What the caret is completing in `text`, if anything. A slash command is only recognised at
 * the very start of the message (the daemon expands `/name` only there, §3.14); a file after
 * `@` anywhere, as long as the `@` starts a word (so `me@example.com` is left alone).
 */
export function completionTrigger(text: string, caret: number): CompletionTrigger | undefined {
  const before = text.slice(0, caret);
  const slash = /^\/([^\s]*)$/.exec(before);
  if (slash) return { kind: 'command', query: slash[1], start: 0, end: caret + wordEnd(text, caret) };
  const at = /(^|\s)@([^\s@]*)$/.exec(before);
  if (at) {
    const start = caret - at[2].length - 1;
    return { kind: 'file', query: at[2], start, end: caret + wordEnd(text, caret) };
  }
  return undefined;
}

function wordEnd(text: string, caret: number): number {
  const m = /^[^\s]*/.exec(text.slice(caret));
  return m ? m[0].length : 0;
}

/** Replaces the trigger's token by `insert` (plus a space); returns the text and the new caret. */
export function applyCompletion(text: string, t: CompletionTrigger, insert: string): { text: string; caret: number } {
  const rest = text.slice(t.end);
  const spaced = rest.startsWith(' ') ? insert : `${insert} `;
  return { text: text.slice(0, t.start) + spaced + rest, caret: t.start + spaced.length + (rest.startsWith(' ') ? 1 : 0) };
}

/**
 * A fuzzy score of `query` in `candidate` (case-insensitive; every query character in order),
 * or undefined when it does not match. Higher is better: consecutive characters, characters at
 * word starts (after `/`, `.`, `-`, `_`, `:`, a space or a case change) and matches in the last
 * path segment count more; shorter candidates win ties.
 */
export function fuzzyScore(query: string, candidate: string): number | undefined {
  if (query === '') return -candidate.length / 1000;
  const q = query.toLowerCase();
  const c = candidate.toLowerCase();
  const lastSegment = candidate.lastIndexOf('/') + 1;
  let score = 0;
  let qi = 0;
  let prev = -2;
  for (let ci = 0; ci < c.length && qi < q.length; ci++) {
    if (c[ci] !== q[qi]) continue;
    let s = 1;
    if (ci === prev + 1) s += 3;
    const before = candidate[ci - 1];
    if (ci === 0 || '/._-: '.includes(before ?? '') || (before === before?.toLowerCase() && candidate[ci] !== candidate[ci].toLowerCase())) s += 2;
    if (ci >= lastSegment) s += 1;
    score += s;
    prev = ci;
    qi++;
  }
  if (qi < q.length) return undefined;
  return score - candidate.length / 1000;
}

/** The best `limit` matches of `query` among `candidates`, best first. */
export function fuzzyFilter<T>(query: string, candidates: T[], text: (t: T) => string, limit = 50): T[] {
  const scored: { item: T; score: number }[] = [];
  for (const item of candidates) {
    const score = fuzzyScore(query, text(item));
    if (score !== undefined) scored.push({ item, score });
  }
  scored.sort((a, b) => b.score - a.score);
  return scored.slice(0, limit).map((s) => s.item);
}

/** Slash-command rows: `/name`, its argument hint and description (source `mcp` says so). */
export function commandCompletions(query: string, commands: CommandInfo[]): CompletionItem[] {
  return fuzzyFilter(query, commands, (c) => c.name).map((c) => ({
    label: `/${c.name}`,
    insert: `/${c.name}`,
    hint: c.argumentHint,
    detail: c.source === 'mcp' ? `${c.description} (MCP prompt)` : c.description,
  }));
}

/** File rows: `@path`, with the directory as detail. */
export function fileCompletions(query: string, files: string[]): CompletionItem[] {
  return fuzzyFilter(query, files, (f) => f).map((f) => ({ label: f, insert: `@${f}` }));
}

/**
 * The root `.gitignore` as globs relative to the workspace (for `findFiles`' exclude), for a
 * workspace that is not a git repository (in one, `git ls-files` applies every ignore rule).
 * Covers the common forms: `name`, `dir/`, `/anchored`, `*.ext`, `a/b`; negations (`!x`) cannot
 * be expressed as an exclude and are skipped.
 */
export function gitignoreGlobs(text: string): string[] {
  const globs: string[] = [];
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith('!')) continue;
    const dirOnly = line.endsWith('/');
    let pattern = line.replace(/\/+$/, '');
    const anchored = pattern.startsWith('/') || pattern.includes('/');
    pattern = pattern.replace(/^\//, '');
    const base = anchored ? pattern : `**/${pattern}`;
    globs.push(`${base}/**`);
    if (!dirOnly) globs.push(base);
  }
  return globs;
}
