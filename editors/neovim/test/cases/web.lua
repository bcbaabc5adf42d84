--- Network approvals (`web_fetch`, `web_search`: kind "network"): the prompt and the preview
--- name the URL and its host, and "always" says it is remembered for that host.

local FETCH = {
  sessionId = "s1",
  runId = "r1",
  toolCallId = "f1",
  toolName = "web_fetch",
  args = { url = "https://docs.example.org/guide" },
  kind = "network",
  title = "Fetch https://docs.example.org/guide",
  preview = { type = "fetch", url = "https://docs.example.org/guide", host = "docs.example.org" },
}

return {
  {
    name = "client: a fetch approval names the URL and host; always is for the host",
    run = function(H)
      local approval = require("agent_lsp.approval")
      H.eq("agent-lsp wants to reach the network: Fetch https://docs.example.org/guide (host docs.example.org)", approval.prompt(FETCH), "prompt")
      local lines = approval.preview_lines(FETCH)
      H.contains(table.concat(lines, "\n"), "GET https://docs.example.org/guide\n(host docs.example.org: \"always\" answers for this host for the session)", "preview")
      local labels = vim.tbl_map(function(c)
        return c.label
      end, approval.choices_for(FETCH))
      H.eq("Always allow for docs.example.org (this session)", labels[2], "always names the host")
      H.eq("Always reject for docs.example.org (this session)", labels[5], "so does always reject")
      local here = vim.tbl_extend("force", FETCH, { preview = { type = "fetch", url = "http://localhost:8000/", host = "localhost:8000", ["local"] = true } })
      H.contains(approval.prompt(here), "(host localhost:8000, this machine or its local network)", "a local host")
      H.eq("Always allow (this session)", approval.choices_for({ kind = "edit" })[2].label, "other tools unchanged")
    end,
  },
}
