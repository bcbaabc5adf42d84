/**
 * The `agentLsp.*` settings the daemon is started with, read so that a workspace cannot loosen
 * what the user set: the settings in `USER_ONLY_SETTINGS` run programs or decide what the agent
 * may do (the binary and its arguments and environment, the approval policy, the sandbox), so
 * package.json gives them `"scope": "machine"` (VS Code ignores them in a workspace's or folder's
 * `.vscode/settings.json`, and Restricted Mode too, `restrictedConfigurations`) and they are read
 * here from the user's value only (`inspect().globalValue`, else the default), never from a
 * workspace value, whatever VS Code version runs the extension. Pure (the configuration is
 * passed in): unit-tested.
 */

import type { InitializationOptions } from '../protocol';
import { sandboxNetworkOption } from './sandbox';

/** Settings a workspace must not set (package.json: `"scope": "machine"`; a unit test checks both agree). */
export const USER_ONLY_SETTINGS = ['serverPath', 'serverArgs', 'env', 'approval', 'sandbox', 'sandboxNetwork', 'sandboxEnv', 'sandboxProtectedPaths'] as const;

/** Changing one of these restarts the daemon (they are sent at its start). */
export const RESTART_SETTINGS = [...USER_ONLY_SETTINGS, 'model', 'saveAfterEdit', 'forwardDiagnostics'] as const;

/** The part of `WorkspaceConfiguration.inspect`'s answer read here. */
export interface Inspected { defaultValue?: unknown; globalValue?: unknown; workspaceValue?: unknown; workspaceFolderValue?: unknown }

/** The `agentLsp` section: `WorkspaceConfiguration.get` and `.inspect`. */
export interface SettingsSource {
  get(key: string): unknown;
  inspect(key: string): Inspected | undefined;
}

/** A user-only setting: the user's value, else the default; a workspace's value never counts. */
export function userValue(src: SettingsSource, key: (typeof USER_ONLY_SETTINGS)[number]): unknown {
  const i = src.inspect(key);
  return i?.globalValue !== undefined ? i.globalValue : i?.defaultValue;
}

export interface DaemonSettings {
  /** `agentLsp.serverPath` as the user set it, trimmed; empty when not set (`binary.ts`: bundled, then PATH). */
  serverPath: string;
  serverArgs: string[];
  env: Record<string, string>;
  initializationOptions: InitializationOptions;
  forwardDiagnostics: boolean;
  /** Values left out because the daemon would refuse them (it would then ignore every option). */
  problems: string[];
}

const strings = (v: unknown): string[] | undefined =>
  Array.isArray(v) && v.every((x) => typeof x === 'string') ? v : undefined;

const POLICIES = new Set(['allow', 'ask', 'block']);

export function daemonSettings(src: SettingsSource, folder: string | undefined): DaemonSettings {
  const problems: string[] = [];
  const init: InitializationOptions = {};
  const model = src.get('model');
  if (typeof model === 'string' && model.trim() !== '') init.model = model.trim();
  const approval = userValue(src, 'approval');
  if (approval && typeof approval === 'object' && !Array.isArray(approval)) {
    const policy: Record<string, 'allow' | 'ask' | 'block'> = {};
    for (const [tool, value] of Object.entries(approval)) {
      if (typeof value === 'string' && POLICIES.has(value)) policy[tool] = value as 'allow' | 'ask' | 'block';
      else problems.push(`agentLsp.approval.${tool}: ${JSON.stringify(value)} is not "allow", "ask" or "block": left out (the daemon's default applies)`);
    }
    init.approval = policy;
  }
  const save = src.get('saveAfterEdit');
  if (save === 'ifClean' || save === 'always' || save === 'never') init.saveAfterEdit = save;
  const sandbox = userValue(src, 'sandbox');
  if (sandbox === 'workspaceWrite' || sandbox === 'readOnly' || sandbox === 'off') init.sandbox = sandbox;
  const network = sandboxNetworkOption(userValue(src, 'sandboxNetwork'));
  if (network.value !== undefined) init.sandboxNetwork = network.value;
  problems.push(...network.problems.map((p) => `agentLsp.sandboxNetwork: ${p}`));
  const env = strings(userValue(src, 'sandboxEnv'));
  if (env) init.sandboxEnv = env;
  const protectedPaths = strings(userValue(src, 'sandboxProtectedPaths'));
  if (protectedPaths) init.sandboxProtectedPaths = protectedPaths;
  if (folder) init.cwd = folder;
  const path = userValue(src, 'serverPath');
  const daemonEnv = userValue(src, 'env');
  return {
    serverPath: typeof path === 'string' ? path.trim() : '',
    serverArgs: strings(userValue(src, 'serverArgs')) ?? ['--stdio'],
    env: daemonEnv && typeof daemonEnv === 'object'
      ? Object.fromEntries(Object.entries(daemonEnv).filter(([, v]) => typeof v === 'string')) as Record<string, string> : {},
    initializationOptions: init,
    forwardDiagnostics: src.get('forwardDiagnostics') !== false,
    problems,
  };
}
