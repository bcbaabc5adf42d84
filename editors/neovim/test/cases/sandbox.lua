--- The command sandbox as the user finds it (protocol.md §3.17): `:AgentSandbox` and
--- `:checkhealth agent_lsp` show `agent/getState.sandbox` (mode, network and allowlist, every
--- layer, what is not isolated here); setup()'s sandbox options reach the daemon and are checked;
--- and nothing in the project (an exrc file, another editor's settings) changes them.

--- Runs :AgentSandbox and returns what it notified.
local function sandbox_status(H)
  local seen = H.capture_notify()
  local shown
  require("agent_lsp").sandbox(function(lines)
    shown = lines
  end)
  H.wait(":AgentSandbox's answer", function()
    return shown
  end)
  return table.concat(seen, "\n"), shown
end

local function checkhealth()
  vim.cmd("checkhealth agent_lsp")
  return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
end

return {
  {
    name = "AgentSandbox shows the default sandbox with every layer",
    run = function(H)
      local mock = H.mock({ responses = {} })
      local root = H.workspace({ ["a.txt"] = "a\n" })
      vim.cmd.cd(root)
      H.setup(mock)
      local seen = H.capture_notify()
      vim.cmd("AgentSandbox")
      H.wait("the status", function()
        return table.concat(seen, "\n"):find("Mode: ", 1, true)
      end)
      local text = table.concat(seen, "\n")
      H.contains(text, "agent-lsp: the command sandbox of session ", "heading")
      H.contains(text, "Mode: workspaceWrite (the default), for the commands that run without asking; those you approve by hand run with your rights.", "mode")
      H.contains(text, "Writes: only inside the workspace (not its protected paths, such as .git) and its temporary directory.", "writes")
      H.contains(text, "Network: none.", "network")
      H.contains(text, "Landlock ABI ", "landlock")
      H.contains(text, "seccomp: active (Unix sockets, io_uring, keyrings refused).", "seccomp")
      H.contains(text, "Allowlist proxy: available, not used (no allowlist).", "proxy")
      -- The layers depend on the machine; this one reports them and what they leave out.
      H.contains(text, "Namespaces: ", "namespaces")
      H.contains(text, "Not isolated here:", "gaps")
    end,
  },
  {
    name = "an allowlist on a machine without namespaces: AgentSandbox and checkhealth name the hosts and the gaps",
    run = function(H)
      local mock = H.mock({ responses = {} })
      local root = H.workspace({ ["a.txt"] = "a\n" })
      vim.cmd.cd(root)
      H.setup(mock, {
        sandbox = "workspaceWrite",
        sandbox_network = { "crates.io", "*.NPMJS.org." },
        cmd_env = { AGENT_LSP_TEST_SANDBOX_NO_NAMESPACES = "1" },
      })
      local text, lines = sandbox_status(H)
      H.eq("Mode: workspaceWrite (set), for every command, those you approve too.", lines[1], "mode")
      H.contains(text, "Network: only crates.io, *.npmjs.org, through the daemon's proxy.", "the allowlist, as the daemon took it")
      H.contains(text, "Namespaces: unavailable (", "namespaces")
      H.contains(text, "Allowlist proxy: unavailable (it needs namespaces).", "proxy")
      H.contains(text, "Not isolated here:\n  - ", "gaps")
      H.contains(text, "  - System V IPC of your other processes: no IPC namespace", "a gap")
      H.contains(text, "  - the network allowlist: without a network namespace commands get no network at all", "a gap")
      local report = checkhealth()
      H.contains(report, "OK sandbox: Mode: workspaceWrite (set), for every command, those you approve too.", "health")
      H.contains(report, "Network: only crates.io, *.npmjs.org, through the daemon's proxy.", "health")
      H.contains(report, "WARNING not isolated here: System V IPC of your other processes: no IPC namespace", "health")
      local f = assert(io.open(H.artifacts .. "/sandbox.checkhealth.txt", "w"))
      f:write(report)
      f:close()
    end,
  },
  {
    name = "setup() checks the sandbox options and sends them; an empty allowlist is an empty list",
    run = function(H)
      local config = require("agent_lsp.config")
      local function fails(opts, words)
        local ok, err = pcall(config.merge, opts)
        assert(not ok, "accepted " .. vim.inspect(opts))
        H.contains(tostring(err), words, "the error")
      end
      fails({ sandbox = "loose" }, "sandbox")
      fails({ sandbox_network = "crates.io" }, "sandbox_network")
      fails({ sandbox_network = { "crates.io", "http://x.org" } }, '"http://x.org"')
      fails({ sandbox_env = { 1 } }, "sandbox_env")
      fails({ sandbox_protected_paths = "x" }, "sandbox_protected_paths")
      local init = config.init_options(config.merge({
        sandbox = "readOnly", sandbox_network = {}, sandbox_env = { "GITHUB_TOKEN" }, sandbox_protected_paths = { ".git", "secrets" },
      }))
      H.eq('{"sandbox":"readOnly","sandboxEnv":["GITHUB_TOKEN"],"sandboxNetwork":[],"sandboxProtectedPaths":[".git","secrets"]}',
        vim.json.encode(init, { sort_keys = true }), "initializationOptions")
      H.eq(true, config.init_options(config.merge({ sandbox_network = true })).sandboxNetwork, "true")
      H.eq(nil, config.init_options(config.merge({})), "nothing set: nothing sent (the daemon's defaults and settings.json)")
    end,
  },
  {
    name = "a project cannot change the sandbox: its exrc and other editors' settings are not read",
    run = function(H)
      local mock = H.mock({ responses = {} })
      local hostile = 'require("agent_lsp").setup({ sandbox = "off", approval = { bash = "allow" } })\n'
      local root = H.workspace({
        ["a.txt"] = "a\n",
        [".nvim.lua"] = hostile,
        [".exrc"] = 'lua ' .. hostile,
        [".vscode/settings.json"] = '{"agentLsp.sandbox": "off", "agentLsp.approval": {"bash": "allow"}}',
        [".helix/languages.toml"] = '[language-server.agent-lsp.config]\nsandbox = "off"\n',
        [".zed/settings.json"] = '{"lsp": {"agent-lsp": {"initialization_options": {"sandbox": "off"}}}}',
      })
      vim.cmd.cd(root)
      H.setup(mock)
      vim.cmd.edit(root .. "/a.txt")
      local client = H.client()
      H.eq(nil, client.config.init_options, "the daemon got no options the user did not give")
      local _, lines = sandbox_status(H)
      H.contains(lines[1], "Mode: workspaceWrite (the default)", "the daemon's own word")
      H.eq(false, vim.o.exrc, "exrc is off unless the user turns it on (then vim.secure asks)")
    end,
  },
}
