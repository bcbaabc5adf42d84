// An ACP client as an editor would be, on the official TypeScript SDK (@agentclientprotocol/sdk),
// driving the real `agent-lsp acp` through one scenario and printing what happened as JSON.
//
//   node tests/acp/client.mjs SCENARIO.json
//   env: AGENT_LSP_BIN (the agent), ACP_SDK (the node_modules holding the SDK); the agent gets
//   this process's environment (the test seals it).
//
// The scenario: {"client": {...}, "steps": [...]}.
// client: {"fs": bool, "terminal": bool, "buffers": {"/abs/path": "unsaved text"},
//          "permissions": ["allow_once" | "allow_always" | "reject_once" | "reject_always" | "cancel", ...]}
//   Permission requests take the next answer in order ("cancel": send session/cancel, then
//   answer `cancelled` as ACP requires); none left: the test fails.
// client.elicitation: advertise form elicitation (clientCapabilities.elicitation.form);
//   "elicitations": [response | "cancelTurn", ...]: `elicitation/create` requests take the next
//   response in order ({action: "accept", content} | {action: "decline"} | {action: "cancel"});
//   "cancelTurn" sends session/cancel and answers `cancel`; none left: the test fails. A read returns the buffer
//   when there is one (the editor's unsaved text), else the disk; a write goes to the buffer
//   (the editor's review), never to disk. Terminals run the command with its args in a process
//   group of its own (killed whole), keeping the last `outputByteLimit` bytes of output, as an
//   editor does.
// steps (run in order; "as" names a request's result, "$session" is the last new session's id):
//   {"op": "initialize", "meta"?} | {"op": "new", "cwd", "mcpServers"?} | {"op": "prompt", "text" | "prompt",
//   "wait": false?, "as"} | {"op": "await", "name"} | {"op": "cancel"} | {"op": "until", "update":
//   kind, "count"?} | {"op": "request", "method", "params", "as"} | {"op": "raw", "line"} |
//   {"op": "load" | "resume", "sessionId"?, "cwd"} | {"op": "sleep", "ms"} |
//   {"op": "terminalAuth", "methodId", "input"} (runs a `terminal` auth method as a client does) |
//   {"op": "untilTerminal", "index", "contains"?, "released"?} (waits until the index-th terminal's
//   output holds `contains`, and it was released if `released`) | {"op": "writeFile", "path",
//   "content"} | {"op": "exitAgent"} (closes the agent's stdin and waits until it exits; the
//   client still answers what the agent asks meanwhile, its answers dropped)
// client.authTerminal: advertise clientCapabilities.auth.terminal.
// Output (stdout, one JSON object): {"wire": [{"dir": "in"|"out", "msg"}], "results": {...},
//   "reads": [{path, line, limit}], "writes": [{path, content}], "terminals": [{command, ...}], "error"?}
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { Readable, Writable } from "node:stream";
import path from "node:path";

const sdkDir = process.env.ACP_SDK;
const bin = process.env.AGENT_LSP_BIN;
if (!sdkDir || !bin) {
  console.error("client.mjs: set ACP_SDK and AGENT_LSP_BIN");
  process.exit(2);
}
const sdkEntry = path.join(sdkDir, "@agentclientprotocol/sdk/dist/v1/stable/acp.js");
const acp = await import(pathToFileURL(sdkEntry).href);
// The SDK's own schema of the protocol (zod), to read a response as the library's types see it.
const schema = await import(pathToFileURL(path.join(sdkDir, "@agentclientprotocol/sdk/dist/v1/schema/zod.gen.js")).href);

const scenario = JSON.parse(readFileSync(process.argv[2], "utf8"));
const cfg = scenario.client ?? {};
const wire = [];
const results = {};
const writes = [];
const reads = [];
const terminals = [];
const buffers = { ...(cfg.buffers ?? {}) };
const permissions = [...(cfg.permissions ?? [])];
const elicitations = [...(cfg.elicitations ?? [])];
let session = null;
const updateWaiters = [];

