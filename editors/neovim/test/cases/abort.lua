--- :AgentAbort stops a streaming answer, and cancels an approval the user has not answered.

return {
  {
    name = "abort during streaming",
    run = function(H)
      local long = string.rep("streaming slowly ", 30)
      local mock = H.mock({ responses = { { text = long, chunkSize = 4, delayMs = 60 } } })
      local root = H.workspace({})
      vim.cmd.cd(root)
      H.setup(mock)

      vim.cmd("AgentPrompt talk for a while")
      H.wait("the first text delta", function()
        return #H.events_of("message_update") > 0 and require("agent_lsp.chat").text():find("stre")
      end)
      H.eq("agent: running", require("agent_lsp").statusline():match("^agent: %a+"), "statusline while running")
      vim.cmd("AgentAbort")
      local settled = H.settled()
      H.eq(true, settled.aborted, "agent_settled.aborted")
      H.eq(1, #H.events_of("agent_end"), "agent_end events")

      local text = require("agent_lsp.chat").text()
      H.contains(text, "_aborted_\n\n---", "chat")
      local _, marks = text:gsub("aborted_", "")
      H.eq(1, marks, "the aborted run is marked once")
      assert(not text:find(long, 1, true), "the whole answer arrived despite the abort")
      H.eq("agent: idle", require("agent_lsp").statusline():match("^agent: %a+"), "statusline after abort")
    end,
  },
  {
    name = "abort cancels a pending approval",
    run = function(H)
      local mock = H.mock({
        responses = { { toolCalls = { { id = "call_1", name = "bash", arguments = { command = "echo hi" } } } } },
      })
      local root = H.workspace({})
      vim.cmd.cd(root)
      H.setup(mock)
      local asked, late_answer
      vim.ui.select = function(items, opts, on_choice)
        asked = opts
        late_answer = function()
          on_choice(items[1])
        end
      end

      vim.cmd("AgentPrompt run echo")
      H.wait("the approval prompt", function()
        return asked ~= nil
      end)
      H.contains(asked.prompt, "echo hi", "approval prompt")
      local approval = require("agent_lsp.approval")
      H.eq(1, #approval.pending, "pending approvals")
      local preview = approval.pending[1].preview_win
      assert(preview and vim.api.nvim_win_is_valid(preview), "preview float is open")
      H.contains(
        table.concat(vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(preview), 0, -1, false), "\n"),
        "$ echo hi",
        "command preview"
      )
      H.eq("agent: approval", require("agent_lsp").statusline(), "statusline during approval")

      vim.cmd("AgentAbort")
      H.eq(true, H.settled().aborted, "agent_settled.aborted")
      H.wait("the approval to close", function()
        return #approval.pending == 0
      end)
      assert(not vim.api.nvim_win_is_valid(preview), "preview float closed")
      local text = require("agent_lsp.chat").text()
      H.contains(text, "_aborted_\n\n---", "chat: a run aborted during a tool call is marked too")
      local _, marks = text:gsub("aborted_", "")
      H.eq(1, marks, "the aborted run is marked once")
      late_answer() -- the user answers after all: ignored, no error
      H.eq(1, #mock.requests(), "model requests (no second turn after abort)")
    end,
  },
}
