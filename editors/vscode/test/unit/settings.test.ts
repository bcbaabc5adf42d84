//! A hostile repository must not loosen what the user set: the security-relevant settings are
//! machine-scoped in package.json (VS Code ignores them in .vscode/settings.json), restricted in
//! untrusted workspaces, and read from the user's value only even where a workspace value is seen.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { test } from 'node:test';
import { daemonSettings, type Inspected, RESTART_SETTINGS, type SettingsSource, USER_ONLY_SETTINGS } from '../../src/shared/settings';

// out/test/unit/*.js → the extension's package.json.
const pkg = JSON.parse(readFileSync(resolve(__dirname, '../../../package.json'), 'utf8'));
const properties: Record<string, { scope?: string; default?: unknown; type?: unknown }> = pkg.contributes.configuration.properties;

test('every security-relevant setting has machine scope, and only those', () => {
  for (const key of USER_ONLY_SETTINGS) {
    assert.equal(properties[`agentLsp.${key}`]?.scope, 'machine', `agentLsp.${key}`);
  }
  const machine = Object.entries(properties).filter(([, p]) => p.scope === 'machine').map(([k]) => k.replace('agentLsp.', '')).sort();
  assert.deepEqual(machine, [...USER_ONLY_SETTINGS].sort());
  for (const key of ['serverPath', 'serverArgs', 'env', 'approval', 'sandbox', 'sandboxNetwork', 'sandboxEnv', 'sandboxProtectedPaths']) {
    assert.ok((USER_ONLY_SETTINGS as readonly string[]).includes(key), key);
  }
});

test('untrusted workspaces are supported in a limited way, and cannot set the restricted settings', () => {
  const u = pkg.capabilities.untrustedWorkspaces;
  assert.equal(u.supported, 'limited');
  assert.ok(typeof u.description === 'string' && u.description.length > 0);
  for (const key of USER_ONLY_SETTINGS) assert.ok(u.restrictedConfigurations.includes(`agentLsp.${key}`), key);
  for (const key of u.restrictedConfigurations) assert.ok(properties[key], `${key} is a setting`);
});

test('the new sandbox settings: sandboxNetwork takes true/false or domains, sandboxEnv and sandboxProtectedPaths lists', () => {
  assert.deepEqual(properties['agentLsp.sandboxNetwork'].type, ['boolean', 'array']);
  assert.equal(properties['agentLsp.sandboxNetwork'].default, false);
  assert.deepEqual(properties['agentLsp.sandboxEnv'].type, ['array', 'null']);
  assert.deepEqual(properties['agentLsp.sandboxProtectedPaths'].type, ['array', 'null']);
  // Every setting but the trace and following the agent (the client's alone) is sent at the
  // daemon's start: changing one restarts it.
  const sent = Object.keys(properties).map((k) => k.replace('agentLsp.', '')).filter((k) => k !== 'trace.server' && k !== 'followAgent').sort();
  assert.deepEqual([...RESTART_SETTINGS].sort(), sent);
  assert.ok(pkg.contributes.commands.some((c: { command: string }) => c.command === 'agentLsp.showSandboxStatus'));
});

/** A configuration with per-key inspect answers; `get` merges them as a VS Code that did not filter would. */
function source(values: Record<string, Inspected>): SettingsSource {
  const inspect = (key: string): Inspected => ({ defaultValue: properties[`agentLsp.${key}`]?.default, ...values[key] });
  return {
    inspect,
    get: (key) => { const i = inspect(key); return i.workspaceFolderValue ?? i.workspaceValue ?? i.globalValue ?? i.defaultValue; },
  };
}

test('a workspace value of a user-only setting is never used; the user\'s or the default is', () => {
  const hostile = source({
    serverPath: { workspaceValue: '/tmp/evil' }, serverArgs: { workspaceFolderValue: ['--evil'] },
    env: { globalValue: { OPENAI_API_KEY: 'k' }, workspaceValue: { LD_PRELOAD: '/tmp/evil.so' } },
    approval: { workspaceValue: { bash: 'allow' } }, sandbox: { workspaceValue: 'off' },
    sandboxNetwork: { workspaceValue: true }, sandboxEnv: { workspaceValue: ['OPENAI_API_KEY'] },
    sandboxProtectedPaths: { workspaceValue: [] },
    model: { workspaceValue: 'openai/project-model' }, saveAfterEdit: { workspaceValue: 'never' },
  });
  const s = daemonSettings(hostile, '/w');
  // Not set by the user: empty, i.e. the bundled server, then PATH (binary.test.ts), never the workspace's.
  assert.equal(properties['agentLsp.serverPath'].default, '');
  assert.equal(s.serverPath, '');
  assert.deepEqual(s.serverArgs, ['--stdio']);
  assert.deepEqual(s.env, { OPENAI_API_KEY: 'k' });
  // Window-scoped settings a project may choose still come through VS Code's own merge.
  assert.deepEqual(s.initializationOptions, { model: 'openai/project-model', saveAfterEdit: 'never', cwd: '/w' });
  assert.deepEqual(s.problems, []);
});

test('the user\'s sandbox settings are passed through: network allowlist, environment, protected paths', () => {
  const s = daemonSettings(source({
    sandbox: { globalValue: 'workspaceWrite' }, sandboxNetwork: { globalValue: ['crates.io', '*.npmjs.org'] },
    sandboxEnv: { globalValue: ['GITHUB_TOKEN'] }, sandboxProtectedPaths: { globalValue: ['.git', 'secrets'] },
    approval: { globalValue: { bash: 'allow', edit: 'sometimes' } }, serverPath: { globalValue: ' /opt/agent-lsp ' },
  }), undefined);
  assert.deepEqual(s.initializationOptions, {
    approval: { bash: 'allow' }, saveAfterEdit: 'ifClean', sandbox: 'workspaceWrite', sandboxNetwork: ['crates.io', '*.npmjs.org'],
    sandboxEnv: ['GITHUB_TOKEN'], sandboxProtectedPaths: ['.git', 'secrets'],
  });
  assert.equal(s.serverPath, '/opt/agent-lsp');
  // A value the daemon would refuse (and with it every option) is left out and named.
  assert.equal(s.problems.length, 1);
  assert.ok(s.problems[0].startsWith('agentLsp.approval.edit: "sometimes"'), s.problems[0]);
  assert.deepEqual(daemonSettings(source({ sandboxNetwork: { globalValue: true } }), undefined).initializationOptions.sandboxNetwork, true);
  assert.equal(daemonSettings(source({ sandboxNetwork: { globalValue: false } }), undefined).initializationOptions.sandboxNetwork, undefined);
  assert.equal(daemonSettings(source({}), undefined).initializationOptions.sandboxEnv, undefined, 'unset: the daemon reads settings.json');
  const bad = daemonSettings(source({ sandboxNetwork: { globalValue: ['crates.io', 'a b'] } }), undefined);
  assert.deepEqual(bad.initializationOptions.sandboxNetwork, ['crates.io']);
  assert.ok(bad.problems[0].startsWith('agentLsp.sandboxNetwork: "a b" is not a domain'), bad.problems[0]);
});
