/**
 * Answers `agent/languageRequest` (protocol.md §3.25, §4.6): the daemon's `lsp_*` tools ask what the
 * editor's language servers know, and VS Code answers through its `vscode.execute…Provider`
 * commands, which ask every provider registered for the document: the built-in TypeScript
 * features, any language extension, each with the user's unsaved text. agent-lsp itself provides
 * none of these methods (and `noProviders` below keeps it that way), so the daemon is never
 * asked its own question back.
 *
 * Positions: the daemon's are in the connection's negotiated encoding (this client offers only
 * UTF-16, so it is UTF-16 unless a future client library offers more), VS Code's in UTF-16; both
 * ways go through `convertColumn` against the document's line.
 */

import * as vscode from 'vscode';
import { type CancellationToken, ErrorCodes, LSPErrorCodes, type Middleware, ResponseError } from 'vscode-languageclient/node';
import type { LanguageRequestParams, LanguageRequestResult, LspPosition } from './protocol';
import { raceCancellation } from './shared/cancel';
import {
  convertColumn, type EditEntry, identityMap, languageExtensions, type PositionEncoding, type PositionMap, resultUris,
  serversFor, toLspDocumentSymbols, toLspHovers, toLspLocations, toLspWorkspaceEdit, toLspWorkspaceSymbols,
  type VHover, type VLocation, type VLocationLink, type VSymbol, type VWorkspaceEdit, workspaceEditEntries,
} from './shared/languageResults';

export interface LanguageRequestContext {
  /** The position encoding the daemon answered in `initialize`. */
  encoding(): PositionEncoding;
  /** This extension's id, left out of "the extensions serving a language". */
  selfId: string;
  log(line: string): void;
}

/**
 * Middleware for the language client: agent-lsp's answers to the seven methods are never asked
 * for, even if a daemon advertised them one day, since the execute commands this module runs
 * would then ask agent-lsp, which would wait for this very answer.
 */
export const noProviders: Middleware = {
  provideDefinition: () => undefined,
  provideReferences: () => undefined,
  provideHover: () => undefined,
  provideDocumentSymbols: () => undefined,
  provideWorkspaceSymbols: () => undefined,
  provideImplementation: () => undefined,
  provideRenameEdits: () => undefined,
  prepareRename: () => undefined,
};

function lineText(doc: vscode.TextDocument, line: number): string {
  return line >= 0 && line < doc.lineCount ? doc.lineAt(line).text : '';
}

/** The daemon's position in `doc` as VS Code's (UTF-16). */
function toVscode(doc: vscode.TextDocument, p: LspPosition, enc: PositionEncoding): vscode.Position {
  return new vscode.Position(p.line, convertColumn(lineText(doc, p.line), p.character, enc, 'utf-16'));
}

/** Maps VS Code's positions in the result back into `enc`, reading each document the result names. */
async function positionMap(result: unknown, enc: PositionEncoding): Promise<PositionMap> {
  if (enc === 'utf-16') return identityMap;
  const docs = new Map<string, vscode.TextDocument>();
  for (const uri of resultUris(result)) {
    try { docs.set(uri, await vscode.workspace.openTextDocument(vscode.Uri.parse(uri))); } catch { /* gone: columns stay UTF-16 */ }
  }
  return (uri, p) => {
    const doc = docs.get(uri);
    return { line: p.line, character: doc ? convertColumn(lineText(doc, p.line), p.character, 'utf-16', enc) : p.character };
  };
}

/** The extensions serving a language may not have started yet: start them, so their providers exist. */
async function startServing(ids: readonly string[]): Promise<void> {
  await Promise.all(ids.map((id) => {
    const ext = vscode.extensions.getExtension(id);
    return ext && !ext.isActive ? Promise.resolve(ext.activate()).catch(() => undefined) : undefined;
  }));
}

