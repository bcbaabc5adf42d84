--- Compaction: :AgentCompact [instructions] (agent/compact) and the automatic one (threshold)
--- both leave a marker in the chat with the summary below it in a closed fold; a refusal shows
--- pi's message.

--- The 1-based number of the first chat line starting with `prefix`.
local function line_of(prefix)
  local chat = require("agent_lsp.chat")
  for i, l in ipairs(vim.api.nvim_buf_get_lines(chat.buf, 0, -1, false)) do
    if vim.startswith(l, prefix) then
      return i
    end
  end
  error("no chat line starts with " .. prefix .. ":\n" .. chat.text())
end

local function winbar()
  local win = assert(require("agent_lsp.chat").win(), "the chat window is open")
  return vim.api.nvim_eval_statusline(vim.wo[win].winbar, { winid = win, use_winbar = true }).str
end

local OPTIONS = { init_options = { compaction = { keepRecentTokens = 1 } } }

return {
  {
    name = "AgentCompact marks the chat and folds the summary; za opens it",
    run = function(H)
      local mock = H.mock({
        responses = {
          { text = "answer one" },
          { text = "answer two" },
          { text = "## Goal\nKeep the tests green.\n\n## Progress\nTwo answers." },
          -- keepRecentTokens 1 cuts inside the last turn: its start is summarised apart.
          { text = "PREFIX" },
        },
      })
      local root = H.workspace({})
      vim.cmd.cd(root)
      H.setup(mock, OPTIONS)
      vim.cmd("AgentPrompt first")
      H.settled(1)
      vim.cmd("AgentPrompt second")
      H.settled(2)
      local result
      require("agent_lsp").compact("keep the test names", function(r)
        result = r
      end)
      H.wait("the compaction result", function()
        return result
      end)
      H.eq({ "manual", "manual" }, {
        H.events_of("compaction_start")[1].event.reason,
        H.events_of("compaction_end")[1].event.reason,
      }, "events")
      H.contains(vim.json.encode(mock.requests()[3].body), "keep the test names", "instructions reached the summary request")

      local text = require("agent_lsp.chat").text()
      H.contains(text, "_compacting the conversation (manual)…_", "start marker")
      H.contains(text, "**Compacted** (manual): ", "end marker")
      H.contains(text, "> ## Goal\n> Keep the tests green.\n>\n> ## Progress", "the summary")
      H.contains(text, "> **Turn Context (split turn):**\n>\n> PREFIX", "the split turn's part")
      local win = require("agent_lsp.chat").win()
      local first = line_of("> ## Goal")
      vim.api.nvim_win_call(win, function()
        H.eq(first, vim.fn.foldclosed(first), "the summary is a closed fold")
        H.eq(first, vim.fn.foldclosed(line_of("> PREFIX")), "the whole summary")
        H.eq(-1, vim.fn.foldclosed(line_of("**Compacted**")), "the marker stays visible")
        vim.api.nvim_win_set_cursor(win, { first, 0 })
        vim.cmd("normal! za")
        H.eq(-1, vim.fn.foldclosed(first), "za opens the summary")
      end)
      -- After a compaction the context size is unknown until the next response reports it.
      H.wait("the stats after the compaction", function()
        return winbar():find("ctx ?/", 1, true)
      end)
    end,
  },
  {
    name = "an automatic compaction at the threshold is marked too",
    run = function(H)
      local mock = H.mock({
        responses = {
          { text = "answer one" },
          { text = "answer two", usage = { input = 10000000, output = 10 } },
          { text = "SUMMARY of the first two" },
          { text = "done" },
        },
      })
      local root = H.workspace({})
      vim.cmd.cd(root)
      H.setup(mock, OPTIONS)
      for i, prompt in ipairs({ "first", "second", "third" }) do
        vim.cmd("AgentPrompt " .. prompt)
        H.settled(i)
      end
      H.eq("threshold", H.events_of("compaction_end")[1].event.reason, "reason")
      local text = require("agent_lsp.chat").text()
      H.contains(text, "_compacting the conversation (threshold)…_", "start marker")
      H.contains(text, "**Compacted** (threshold): 10.0M → ", "end marker")
      H.contains(text, "> SUMMARY of the first two", "summary")
      H.contains(text, "done", "the run went on")
      local first = line_of("> SUMMARY")
      vim.api.nvim_win_call(require("agent_lsp.chat").win(), function()
        H.eq(first, vim.fn.foldclosed(first), "folded")
        H.eq(-1, vim.fn.foldclosed(line_of("done")), "the answer after it is not folded")
      end)
    end,
  },
  {
    name = "a compaction with nothing to compact shows pi's refusal",
    run = function(H)
      local mock = H.mock({ responses = {} })
      local root = H.workspace({})
      vim.cmd.cd(root)
      H.setup(mock)
      vim.cmd("AgentNew")
      H.wait("the new session", function()
        return require("agent_lsp.state").current
      end)
      local seen = H.capture_notify()
      vim.cmd("AgentCompact")
      H.wait("the refusal", function()
        return table.concat(seen, "\n"):find("Nothing to compact", 1, true)
      end)
    end,
  },
}
