//! Which daemon the extension starts: agentLsp.serverPath if the user set it, else the server the
//! platform VSIX carries (<extension>/server/agent-lsp), else agent-lsp on PATH; and what it says
//! when none is there.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { bundledBinary, findDaemon, INSTALL_CARGO, INSTALL_COMMAND, missingMessage } from '../../src/shared/binary';

/** A temp tree: an extension folder (with or without server/agent-lsp), a PATH dir, a user dir. */
function tree(opts: { bundled?: 'exec' | 'plain'; onPath?: boolean; bundledName?: string; pathName?: string }) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-lsp-resolve-'));
  const ext = path.join(root, 'ext');
  const bin = path.join(root, 'bin');
  const user = path.join(root, 'user');
  for (const d of [ext, bin, user]) fs.mkdirSync(d);
  const exe = (file: string, mode = 0o755) => { fs.mkdirSync(path.dirname(file), { recursive: true }); fs.writeFileSync(file, '#!/bin/sh\n'); fs.chmodSync(file, mode); return file; };
  const bundled = opts.bundled ? exe(path.join(ext, 'server', opts.bundledName ?? 'agent-lsp'), opts.bundled === 'exec' ? 0o755 : 0o644) : undefined;
  const onPath = opts.onPath ? exe(path.join(bin, opts.pathName ?? 'agent-lsp')) : undefined;
  const mine = exe(path.join(user, 'my-agent-lsp'));
  const pathEnv = ['/nonexistent', bin].join(path.delimiter);
  return { root, ext, bin, bundled, onPath, mine, pathEnv, done: () => fs.rmSync(root, { recursive: true }) };
}

test('a set agentLsp.serverPath wins over the bundled server and PATH', () => {
  const t = tree({ bundled: 'exec', onPath: true });
  try {
    const r = findDaemon({ serverPath: t.mine, extensionPath: t.ext, pathEnv: t.pathEnv, platform: 'linux' });
    assert.deepEqual(r, { found: true, command: t.mine, source: 'setting', why: `agentLsp.serverPath is "${t.mine}"` });
    // A bare name in the setting is looked up on PATH; a relative path against the workspace.
    fs.copyFileSync(t.mine, path.join(t.bin, 'my-agent-lsp'));
    fs.chmodSync(path.join(t.bin, 'my-agent-lsp'), 0o755);
    const bare = findDaemon({ serverPath: ' my-agent-lsp ', extensionPath: t.ext, pathEnv: t.pathEnv, platform: 'linux' });
    assert.ok(bare.found && bare.source === 'setting' && bare.command === path.join(t.bin, 'my-agent-lsp'), JSON.stringify(bare));
    const rel = findDaemon({ serverPath: './user/my-agent-lsp', extensionPath: t.ext, pathEnv: '', cwd: t.root, platform: 'linux' });
    assert.ok(rel.found && rel.command === t.mine, JSON.stringify(rel));
  } finally { t.done(); }
});

test('a set agentLsp.serverPath that is not there fails, naming it, without starting another daemon', () => {
  const t = tree({ bundled: 'exec', onPath: true });
  try {
    const r = findDaemon({ serverPath: '/nonexistent/agent-lsp', extensionPath: t.ext, pathEnv: t.pathEnv, platform: 'linux' });
    assert.equal(r.found, false);
    if (r.found) return;
    assert.equal(r.source, 'setting');
    assert.deepEqual(r.looked, ['agentLsp.serverPath "/nonexistent/agent-lsp" (no executable file there)']);
    const m = missingMessage(r);
    assert.ok(m.startsWith('The agent-lsp binary was not found. Looked at: agentLsp.serverPath "/nonexistent/agent-lsp"'), m);
    assert.ok(m.includes('clear it to use the bundled server') && m.includes(INSTALL_COMMAND) && m.includes(INSTALL_CARGO), m);
    const bare = findDaemon({ serverPath: 'no-such-agent-lsp', extensionPath: t.ext, pathEnv: t.pathEnv, platform: 'linux' });
    assert.ok(!bare.found && bare.looked[0] === 'agentLsp.serverPath "no-such-agent-lsp" (not on PATH)', JSON.stringify(bare));
  } finally { t.done(); }
});

