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

--- Serves `dir` over HTTP on a loopback port (python3's http.server); returns the port.
local function serve(H, dir)
  local out = ""
  local proc = vim.system({ "python3", "-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", dir }, {
    stdout = function(_, data)
      out = out .. (data or "")
    end,
    stderr = function() end,
  })
  H.defer(function()
    pcall(function()
      proc:kill(15)
    end)
  end)
  H.wait("the HTTP server's port", function()
    return out:match("port (%d+)")
  end)
  return tonumber(out:match("port (%d+)"))
end

return {
  {
    name = "a web_fetch approval names the URL and host; always for the host is asked once",
    run = function(H)
      local site = H.tempdir()
      local f = assert(io.open(site .. "/guide.txt", "w"))
      f:write("the guide says: use loopback\n")
      f:close()
      f = assert(io.open(site .. "/other.txt", "w"))
      f:write("another page of the same host\n")
      f:close()
      local port = serve(H, site)
      local base_url = "http://127.0.0.1:" .. port
      local mock = H.mock({
        responses = {
          { toolCalls = { { id = "w1", name = "web_fetch", arguments = { url = base_url .. "/guide.txt" } } } },
          { toolCalls = { { id = "w2", name = "web_fetch", arguments = { url = base_url .. "/other.txt" } } } },
          { text = "Read both." },
        },
      })
      local root = H.workspace({})
      vim.cmd.cd(root)
      H.setup(mock)
      local asked = {}
      vim.ui.select = function(items, opts, on_choice)
        local labels = vim.tbl_map(opts.format_item, items)
        local previews = {}
        for _, win in ipairs(vim.api.nvim_list_wins()) do
          if vim.api.nvim_win_get_config(win).relative ~= "" then
            previews[#previews + 1] = table.concat(vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(win), 0, -1, false), "\n")
          end
        end
        asked[#asked + 1] = { prompt = opts.prompt, labels = labels, preview = table.concat(previews, "\n") }
        for i, l in ipairs(labels) do
          if l:find("^Always allow for ") then
            return on_choice(items[i])
          end
        end
        on_choice(nil)
      end
      vim.cmd("AgentPrompt read the guide")
      H.settled(1)
      H.eq(1, #asked, "asked once: always covers the host")
      H.contains(asked[1].prompt, "agent-lsp wants to reach the network: Fetch " .. base_url .. "/guide.txt", "the prompt names the URL")
      H.contains(asked[1].prompt, "(127.0.0.1 is this machine or a local network)", "and that the host is local")
      H.contains(asked[1].preview, "GET " .. base_url .. "/guide.txt", "the preview names the URL")
      H.contains(table.concat(asked[1].labels, "\n"), "Always allow for 127.0.0.1:" .. port .. " (this session)", "always names the site")
      local body = vim.json.encode(mock.requests()[3].body)
      H.contains(body, "the guide says: use loopback", "the first page reached the model")
      H.contains(body, "another page of the same host", "the second, unasked")
    end,
  },
  {
    name = "client: a fetch approval names the URL; always is for its site; a local host is said to be one",
    run = function(H)
      local approval = require("agent_lsp.approval")
      H.eq("agent-lsp wants to reach the network: Fetch https://docs.example.org/guide", approval.prompt(FETCH), "prompt")
      local lines = table.concat(approval.preview_lines(FETCH), "\n")
      H.contains(lines, 'GET https://docs.example.org/guide\n"Always" answers for docs.example.org only, for the rest of the session.', "preview")
      local labels = vim.tbl_map(function(c)
        return c.label
      end, approval.choices_for(FETCH))
      H.eq("Always allow for docs.example.org (this session)", labels[2], "always names the site")
      H.eq("Always reject for docs.example.org (this session)", labels[5], "so does always reject")
      H.eq("Always allow (this session)", approval.choices_for({ kind = "edit" })[2].label, "other tools unchanged")
      local here = vim.tbl_extend("force", FETCH, {
        title = "Fetch http://localhost:8000/",
        preview = { type = "fetch", url = "http://localhost:8000/", host = "localhost", ["local"] = true },
      })
      H.eq("agent-lsp wants to reach the network: Fetch http://localhost:8000/ (localhost is this machine or a local network)", approval.prompt(here), "a local host")
      H.contains(table.concat(approval.preview_lines(here), "\n"), "localhost is this machine or a local network: approving lets the agent read from it.", "local in the preview")
      H.eq("Always allow for localhost:8000 (this session)", approval.choices_for(here)[2].label, "a port that is not the default is part of the site")
      H.eq("docs.rs", approval.site({ url = "https://user@docs.rs:443/serde", host = "docs.rs" }), "the default port is not")
      H.eq("[::1]:8080", approval.site({ url = "http://[::1]:8080/", host = "[::1]" }), "IPv6 with a port")
      H.eq("agent-lsp wants to reach the network: Search the web: serde derive", approval.prompt({ kind = "network", toolName = "web_search", title = "Search the web: serde derive" }), "a search")
    end,
  },
}
