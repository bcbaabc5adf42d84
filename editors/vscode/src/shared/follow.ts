/**
 * "Follow the agent" (`agentLsp.followAgent`), its pure parts: which file and line a tool call
 * is about, where a symbol stands on a line, and the range an edit's text changes cover once
 * applied. No `vscode` import: unit-tested with plain objects.
 */

/** What a tool call looks at: a file, and where in it (0-based line and UTF-16 column). */
export interface FollowTarget {
  path: string;
  /** `read`: the line it starts at; `edit`/`write`: the range comes with the edit; `lsp_*`: the line asked about. */
  kind: 'read' | 'edit' | 'lsp';
  line?: number;
  column?: number;
  symbol?: string;
}

/** A positive integer argument (models sometimes send numbers as strings). */
function positive(v: unknown): number | undefined {
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
  return typeof n === 'number' && Number.isInteger(n) && n >= 1 ? n : undefined;
}

/**
 * The place a tool call is about, or undefined when it names none (a `grep`, `bash`,
 * `lsp_workspace_symbols`). Lines and columns in tool arguments are 1-based (as `read` shows
 * them); the target's are 0-based.
 */
export function followTarget(toolName: string, args: Record<string, unknown> | undefined): FollowTarget | undefined {
  const a = args ?? {};
  const path = typeof a.path === 'string' && a.path !== '' ? a.path : undefined;
  if (!path) return undefined;
  if (toolName === 'read') {
    const offset = positive(a.offset);
    return { path, kind: 'read', line: offset !== undefined ? offset - 1 : 0 };
  }
  if (toolName === 'edit' || toolName === 'write') return { path, kind: 'edit' };
  if (toolName.startsWith('lsp_')) {
    const line = positive(a.line);
    const column = positive(a.column);
    return {
      path, kind: 'lsp', ...(line !== undefined ? { line: line - 1 } : {}), ...(column !== undefined ? { column: column - 1 } : {}),
      ...(typeof a.symbol === 'string' && a.symbol !== '' ? { symbol: a.symbol } : {}),
    };
  }
  return undefined;
}

const IDENT = /[\p{L}\p{N}_$]/u;

/**
 * Where `symbol` occurs on a line as a whole word (not inside a longer identifier): the
 * occurrence nearest `column` when given, else the first; undefined when it does not occur.
 */
export function symbolColumn(lineText: string, symbol: string, column?: number): number | undefined {
  if (symbol === '') return undefined;
  let best: number | undefined;
  for (let at = lineText.indexOf(symbol); at >= 0; at = lineText.indexOf(symbol, at + 1)) {
    const before = at > 0 ? lineText[at - 1] : '';
    const after = lineText[at + symbol.length] ?? '';
    if ((before && IDENT.test(before)) || (after && IDENT.test(after))) continue;
    if (best === undefined) best = at;
    if (column === undefined) break;
    if (Math.abs(at - column) < Math.abs(best - column)) best = at;
  }
  return best;
}

export interface Pos { line: number; character: number }
/** One change of a document event: the range it replaced (before the change) and its new text. */
export interface TextChange { range: { start: Pos; end: Pos }; text: string }

/**
 * The range the changes' new text covers in the document after them. VS Code reports the changes
 * of one edit against the text before it; each change above shifts the ones below it by the
 * lines it adds or removes.
 */
export function changedRange(changes: readonly TextChange[]): { start: Pos; end: Pos } | undefined {
  if (changes.length === 0) return undefined;
  const sorted = [...changes].sort((a, b) => a.range.start.line - b.range.start.line || a.range.start.character - b.range.start.character);
  let shift = 0;
  let start: Pos | undefined;
  let end: Pos = { line: 0, character: 0 };
  for (const c of sorted) {
    const lines = c.text.split('\n');
    const s = { line: c.range.start.line + shift, character: c.range.start.character };
    const e = lines.length === 1
      ? { line: s.line, character: s.character + c.text.length }
      : { line: s.line + lines.length - 1, character: lines[lines.length - 1].length };
    start ??= s;
    end = e;
    shift += lines.length - 1 - (c.range.end.line - c.range.start.line);
  }
  return start && { start, end };
}
