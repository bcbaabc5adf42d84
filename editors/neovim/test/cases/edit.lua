--- The agent reads the unsaved buffer, its edit lands in that buffer, and the daemon's
--- `agent/saveDocuments` request makes the plugin `:write` it (`saveAfterEdit: "always"`; the
--- other modes are in saving.lua).

return {
  {
    name = "an edit lands in an unsaved buffer and is saved on request",
    run = function(H)
      local mock = H.mock({
        responses = {
          { toolCalls = { { id = "call_1", name = "read", arguments = { path = "notes.txt" } } } },
          {
            toolCalls = {
              {
                id = "call_2",
                name = "edit",
                arguments = { path = "notes.txt", edits = { { oldText = "beta", newText = "gamma" } } },
              },
            },
          },
          { text = "Replaced beta with gamma." },
        },
      })
      local root = H.workspace({ ["notes.txt"] = "alpha\nbeta\n" })
      vim.cmd.cd(root)
      H.setup(mock, { approval = { edit = "allow" }, init_options = { saveAfterEdit = "always" } })

      vim.cmd.edit(root .. "/notes.txt")
      local buf = vim.api.nvim_get_current_buf()
      H.wait("the daemon to attach to notes.txt", function()
        return vim.lsp.get_clients({ bufnr = buf, name = "agent_lsp" })[1]
      end)
      local caps = require("agent_lsp").client().capabilities
      H.eq(true, caps.workspace.workspaceEdit.documentChanges, "documentChanges advertised")
      H.eq({
        events = true,
        approvals = true,
        saveDocuments = true,
        askUser = true,
        diagnostics = true,
        languageFeatures = {
          "textDocument/definition",
          "textDocument/references",
          "textDocument/hover",
          "textDocument/documentSymbol",
          "workspace/symbol",
          "textDocument/implementation",
          "textDocument/rename",
        },
      }, caps.experimental.agent, "agent capability")
      vim.api.nvim_buf_set_lines(buf, 0, 1, false, { "ALPHA (unsaved)" })
      assert(vim.bo[buf].modified, "buffer has unsaved changes")

      vim.cmd("AgentPrompt replace beta with gamma")
      H.eq(false, H.settled().aborted, "aborted")

      H.eq({ "ALPHA (unsaved)", "gamma" }, vim.api.nvim_buf_get_lines(buf, 0, -1, false), "buffer")
      H.eq(false, vim.bo[buf].modified, "buffer modified after the save request")
      H.eq("ALPHA (unsaved)\ngamma\n", H.read(root .. "/notes.txt"), "file on disk")
      -- The daemon's mirror of the buffer agrees with Neovim after the edit and the save.
      local mirror = require("agent_lsp").client():request_sync("agent/getDocument", { uri = vim.uri_from_bufnr(buf) }, 5000)
      H.eq("ALPHA (unsaved)\ngamma\n", mirror and mirror.result and mirror.result.text, "daemon mirror")

      local reqs = mock.requests()
      H.eq(3, #reqs, "model requests")
      -- The read tool saw the editor's unsaved text, not the disk.
      H.contains(vim.json.encode(reqs[2]), "ALPHA (unsaved)", "read result sent to the model")
      local ends = H.events_of("tool_execution_end")
      H.eq(2, #ends, "tool executions")
      H.eq(false, ends[2].event.isError, "edit isError")
      H.contains(require("agent_lsp.chat").text(), "Replaced beta with gamma.", "chat")
    end,
  },
}
