"""Harness for the pi interop cases: the loopback mock, sealed environments, running pi and agent-lsp.

Everything runs in temp dirs with HOME, pi's agent dir (PI_CODING_AGENT_DIR, read by pi 1.6.0's
getAgentDir) and XDG dirs inside them; the only server is agent-lsp-mock on 127.0.0.1.
"""

import json
import os
import socket
import subprocess
from pathlib import Path

PI_NODE = os.environ["PI_NODE"]
PI_CLI = os.environ["PI_CLI"]
AGENT_LSP = os.environ["AGENT_LSP_BIN"]
MOCK = os.environ["AGENT_LSP_MOCK_BIN"]
TIMEOUT = 120


class CaseError(Exception):
    """A failed expectation, with the message the report prints."""


def check(condition, message):
    if not condition:
        raise CaseError(message)


class Mock:
    """agent-lsp-mock serving `responses`; every request is logged; closing stdin stops it."""

    def __init__(self, work: Path, name: str, responses):
        self.log = work / f"{name}-requests.jsonl"
        script = work / f"{name}-script.json"
        script.write_text(json.dumps({"responses": responses}))
        self.proc = subprocess.Popen(
            [MOCK, "--script", str(script), "--log", str(self.log)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        line = self.proc.stdout.readline()
        check(line, "agent-lsp-mock printed no announcement")
        self.base_url = json.loads(line)["openaiBaseUrl"]

    def requests(self):
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]

    def close(self):
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def mock_models(mock: Mock, api):
    """models.json declaring provider `mock` with model `mock-model` (a reasoning model on the
    Responses API) at the mock."""
    model = {"id": "mock-model", "name": "Mock", "contextWindow": 128000, "maxTokens": 4096}
    if api == "openai-responses":
        model["reasoning"] = True
    return {"providers": {"mock": {"baseUrl": mock.base_url, "api": api, "apiKey": "test-key",
                                   "models": [model]}}}


def closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


class Sandbox:
    """A temp HOME, pi agent dir, XDG dirs and project dir (holding a.txt) for one case."""

    def __init__(self, root: Path):
        self.root = root
        self.home = root / "home"
        self.agent_dir = root / "pi-agent"
        self.project = root / "project"
        for d in (self.home, self.agent_dir, self.project):
            d.mkdir(parents=True)
        self.project = self.project.resolve()
        (self.project / "a.txt").write_text("hello world\n")

    def base_env(self):
        return {
            "PATH": f"{os.path.dirname(PI_NODE)}:/usr/bin:/bin",
            "HOME": str(self.home),
            "XDG_DATA_HOME": str(self.home / "data"),
            "XDG_CONFIG_HOME": str(self.home / "config"),
            "XDG_CACHE_HOME": str(self.home / "cache"),
            "OLLAMA_HOST": closed_port(),
            "TMPDIR": str(self.root),
        }

    def pi(self, mock: Mock, args, api="openai-completions"):
        """Runs pi with a models.json declaring provider `mock` (`api`) at the mock."""
        cmd, env = self.pi_command(mock, args, api)
        return subprocess.run(cmd, cwd=self.project, env=env, capture_output=True, text=True,
                              timeout=TIMEOUT)

    def pi_popen(self, mock: Mock, args, api="openai-completions"):
        """pi as a child with pipes (for `--mode rpc`)."""
        cmd, env = self.pi_command(mock, args, api)
        return subprocess.Popen(cmd, cwd=self.project, env=env, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def pi_command(self, mock: Mock, args, api="openai-completions"):
        (self.agent_dir / "models.json").write_text(json.dumps(mock_models(mock, api)))
        env = self.base_env() | {"PI_CODING_AGENT_DIR": str(self.agent_dir)}
        cmd = [PI_NODE, PI_CLI, "--provider", "mock", "--model", "mock-model", *args]
        return cmd, env

    def agent_lsp(self, mock: Mock, args, api=None):
        """Runs `agent-lsp run`: the built-in `openai` provider at the mock, or with `api` the
        same models.json provider `mock` pi gets."""
        env = self.base_env() | {"OPENAI_BASE_URL": mock.base_url, "OPENAI_API_KEY": "test-key"}
        model = "openai/mock-model"
        if api:
            config = self.home / "config" / "agent-lsp"
            config.mkdir(parents=True, exist_ok=True)
            (config / "models.json").write_text(json.dumps(mock_models(mock, api)))
            model = "mock/mock-model"
        cmd = [AGENT_LSP, "run", "--model", model, *args]
        return subprocess.run(cmd, cwd=self.project, env=env, capture_output=True, text=True,
                              timeout=TIMEOUT)

    def pi_session_files(self):
        return sorted((self.agent_dir / "sessions").rglob("*.jsonl"))


def expect_ok(proc, who):
    check(proc.returncode == 0,
          f"{who} exited {proc.returncode}\nstdout: {proc.stdout[-2000:]}\nstderr: {proc.stderr[-2000:]}")


def read_entries(path: Path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def check_tree(entries, who):
    """Version 3 header, unique ids, and every parentId naming an earlier entry."""
    check(entries and entries[0].get("type") == "session" and entries[0].get("version") == 3,
          f"{who}: the first line is not a version 3 session header: {entries[:1]}")
    seen = set()
    for e in entries[1:]:
        check("id" in e and e["id"] not in seen, f"{who}: missing or duplicate id in {e}")
        parent = e.get("parentId")
        check(parent is None or parent in seen, f"{who}: parentId {parent} names no earlier entry")
        seen.add(e["id"])


def wire_messages(request):
    """The OpenAI `messages` of a recorded request, without the system prompt."""
    return [m for m in request["body"]["messages"] if m.get("role") not in ("system", "developer")]


def text_of(content):
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


def check_read_history(messages, who, answer):
    """The wire form of: user "read a.txt", a read tool call, its result, then `answer`."""
    roles = [m["role"] for m in messages]
    check(roles[:4] == ["user", "assistant", "tool", "assistant"],
          f"{who}: history roles are {roles}")
    check(text_of(messages[0]["content"]) == "read a.txt", f"{who}: user message {messages[0]}")
    calls = messages[1].get("tool_calls") or []
    check(len(calls) == 1 and calls[0]["function"]["name"] == "read"
          and json.loads(calls[0]["function"]["arguments"]) == {"path": "a.txt"},
          f"{who}: tool call {calls}")
    check(messages[2].get("tool_call_id") == calls[0]["id"],
          f"{who}: tool result answers {messages[2].get('tool_call_id')}, call is {calls[0]['id']}")
    check(text_of(messages[2]["content"]) == "hello world\n", f"{who}: tool result {messages[2]}")
    check(text_of(messages[3]["content"]) == answer, f"{who}: assistant answer {messages[3]}")
