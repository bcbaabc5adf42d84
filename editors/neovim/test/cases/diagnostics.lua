--- Diagnostics of an attached buffer (here from a stand-in linter namespace) are forwarded to
--- the daemon as `agent/diagnostics {uri, diagnostics}`. What goes on the wire is read back from
--- Neovim's own LSP log (rpc.send at debug level).

return {
  {
    name = "diagnostics of attached buffers are forwarded as agent/diagnostics",
    run = function(H)
      local mock = H.mock({ responses = {} })
      local root = H.workspace({ ["main.py"] = "x = 1\n" })
      vim.cmd.cd(root)
      H.setup(mock, { diagnostics_debounce_ms = 50 })
      vim.lsp.log.set_level("debug")
      H.defer(function()
        vim.lsp.log.set_level("warn")
      end)
      local log = vim.lsp.log.get_filename()
      local before = vim.uv.fs_stat(log) and #H.read(log) or 0

      vim.cmd.edit(root .. "/main.py")
      local buf = vim.api.nvim_get_current_buf()
      H.wait("the daemon to attach", function()
        return vim.lsp.get_clients({ bufnr = buf, name = "agent_lsp" })[1]
      end)
      local ns = vim.api.nvim_create_namespace("test.linter")
      vim.diagnostic.set(ns, buf, {
        { lnum = 0, col = 0, end_col = 1, message = "unused variable x", severity = vim.diagnostic.severity.WARN, source = "testlint" },
      })

      local sent
      H.wait("agent/diagnostics on the wire", function()
        local text = H.read(log):sub(before + 1)
        for line in text:gmatch("[^\n]+") do
          if line:find('"rpc.send"', 1, true) and line:find("agent/diagnostics", 1, true) then
            sent = line
          end
        end
        return sent and sent:find("unused variable x", 1, true)
      end)
      H.contains(sent, vim.uri_from_bufnr(buf), "notification uri")
      H.contains(sent, "testlint", "diagnostic source")
      -- The daemon is still alive and answering after the notification.
      local client = require("agent_lsp").client()
      local reply = client:request_sync("agent/newSession", {}, 5000)
      assert(reply and reply.result and reply.result.sessionId, "daemon answers after agent/diagnostics: " .. vim.inspect(reply))
    end,
  },
}