const agentProc = spawn(bin, ["acp"], { stdio: ["pipe", "pipe", "inherit"] });
const agentExit = new Promise((resolve) => agentProc.on("close", resolve));

// The raw wire, tapped on both sides in order: the ordering assertions look at these lines.
function lines(onLine) {
  let pending = "";
  return (chunk) => {
    pending += chunk.toString("utf8");
    let at;
    while ((at = pending.indexOf("\n")) >= 0) {
      const line = pending.slice(0, at);
      pending = pending.slice(at + 1);
      if (line.trim()) onLine(line);
    }
  };
}
function parsed(line) {
  try {
    return JSON.parse(line);
  } catch {
    return { notJson: line };
  }
}
const tapIn = lines((line) => {
  const msg = parsed(line);
  wire.push({ dir: "in", msg });
  if (process.env.ACP_DEBUG) console.error("<-", line.slice(0, 300));
  if (msg.method === "session/update") {
    for (const w of [...updateWaiters]) w.check(msg.params.update.sessionUpdate);
  }
});
const tapped = new Readable({ read() {} });
agentProc.stdout.on("data", (chunk) => {
  tapIn(chunk);
  tapped.push(chunk);
});
agentProc.stdout.on("end", () => tapped.push(null));
const outTap = lines((line) => {
  wire.push({ dir: "out", msg: parsed(line) });
  if (process.env.ACP_DEBUG) console.error("->", line.slice(0, 300));
});
const toAgent = new Writable({
  write(chunk, _enc, done) {
    outTap(chunk);
    // After `exitAgent` the agent reads nothing more: answers are dropped.
    if (agentProc.stdin.writableEnded) return done();
    agentProc.stdin.write(chunk, done);
  },
});
const stream = acp.ndJsonStream(Writable.toWeb(toAgent), Readable.toWeb(tapped));

function waitUpdate(kind, count = 1) {
  const seen = wire.filter((w) => w.dir === "in" && w.msg.method === "session/update"
    && w.msg.params.update.sessionUpdate === kind).length;
  if (seen >= count) return Promise.resolve();
  return new Promise((resolve) => {
    let n = seen;
    const waiter = {
      check(k) {
        if (k === kind && ++n >= count) {
          updateWaiters.splice(updateWaiters.indexOf(waiter), 1);
          resolve();
        }
      },
    };
    updateWaiters.push(waiter);
  });
}

const terms = new Map();
let nextTerm = 1;
// Steps waiting for a terminal's condition, checked whenever a terminal changes.
const terminalWaiters = [];
function terminalChanged() {
  for (const w of [...terminalWaiters]) w();
}
function untilTerminal(index, contains, released) {
  return new Promise((resolve) => {
    const check = () => {
      const t = terminals[index];
      if (!t || (contains && !t.output.includes(contains)) || (released && !t.released)) return;
      terminalWaiters.splice(terminalWaiters.indexOf(check), 1);
      resolve();
    };
    terminalWaiters.push(check);
    check();
  });
}
// What a terminal prints, its start dropped past its limit (on a character boundary).
function append(t, data) {
  t.bytes = Buffer.concat([t.bytes, data]);
  if (t.outputByteLimit !== null && t.bytes.length > t.outputByteLimit) {
    let start = t.bytes.length - t.outputByteLimit;
    while (start < t.bytes.length && (t.bytes[start] & 0xc0) === 0x80) start++;
    t.bytes = t.bytes.subarray(start);
    t.truncated = true;
  }
  t.output = t.bytes.toString("utf8");
  terminalChanged();
}
function killGroup(t) {
  try {
    process.kill(-t.proc.pid, "SIGKILL");
  } catch {}
}

