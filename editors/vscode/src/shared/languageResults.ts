/**
 * The pure half of `agent/languageRequest` (protocol.md §4.6): positions between the daemon's
 * negotiated encoding and VS Code's UTF-16, and the `vscode.execute…Provider` commands' results
 * (VS Code's API objects) turned back into LSP JSON. No `vscode` import: the API objects are
 * taken by shape, so unit tests pass plain objects.
 */

import type { LanguageMethod, LspLocation, LspPosition, LspRange } from '../protocol';

/** Every method this client answers, advertised as `experimental.agent.languageFeatures`. */
export const LANGUAGE_METHODS: LanguageMethod[] = [
  'textDocument/definition', 'textDocument/references', 'textDocument/hover', 'textDocument/documentSymbol',
  'workspace/symbol', 'textDocument/implementation', 'textDocument/rename',
];

export type PositionEncoding = 'utf-8' | 'utf-16' | 'utf-32';

/** The encoding the daemon answered in `initialize` (`positionEncoding`); LSP's default is UTF-16. */
export function negotiatedEncoding(answered: unknown): PositionEncoding {
  return answered === 'utf-8' || answered === 'utf-32' ? answered : 'utf-16';
}

/** Code units of one code point in `enc`. */
function units(cp: number, enc: PositionEncoding): number {
  if (enc === 'utf-32') return 1;
  if (enc === 'utf-16') return cp > 0xffff ? 2 : 1;
  return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

/**
 * Converts a column between encodings on one line of text. A column inside a code point, or past
 * the line's end, is clamped to the code point's start or the line's end (what LSP asks of
 * servers for out-of-range characters).
 */
export function convertColumn(lineText: string, column: number, from: PositionEncoding, to: PositionEncoding): number {
  if (from === to) return column;
  let inFrom = 0;
  let inTo = 0;
  for (const ch of lineText) {
    const cp = ch.codePointAt(0) ?? 0;
    const next = inFrom + units(cp, from);
    if (next > column) break;
    inFrom = next;
    inTo += units(cp, to);
  }
  return inTo;
}

// ---------------------------------------------------------------- VS Code's result objects, by shape

export interface VPosition { line: number; character: number }
export interface VRange { start: VPosition; end: VPosition }
/** A `vscode.Uri`: its `toString()` is the URI text LSP carries. */
export interface VUri { toString(): string }
export interface VLocation { uri: VUri; range: VRange }
export interface VLocationLink { targetUri: VUri; targetRange: VRange; targetSelectionRange?: VRange; originSelectionRange?: VRange }
/** `vscode.MarkdownString` (`value`), or a MarkedString: markdown text, or `{language, value}` code. */
export type VHoverContent = string | { value: string; language?: string };
export interface VHover { contents: VHoverContent[]; range?: VRange }
/** What `vscode.executeDocumentSymbolProvider` returns: SymbolInformation and DocumentSymbol in one. */
export interface VSymbol {
  name: string;
  kind: number;
  detail?: string;
  tags?: readonly number[];
  containerName?: string;
  range?: VRange;
  selectionRange?: VRange;
  children?: VSymbol[];
  location?: { uri: VUri; range?: VRange };
}
export interface VTextEdit { range: VRange; newText: string }

/** Maps a UTF-16 position of the document `uri` into the negotiated encoding. */
export type PositionMap = (uri: string, p: VPosition) => LspPosition;

export const identityMap: PositionMap = (_uri, p) => ({ line: p.line, character: p.character });

function range(uri: string, r: VRange, map: PositionMap): LspRange {
  return { start: map(uri, r.start), end: map(uri, r.end) };
}

function isLink(x: VLocation | VLocationLink): x is VLocationLink {
  return (x as VLocationLink).targetUri !== undefined;
}

/** The URIs whose positions a result holds (to load their texts when the encoding is not UTF-16). */
export function resultUris(items: unknown): string[] {
  const seen = new Set<string>();
  const walk = (x: unknown): void => {
    if (!x || typeof x !== 'object') return;
    if (Array.isArray(x)) { x.forEach(walk); return; }
    const o = x as Record<string, unknown>;
    for (const k of ['uri', 'targetUri']) if (typeof o[k] === 'string' || (o[k] && typeof o[k] === 'object')) seen.add(String(o[k]));
    for (const k of ['location', 'children']) walk(o[k]);
  };
  walk(items);
  return [...seen];
}

/**
 * definition / references / implementation: every answer as a `Location` (a LocationLink by its
 * target and the target's selection range, which is what names the symbol), duplicates removed.
 * VS Code merges its providers' answers into one array that may mix both kinds; LSP allows no
 * mixed array, and the daemon reads a link as exactly that location.
 */
export function toLspLocations(items: readonly (VLocation | VLocationLink)[] | undefined, map: PositionMap): LspLocation[] {
  const out: LspLocation[] = [];
  const seen = new Set<string>();
  for (const item of items ?? []) {
    const uri = String(isLink(item) ? item.targetUri : item.uri);
    const r = isLink(item) ? item.targetSelectionRange ?? item.targetRange : item.range;
    if (!r) continue;
    const loc = { uri, range: range(uri, r, map) };
    const key = JSON.stringify(loc);
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(loc);
  }
  return out;
}

/** One hover content as Markdown: MarkedString code as a fenced block. */
function hoverMarkdown(c: VHoverContent): string {
  if (typeof c === 'string') return c;
  if (typeof c.language === 'string') return `\`\`\`${c.language}\n${c.value}\n\`\`\``;
  return c.value;
}

/** hover: each provider's non-empty hover as an LSP Hover with Markdown contents. */
export function toLspHovers(hovers: readonly VHover[] | undefined, uri: string, map: PositionMap): { contents: { kind: 'markdown'; value: string }; range?: LspRange }[] {
  const out: { contents: { kind: 'markdown'; value: string }; range?: LspRange }[] = [];
  for (const h of hovers ?? []) {
    const value = (h.contents ?? []).map(hoverMarkdown).filter((v) => v.trim() !== '').join('\n\n');
    if (value === '') continue;
    out.push({ contents: { kind: 'markdown', value }, ...(h.range ? { range: range(uri, h.range, map) } : {}) });
  }
  return out;
}

/** VS Code's `SymbolKind` counts from 0 (File), LSP's from 1. */
export function lspSymbolKind(vscodeKind: number): number {
  return vscodeKind + 1;
}

export interface LspDocumentSymbol { name: string; detail?: string; kind: number; tags?: number[]; range: LspRange; selectionRange: LspRange; children?: LspDocumentSymbol[] }
export interface LspSymbolInformation { name: string; kind: number; tags?: number[]; containerName?: string; location: { uri: string; range?: LspRange } }

function tags(t: readonly number[] | undefined): { tags?: number[] } {
  return t && t.length > 0 ? { tags: [...t] } : {};
}

function documentSymbol(s: VSymbol, uri: string, map: PositionMap): LspDocumentSymbol {
  const r = range(uri, s.range as VRange, map);
  const children = (s.children ?? []).map((c) => documentSymbol(c, uri, map));
  return {
    name: s.name, ...(s.detail ? { detail: s.detail } : {}), kind: lspSymbolKind(s.kind), ...tags(s.tags),
    range: r, selectionRange: s.selectionRange ? range(uri, s.selectionRange, map) : r,
    ...(children.length > 0 ? { children } : {}),
  };
}

/**
 * documentSymbol: `DocumentSymbol[]` (with their nesting) when every symbol has its ranges, as
 * VS Code's objects do; else `SymbolInformation[]` from their locations.
 */
export function toLspDocumentSymbols(symbols: readonly VSymbol[] | undefined, uri: string, map: PositionMap): LspDocumentSymbol[] | LspSymbolInformation[] {
  const list = symbols ?? [];
  if (list.every((s) => s.range && s.selectionRange)) return list.map((s) => documentSymbol(s, uri, map));
  return toLspWorkspaceSymbols(list, map);
}

/**
 * workspace/symbol: LSP `WorkspaceSymbol`s (also valid `SymbolInformation` when they have a
 * range); a symbol whose location has no range keeps its `uri` alone. Duplicates removed.
 */
export function toLspWorkspaceSymbols(symbols: readonly VSymbol[] | undefined, map: PositionMap): LspSymbolInformation[] {
  const out: LspSymbolInformation[] = [];
  const seen = new Set<string>();
  for (const s of symbols ?? []) {
    if (!s.location) continue;
    const uri = String(s.location.uri);
    const r = s.location.range;
    const info: LspSymbolInformation = {
      name: s.name, kind: lspSymbolKind(s.kind), ...tags(s.tags), ...(s.containerName ? { containerName: s.containerName } : {}),
      location: r ? { uri, range: range(uri, r, map) } : { uri },
    };
    const key = JSON.stringify(info);
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(info);
  }
  return out;
}

// ---------------------------------------------------------------- rename

/** One change of a `vscode.WorkspaceEdit`, in order: text edits of a file, or a file operation. */
export type EditEntry =
  | { type: 'text'; uri: string; edit: VTextEdit }
  | { type: 'create'; uri: string }
  | { type: 'rename'; oldUri: string; newUri: string }
  | { type: 'delete'; uri: string };

/** A `vscode.WorkspaceEdit` by shape: `entries()` (public), `_allEntries()` (VS Code's own, with file operations). */
export interface VWorkspaceEdit {
  entries(): [VUri, VTextEdit[]][];
  _allEntries?(): readonly { _type: number; uri?: VUri; edit?: VTextEdit; from?: VUri; to?: VUri }[];
}

/**
 * The changes a WorkspaceEdit makes, file operations included. The public API lists text edits
 * only (`entries()`), so VS Code's own list is read when it is there (`_type` 1: a file
 * operation, 2: a text edit): a rename that also renames a file must not reach the daemon as a
 * text-only edit (it refuses those, protocol.md §3.25).
 */
export function workspaceEditEntries(edit: VWorkspaceEdit): EditEntry[] {
  const all = typeof edit._allEntries === 'function' ? edit._allEntries() : undefined;
  if (!all) return edit.entries().flatMap(([uri, edits]) => edits.map((e) => ({ type: 'text' as const, uri: String(uri), edit: e })));
  const out: EditEntry[] = [];
  for (const e of all) {
    if (e._type === 2 && e.uri && e.edit) out.push({ type: 'text', uri: String(e.uri), edit: e.edit });
    else if (e._type === 1 && e.from && e.to) out.push({ type: 'rename', oldUri: String(e.from), newUri: String(e.to) });
    else if (e._type === 1 && e.to) out.push({ type: 'create', uri: String(e.to) });
    else if (e._type === 1 && e.from) out.push({ type: 'delete', uri: String(e.from) });
  }
  return out;
}

export interface LspTextDocumentEdit { textDocument: { uri: string; version: number | null }; edits: { range: LspRange; newText: string }[] }
export type LspResourceOperation =
  | { kind: 'create'; uri: string }
  | { kind: 'rename'; oldUri: string; newUri: string }
  | { kind: 'delete'; uri: string };

/**
 * rename: an LSP WorkspaceEdit with `documentChanges`, one TextDocumentEdit per file (in the order
 * the files first appear), versioned with the document's version when it was open as the language
 * servers computed the edit (`version(uri)`; null for a file not open): the daemon then refuses
 * to apply edits to a buffer that changed since. File operations stay where they were.
 */
export function toLspWorkspaceEdit(entries: readonly EditEntry[], version: (uri: string) => number | null, map: PositionMap): { documentChanges: (LspTextDocumentEdit | LspResourceOperation)[] } | null {
  if (entries.length === 0) return null;
  const changes: (LspTextDocumentEdit | LspResourceOperation)[] = [];
  const byUri = new Map<string, LspTextDocumentEdit>();
  for (const e of entries) {
    if (e.type !== 'text') {
      changes.push(e.type === 'rename' ? { kind: 'rename', oldUri: e.oldUri, newUri: e.newUri } : { kind: e.type, uri: e.uri });
      continue;
    }
    let doc = byUri.get(e.uri);
    if (!doc) {
      doc = { textDocument: { uri: e.uri, version: version(e.uri) }, edits: [] };
      byUri.set(e.uri, doc);
      changes.push(doc);
    }
    doc.edits.push({ range: range(e.uri, e.edit.range, map), newText: e.edit.newText });
  }
  return { documentChanges: changes };
}

// ---------------------------------------------------------------- which language servers

/** An installed extension, by the parts of `vscode.Extension` read here. */
export interface ExtensionInfo { id: string; packageJSON: { main?: string; browser?: string; activationEvents?: string[]; contributes?: { languages?: { id?: string }[] } } }

/**
 * The extensions that serve a language: those with code (`main` or `browser`) that start for it
 * (`onLanguage:<id>` among their activation events, or contributing the language, which makes
 * VS Code start them for it) — this extension excepted. VS Code has no API that lists the
 * providers registered for a document, and the execute commands answer `[]` alike when none
 * exists and when one found nothing; an extension that starts for the language is the nearest
 * honest sign that someone answers for it. `plaintext` has none, nor any other language that only
 * a grammar (no code) contributes.
 */
export function languageExtensions(extensions: readonly ExtensionInfo[], languageId: string, selfId: string): string[] {
  return extensions.filter((e) => {
    const pj = e.packageJSON ?? {};
    if (e.id.toLowerCase() === selfId.toLowerCase() || (!pj.main && !pj.browser)) return false;
    return (pj.activationEvents ?? []).includes(`onLanguage:${languageId}`)
      || (pj.contributes?.languages ?? []).some((l) => l.id === languageId);
  }).map((e) => e.id);
}

/**
 * The `servers` of an answer (§4.6): `["vscode"]` (VS Code's providers, which do not say which
 * extension answered) when some result came back, or when an extension serves the document's
 * language (then an empty result means "nothing found", not "nobody asked"); else `[]`, which the
 * daemon reports as "No language server in the editor answers …".
 */
export function serversFor(hasResult: boolean, servingExtensions: readonly string[]): string[] {
  return hasResult || servingExtensions.length > 0 ? ['vscode'] : [];
}

/** The tool the daemon offers for each method (for messages). */
export const TOOL_OF: Record<LanguageMethod, string> = {
  'textDocument/definition': 'lsp_definition', 'textDocument/references': 'lsp_references', 'textDocument/hover': 'lsp_hover',
  'textDocument/documentSymbol': 'lsp_document_symbols', 'workspace/symbol': 'lsp_workspace_symbols',
  'textDocument/implementation': 'lsp_implementations', 'textDocument/rename': 'lsp_rename',
};
