"""The pi interop cases (see tests/interop/README.md); run through tests/interop/pi.sh.

1. agent-lsp writes a session with a tool call; pi 1.6.0 continues it (`pi --session FILE -p`).
2. pi writes a session with a tool call; `agent-lsp run --session FILE` continues it.
3. The same scripted read-and-answer run through `pi --mode json` and `agent-lsp run --json`:
   same event types in the same order, same key sets, apart from the documented differences.
4. A session whose MCP tools were declared through its transcript continues in pi.
5. agent-lsp compacts a session in the middle of a run; pi continues it from the summary.
6. pi compacts a session (RPC `compact`); agent-lsp continues it with the request pi sends.
7. agent-lsp writes an OpenAI Responses session (reasoning, tool call, answer); pi continues it,
   sending the reasoning item back whole. 8. The same written by pi, continued by agent-lsp.
9. A session with agent-lsp's effect journal (`custom` entries, images) continues in pi.
"""

import json
import os
import shutil
import subprocess
import sys
import queue
import tempfile
import threading
import traceback
from pathlib import Path

from harness import (Mock, Sandbox, CaseError, check, check_read_history, check_tree, expect_ok,
                     read_entries, text_of, wire_messages, PI_CLI, PI_NODE, TIMEOUT)

READ_THEN_ANSWER = [
    {"toolCalls": [{"id": "call_1", "name": "read", "arguments": {"path": "a.txt"}}]},
    {"text": "The file says hello world."},
]
ANSWER = "The file says hello world."

# Event-shape differences that are deliberate or known and documented in tests/interop/README.md:
# (event type, scope: "" for the event itself or the nested object's key, key, side).
DOCUMENTED = {
    ("message_update", "", "usage", "pi"),
    ("agent_end", "", "willRetry", "pi"),
    ("tool_execution_end", "result", "structuredContent", "pi"),
    ("tool_execution_end", "result", "details", "agent-lsp"),
    ("message_start", "message", "details", "agent-lsp"),
    ("message_end", "message", "details", "agent-lsp"),
}
IGNORED_KEYS = {"partial"}
NESTED = ("message", "assistantMessageEvent", "result", "args", "usage")


def case_agent_lsp_session_continues_in_pi(box: Sandbox):
    mock = Mock(box.root, "agent-lsp", READ_THEN_ANSWER)
    try:
        sessions = box.root / "sessions"
        expect_ok(box.agent_lsp(mock, ["--session-dir", str(sessions), "read a.txt"]), "agent-lsp run")
    finally:
        mock.close()
    files = sorted(sessions.rglob("*.jsonl"))
    check(len(files) == 1, f"agent-lsp wrote {len(files)} session files")
    before = read_entries(files[0])

    mock = Mock(box.root, "pi", [{"text": "pi continues."}])
    try:
        proc = box.pi(mock, ["--session", str(files[0]), "-p", "what next?"])
        expect_ok(proc, "pi --session")
        check(proc.stdout.strip() == "pi continues.", f"pi printed {proc.stdout!r}")
        requests = mock.requests()
    finally:
        mock.close()
    after = read_entries(files[0])
    check(after[: len(before)] == before, "pi rewrote entries agent-lsp had written")
    check(len(after) > len(before), "pi appended nothing to the session file")
    check_tree(after, "the continued session")
    new_messages = [e["message"] for e in after[len(before):] if e["type"] == "message"]
    roles = [m["role"] for m in new_messages if m["role"] != "system"]
    check(roles == ["user", "assistant"], f"pi appended messages with roles {roles}")
    check(new_messages[-1]["content"][0]["text"] == "pi continues.", f"pi's answer {new_messages[-1]}")
    check(len(requests) == 1, f"pi made {len(requests)} requests")
    messages = wire_messages(requests[0])
    check_read_history(messages, "pi's request", ANSWER)
    check([m["role"] for m in messages[4:]] == ["user"] and messages[4]["content"] in (
        "what next?", [{"type": "text", "text": "what next?"}]), f"pi's new prompt {messages[4:]}")


WRITE_BASH_ANSWER = [
    {"toolCalls": [{"id": "call_p", "name": "todo_write", "arguments": {"todos": [
        {"content": "Write b.txt", "status": "in_progress"}, {"content": "Make made.txt", "status": "pending"}]}}]},
    {"toolCalls": [{"id": "call_w", "name": "write", "arguments": {"path": "b.txt", "content": "agent\n"}}]},
    {"toolCalls": [{"id": "call_b", "name": "bash", "arguments": {"command": "printf made > made.txt"}}]},
    {"text": "Wrote b.txt and made.txt."},
]


