--- agent_lsp.health: `:checkhealth agent_lsp` (Neovim, setup, binary and version, model
--- configuration, `agent-lsp doctor`'s report for this project (keys, sandbox layers, session
--- directory, MCP servers), the running daemon's protocol version when one is attached, and the
--- command sandbox of the current session: `agent/getState.sandbox`, as `:AgentSandbox` shows it).

local M = {}

local health = vim.health

local function check_neovim()
  if vim.fn.has("nvim-0.11") == 1 then
    health.ok("Neovim " .. tostring(vim.version()) .. " (vim.lsp.config available)")
  else
    health.error("Neovim >= 0.11 is required (vim.lsp.config / vim.lsp.enable)")
  end
end

--- Checks the daemon binary (`exe`, the command Neovim starts); returns true when it runs.
---@param exe string
---@return boolean
local function check_binary(exe)
  if vim.fn.executable(exe) ~= 1 then
    health.error(string.format("%q is not executable", exe), require("agent_lsp.install").advice())
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
  -- `agent-lsp login`'s store (its keys are never read here, only whether there are any).
  if vim.uv.fs_stat(xdg .. "/agent-lsp/credentials/keys.json") then
    found[#found + 1] = "keys stored by agent-lsp login"
  end
  if #found > 0 then
    health.ok("model configuration from: " .. table.concat(found, ", "))
  else
    health.warn("no model configured", {
      "Run `agent-lsp login` in a terminal to store a provider's key,",
      'or set `model = "provider/id"` in setup(), or OPENAI_API_KEY / ANTHROPIC_API_KEY,',
      "or OPENAI_BASE_URL for an OpenAI-compatible server (Ollama, vLLM, llama.cpp),",
      "or add " .. models_json,
    })
  end
end

--- `agent-lsp doctor --json` in the daemon's environment, for this project: each check but the
--- model (above, with the setup option) and the binary on PATH (the plugin starts `cmd`).
---@param opts agent_lsp.Options
---@param exe string
local function check_doctor(opts, exe)
  local args = { exe, "doctor", "--json" }
  local cwd = vim.fn.getcwd()
  local here = cwd ~= "" and vim.fn.isdirectory(cwd) == 1
  if here then
    vim.list_extend(args, { "--cwd", cwd })
  end
  if opts.model then
    vim.list_extend(args, { "--model", opts.model })
  end
  local env = vim.tbl_extend("force", vim.fn.environ(), opts.cmd_env or {})
  local ok, res = pcall(function()
    return vim.system(args, { text = true, env = env, clear_env = true, cwd = here and cwd or "/" }):wait(15000)
  end)
  local report = ok and res.stdout and res.stdout ~= "" and vim.json.decode(res.stdout) or nil
  if type(report) ~= "table" or type(report.checks) ~= "table" then
    health.warn("`agent-lsp doctor` gave no report: " .. tostring(ok and res.stderr or res))
    return
  end
  for _, check in ipairs(report.checks) do
    if check.name ~= "model" and check.name ~= "binary" then
      local text = check.name .. ": " .. check.detail
      local advice = check.fix and vim.split(check.fix, "\n") or nil
      if check.status == "ok" then
        health.ok(text)
      elseif check.status == "warning" then
        health.warn(text, advice)
      else
        health.error(text, advice)
      end
    end
  end
end

--- The current session's command sandbox, when that session lives in `client`.
---@param client vim.lsp.Client
local function check_sandbox(client)
  local state = require("agent_lsp.state")
  local id = state.current
  local s = id and state.sessions[id]
  if not s or (s.client_id and s.client_id ~= client.id) then
    health.info("sandbox: no session yet (:AgentSandbox starts one and shows its sandbox)")
    return
  end
  local res = client:request_sync(require("agent_lsp.protocol").methods.get_state, { sessionId = id }, 5000)
  local sb = res and not res.err and type(res.result) == "table" and res.result.sandbox
  if type(sb) ~= "table" then
    health.warn("sandbox: agent/getState did not report it (" .. vim.inspect(res and res.err or "no answer") .. ")")
    return
  end
  local lines = require("agent_lsp.sandbox").status_lines(sb)
  if sb.available == false or sb.mode == "off" then
    health.warn("sandbox: " .. lines[1], {
      "It comes from setup() (`sandbox`, `sandbox_network`) and this machine; a repository cannot change it",
      "protocol.md §3.17 says what each layer keeps a command from",
    })
  else
    health.ok("sandbox: " .. lines[1])
  end
  for i = 2, #lines do
    local gap = lines[i]:match("^  %- (.*)$")
    if gap then
      health.warn("not isolated here: " .. gap)
    elseif lines[i] ~= "Not isolated here:" then
      health.info(lines[i])
    end
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
    check_sandbox(client)
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
  if not lsp.ready() then
    health.error("the plugin is not set up", {
      'Add require("agent_lsp").setup({}) to your config (lazy.nvim: `opts = {}`),',
      'or vim.lsp.enable("agent_lsp") for the defaults',
    })
    return
  end
  local opts = require("agent_lsp.config").options
  local exe = lsp.cmd()[1]
  if check_binary(exe) then
    check_model(opts)
    check_doctor(opts, exe)
  end
  check_client(opts)
end

return M