const app = acp
  .client({ name: "agent-lsp-test-client" })
  .onRequest("session/request_permission", async ({ params, agent }) => {
    const answer = permissions.shift();
    if (answer === undefined) throw new Error("unexpected permission request: " + JSON.stringify(params));
    if (answer === "cancel") {
      await agent.notify("session/cancel", { sessionId: params.sessionId });
      return { outcome: { outcome: "cancelled" } };
    }
    return { outcome: { outcome: "selected", optionId: answer } };
  })
  .onRequest("elicitation/create", async ({ params, agent }) => {
    const answer = elicitations.shift();
    if (answer === undefined) throw new Error("unexpected elicitation: " + JSON.stringify(params));
    if (answer === "cancelTurn") {
      await agent.notify("session/cancel", { sessionId: params.sessionId });
      return { action: "cancel" };
    }
    return answer;
  })
  .onRequest("fs/read_text_file", async ({ params }) => {
    reads.push({ path: params.path, line: params.line ?? null, limit: params.limit ?? null });
    let content = params.path in buffers ? buffers[params.path] : readFileSync(params.path, "utf8");
    if (params.line || params.limit) {
      const all = content.split("\n");
      const start = (params.line ?? 1) - 1;
      content = all.slice(start, params.limit ? start + params.limit : undefined).join("\n");
    }
    return { content };
  })
  .onRequest("fs/write_text_file", async ({ params }) => {
    writes.push({ path: params.path, content: params.content });
    buffers[params.path] = params.content;
    return {};
  })
  .onRequest("terminal/create", async ({ params }) => {
    const id = `term-${nextTerm++}`;
    const t = {
      id, command: params.command, args: params.args ?? [], cwd: params.cwd, outputByteLimit: params.outputByteLimit ?? null,
      output: "", truncated: false, exit: null, released: false, killed: false, bytes: Buffer.alloc(0),
    };
    t.proc = spawn(params.command, params.args ?? [], { cwd: params.cwd ?? process.cwd(), detached: true });
    t.proc.stdout.on("data", (d) => append(t, d));
    t.proc.stderr.on("data", (d) => append(t, d));
    t.done = new Promise((resolve) => t.proc.on("close", (code, signal) => {
      t.exit = { exitCode: code, signal: signal ?? null };
      terminalChanged();
      resolve();
    }));
    terms.set(id, t);
    terminals.push(t);
    return { terminalId: id };
  })
  .onRequest("terminal/output", async ({ params }) => {
    const t = terms.get(params.terminalId);
    if (!t || t.released) throw new Error(`no terminal ${params.terminalId}`);
    return { output: t.output, truncated: t.truncated, exitStatus: t.exit ?? undefined };
  })
  .onRequest("terminal/wait_for_exit", async ({ params }) => {
    const t = terms.get(params.terminalId);
    await t.done;
    return t.exit;
  })
  .onRequest("terminal/kill", async ({ params }) => {
    const t = terms.get(params.terminalId);
    t.killed = true;
    killGroup(t);
    terminalChanged();
    return {};
  })
  .onRequest("terminal/release", async ({ params }) => {
    const t = terms.get(params.terminalId);
    t.released = true;
    if (t.exit === null) killGroup(t);
    terminalChanged();
    return {};
  })
  .onNotification("session/update", async () => {});

const pending = {};
function settle(name, promise) {
  const p = promise.then(
    (result) => (results[name] = { result }),
    (error) => (results[name] = { error: { code: error.code, message: error.message, data: error.data } }),
  );
  pending[name] = p;
  return p;
}

function subst(value) {
  return JSON.parse(JSON.stringify(value).replaceAll("$session", session ?? ""));
}

