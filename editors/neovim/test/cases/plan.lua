--- The model's plan (`todo_write`, protocol.md §3.18) in real Neovim: a checklist block in the
--- chat that each `plan_update` of a run rewrites in place (never appended again), its progress
--- in the winbar and the statusline, a new block for a later run, and the same chat when the
--- session is resumed after a daemon restart, with `agent/getState.plan` as the last word.

local function todo(id, items)
  local todos = {}
  for _, it in ipairs(items) do
    todos[#todos + 1] = { content = it[1], status = it[2] }
  end
  return { id = id, name = "todo_write", arguments = { todos = todos } }
end

--- The first run: a plan of three steps, a read, the plan grown to four, all four done.
local FIRST_RUN = {
  { text = "I'll plan this first.", toolCalls = { todo("t1", { { "Read the notes", "in_progress" }, { "Fix the typo", "pending" }, { "Run the tests", "pending" } }) } },
  { toolCalls = { { id = "r1", name = "read", arguments = { path = "notes.txt" } } } },
  {
    toolCalls = {
      todo("t2", { { "Read the notes", "completed" }, { "Fix the typo", "in_progress" }, { "Run the tests", "pending" }, { "Tell the user", "pending" } }),
    },
  },
  {
    toolCalls = {
      todo("t3", { { "Read the notes", "completed" }, { "Fix the typo", "completed" }, { "Run the tests", "completed" }, { "Tell the user", "completed" } }),
    },
  },
  { text = "All four steps are done." },
}

local FIRST_BLOCK = table.concat({
  "**Plan 4/4**",
  "- [x] Read the notes",
  "- [x] Fix the typo",
  "- [x] Run the tests",
  "- [x] Tell the user",
}, "\n")

--- How many times `needle` occurs in `text`.
local function count(text, needle)
  local n, from = 0, 1
  while true do
    local at = text:find(needle, from, true)
    if not at then
      return n
    end
    n, from = n + 1, at + #needle
  end
end

local function winbar()
  local win = assert(require("agent_lsp.chat").win(), "the chat window is open")
  return vim.api.nvim_eval_statusline(vim.wo[win].winbar, { winid = win, use_winbar = true }).str
end

--- The chat text at each `plan_update` (the chat has rendered it when listeners run).
local function snapshots()
  local seen = {}
  table.insert(require("agent_lsp.events").listeners, function(params)
    if params.event.type == "plan_update" then
      seen[#seen + 1] = require("agent_lsp.chat").text()
    end
  end)
  return seen
end

--- Resumes `session` in a restarted daemon through :AgentSessions and waits for its chat.
local function resume_after_restart(H, session)
  local state = require("agent_lsp.state")
  local chat = require("agent_lsp.chat")
  local old = require("agent_lsp").client()
  old:stop()
  H.wait("the daemon to exit and its sessions to be forgotten", function()
    return old:is_stopped() and state.sessions[session] == nil
  end)
  chat.close()
  chat.clear()
  vim.ui.select = function(items, _, on_choice)
    for _, item in ipairs(items) do
      if item.id == session then
        return on_choice(item)
      end
    end
    on_choice(nil)
  end
  local done = false
  local sessions = require("agent_lsp.sessions")
  sessions.pick(function()
    done = true
  end)
  H.wait("the resumed chat and its plan", function()
    return done and state.current == session
  end)
end

return {
  {
    name = "the plan appears, is rewritten in place, shows its progress, and a later run gets a block of its own",
    run = function(H)
      local responses = vim.deepcopy(FIRST_RUN)
      vim.list_extend(responses, {
        { toolCalls = { todo("t4", { { "Answer the follow-up", "in_progress" } }) } },
        { text = "On it." },
      })
      local mock = H.mock({ responses = responses })
      local root = H.workspace({ ["notes.txt"] = "alpha\n" })
      vim.cmd.cd(root)
      H.setup(mock)
      local chat = require("agent_lsp.chat")
      local seen = snapshots()

      vim.cmd("AgentPrompt fix the typo in notes.txt")
      H.settled(1)
      H.eq(3, #seen, "one chat snapshot per plan_update")
      H.contains(seen[1], "**Plan 0/3**\n- [>] Read the notes\n- [ ] Fix the typo\n- [ ] Run the tests", "the first plan")
      H.contains(seen[2], "**Plan 1/4**\n- [x] Read the notes\n- [>] Fix the typo\n- [ ] Run the tests\n- [ ] Tell the user", "the grown plan")
      for i, text in ipairs(seen) do
        H.eq(1, count(text, "**Plan "), "one plan block at update " .. i)
      end
      local text = chat.text()
      H.eq(1, count(text, "**Plan "), "one plan block after the run")
      H.contains(text, "I'll plan this first.\n\n" .. FIRST_BLOCK .. "\n\n## Agent\n\n- tool `read` notes.txt", "the block stays where it first appeared, rewritten")
      assert(not text:find("todo_write", 1, true), "todo_write has no tool line of its own:\n" .. text)
      -- An answer that only rewrote the block shows nothing else: no empty heading for it.
      assert(not text:find("## Agent\n\n## Agent", 1, true), "an empty answer heading:\n" .. text)
      H.contains(text, "- tool `read` notes.txt\n    alpha\n\n## Agent\n\nAll four steps are done.", "the rest of the run")
      -- The read's badge moved down with its line when the block above it grew.
      local lines = vim.api.nvim_buf_get_lines(chat.buf, 0, -1, false)
      local read_row
      for i, l in ipairs(lines) do
        if l == "- tool `read` notes.txt" then
          read_row = i - 1
        end
      end
      local ns = vim.api.nvim_get_namespaces()["agent_lsp.chat"]
      local badges = vim.api.nvim_buf_get_extmarks(chat.buf, ns, { read_row, 0 }, { read_row, -1 }, { details = true })
      H.eq(1, #badges, "the read line's badge is on its line")
      H.contains(badges[1][4].virt_text[1][1], "✓ done", "its badge")

      local session = require("agent_lsp.state").current
      H.contains(require("agent_lsp").statusline(), "plan 4/4", "statusline")
      H.contains(winbar(), "idle · plan 4/4 · openai/", "winbar")
      local st
      require("agent_lsp").request("agent/getState", { sessionId = session }, function(r)
        st = r
      end)
      H.wait("agent/getState", function()
        return st
      end)
      H.eq("Tell the user", st.plan[4].content, "agent/getState.plan")

      vim.cmd("AgentPrompt and a follow-up")
      H.settled(2)
      text = chat.text()
      H.eq(2, count(text, "**Plan "), "a later run starts a block of its own")
      H.contains(text, FIRST_BLOCK, "the first run's block as its run left it")
      H.contains(text, "## You\n\nand a follow-up\n\n## Agent\n\n**Plan 0/1**\n- [>] Answer the follow-up\n\n## Agent\n\nOn it.", "the second block")
      H.contains(winbar(), "plan 0/1", "winbar follows the new plan")
    end,
  },
  {
    name = "a resumed session shows its plan blocks as they looked live",
    run = function(H)
      local mock = H.mock({ responses = vim.deepcopy(FIRST_RUN) })
      local root = H.workspace({ ["notes.txt"] = "alpha\n" })
      vim.cmd.cd(root)
      H.setup(mock)
      local chat = require("agent_lsp.chat")
      vim.cmd("AgentPrompt fix the typo in notes.txt")
      H.settled(1)
      local live = chat.text()
      H.contains(live, FIRST_BLOCK, "live plan")
      local session = require("agent_lsp.state").current

      resume_after_restart(H, session)
      H.eq(live, chat.text(), "the resumed chat is the live chat")
      H.contains(require("agent_lsp").statusline(), "plan 4/4", "the plan from agent/getState in the statusline")
    end,
  },
  {
    name = "a plan whose call a compaction summarised away comes back from agent/getState",
    run = function(H)
      local responses = vim.deepcopy(FIRST_RUN)
      vim.list_extend(responses, {
        { text = "a second answer " .. string.rep("with words ", 40) },
        { text = "## Goal\nFix the typo.\n\n## Progress\nDone." },
        { text = "PREFIX" },
      })
      local mock = H.mock({ responses = responses })
      local root = H.workspace({ ["notes.txt"] = "alpha\n" })
      vim.cmd.cd(root)
      -- Keep almost nothing word for word: the run with the plan is summarised.
      H.setup(mock, { init_options = { compaction = { keepRecentTokens = 1 } } })
      local chat = require("agent_lsp.chat")
      vim.cmd("AgentPrompt fix the typo in notes.txt")
      H.settled(1)
      vim.cmd("AgentPrompt anything else?")
      H.settled(2)
      local compacted
      require("agent_lsp").compact(nil, function(r)
        compacted = r
      end)
      H.wait("the compaction", function()
        return compacted
      end)
      local session = require("agent_lsp.state").current

      resume_after_restart(H, session)
      local messages
      require("agent_lsp").request("agent/getMessages", { sessionId = session }, function(r)
        messages = r.messages
      end)
      H.wait("agent/getMessages", function()
        return messages
      end)
      for _, m in ipairs(messages) do
        if m.role ~= "system" then -- (the system prompt names the tool)
          assert(not vim.json.encode(m):find("todo_write", 1, true), "the history still holds a plan call: " .. vim.json.encode(m))
        end
      end
      local text = chat.text()
      H.eq(1, count(text, "**Plan "), "one plan block")
      H.eq(FIRST_BLOCK, text:sub(-#FIRST_BLOCK), "the plan from agent/getState ends the resumed chat")
      H.contains(winbar(), "plan 4/4", "winbar")
    end,
  },
}
