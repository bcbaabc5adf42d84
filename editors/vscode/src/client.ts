/**
 * Starts the `agent-lsp` daemon with vscode-languageclient and opts into the agent protocol
 * (`capabilities.experimental.agent = {events, approvals, saveDocuments, diagnostics, askUser,
 * languageFeatures}`; `diagnostics` follows the `agentLsp.forwardDiagnostics` setting;
 * `languageFeatures` lists the seven LSP methods answered through `agent/languageRequest`).
 * Handlers for the server's custom messages are registered before `start()` so they survive
 * restarts.
 */

import * as vscode from 'vscode';
import {
  type CancellationToken, LanguageClient, type LanguageClientOptions, RevealOutputChannelOn,
  type ServerOptions, type StaticFeature,
} from 'vscode-languageclient/node';
import {
  type AgentClientCapabilities, type AgentEventParams, type AskUserParams, type AskUserResult, type BeforeToolCallParams, type BeforeToolCallResult,
  type InitializationOptions, type LanguageRequestParams, type LanguageRequestResult, Methods, type SaveDocumentsParams, type SaveDocumentsResult,
} from './protocol';
import { noProviders } from './languageRequests';
import { LANGUAGE_METHODS } from './shared/languageResults';
import { findDaemon, missingMessage } from './shared/binary';
import { daemonSettings } from './shared/settings';

export interface AgentHandlers {
  onEvent(params: AgentEventParams): void;
  beforeToolCall(params: BeforeToolCallParams, token: CancellationToken): Promise<BeforeToolCallResult>;
  saveDocuments(params: SaveDocumentsParams): Promise<SaveDocumentsResult>;
  /** A question for the user (`agent/askUser`); the token fires on the server's `$/cancelRequest`. */
  askUser(params: AskUserParams, token: CancellationToken): Promise<AskUserResult>;
  /** What the editor's language servers answer (`agent/languageRequest`, §4.6); the token fires on `$/cancelRequest`. */
  languageRequest(params: LanguageRequestParams, token: CancellationToken): Promise<LanguageRequestResult>;
}

export function agentCapabilities(forwardDiagnostics: boolean): AgentClientCapabilities {
  return { events: true, approvals: true, saveDocuments: true, diagnostics: forwardDiagnostics, askUser: true, languageFeatures: [...LANGUAGE_METHODS] };
}

/** Adds `experimental.agent` to the client capabilities sent in `initialize`. */
class AgentCapabilityFeature implements StaticFeature {
  constructor(private readonly agent: AgentClientCapabilities) {}
  fillClientCapabilities(capabilities: { experimental?: unknown }): void {
    const experimental = (capabilities.experimental ?? {}) as Record<string, unknown>;
    capabilities.experimental = { ...experimental, agent: { ...this.agent } };
  }
  initialize(): void { /* nothing to do: the capability is static */ }
  getState(): { kind: 'static' } { return { kind: 'static' }; }
  clear(): void { /* nothing to release */ }
}

export class BinaryMissingError extends Error {}

export interface DaemonConfig {
  serverPath: string;
  serverArgs: string[];
  env: Record<string, string>;
  initializationOptions: InitializationOptions;
  cwd?: string;
  /** Whether diagnostics are forwarded (sent in `initialize`: changing it restarts the daemon). */
  forwardDiagnostics: boolean;
  /** Setting values left out because the daemon would refuse them (shown to the user). */
  problems: string[];
}

/**
 * The daemon's settings. The security-relevant ones come from the user's settings only (see
 * `shared/settings.ts`): a workspace's `.vscode/settings.json` cannot change the binary, its
 * environment, the approval policy or the sandbox.
 */
export function readConfig(): DaemonConfig {
  const c = vscode.workspace.getConfiguration('agentLsp');
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  const s = daemonSettings({ get: (key) => c.get(key), inspect: (key) => c.inspect(key) }, folder);
  return { ...s, cwd: folder };
}

/**
 * The daemon binary for these settings (`shared/binary.ts`: agentLsp.serverPath if the user set it,
 * else the one bundled in `extensionPath`/server, else agent-lsp on PATH) and why that one.
 * Throws `BinaryMissingError`, naming every place looked at and the one-line install, when none is there.
 */
export function daemonBinary(config: DaemonConfig, extensionPath: string): { command: string; why: string } {
  const found = findDaemon({ serverPath: config.serverPath, extensionPath, pathEnv: process.env.PATH ?? '', cwd: config.cwd });
  if (!found.found) throw new BinaryMissingError(missingMessage(found));
  return found;
}

export function createClient(config: DaemonConfig, extensionPath: string, handlers: AgentHandlers, output: vscode.OutputChannel): LanguageClient {
  const { command, why } = daemonBinary(config, extensionPath);
  output.appendLine(`Starting the daemon ${command} (${why})`);
  // No `transport`: with TransportKind.stdio the client appends its own `--stdio`, which the
  // daemon would see twice (serverArgs already carries it, and users may change it).
  const serverOptions: ServerOptions = {
    command,
    args: config.serverArgs,
    options: { env: { ...process.env, ...config.env }, cwd: config.cwd },
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: 'file' }, { scheme: 'untitled' }],
    initializationOptions: config.initializationOptions,
    outputChannel: output,
    revealOutputChannelOn: RevealOutputChannelOn.Never,
    middleware: noProviders,
  };
  const client = new LanguageClient('agentLsp', 'agent-lsp', serverOptions, clientOptions);
  client.registerFeature(new AgentCapabilityFeature(agentCapabilities(config.forwardDiagnostics)));
  client.onNotification(Methods.event, (p: AgentEventParams) => handlers.onEvent(p));
  client.onRequest(Methods.beforeToolCall, (p: BeforeToolCallParams, token: CancellationToken) => handlers.beforeToolCall(p, token));
  client.onRequest(Methods.saveDocuments, (p: SaveDocumentsParams) => handlers.saveDocuments(p));
  client.onRequest(Methods.askUser, (p: AskUserParams, token: CancellationToken) => handlers.askUser(p, token));
  client.onRequest(Methods.languageRequest, (p: LanguageRequestParams, token: CancellationToken) => handlers.languageRequest(p, token));
  return client;
}