test('not set: the bundled server/agent-lsp, before agent-lsp on PATH', () => {
  const t = tree({ bundled: 'exec', onPath: true });
  try {
    for (const serverPath of ['', '   ']) {
      const r = findDaemon({ serverPath, extensionPath: t.ext, pathEnv: t.pathEnv, platform: 'linux' });
      assert.ok(r.found, JSON.stringify(r));
      assert.equal(r.command, path.join(t.ext, 'server', 'agent-lsp'));
      assert.equal(r.source, 'bundled');
      assert.ok(r.why.startsWith('bundled with the extension'), r.why);
    }
  } finally { t.done(); }
});

test('not set and no usable bundled server: agent-lsp on PATH', () => {
  for (const bundled of [undefined, 'plain'] as const) { // absent, or there but not executable
    const t = tree({ bundled, onPath: true });
    try {
      const r = findDaemon({ serverPath: '', extensionPath: t.ext, pathEnv: t.pathEnv, platform: 'linux' });
      assert.ok(r.found, JSON.stringify(r));
      assert.equal(r.command, t.onPath);
      assert.equal(r.source, 'path');
    } finally { t.done(); }
  }
});

test('nothing anywhere: the message names the setting, the bundled path and PATH, and the one-line installs', () => {
  for (const bundled of [undefined, 'plain'] as const) {
    const t = tree({ bundled });
    try {
      const r = findDaemon({ serverPath: '', extensionPath: t.ext, pathEnv: t.pathEnv, platform: 'linux' });
      assert.equal(r.found, false);
      if (r.found) return;
      const where = path.join(t.ext, 'server', 'agent-lsp');
      assert.deepEqual(r.looked, [
        'agentLsp.serverPath (not set)',
        `the bundled ${where} (${bundled ? 'not executable' : 'absent: this VSIX carries no server'})`,
        'agent-lsp on PATH (not found)',
      ]);
      const m = missingMessage(r);
      for (const want of ['agentLsp.serverPath (not set)', where, 'agent-lsp on PATH', INSTALL_COMMAND, INSTALL_CARGO, 'platform VSIX']) {
        assert.ok(m.includes(want), `${want} in ${m}`);
      }
    } finally { t.done(); }
  }
  assert.ok(INSTALL_COMMAND.startsWith("curl --proto '=https' --tlsv1.2 -LsSf https://github.com/agent-lsp/agent-lsp/releases/latest/download/agent-lsp-installer.sh"));
  assert.ok(INSTALL_COMMAND.endsWith('| sh'));
});

test('on Windows the bundled server and the PATH lookup use agent-lsp.exe', () => {
  assert.equal(bundledBinary('/ext', 'win32'), path.join('/ext', 'server', 'agent-lsp.exe'));
  assert.equal(bundledBinary('/ext', 'linux'), path.join('/ext', 'server', 'agent-lsp'));
  const t = tree({ bundled: 'exec', bundledName: 'agent-lsp.exe', onPath: true, pathName: 'agent-lsp.exe' });
  try {
    const b = findDaemon({ serverPath: '', extensionPath: t.ext, pathEnv: t.pathEnv, platform: 'win32' });
    assert.ok(b.found && b.source === 'bundled' && b.command.endsWith('agent-lsp.exe'), JSON.stringify(b));
    // Linux does not take the .exe for its bundled server, and finds no plain agent-lsp on PATH.
    assert.equal(findDaemon({ serverPath: '', extensionPath: t.ext, pathEnv: t.pathEnv, platform: 'linux' }).found, false);
    fs.rmSync(path.join(t.ext, 'server'), { recursive: true });
    const p = findDaemon({ serverPath: '', extensionPath: t.ext, pathEnv: t.pathEnv, platform: 'win32' });
    assert.ok(p.found && p.source === 'path' && p.command === t.onPath, JSON.stringify(p));
  } finally { t.done(); }
});