def case_journaled_session_continues_in_pi(box: Sandbox):
    """agent-lsp's effect journal and plan (`custom` entries, protocol.md §3.16, §3.18) do not
    stop pi 1.6."""
    mock = Mock(box.root, "agent-lsp", WRITE_BASH_ANSWER)
    try:
        sessions = box.root / "sessions"
        expect_ok(box.agent_lsp(mock, ["--approve", "all", "--session-dir", str(sessions),
                                       "write b.txt, then make made.txt"]), "agent-lsp run")
    finally:
        mock.close()
    files = sorted(sessions.rglob("*.jsonl"))
    check(len(files) == 1, f"agent-lsp wrote {len(files)} session files")
    before = read_entries(files[0])
    journal = [e for e in before if e["type"] == "custom" and e.get("customType") == "agent-lsp.effect"]
    phases = [(e["data"]["tool"], e["data"]["phase"]) for e in journal]
    check(phases == [("write", "intended"), ("write", "done"), ("bash", "intended"), ("bash", "done")],
          f"journal entries {phases}")
    plans = [e for e in before if e["type"] == "custom" and e.get("customType") == "agent-lsp.plan"]
    check(len(plans) == 1 and len(plans[0]["data"]["todos"]) == 2, f"plan entries {plans}")
    blobs = list((files[0].parent / "blobs").iterdir())  # shared by the folder's sessions
    check(len(blobs) >= 2, f"{len(blobs)} images stored")

    mock = Mock(box.root, "pi", [{"text": "pi continues."}])
    try:
        proc = box.pi(mock, ["--session", str(files[0]), "-p", "what next?"])
        expect_ok(proc, "pi --session")
        check(proc.stdout.strip() == "pi continues.", f"pi printed {proc.stdout!r}")
        requests = mock.requests()
    finally:
        mock.close()
    after = read_entries(files[0])
    check(after[: len(before)] == before, "pi rewrote entries agent-lsp had written")
    check_tree(after, "the continued session")
    check(len(requests) == 1, f"pi made {len(requests)} requests")
    roles = [m["role"] for m in wire_messages(requests[0]) if m["role"] != "system"]
    check(roles == ["user", "assistant", "tool", "assistant", "tool", "assistant", "tool", "assistant",
                    "user"], f"pi's request roles {roles}")


def case_pi_session_continues_in_agent_lsp(box: Sandbox, fixtures_out):
    mock = Mock(box.root, "pi", READ_THEN_ANSWER)
    try:
        proc = box.pi(mock, ["-p", "read a.txt"])
        expect_ok(proc, "pi -p")
        check(proc.stdout.strip() == ANSWER, f"pi printed {proc.stdout!r}")
    finally:
        mock.close()
    files = box.pi_session_files()
    check(len(files) == 1, f"pi wrote {len(files)} session files")
    if fixtures_out:
        shutil.copyfile(files[0], Path(fixtures_out) / "pi-1.6.0-read.jsonl")
    before = read_entries(files[0])

    mock = Mock(box.root, "agent-lsp", [{"text": "agent-lsp continues."}])
    try:
        proc = box.agent_lsp(mock, ["--session", str(files[0]), "what next?"])
        expect_ok(proc, "agent-lsp run --session")
        check(proc.stdout.startswith("agent-lsp continues."), f"agent-lsp printed {proc.stdout!r}")
        requests = mock.requests()
    finally:
        mock.close()
    after = read_entries(files[0])
    check(after[: len(before)] == before, "agent-lsp rewrote entries pi had written")
    check(len(after) > len(before), "agent-lsp appended nothing to the session file")
    check_tree(after, "the continued session")
    check(len(requests) == 1, f"agent-lsp made {len(requests)} requests")
    messages = wire_messages(requests[0])
    check_read_history(messages, "agent-lsp's request", ANSWER)
    check(len(messages) == 5 and messages[4]["role"] == "user", f"agent-lsp's new prompt {messages[4:]}")


REASON_THEN_READ = [
    {"thinking": "Read the file first.",
     "toolCalls": [{"id": "call_1", "name": "read", "arguments": {"path": "a.txt"}}]},
    {"text": ANSWER},
]
RESPONSES = "openai-responses"