async function step(ctx, s) {
  const name = s.as ?? s.op;
  switch (s.op) {
    case "initialize": {
      const caps = { fs: { readTextFile: !!cfg.fs, writeTextFile: !!cfg.fs }, terminal: !!cfg.terminal };
      if (cfg.authTerminal) caps.auth = { terminal: true };
      if (cfg.elicitation) caps.elicitation = { form: {} };
      const params = { protocolVersion: s.protocolVersion ?? 1, clientCapabilities: caps };
      if (s.meta) params._meta = s.meta;
      await settle(name, ctx.request("initialize", params));
      // `parsed`: the response through the SDK's schema (what a client on the library gets).
      const r = results[name];
      if (r.result) r.parsed = schema.zInitializeResponse.parse(r.result);
      return;
    }
    case "new": {
      await settle(name, ctx.request("session/new", { cwd: s.cwd, mcpServers: s.mcpServers ?? [], additionalDirectories: s.additionalDirectories }));
      if (results[name].result) session = results[name].result.sessionId;
      return;
    }
    case "load":
    case "resume": {
      const id = s.sessionId ? subst(s.sessionId) : session;
      await settle(name, ctx.request(`session/${s.op}`, { sessionId: id, cwd: s.cwd, mcpServers: [] }));
      session = id;
      return;
    }
    case "prompt": {
      const prompt = s.prompt ? subst(s.prompt) : [{ type: "text", text: s.text }];
      const p = settle(name, ctx.request("session/prompt", { sessionId: session, prompt }));
      if (s.wait !== false) await p;
      return;
    }
    case "await":
      return pending[s.name];
    case "until":
      return waitUpdate(s.update, s.count ?? 1);
    case "cancel":
      return ctx.notify("session/cancel", { sessionId: session });
    case "request":
      return settle(name, ctx.request(s.method, subst(s.params)));
    case "terminalAuth": {
      // What a client does for a `terminal` auth method: run the agent's own command with the
      // method's args and env appended, the user typing `input`; exit 0 is success.
      const init = results[s.initialize ?? "initialize"]?.result;
      const method = (init?.authMethods ?? []).find((m) => m.id === s.methodId);
      if (!method || method.type !== "terminal") throw new Error(`no terminal auth method ${s.methodId}`);
      const proc = spawn(bin, ["acp", ...(method.args ?? [])], { env: { ...process.env, ...(method.env ?? {}) }, stdio: ["pipe", "pipe", "pipe"] });
      let out = "";
      proc.stdout.on("data", (c) => (out += c));
      proc.stderr.on("data", (c) => (out += c));
      proc.stdin.end(s.input ?? "");
      const exitCode = await new Promise((resolve) => proc.on("close", resolve));
      results[name] = { result: { exitCode, output: out } };
      return;
    }
    case "raw":
      return new Promise((resolve) => toAgent.write(s.line + "\n", resolve));
    case "sleep":
      return new Promise((resolve) => setTimeout(resolve, s.ms));
    case "untilTerminal":
      return untilTerminal(s.index ?? 0, s.contains, s.released);
    case "writeFile":
      return writeFileSync(s.path, s.content);
    case "exitAgent":
      exiting = true;
      agentProc.stdin.end();
      return agentExit;
    default:
      throw new Error("unknown step " + s.op);
  }
}

let failure;
// Set by `exitAgent`: the connection then closes with the agent's stdout, as expected.
let exiting = false;
// A scenario that stops making progress fails with what it saw, instead of hanging the test.
const deadline = setTimeout(() => {
  agentProc.kill("SIGKILL");
  for (const t of terminals) if (t.exit === null) killGroup(t);
  const error = "the scenario did not finish within 90 s (a step waits for something that never came)";
  const shown = terminals.map(({ proc, done, bytes, ...t }) => t);
  process.stdout.write(JSON.stringify({ wire, results, reads, writes, terminals: shown, error }) + "\n");
  process.exit(1);
}, 90000);
try {
  await app.connectWith(stream, async (ctx) => {
    for (const s of scenario.steps) await step(ctx, s);
    await Promise.all(Object.values(pending));
  });
} catch (e) {
  if (!(exiting && String(e).includes("ACP connection closed"))) failure = String(e?.stack ?? e);
}
agentProc.stdin.end();
const timer = setTimeout(() => agentProc.kill("SIGKILL"), 10000);
const exitCode = await agentExit;
clearTimeout(timer);
clearTimeout(deadline);
for (const t of terminals) {
  // What the agent left running is the client's to end (`released` says whether it did).
  if (t.exit === null) killGroup(t);
  delete t.proc, delete t.done, delete t.bytes;
}
process.stdout.write(JSON.stringify({ wire, results, reads, writes, terminals, exitCode, error: failure, unusedPermissions: permissions, unusedElicitations: elicitations }) + "\n");
