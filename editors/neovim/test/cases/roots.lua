--- One daemon runs per workspace root. Commands follow the session the chat shows (its owning
--- daemon); a new session goes to the current buffer's daemon.

return {
  {
    name = "two workspace roots: sessions stay with their own daemon",
    run = function(H)
      local mock = H.mock({ responses = { { text = "answer from A" }, { text = "answer from B" } } })
      local a = H.workspace({ ["a.txt"] = "a\n" })
      local b = H.workspace({ ["b.txt"] = "b\n" })
      vim.cmd.cd(a)
      H.setup(mock)
      local lsp = require("agent_lsp")
      local state = require("agent_lsp.state")

      vim.cmd.edit(a .. "/a.txt")
      H.wait("daemon A", function()
        return #vim.lsp.get_clients({ bufnr = 0, name = "agent_lsp" }) == 1
      end)
      local client_a = vim.lsp.get_clients({ bufnr = 0, name = "agent_lsp" })[1]
      vim.cmd("AgentPrompt hello A")
      H.settled(1)
      local session_a = state.current
      H.eq(client_a.id, state.sessions[session_a].client_id, "session A's daemon")

      vim.cmd.edit(b .. "/b.txt")
      H.wait("daemon B", function()
        return #vim.lsp.get_clients({ name = "agent_lsp" }) == 2
      end)
      local client_b = vim.lsp.get_clients({ bufnr = 0, name = "agent_lsp" })[1]
      assert(client_b.id ~= client_a.id, "one daemon per root")
      -- The chat still shows session A, so commands go to daemon A even from b.txt.
      H.eq(client_a.id, lsp.client().id, "client for the current session")

      local created
      lsp.new_session(nil, function(r)
        created = r
      end)
      H.wait("the new session", function()
        return created
      end)
      H.eq(b, created.cwd, "new session's cwd (daemon B's root)")
      H.eq(client_b.id, state.sessions[created.sessionId].client_id, "new session's daemon")
      vim.cmd("AgentPrompt hello B")
      H.settled(2)
      H.contains(require("agent_lsp.chat").text(), "answer from B", "chat of session B")
      local events_b = H.events_of("agent_start", function(p)
        return p.sessionId == created.sessionId
      end)
      H.eq(1, #events_b, "run in session B")

      -- Daemon A exits: only its session is forgotten.
      client_a:stop()
      H.wait("session A forgotten", function()
        return state.sessions[session_a] == nil
      end)
      assert(state.sessions[created.sessionId], "session B survived daemon A's exit")
      H.eq(created.sessionId, state.current, "current session")
    end,
  },
}
