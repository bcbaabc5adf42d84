--- Drift check: `lua/agent_lsp/protocol.lua` mirrors the daemon's `protocol.md` (repository
--- root). Every method documented there has a name here and every name here is documented.

local root = vim.fs.dirname(vim.fs.dirname(vim.fs.dirname(vim.fs.dirname(vim.fs.dirname(vim.fs.abspath(debug.getinfo(1, "S").source:sub(2)))))))

return {
  {
    name = "protocol.lua names exactly the methods protocol.md documents",
    run = function(H)
      local doc = H.read(root .. "/protocol.md")
      local documented = {}
      for line in doc:gmatch("[^\n]+") do
        if line:match("^### ") then
          for method in line:gmatch("`([%a$/]+/[%a]+)`") do
            documented[method] = true
          end
        end
      end
      local protocol = require("agent_lsp.protocol")
      local mirrored = {}
      for _, t in ipairs({ protocol.methods, protocol.server, protocol.client_notifications }) do
        for _, m in pairs(t) do
          mirrored[m] = true
        end
      end
      for m in pairs(documented) do
        if m ~= "workspace/applyEdit" then
          assert(mirrored[m], "protocol.md documents " .. m .. " but protocol.lua does not name it")
        end
      end
      for m in pairs(mirrored) do
        if m ~= "$/cancelRequest" then
          assert(documented[m], "protocol.lua names " .. m .. " but protocol.md has no section for it")
        end
      end
      assert(documented["agent/prompt"] and documented["$/agentEvent"], "headings not parsed")
      for _, d in pairs(protocol.decisions) do
        H.contains(doc, '"' .. d .. '"', "decision in protocol.md")
      end
      H.contains(doc, '"protocolVersion": ' .. protocol.PROTOCOL_VERSION, "protocol version")
    end,
  },
}
