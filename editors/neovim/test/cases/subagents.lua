--- Issue 35 in the chat: a `task` call's subagent steps appear live under its line, folded
--- (`za` opens them); an approval with `alwaysRules` offers "always" for this session, this
--- project and the user, naming the rule, and answers with the scope; hook events are one line.

local function open_notes(H, root)
  vim.cmd.edit(root .. "/notes.txt")
  local buf = vim.api.nvim_get_current_buf()
  H.wait("the daemon to attach", function()
    return vim.lsp.get_clients({ bufnr = buf, name = "agent_lsp" })[1]
  end)
  return buf
end

--- Answers approvals with `label` and records every picker's labels.
local function stub_select(label)
  local asked = {}
  vim.ui.select = function(items, opts, on_choice)
    local labels = vim.tbl_map(opts.format_item, items)
    asked[#asked + 1] = labels
    for i, l in ipairs(labels) do
      if l == label then
        return on_choice(items[i])
      end
    end
    on_choice(nil)
  end
  return asked
end

return {
  {
    name = "a subagent's steps show live under the task line, folded, and za opens them",
    run = function(H)
      local mock = H.mock({
        responses = {
          { toolCalls = { { id = "t1", name = "task", arguments = { description = "look at the notes", prompt = "read notes.txt", agent = "explore" } } } },
          { toolCalls = { { id = "r1", name = "read", arguments = { path = "notes.txt" } } } },
          { text = "the notes say alpha" },
          { text = "done" },
        },
      })
      local root = H.workspace({ ["notes.txt"] = "alpha\n" })
      vim.cmd.cd(root)
      H.setup(mock)
      open_notes(H, root)
      local chat = require("agent_lsp.chat")
      local subagents = require("agent_lsp.subagents")
      -- What the chat showed when the child's read ended, before the task call ended.
      local live
      vim.api.nvim_create_autocmd("User", {
        pattern = "AgentLspEvent",
        callback = function(args)
          local ev = args.data.event
          if ev.type == "subagent_event" and ev.event.type == "tool_execution_end" and not live then
            live = { text = chat.text(), task = chat.badge("t1"), step = subagents.badge("r1") }
          end
        end,
      })
      vim.cmd("AgentPrompt look at the notes with a subagent")
      H.eq(false, H.settled().aborted, "aborted")
      H.capture("task")
      H.eq("explore", H.events_of("subagent_event")[1].event.agent, "the event's agent")
      H.contains(live and live.text, "- tool `task` look at the notes\n  › explore: tool `read` notes.txt", "the chat while the child ran")
      H.contains(live.task, "running", "the task's badge while the child ran")
      H.contains(live.step, "✓ done", "the child's read badge")
      local text = chat.text()
      H.contains(text, "- tool `task` look at the notes\n  › explore: tool `read` notes.txt\n  › explore: the notes say alpha\n    the notes say alpha", "the steps, then the task's result")
      H.contains(chat.badge("t1"), "✓ done", "the task's badge")
      -- Folded under the task line in the chat window; za opens the fold, and closes it again.
      local win = assert(chat.win(), "the chat window")
      local lines = vim.api.nvim_buf_get_lines(chat.buf, 0, -1, false)
      local task_row
      for i, l in ipairs(lines) do
        if l:find("^%- tool `task`") then
          task_row = i
        end
      end
      local step = task_row + 1
      vim.api.nvim_win_call(win, function()
        H.eq(-1, vim.fn.foldclosed(task_row), "the task line stays visible")
        H.eq(step, vim.fn.foldclosed(step), "the steps are folded")
        H.eq(step + 1, vim.fn.foldclosedend(step), "both steps are in the fold")
        vim.api.nvim_win_set_cursor(win, { step, 0 })
        vim.cmd("normal! za")
        H.eq(-1, vim.fn.foldclosed(step), "za opened the steps")
        vim.cmd("normal! za")
        H.eq(step, vim.fn.foldclosed(step), "za closed them")
      end)
    end,
  },
  {
    name = "always allow for this project names the rule, saves it there, and is not asked again",
    run = function(H)
      local function edit(id, old, new)
        return { toolCalls = { { id = id, name = "edit", arguments = { path = "notes.txt", edits = { { oldText = old, newText = new } } } } } }
      end
      local mock = H.mock({ responses = { edit("e1", "beta", "gamma"), edit("e2", "gamma", "delta"), { text = "ok" } } })
      local root = H.workspace({ ["notes.txt"] = "alpha\nbeta\n" })
      vim.cmd.cd(root)
      H.setup(mock)
      local buf = open_notes(H, root)
      local asked = stub_select("Always allow (this project): Edit(/notes.txt)")
      vim.cmd("AgentPrompt change beta twice")
      H.eq(false, H.settled().aborted, "aborted")
      H.eq(1, #asked, "approval prompts")
      local labels = table.concat(asked[1], "\n")
      H.contains(labels, "Allow\nAlways allow (this session): edit\nAlways allow (this project): Edit(/notes.txt)\nAlways allow (me, every project): Edit(//" .. root:sub(2) .. "/notes.txt)\nReject", "the labels")
      H.contains(labels, "Always reject (this project): Edit(/notes.txt)", "the labels")
      H.eq({ "alpha", "delta" }, vim.api.nvim_buf_get_lines(buf, 0, -1, false), "buffer")
      H.contains(H.read(root .. "/.agent-lsp/settings.local.json"), "Edit(/notes.txt)", "the project's rule")
    end,
  },
  {
    name = "a hook's event is one line in the chat",
    run = function(H)
      local mock = H.mock({
        responses = {
          { toolCalls = { { id = "r1", name = "read", arguments = { path = "notes.txt" } } } },
          { text = "ok" },
        },
      })
      local root = H.workspace({ ["notes.txt"] = "alpha\n" })
      vim.cmd.cd(root)
      local config = H.tempdir()
      vim.fn.mkdir(config .. "/agent-lsp", "p")
      vim.fn.writefile({ vim.json.encode({ hooks = { PreToolUse = { { matcher = "Read", hooks = {
        { type = "command", command = "echo 'not the notes' >&2; exit 2" },
      } } } } }) }, config .. "/agent-lsp/settings.json")
      H.setup(mock, { cmd_env = { XDG_CONFIG_HOME = config } })
      open_notes(H, root)
      vim.cmd("AgentPrompt read the notes")
      H.eq(false, H.settled().aborted, "aborted")
      H.capture("hook")
      local ev = H.events_of("hook")[1].event
      H.contains(require("agent_lsp.chat").text(),
        string.format("_hook PreToolUse `echo 'not the notes' >&2; exit 2`: %s — not the notes (%d ms)_", ev.outcome, ev.durationMs),
        "the hook's line")
    end,
  },
}
