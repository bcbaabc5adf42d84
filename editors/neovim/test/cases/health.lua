--- `:checkhealth agent_lsp` passes with the real daemon, and fails when the binary is missing.

local function report()
  vim.cmd("checkhealth agent_lsp")
  return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
end

return {
  {
    name = "checkhealth agent_lsp passes",
    run = function(H)
      local mock = H.mock({ responses = {} })
      local root = H.workspace({ ["a.txt"] = "a\n" })
      vim.cmd.cd(root)
      H.setup(mock)
      vim.cmd.edit(root .. "/a.txt")
      H.client()
      local text = report()
      H.contains(text, "binary: " .. H.bin, "health report")
      H.contains(text, "version: agent-lsp ", "health report")
      H.contains(text, "model configuration from: OPENAI_BASE_URL", "health report")
      H.contains(text, "protocol version 1", "health report")
      -- agent-lsp doctor's report for the project, in the daemon's environment.
      H.contains(text, "OK sessions: ", "health report")
      H.contains(text, "OK mcp: no servers configured", "health report")
      H.contains(text, "OK sandbox: Landlock", "health report")
      assert(not text:find("ERROR"), "health report has errors:\n" .. text)
      assert(not text:find("WARNING"), "health report has warnings:\n" .. text)
      local f = assert(io.open(H.artifacts .. "/health.checkhealth.txt", "w"))
      f:write(text)
      f:close()
    end,
  },
  {
    name = "checkhealth agent_lsp reports a missing binary",
    run = function(H)
      require("agent_lsp").setup({ cmd = { "/nonexistent/agent-lsp", "--stdio" } })
      local text = report()
      H.contains(text, "ERROR", "health report")
      H.contains(text, '"/nonexistent/agent-lsp" is not executable', "health report")
      -- The one-line installs, each on a line of its own.
      for _, way in ipairs({
        "curl --proto '=https' --tlsv1.2 -LsSf https://github.com/agent-lsp/agent-lsp/releases/latest/download/agent-lsp-installer.sh | sh",
        "cargo binstall agent-lsp",
        ":MasonInstall agent-lsp",
      }) do
        local found = vim.iter(vim.split(text, "\n")):any(function(line)
          return vim.trim(line) == "- " .. way
        end)
        assert(found, "health report: no advice line `" .. way .. "` in:\n" .. text)
      end
    end,
  },
  {
    name = "the first start with a missing binary says how to install it, and gives the prompt back",
    run = function(H)
      require("agent_lsp").setup({ cmd = { "/nonexistent/agent-lsp", "--stdio" } })
      local seen = H.capture_notify()
      local failed
      require("agent_lsp").with_client(function()
        error("no client can start")
      end, {
        on_error = function(err)
          failed = err.message
        end,
      })
      H.eq(true, failed ~= nil, "on_error called")
      local text = table.concat(seen, "\n")
      H.contains(text, '"/nonexistent/agent-lsp" is not executable', "notification")
      H.contains(
        text,
        "\n  curl --proto '=https' --tlsv1.2 -LsSf https://github.com/agent-lsp/agent-lsp/releases/latest/download/agent-lsp-installer.sh | sh\n",
        "notification"
      )
      H.contains(text, "\n  cargo binstall agent-lsp\n", "notification")
      H.contains(text, "\n  :MasonInstall agent-lsp\n", "notification")
    end,
  },
  {
    name = "checkhealth agent_lsp warns when no model is configured",
    run = function(H)
      local vars = { "AGENT_LSP_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL" }
      local saved = {}
      for _, v in ipairs(vars) do
        saved[v] = vim.env[v]
        vim.env[v] = nil
      end
      H.defer(function()
        for _, v in ipairs(vars) do
          vim.env[v] = saved[v]
        end
      end)
      local home = H.tempdir()
      require("agent_lsp").setup({
        cmd = { H.bin, "--stdio" },
        cmd_env = { HOME = home, XDG_CONFIG_HOME = home .. "/config" },
      })
      local text = report()
      H.contains(text, "WARNING no model configured", "health report")
      H.contains(text, "Run `agent-lsp login` in a terminal", "health report")
      H.contains(text, "version: agent-lsp ", "health report")
      H.contains(text, "OK keys: none set (anthropic, openai)", "health report")
      assert(not text:find("ERROR"), "health report has errors:\n" .. text)
    end,
  },
  {
    name = "checkhealth agent_lsp counts a key stored by agent-lsp login as the model's configuration",
    run = function(H)
      local vars = { "AGENT_LSP_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL" }
      local saved = {}
      for _, v in ipairs(vars) do
        saved[v] = vim.env[v]
        vim.env[v] = nil
      end
      H.defer(function()
        for _, v in ipairs(vars) do
          vim.env[v] = saved[v]
        end
      end)
      local home = H.tempdir()
      local env = { HOME = home, XDG_CONFIG_HOME = home .. "/config", XDG_DATA_HOME = home .. "/data" }
      -- The real login, from a pipe: the provider's name, then the key.
      local login = vim.system({ H.bin, "login" }, { env = env, stdin = "anthropic\nsk-ant-health\n", text = true }):wait(30000)
      H.eq(0, login.code, "agent-lsp login: " .. (login.stderr or ""))
      require("agent_lsp").setup({ cmd = { H.bin, "--stdio" }, cmd_env = env })
      local text = report()
      H.contains(text, "model configuration from: keys stored by agent-lsp login", "health report")
      H.contains(text, "OK keys: set: anthropic (ANTHROPIC_API_KEY, stored by agent-lsp login)", "health report")
      assert(not text:find("sk%-ant%-health"), "the key itself is never shown:\n" .. text)
    end,
  },
  {
    name = ":AgentLogin runs agent-lsp login in a terminal: the key is stored 0600 and never shown",
    run = function(H)
      local home = H.tempdir()
      local env = { HOME = home, XDG_CONFIG_HOME = home .. "/config", XDG_DATA_HOME = home .. "/data" }
      require("agent_lsp").setup({ cmd = { H.bin, "--stdio" }, cmd_env = env })
      vim.cmd("AgentLogin")
      local buf = vim.api.nvim_get_current_buf()
      H.eq("terminal", vim.bo[buf].buftype, "the login runs in a terminal")
      local chan = vim.bo[buf].channel
      local screen = function()
        return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
      end
      H.wait("the provider question", function()
        return screen():find("Provider [1]:", 1, true)
      end)
      vim.fn.chansend(chan, "anthropic\r")
      H.wait("the hidden key prompt", function()
        return screen():find("(input hidden)", 1, true)
      end)
      vim.fn.chansend(chan, "sk-ant-terminal-77\r")
      local file = home .. "/config/agent-lsp/credentials/keys.json"
      H.wait("the stored key", function()
        return vim.uv.fs_stat(file) ~= nil
      end)
      H.eq({ ANTHROPIC_API_KEY = "sk-ant-terminal-77" }, vim.json.decode(H.read(file)), "keys.json")
      H.eq(tonumber("600", 8), bit.band(vim.uv.fs_stat(file).mode, tonumber("777", 8)), "mode")
      H.wait("the login's answer", function()
        return screen():find("Stored ANTHROPIC_API_KEY", 1, true)
      end)
      assert(not screen():find("sk-ant-terminal-77", 1, true), "the key was echoed:\n" .. screen())
    end,
  },
}