def check_responses_replay(request, who):
    """A Responses request continuing REASON_THEN_READ: the reasoning item whole (encrypted
    content included), the paired function call and its output, the answer, the new prompt."""
    check(request["path"] == "/v1/responses", f"{who}: request to {request['path']}")
    body = request["body"]
    check(body.get("store") is False, f"{who}: store is {body.get('store')}")
    items = [i for i in body["input"] if i.get("role") not in ("system", "developer")]
    kinds = [i.get("type") or i.get("role") for i in items]
    check(kinds == ["user", "reasoning", "function_call", "function_call_output", "message",
                    "user"], f"{who}: input items {kinds}")
    reasoning = items[1]
    check(reasoning.get("encrypted_content") == "enc-mock-0"
          and reasoning.get("summary") == [{"type": "summary_text", "text": "Read the file first."}],
          f"{who}: reasoning item {reasoning}")
    call = items[2]
    check(call.get("call_id") == "call_1" and call.get("id") == "fc_call_1"
          and json.loads(call["arguments"]) == {"path": "a.txt"}, f"{who}: function call {call}")
    check(items[3].get("call_id") == "call_1" and items[3].get("output") == "hello world\n",
          f"{who}: function call output {items[3]}")
    check(items[4]["content"][0]["text"] == ANSWER and items[4].get("id") == "msg_mock-1",
          f"{who}: answer {items[4]}")


def case_responses_session_continues_in_pi(box: Sandbox):
    mock = Mock(box.root, "agent-lsp", REASON_THEN_READ)
    try:
        sessions = box.root / "sessions"
        args = ["--session-dir", str(sessions), "--thinking", "high", "read a.txt"]
        expect_ok(box.agent_lsp(mock, args, api=RESPONSES), "agent-lsp run")
    finally:
        mock.close()
    files = sorted(sessions.rglob("*.jsonl"))
    check(len(files) == 1, f"agent-lsp wrote {len(files)} session files")
    mock = Mock(box.root, "pi", [{"text": "pi continues."}])
    try:
        args = ["--session", str(files[0]), "--thinking", "high", "-p", "what next?"]
        proc = box.pi(mock, args, api=RESPONSES)
        expect_ok(proc, "pi --session")
        check(proc.stdout.strip() == "pi continues.", f"pi printed {proc.stdout!r}")
        requests = mock.requests()
    finally:
        mock.close()
    check(len(requests) == 1, f"pi made {len(requests)} requests")
    check_responses_replay(requests[0], "pi's request")
    check_tree(read_entries(files[0]), "the continued session")


def case_pi_responses_session_continues_in_agent_lsp(box: Sandbox):
    mock = Mock(box.root, "pi", REASON_THEN_READ)
    try:
        proc = box.pi(mock, ["--thinking", "high", "-p", "read a.txt"], api=RESPONSES)
        expect_ok(proc, "pi -p")
        check(proc.stdout.strip() == ANSWER, f"pi printed {proc.stdout!r}")
    finally:
        mock.close()
    files = box.pi_session_files()
    check(len(files) == 1, f"pi wrote {len(files)} session files")
    mock = Mock(box.root, "agent-lsp", [{"text": "agent-lsp continues."}])
    try:
        args = ["--session", str(files[0]), "--thinking", "high", "what next?"]
        proc = box.agent_lsp(mock, args, api=RESPONSES)
        expect_ok(proc, "agent-lsp run --session")
        requests = mock.requests()
    finally:
        mock.close()
    check(len(requests) == 1, f"agent-lsp made {len(requests)} requests")
    check_responses_replay(requests[0], "agent-lsp's request")
    check_tree(read_entries(files[0]), "the continued session")


def shape(event):
    """(type, {scope: key set}) of one event, ignoring values."""
    keys = {"": set(event) - IGNORED_KEYS}
    for scope in NESTED:
        if isinstance(event.get(scope), dict):
            keys[scope] = set(event[scope]) - IGNORED_KEYS
    return event["type"], keys


def comparable(events):
    """Drops pi's session header line and pi 1.6.0's system-prompt message (README: deliberate)."""
    out = []
    for e in events:
        if e.get("type") == "session":
            continue
        if e.get("type") in ("message_start", "message_end") and e.get("message", {}).get("role") == "system":
            continue
        out.append(e)
    return out


