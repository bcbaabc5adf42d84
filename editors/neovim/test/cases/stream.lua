--- A prompt streams into the chat buffer: deltas arrive one by one and the buffer grows with them.

local ANSWER = "Hello from the mock model, streamed in small pieces."

return {
  {
    name = "a prompt streams into the chat buffer",
    run = function(H)
      local mock = H.mock({
        responses = {
          { text = ANSWER, chunkSize = 6, delayMs = 15, usage = { input = 12, output = 9 } },
        },
      })
      local root = H.workspace({ ["notes.txt"] = "alpha\n" })
      vim.cmd.cd(root)
      H.setup(mock)

      -- Snapshot the chat buffer at every text delta, to prove it fills progressively.
      local chat = require("agent_lsp.chat")
      local snapshots = {}
      vim.api.nvim_create_autocmd("User", {
        pattern = "AgentLspEvent",
        callback = function(args)
          local ame = args.data.event.assistantMessageEvent
          if ame and ame.type == "text_delta" then
            snapshots[#snapshots + 1] = chat.text()
          end
        end,
      })

      vim.cmd("AgentPrompt say hello")
      local settled = H.settled()
      H.eq(false, settled.aborted, "agent_settled.aborted")

      local text = chat.text()
      H.contains(text, "## You", "chat")
      H.contains(text, "say hello", "chat")
      H.contains(text, "## Agent", "chat")
      H.contains(text, ANSWER, "chat")
      assert(chat.win(), "the chat window is open")

      assert(#snapshots >= 5, "expected several text deltas, got " .. #snapshots)
      assert(not snapshots[1]:find(ANSWER, 1, true), "first delta already showed the whole answer")
      H.contains(snapshots[1], "Hello", "chat after the first delta")

      local state = require("agent_lsp.state")
      local s = state.sessions[state.current]
      H.eq("idle", s.status, "session status")
      H.eq(0, s.gaps, "seq gaps")
      H.eq(#H.events, s.last_seq, "last seq = number of events")
      H.eq("agent: idle 21 tok", require("agent_lsp").statusline(), "statusline")

      local reqs = mock.requests()
      H.eq(1, #reqs, "model requests")
      H.contains(vim.json.encode(reqs[1]), "say hello", "model request")
    end,
  },
}
