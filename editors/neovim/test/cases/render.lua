--- Rendering of pi's real event shapes (the reference trace in test/fixtures, recorded from the
--- loop: a read tool call, then an answer) into the chat buffer and the statusline, without a
--- daemon: the events go straight into the same handler `$/agentEvent` uses.

local here = vim.fs.dirname(vim.fs.dirname(vim.fs.abspath(debug.getinfo(1, "S").source:sub(2))))

local function trace()
  local events = {}
  for line in io.lines(here .. "/fixtures/pi-event-trace.jsonl") do
    local ev = vim.json.decode(line)
    if ev.type ~= "session" then
      events[#events + 1] = ev
    end
  end
  return events
end

local EXPECTED = table.concat({
  "## You",
  "",
  "read notes.txt",
  "",
  "## Agent",
  "",
  "Reading.",
  "",
  "- tool `read` notes.txt",
  "    alpha",
  "    beta",
  "",
  "## Agent",
  "",
  "The file says alpha and beta.",
  "",
  "---",
}, "\n")

return {
  {
    name = "pi's reference trace renders as markdown with a tool badge",
    run = function(H)
      local events = require("agent_lsp.events")
      local state = require("agent_lsp.state")
      local chat = require("agent_lsp.chat")
      state.reset()
      chat.clear()
      local statuses = {}
      for i, ev in ipairs(trace()) do
        events.on_event({ sessionId = "s1", runId = "r1", seq = i, event = ev })
        statuses[#statuses + 1] = require("agent_lsp").statusline()
      end
      H.eq(EXPECTED, chat.text(), "chat buffer")
      H.eq("✓ done (4 ms)", vim.trim(chat.badge("call_1") or ""), "tool badge")
      H.eq("markdown", vim.bo[chat.buf].filetype, "chat filetype")
      H.eq(false, vim.bo[chat.buf].modifiable, "chat is read-only")
      H.eq("agent: running", statuses[1], "statusline after agent_start")
      H.eq("agent: idle 30 tok", statuses[#statuses], "statusline after agent_settled")
      H.eq(0, state.sessions.s1.gaps, "seq gaps")
    end,
  },
  {
    name = "events of another session and seq gaps update state but not the chat",
    run = function(H)
      local events = require("agent_lsp.events")
      local state = require("agent_lsp.state")
      local chat = require("agent_lsp.chat")
      state.reset()
      chat.clear()
      state.current = "mine"
      events.on_event({ sessionId = "other", runId = "r", seq = 1, event = { type = "agent_start" } })
      events.on_event({
        sessionId = "other",
        runId = "r",
        seq = 3,
        event = { type = "queue_update", steering = { { messageId = "m1", text = "steer me" } }, followUp = {} },
      })
      H.eq("", chat.text(), "chat of the current session")
      H.eq("running", state.sessions.other.status, "other session status")
      H.eq({ "steer me" }, state.sessions.other.steering, "other session steering queue")
      H.eq(1, state.sessions.other.gaps, "gap detected")
      H.eq("agent: idle", require("agent_lsp").statusline(), "statusline of the current session")
    end,
  },
  {
    name = "bash progress shows in the badge, a failure turns it red",
    run = function(H)
      local events = require("agent_lsp.events")
      local state = require("agent_lsp.state")
      local chat = require("agent_lsp.chat")
      state.reset()
      chat.clear()
      local seq = 0
      local function send(ev)
        seq = seq + 1
        events.on_event({ sessionId = "s", runId = "r", seq = seq, event = ev })
      end
      send({ type = "agent_start" })
      send({ type = "tool_execution_start", toolCallId = "b1", toolName = "bash", args = { command = "make test" } })
      H.eq("⋯ running", vim.trim(chat.badge("b1")), "badge at start")
      send({
        type = "tool_execution_update",
        toolCallId = "b1",
        toolName = "bash",
        args = { command = "make test" },
        partialResult = { content = { { type = "text", text = "compiling\nrunning 3 tests" } } },
      })
      H.eq("⋯ running 3 tests", vim.trim(chat.badge("b1")), "badge after an update")
      send({
        type = "tool_execution_end",
        toolCallId = "b1",
        toolName = "bash",
        result = { content = { { type = "text", text = "1 failed" } } },
        isError = true,
      })
      H.eq("✗ failed", vim.trim(chat.badge("b1")), "badge at the end")
      H.contains(chat.text(), "- tool `bash` make test\n    1 failed", "chat")
    end,
  },
}