def shape_differences(pi_events, our_events):
    pi_shapes = [shape(e) for e in comparable(pi_events)]
    our_shapes = [shape(e) for e in comparable(our_events)]
    pi_types = [t for t, _ in pi_shapes]
    our_types = [t for t, _ in our_shapes]
    if pi_types != our_types:
        return [f"event types differ:\n  pi:        {pi_types}\n  agent-lsp: {our_types}"], []
    undocumented, documented = [], []
    for i, ((kind, pk), (_, ok)) in enumerate(zip(pi_shapes, our_shapes)):
        # A nested object present on one side only is reported once, as its key on the event.
        for scope in sorted(set(pk) & set(ok)):
            for side, keys in (("pi", pk.get(scope, set()) - ok.get(scope, set())),
                               ("agent-lsp", ok.get(scope, set()) - pk.get(scope, set()))):
                for key in sorted(keys):
                    line = f"#{i} {kind} {scope or '<event>'}.{key}: only in {side}"
                    (documented if (kind, scope, key, side) in DOCUMENTED else undocumented).append(line)
    return undocumented, documented


def case_event_shapes_match(box: Sandbox):
    mock = Mock(box.root, "pi", READ_THEN_ANSWER)
    try:
        proc = box.pi(mock, ["--mode", "json", "--no-session", "read a.txt"])
        expect_ok(proc, "pi --mode json")
    finally:
        mock.close()
    pi_events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    mock = Mock(box.root, "agent-lsp", READ_THEN_ANSWER)
    try:
        proc = box.agent_lsp(mock, ["--json", "--no-session", "read a.txt"])
        expect_ok(proc, "agent-lsp run --json")
    finally:
        mock.close()
    our_events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    undocumented, documented = shape_differences(pi_events, our_events)
    for line in documented:
        print(f"    documented difference: {line}")
    check(not undocumented, "undocumented event-shape differences:\n    " + "\n    ".join(undocumented))


def case_mcp_declared_session_opens_in_pi(box: Sandbox):
    """A session whose MCP tools were declared through the transcript (system messages with
    `toolsAdded`) still opens and continues in pi."""
    server = Path(os.environ["INTEROP_ROOT"]) / "tests/fixtures/mcp/fault_server.py"
    config = box.root / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"fault": {"command": "python3", "args": [str(server)]}}}))
    script = [{"toolCalls": [{"id": "call_1", "name": "fault__echo", "arguments": {"text": "hi"}}]},
              {"text": "echoed."}]
    mock = Mock(box.root, "agent-lsp", script)
    try:
        sessions = box.root / "sessions"
        expect_ok(box.agent_lsp(mock, ["--session-dir", str(sessions), "--approve", "all",
                                       "--mcp-config", str(config), "echo it"]), "agent-lsp run")
    finally:
        mock.close()
    files = sorted(sessions.rglob("*.jsonl"))
    check(len(files) == 1, f"agent-lsp wrote {len(files)} session files")
    before = read_entries(files[0])
    declared = [e for e in before if e["type"] == "message" and e["message"]["role"] == "system"
                and any(t["name"] == "fault__echo" for t in e["message"].get("toolsAdded", []))]
    check(len(declared) == 1, "the MCP tools are declared in the session file")
    mock = Mock(box.root, "pi", [{"text": "pi continues."}])
    try:
        proc = box.pi(mock, ["--session", str(files[0]), "-p", "what next?"])
        expect_ok(proc, "pi --session")
        check(proc.stdout.strip() == "pi continues.", f"pi printed {proc.stdout!r}")
    finally:
        mock.close()
    after = read_entries(files[0])
    check(after[: len(before)] == before, "pi rewrote entries agent-lsp had written")
    check_tree(after, "the continued session")


SUMMARY = "## Goal\nRead a.txt."


