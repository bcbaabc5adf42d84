--- MCP: :AgentMcp shows the servers of agent/mcpStatus (state, error, tools) and follows the
--- mcp_update events while open; the trust prompt for a project's .mcp.json names its servers
--- and their commands, and starting them is what the answer says; `t` in the view asks again;
--- asked again after the file changed, the question names what changed.

--- The MCP view's text.
local function view()
  local mcp = require("agent_lsp.mcp")
  assert(mcp.buf and vim.api.nvim_buf_is_valid(mcp.buf), "the MCP view is open")
  return table.concat(vim.api.nvim_buf_get_lines(mcp.buf, 0, -1, false), "\n")
end

return {
  {
    name = "AgentMcp shows state, error and tools and follows mcp_update while open",
    run = function(H)
      local mock = H.mock({ responses = {} })
      local root = H.workspace({})
      vim.cmd.cd(root)
      H.setup(mock, {
        init_options = {
          mcpServers = {
            -- Slow enough to be seen starting on a loaded machine.
            slow = { command = H.mock_mcp_bin, args = { "3000" } },
            broken = { command = root .. "/no-such-server" },
          },
        },
      })
      local mcp = require("agent_lsp.mcp")
      local asked = 0
      local refresh = mcp.refresh
      mcp.refresh = function(...)
        asked = asked + 1
        return refresh(...)
      end
      H.defer(function()
        mcp.refresh = refresh
      end)
      vim.cmd("AgentMcp")
      H.wait("the first status", function()
        return mcp.buf and view():find("slow  starting", 1, true)
      end)
      H.eq(mcp.buf, vim.api.nvim_get_current_buf(), "the view has the focus")
      H.eq("editor", vim.api.nvim_win_get_config(0).relative, "the view is a float")
      H.wait("the slow server ready, from the events", function()
        return view():find("● slow  ready  1 tools", 1, true)
      end, 20000)
      H.eq(1, asked, "agent/mcpStatus asked once: the rest came with mcp_update")
      local text = view()
      H.contains(text, "    tools: timed_echo", "tools")
      H.contains(text, "✗ broken  failed  0 tools", "the broken server")
      H.contains(text, "    error: ", "its error")
      assert(#H.events_of("mcp_update") >= 1, "mcp_update events")
      vim.cmd("normal q")
      assert(not (mcp.buf and vim.api.nvim_buf_is_valid(mcp.buf)), "q closes the view")
    end,
  },
  {
    name = "the trust prompt names the project's servers and commands; after a no, t asks again and allowing starts them",
    run = function(H)
      local mock = H.mock({ responses = {} })
      local root = H.workspace({})
      local f = assert(io.open(root .. "/.mcp.json", "w"))
      f:write(vim.json.encode({ mcpServers = { proj = { command = H.mock_mcp_bin, args = { "0" } } } }))
      f:close()
      vim.cmd.cd(root)
      H.setup(mock)
      local asked
      local questions = 0
      -- The first answer is no, the second yes.
      vim.ui.select = function(items, opts, on_choice)
        questions = questions + 1
        local choice = questions == 1 and items[2] or items[1]
        -- The floats open while the picker asks (the approval preview among them).
        local floats = {}
        for _, win in ipairs(vim.api.nvim_list_wins()) do
          if vim.api.nvim_win_get_config(win).relative ~= "" then
            floats[#floats + 1] = table.concat(vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(win), 0, -1, false), "\n")
          end
        end
        local preview = table.concat(floats, "\n\n")
        asked = {
          prompt = opts.prompt,
          labels = vim.tbl_map(opts.format_item, items),
          preview = preview,
        }
        vim.schedule(function()
          on_choice(choice)
        end)
      end
      vim.cmd("AgentMcp")
      H.wait("the trust prompt", function()
        return asked
      end)
      H.eq(
        "agent-lsp: start the MCP servers of " .. root .. "/.mcp.json? proj (" .. H.mock_mcp_bin .. " 0)",
        asked.prompt,
        "prompt"
      )
      H.eq({ "Start them (remembered for this project)", "Do not start them (remembered for this project)" }, asked.labels, "choices")
      H.contains(asked.preview, root .. "/.mcp.json wants to start these programs:", "preview")
      H.contains(asked.preview, "  proj: " .. H.mock_mcp_bin .. " 0", "preview names the command")
      H.wait("the refused server shown waiting", function()
        return require("agent_lsp.mcp").buf and view():find("? proj  untrusted", 1, true)
      end)
      H.contains(view(), "t: trust the project's servers (asks again)", "the view offers to ask again")
      vim.api.nvim_set_current_win(vim.fn.bufwinid(require("agent_lsp.mcp").buf))
      asked = nil
      vim.api.nvim_feedkeys("t", "x", false)
      H.wait("the trust prompt again", function()
        return asked
      end)
      H.eq(2, questions, "asked a second time")
      H.contains(asked.preview, "  proj: " .. H.mock_mcp_bin .. " 0", "the same question")
      H.wait("the trusted server ready", function()
        return require("agent_lsp.mcp").buf and view():find("● proj  ready  1 tools", 1, true)
      end, 20000)
    end,
  },
  {
    name = "asked again after .mcp.json changed, the prompt and the preview name what changed",
    run = function(H)
      local mock = H.mock({ responses = {} })
      local root = H.workspace({})
      local function write(entry)
        local f = assert(io.open(root .. "/.mcp.json", "w"))
        f:write(vim.json.encode({ mcpServers = { proj = entry } }))
        f:close()
      end
      write({ command = H.mock_mcp_bin, args = { "0" } })
      vim.cmd.cd(root)
      H.setup(mock)
      local asked = {}
      vim.ui.select = function(items, opts, on_choice)
        local floats = {}
        for _, win in ipairs(vim.api.nvim_list_wins()) do
          if vim.api.nvim_win_get_config(win).relative ~= "" then
            floats[#floats + 1] = table.concat(vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(win), 0, -1, false), "\n")
          end
        end
        asked[#asked + 1] = { prompt = opts.prompt, preview = table.concat(floats, "\n\n") }
        vim.schedule(function()
          on_choice(items[1]) -- start them
        end)
      end
      vim.cmd("AgentMcp")
      H.wait("the first trust prompt", function()
        return #asked == 1
      end)
      assert(not asked[1].prompt:find("changed since", 1, true), "a first question names no change: " .. asked[1].prompt)
      assert(not asked[1].preview:find("Changed since", 1, true), "a first question names no change")
      H.wait("the trusted server ready", function()
        return require("agent_lsp.mcp").buf and view():find("● proj  ready", 1, true)
      end, 20000)
      -- The entry gains a variable: the next session asks again, naming it.
      write({ command = H.mock_mcp_bin, args = { "0" }, env = { PYTHONPATH = "/nowhere" } })
      vim.cmd("AgentNew")
      H.wait("the second trust prompt", function()
        return #asked == 2
      end)
      H.contains(asked[2].prompt, "start the MCP servers of " .. root .. "/.mcp.json? proj (", "prompt")
      H.contains(asked[2].prompt, " (changed since your last answer: proj: env added PYTHONPATH)", "prompt")
      H.contains(asked[2].preview, "\nChanged since your last answer:\n  proj: env added PYTHONPATH\n", "preview")
    end,
  },
}
