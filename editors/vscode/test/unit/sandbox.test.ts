//! The command sandbox in words (protocol.md §3.17): the status of agent/getState.sandbox, the
//! footer's summary, the approval's one-line form, and the sandboxNetwork setting as sent.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { SandboxStatus } from '../../src/protocol';
import { normalizeDomain, sandboxNetworkOption, sandboxNoteLine, sandboxStatusLines, sandboxSummary } from '../../src/shared/sandbox';

/** What this daemon answers on a machine with every layer (agent/getState.sandbox). */
const full = (extra: Partial<SandboxStatus> = {}): SandboxStatus => ({
  available: true, mode: 'workspaceWrite', network: false, explicit: false,
  layers: {
    landlock: { available: true, active: true, abi: 7, ioctlDev: true, scopes: true, unixSockets: false },
    namespaces: { available: true, active: true, kinds: ['user', 'mount', 'pid', 'ipc', 'net'] },
    seccomp: { available: true, active: true }, proxy: { available: true, active: false },
  },
  notIsolated: [], ...extra,
});

test('the status names the mode, the network and every layer of a full machine', () => {
  assert.deepEqual(sandboxStatusLines(full()), [
    'Mode: workspaceWrite (the default), for the commands that run without asking; those you approve by hand run with your rights.',
    'Writes: only inside the workspace (not its protected paths, such as .git) and its temporary directory.',
    'Network: none.',
    'Landlock ABI 7: active (device ioctls refused, signals and abstract sockets kept inside).',
    'Namespaces: active (user, mount, pid, ipc, net).',
    'seccomp: active (Unix sockets, io_uring, keyrings refused).',
    'Allowlist proxy: available, not used (no allowlist).',
    'Not isolated here: nothing (every layer is in place).',
  ]);
  assert.deepEqual(sandboxSummary(full()), { text: 'sandbox: workspaceWrite (default) · no network', warn: false });
});

test('an allowlist, the gaps of a machine without namespaces and the refused hosts are all listed', () => {
  const s = full({
    explicit: true, allowedDomains: ['crates.io', '*.npmjs.org'], refusedHosts: ['evil.example:443'],
    layers: {
      landlock: { available: true, active: true, abi: 5, ioctlDev: true, scopes: false, unixSockets: false },
      namespaces: { available: false, active: false, reason: 'user namespaces are not allowed' },
      seccomp: { available: true, active: true }, proxy: { available: false, active: false },
    },
    notIsolated: ['System V IPC of your other processes: no IPC namespace', 'the network allowlist: without a network namespace commands get no network at all'],
  });
  const lines = sandboxStatusLines(s);
  assert.equal(lines[0], 'Mode: workspaceWrite (set), for every command, those you approve too.');
  assert.equal(lines[2], 'Network: only crates.io, *.npmjs.org, through the daemon\'s proxy.');
  assert.equal(lines[3], 'Landlock ABI 5: active (device ioctls refused).');
  assert.equal(lines[4], 'Namespaces: unavailable (user namespaces are not allowed).');
  assert.equal(lines[6], 'Allowlist proxy: unavailable (it needs namespaces).');
  assert.deepEqual(lines.slice(7), [
    'Not isolated here:',
    '  • System V IPC of your other processes: no IPC namespace',
    '  • the network allowlist: without a network namespace commands get no network at all',
    'Refused by the allowlist: evil.example:443.',
  ]);
  assert.deepEqual(sandboxSummary(s), { text: 'sandbox: workspaceWrite · network: crates.io, *.npmjs.org · 2 not isolated', warn: true });
});

test('an unavailable sandbox and the mode off say what that means', () => {
  const unavailable = sandboxStatusLines(full({ available: false, reason: 'Landlock ABI 4 is missing' }));
  assert.equal(unavailable[0], 'Unavailable on this machine: Landlock ABI 4 is missing. A command that would run sandboxed asks you first.');
  assert.deepEqual(sandboxSummary(full({ available: false, reason: 'x' })), { text: 'sandbox: unavailable', warn: true });
  const off = full({ mode: 'off', explicit: true, network: true, notIsolated: ['everything: commands run with your full rights'] });
  assert.equal(sandboxStatusLines(off)[0], 'Mode: off (set): commands run with your full rights.');
  assert.ok(!sandboxStatusLines(off).some((l) => l.startsWith('Network:')));
  assert.deepEqual(sandboxSummary(off), { text: 'sandbox: off', warn: true });
  // A daemon that reports no layers (an older one) still gets its mode shown.
  assert.deepEqual(sandboxStatusLines({ available: true, mode: 'readOnly', network: false, explicit: true }),
    ['Mode: readOnly (set), for every command, those you approve too.', 'Writes: nowhere but its temporary directory.', 'Network: none.']);
});

test('a background approval says it all in one line', () => {
  assert.equal(sandboxNoteLine({ sandboxed: true, mode: 'workspaceWrite', network: false, allowedDomains: ['crates.io'], layers: ['Landlock ABI 7', 'seccomp'], notIsolated: ['a', 'b'] }),
    'Sandboxed: writes only inside the workspace (not its protected paths, such as .git) and its temporary directory; network only to crates.io. Layers: Landlock ABI 7, seccomp. Not isolated here: a; b.');
  assert.equal(sandboxNoteLine({ sandboxed: false, mode: 'off', network: true }), 'Runs with your full rights (no sandbox).');
  assert.equal(sandboxNoteLine(undefined), undefined);
});

test('sandboxNetwork is sent as true or its valid domains; a bad entry is left out and named', () => {
  assert.deepEqual(sandboxNetworkOption(true), { value: true, problems: [] });
  assert.deepEqual(sandboxNetworkOption(false), { problems: [] });
  assert.deepEqual(sandboxNetworkOption(undefined), { problems: [] });
  assert.deepEqual(sandboxNetworkOption(['crates.io', ' *.NPMJS.org. ']), { value: ['crates.io', '*.npmjs.org'], problems: [] });
  assert.deepEqual(sandboxNetworkOption([]), { value: [], problems: [] });
  const bad = sandboxNetworkOption(['crates.io', 'http://x.org', 3]);
  assert.deepEqual(bad.value, ['crates.io']);
  assert.equal(bad.problems.length, 2);
  assert.ok(bad.problems[0].startsWith('"http://x.org" is not a domain'), bad.problems[0]);
  assert.deepEqual(sandboxNetworkOption('crates.io').value, undefined);
  assert.equal(normalizeDomain('*.'), undefined);
  assert.equal(normalizeDomain('Example.COM.'), 'example.com');
});