def case_agent_lsp_compacted_session_continues_in_pi(box: Sandbox):
    """`--compact-threshold` past the read call's usage, `keepRecentTokens: 1`: the turn is split
    (the call and its result are kept), so pi's context is the summary, the kept call, its
    result, the answer and the new prompt."""
    config = box.home / "config" / "agent-lsp"
    config.mkdir(parents=True)
    (config / "settings.json").write_text(json.dumps({"compaction": {"keepRecentTokens": 1}}))
    script = [dict(READ_THEN_ANSWER[0], usage={"input": 500, "output": 20}),
              {"text": SUMMARY}, READ_THEN_ANSWER[1]]
    mock = Mock(box.root, "agent-lsp", script)
    try:
        sessions = box.root / "sessions"
        expect_ok(box.agent_lsp(mock, ["--session-dir", str(sessions), "--compact-threshold", "100",
                                       "read a.txt"]), "agent-lsp run")
        check(len(mock.requests()) == 3, f"agent-lsp made {len(mock.requests())} requests")
    finally:
        mock.close()
    files = sorted(sessions.rglob("*.jsonl"))
    before = read_entries(files[0])
    compactions = [e for e in before if e["type"] == "compaction"]
    check(len(compactions) == 1, f"agent-lsp stored {len(compactions)} compactions")
    mock = Mock(box.root, "pi", [{"text": "pi continues."}])
    try:
        proc = box.pi(mock, ["--session", str(files[0]), "-p", "what next?"])
        expect_ok(proc, "pi --session")
        check(proc.stdout.strip() == "pi continues.", f"pi printed {proc.stdout!r}")
        requests = mock.requests()
    finally:
        mock.close()
    after = read_entries(files[0])
    check(after[: len(before)] == before, "pi rewrote entries agent-lsp had written")
    check_tree(after, "the continued session")
    messages = wire_messages(requests[0])
    roles = [m["role"] for m in messages]
    check(roles == ["user", "assistant", "tool", "assistant", "user"], f"pi's context roles {roles}")
    first = text_of(messages[0]["content"])
    check(SUMMARY in first and "compacted into the following summary" in first,
          f"pi's first message {first!r}")
    check(text_of(messages[3]["content"]) == ANSWER, f"pi's kept answer {messages[3]}")


def pi_rpc(box: Sandbox, mock: Mock, commands, args):
    """Runs `pi --mode rpc`, sending each command once the previous one's `until` event came (pi
    1.6.0 left a `compact` sent right after `agent_end`, before `agent_settled`, unanswered).
    stdout is read by a thread, so a silent pi fails the case after the harness's timeout."""
    proc = box.pi_popen(mock, ["--mode", "rpc", *args])
    events = queue.Queue()

    def read():
        for line in proc.stdout:
            events.put(json.loads(line))
        events.put(None)

    threading.Thread(target=read, daemon=True).start()
    lines = []
    try:
        for command, until in commands:
            proc.stdin.write(json.dumps(command) + "\n")
            proc.stdin.flush()
            while True:
                try:
                    event = events.get(timeout=TIMEOUT)
                except queue.Empty:
                    raise CaseError(f"pi said nothing for {TIMEOUT} s after {command['type']}") from None
                check(event is not None, f"pi exited after {[e.get('type') for e in lines[-4:]]}")
                lines.append(event)
                if until(event):
                    break
    finally:
        proc.kill()
        proc.wait(timeout=60)
    return lines


def case_pi_compacted_session_resumes_in_agent_lsp(box: Sandbox):
    (box.agent_dir / "settings.json").write_text(json.dumps({"compaction": {"keepRecentTokens": 1}}))
    mock = Mock(box.root, "pi", READ_THEN_ANSWER + [{"text": SUMMARY}])
    try:
        lines = pi_rpc(box, mock, [
            ({"id": "1", "type": "prompt", "message": "read a.txt"},
             lambda e: e.get("type") == "agent_settled"),
            ({"id": "2", "type": "compact"},
             lambda e: e.get("type") == "response" and e.get("id") == "2"),
        ], [])
    finally:
        mock.close()
    answer = lines[-1]
    check(answer.get("success") is True, f"pi's compact answered {answer}")
    files = box.pi_session_files()
    check(len(files) == 1, f"pi wrote {len(files)} session files")
    check(any(e["type"] == "compaction" for e in read_entries(files[0])), "pi stored no compaction")
    theirs, ours = box.root / "theirs.jsonl", box.root / "ours.jsonl"
    shutil.copyfile(files[0], theirs)
    shutil.copyfile(files[0], ours)
    mock = Mock(box.root, "pi-continue", [{"text": "continued."}])
    try:
        expect_ok(box.pi(mock, ["--session", str(theirs), "-p", "what next?"]), "pi --session")
        pi_request = mock.requests()[0]
    finally:
        mock.close()
    mock = Mock(box.root, "agent-lsp", [{"text": "continued."}])
    try:
        expect_ok(box.agent_lsp(mock, ["--session", str(ours), "what next?"]), "agent-lsp --session")
        our_request = mock.requests()[0]
    finally:
        mock.close()
    def context(request):
        return [(m["role"], text_of(m.get("content"))) for m in wire_messages(request)]
    check(context(our_request) == context(pi_request),
          f"contexts differ:\n  pi:        {context(pi_request)}\n  agent-lsp: {context(our_request)}")
    check(any(SUMMARY in text for _, text in context(our_request)), "the summary is not in the context")
    check_tree(read_entries(ours), "the continued session")


