--- agent_lsp.health: `:checkhealth agent_lsp` (Neovim, setup, binary and version, model
--- configuration, and the running daemon's protocol version when one is attached).

local M = {}

local health = vim.health

local function check_neovim()
  if vim.fn.has("nvim-0.11") == 1 then
    health.ok("Neovim " .. tostring(vim.version()) .. " (vim.lsp.config available)")
  else
    health.error("Neovim >= 0.11 is required (vim.lsp.config / vim.lsp.enable)")
  end
end

--- Checks the daemon binary; returns true when it runs.
---@param opts agent_lsp.Options
---@return boolean
local function check_binary(opts)
  local exe = opts.cmd[1]
  if vim.fn.executable(exe) ~= 1 then
    health.error(
      string.format("%q is not executable", exe),
      { "Install agent-lsp (cargo install --path .) or set `cmd` in setup()" }
    )
    return false
  end
  health.ok("binary: " .. vim.fn.exepath(exe))
  local ok, res = pcall(function()
    return vim.system({ exe, "--version" }, { text = true }):wait(5000)
  end)
  if not ok or res.code ~= 0 then
    health.error("`" .. exe .. " --version` failed: " .. tostring(ok and res.stderr or res))
    return false
  end
  health.ok("version: " .. vim.trim(res.stdout))
  return true
end

--- Where the daemon's model will come from.
---@param opts agent_lsp.Options
local function check_model(opts)
  if opts.model then
    health.ok("model: " .. opts.model .. " (setup option `model`)")
    return
  end
  local env = vim.tbl_extend("force", vim.fn.environ(), opts.cmd_env or {})
  local found = {}
  for _, var in ipairs({ "AGENT_LSP_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL" }) do
    if env[var] and env[var] ~= "" then
      found[#found + 1] = var
    end
  end
  local xdg = env.XDG_CONFIG_HOME
  if not xdg or xdg == "" then
    xdg = (env.HOME or "~") .. "/.config"
  end
  local models_json = xdg .. "/agent-lsp/models.json"
  if vim.uv.fs_stat(models_json) then
    found[#found + 1] = models_json
  end
  if #found > 0 then
    health.ok("model configuration from: " .. table.concat(found, ", "))
  else
    health.warn("no model configured", {
      'Set `model = "provider/id"` in setup(), or OPENAI_API_KEY / ANTHROPIC_API_KEY,',
      "or OPENAI_BASE_URL for an OpenAI-compatible server (Ollama, vLLM, llama.cpp),",
      "or add " .. models_json,
    })
  end
end

local function check_client(opts)
  local client = vim.lsp.get_clients({ name = opts.name })[1]
  if not client then
    health.info("daemon not running (it starts with the first file buffer or :AgentPrompt)")
    return
  end
  local caps = client.server_capabilities or {}
  local agent = caps.experimental and caps.experimental.agent
  local want = require("agent_lsp.protocol").PROTOCOL_VERSION
  if type(agent) == "table" and agent.protocolVersion == want then
    health.ok(string.format("daemon running (client id %d), protocol version %d", client.id, want))
  else
    health.error("the running daemon does not speak agent protocol version " .. want, {
      "Update agent-lsp or the plugin so that both match",
    })
  end
end

function M.check()
  health.start("agent-lsp")
  check_neovim()
  local lsp = require("agent_lsp")
  if not lsp._setup_done then
    health.error('setup() has not been called', { 'Add require("agent_lsp").setup({}) to your config' })
    return
  end
  local opts = require("agent_lsp.config").options
  if check_binary(opts) then
    check_model(opts)
  end
  check_client(opts)
end

return M