async function answer(p: LanguageRequestParams, ctx: LanguageRequestContext): Promise<LanguageRequestResult> {
  const enc = ctx.encoding();
  const exec = <T>(command: string, ...args: unknown[]): Thenable<T> => vscode.commands.executeCommand<T>(command, ...args);
  if (p.method === 'workspace/symbol') {
    // No document: every language of an open file counts for "someone could answer".
    const languages = new Set(vscode.workspace.textDocuments.filter((d) => d.uri.scheme === 'file').map((d) => d.languageId));
    const serving = [...languages].flatMap((l) => languageExtensions(vscode.extensions.all, l, ctx.selfId));
    await startServing(serving);
    const symbols = await exec<VSymbol[] | undefined>('vscode.executeWorkspaceSymbolProvider', p.params.query ?? '');
    const result = toLspWorkspaceSymbols(symbols, await positionMap(symbols, enc));
    return { servers: serversFor(result.length > 0, serving), result };
  }
  const uriText = p.params.textDocument?.uri;
  if (!uriText) throw new ResponseError(ErrorCodes.InvalidParams, `${p.method} without a textDocument`);
  // Loading the document (not showing it) is what makes its language's extension start and its
  // servers see it; an open one is the user's buffer, unsaved text included.
  const doc = await vscode.workspace.openTextDocument(vscode.Uri.parse(uriText));
  const serving = languageExtensions(vscode.extensions.all, doc.languageId, ctx.selfId);
  await startServing(serving);
  const uri = doc.uri;
  const pos = p.params.position ? toVscode(doc, p.params.position, enc) : new vscode.Position(0, 0);
  const located = async (command: string): Promise<LanguageRequestResult> => {
    const items = await exec<(VLocation | VLocationLink)[] | undefined>(command, uri, pos);
    const result = toLspLocations(items, await positionMap(items, enc));
    return { servers: serversFor(result.length > 0, serving), result };
  };
  switch (p.method) {
    case 'textDocument/definition': return located('vscode.executeDefinitionProvider');
    case 'textDocument/implementation': return located('vscode.executeImplementationProvider');
    case 'textDocument/references': return located('vscode.executeReferenceProvider');
    case 'textDocument/hover': {
      const hovers = await exec<VHover[] | undefined>('vscode.executeHoverProvider', uri, pos);
      const result = toLspHovers(hovers, uri.toString(), await positionMap([{ uri }], enc));
      return { servers: serversFor(result.length > 0, serving), result };
    }
    case 'textDocument/documentSymbol': {
      const symbols = await exec<VSymbol[] | undefined>('vscode.executeDocumentSymbolProvider', uri);
      const result = toLspDocumentSymbols(symbols, uri.toString(), await positionMap([{ uri }, symbols], enc));
      return { servers: serversFor(result.length > 0, serving), result };
    }
    case 'textDocument/rename': {
      // The versions the servers compute the edit against: the daemon refuses to apply it to a
      // buffer that changed since (a versioned TextDocumentEdit).
      const versions = new Map(vscode.workspace.textDocuments.map((d) => [d.uri.toString(), d.version]));
      let edit: VWorkspaceEdit | undefined;
      try {
        edit = await exec<VWorkspaceEdit | undefined>('vscode.executeDocumentRenameProvider', uri, pos, p.params.newName ?? '');
      } catch (e) {
        // With no rename provider at all VS Code throws ("No result."): not a failure of a server.
        if (serving.length === 0) return { servers: [], result: null };
        throw e;
      }
      const entries: EditEntry[] = edit ? workspaceEditEntries(edit) : [];
      const result = toLspWorkspaceEdit(entries, (u) => versions.get(u) ?? null, await positionMap(entries.map((e) => ('uri' in e ? { uri: e.uri } : {})), enc));
      return { servers: serversFor(result !== null, serving), result };
    }
    default:
      throw new ResponseError(ErrorCodes.MethodNotFound, `agent/languageRequest: ${String(p.method)} is not answered by this client`);
  }
}

/** A short line for the output channel: what was asked and how many answers came. */
function describe(p: LanguageRequestParams, r: LanguageRequestResult): string {
  const n = Array.isArray(r.result) ? `${r.result.length} result(s)` : r.result ? '1 result' : 'no result';
  const where = p.params.textDocument ? ` ${p.params.textDocument.uri}${p.params.position ? `:${p.params.position.line + 1}:${p.params.position.character + 1}` : ''}` : ` "${p.params.query ?? ''}"`;
  return `agent/languageRequest ${p.method}${where}: ${n}, servers [${r.servers.join(', ')}]`;
}

/**
 * The request handler. The execute commands take no cancellation token, so a `$/cancelRequest`
 * (the daemon's timeout, or an aborted run) answers at once with RequestCancelled and the
 * commands' late result is dropped.
 */
export async function answerLanguageRequest(p: LanguageRequestParams, token: CancellationToken, ctx: LanguageRequestContext): Promise<LanguageRequestResult> {
  const work = answer(p, ctx).then((r) => { ctx.log(describe(p, r)); return r; }, (e: unknown) => {
    const message = e instanceof Error ? e.message : String(e);
    ctx.log(`agent/languageRequest ${p.method} failed: ${message}`);
    throw e instanceof ResponseError ? e : new ResponseError(ErrorCodes.InternalError, message);
  });
  return raceCancellation(work, token, () => {
    ctx.log(`agent/languageRequest ${p.method}: cancelled by the daemon`);
    return new ResponseError(LSPErrorCodes.RequestCancelled, 'Cancelled');
  });
}