def case_subagent_session_continues_in_pi(box: Sandbox):
    """A `task` subagent's own session file (protocol.md §3.24) is a pi session pi 1.6 continues."""
    mock = Mock(box.root, "agent-lsp", [
        {"toolCalls": [{"id": "call_t", "name": "task",
                        "arguments": {"description": "look", "prompt": "What is in a.txt?", "agent": "explore"}}]},
        {"toolCalls": [{"id": "call_r", "name": "read", "arguments": {"path": "a.txt"}}]},
        {"text": "It says hello."},
        {"text": "The file says hello."},
    ])
    try:
        sessions = box.root / "sessions"
        expect_ok(box.agent_lsp(mock, ["--approve", "read-only", "--session-dir", str(sessions),
                                       "ask a subagent what a.txt says"]), "agent-lsp run")
    finally:
        mock.close()
    children = sorted(sessions.rglob("subagents/*.jsonl"))
    check(len(children) == 1, f"{len(children)} subagent session files")
    before = read_entries(children[0])
    check_tree(before, "the subagent's session")
    check(before[0].get("parentSession", "").endswith(".jsonl"), f"header {before[0]}")
    mock = Mock(box.root, "pi", [{"text": "pi continues the child."}])
    try:
        proc = box.pi(mock, ["--session", str(children[0]), "-p", "and then?"])
        expect_ok(proc, "pi --session <child>")
        check(proc.stdout.strip() == "pi continues the child.", f"pi printed {proc.stdout!r}")
        requests = mock.requests()
    finally:
        mock.close()
    after = read_entries(children[0])
    check(after[: len(before)] == before, "pi rewrote entries agent-lsp had written")
    check_tree(after, "the continued subagent session")
    roles = [m["role"] for m in wire_messages(requests[0]) if m["role"] != "system"]
    check(roles == ["user", "assistant", "tool", "assistant", "user"], f"pi's request roles {roles}")


def pi_version_is_pinned():
    out = subprocess.run([PI_NODE, PI_CLI, "--version"], capture_output=True, text=True, timeout=60,
                         env={"PATH": "/usr/bin:/bin", "HOME": tempfile.gettempdir()})
    version = (out.stdout + out.stderr).strip()
    check(version.endswith(os.environ["PI_EXPECTED_VERSION"]), f"pi --version printed {version!r}")


def main():
    fixtures_out = None
    if "--update-fixtures" in sys.argv[1:]:
        fixtures_out = Path(os.environ["INTEROP_ROOT"]) / "tests/fixtures/sessions"
    cases = [
        ("pi is the pinned version", lambda box: pi_version_is_pinned()),
        ("agent-lsp session continues in pi", case_agent_lsp_session_continues_in_pi),
        ("pi session continues in agent-lsp",
         lambda box: case_pi_session_continues_in_agent_lsp(box, fixtures_out)),
        ("event shapes: pi --mode json vs agent-lsp run --json", case_event_shapes_match),
        ("a session with MCP tools declared opens in pi", case_mcp_declared_session_opens_in_pi),
        ("a session with effect journal entries continues in pi", case_journaled_session_continues_in_pi),
        ("a subagent's session file continues in pi", case_subagent_session_continues_in_pi),
        ("a session compacted by agent-lsp continues in pi",
         case_agent_lsp_compacted_session_continues_in_pi),
        ("a session compacted by pi resumes in agent-lsp with pi's context",
         case_pi_compacted_session_resumes_in_agent_lsp),
        ("a Responses session continues in pi with its reasoning item",
         case_responses_session_continues_in_pi),
        ("a pi Responses session continues in agent-lsp with its reasoning item",
         case_pi_responses_session_continues_in_agent_lsp),
    ]
    passed = failed = 0
    for name, run in cases:
        with tempfile.TemporaryDirectory(prefix="agent-lsp-pi-interop-") as tmp:
            try:
                run(Sandbox(Path(tmp)))
                passed += 1
                print(f"ok   {name}")
            except CaseError as e:
                failed += 1
                print(f"FAIL {name}: {e}")
            except Exception:  # a crash in a case is a failure of that case, reported in full
                failed += 1
                print(f"FAIL {name}:\n{traceback.format_exc()}")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
