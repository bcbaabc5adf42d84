--- agent_lsp: the Neovim client of the agent-lsp daemon.
---
--- `setup()` registers the daemon with `vim.lsp.config`/`vim.lsp.enable` under the name
--- "agent_lsp" (no `filetypes`: it attaches to every file buffer, so the agent sees unsaved text),
--- opts into the agent protocol (`capabilities.experimental.agent`) and adds
--- `workspace.workspaceEdit.documentChanges`, which Neovim handles but does not advertise.
--- `lsp/agent_lsp.lua` on 'runtimepath' returns the same config (`M.runtime_config()`), so
--- `vim.lsp.enable("agent_lsp")` alone gives the same client with the default options, and
--- setup()'s table, merged over it by Neovim, changes nothing it did not set. The commands live
--- in `agent_lsp.commands`.

local config = require("agent_lsp.config")
local protocol = require("agent_lsp.protocol")
local state = require("agent_lsp.state")

local M = {}

--- What waits for the daemon to be initialized, and whom to tell when it never is.
---@type {fn: fun(client: vim.lsp.Client), on_error: fun(err: table)?}[]
local waiting = {}
--- The clients that got initialized (a later exit of one of them is no start failure).
local initialized = {} ---@type table<integer, true>

--- The handlers the daemon's server->client traffic goes to.
---@return table<string, function>
local function handlers()
  local approval = require("agent_lsp.approval")
  local ask = require("agent_lsp.ask")
  local documents = require("agent_lsp.documents")
  local events = require("agent_lsp.events")
  local language = require("agent_lsp.language")
  return {
    [protocol.server.event] = function(_, params, ctx)
      events.on_event(params, ctx and ctx.client_id)
    end,
    [protocol.server.before_tool_call] = approval.handler,
    [protocol.server.ask_user] = ask.handler,
    [protocol.server.save_documents] = documents.save_handler,
    [protocol.server.language_request] = language.handler,
    -- Neovim does not tell request handlers their JSON-RPC id, so a cancellation is matched
    -- only when exactly one approval or question is pending and no language request is being
    -- answered (those end on their own timeout; the daemon ignores a late reply); otherwise the
    -- session's `agent_settled` closes them.
    [protocol.server.cancel_request] = function()
      if #approval.pending + #ask.pending == 1 and language.in_flight == 0 then
        approval.cancel(nil)
        ask.cancel(nil)
      end
    end,
  }
end

--- The `vim.lsp.Config` for the daemon.
---@param opts agent_lsp.Options
---@return vim.lsp.Config
function M.lsp_config(opts)
  return {
    cmd = opts.cmd,
    cmd_env = opts.cmd_env,
    root_markers = opts.root_markers,
    filetypes = opts.filetypes,
    init_options = config.init_options(opts),
    capabilities = {
      workspace = { workspaceEdit = { documentChanges = true } },
      experimental = { agent = protocol.client_capability(opts.forward_diagnostics) },
    },
    handlers = handlers(),
    on_init = function(client)
      initialized[client.id] = true
      local queued = waiting
      waiting = {}
      vim.schedule(function()
        for _, w in ipairs(queued) do
          w.fn(client)
        end
      end)
    end,
    on_exit = function(code, _, client_id)
      -- A daemon that exits before it is initialized (a bad `cmd`, a crash) answers nothing:
      -- say so to what waited for it, so a prompt's text is given back rather than lost.
      local queued = {}
      if initialized[client_id] then
        initialized[client_id] = nil
      else
        queued = waiting
        waiting = {}
      end
      if #queued > 0 then
        vim.schedule(function()
          local message = string.format("the daemon exited (code %s) before it was ready (see :LspLog)", tostring(code))
          vim.notify("agent-lsp: " .. message, vim.log.levels.ERROR)
          for _, w in ipairs(queued) do
            if w.on_error then
              w.on_error({ message = message })
            end
          end
        end)
      end
      -- Only this daemon's sessions die with it (one daemon runs per workspace root).
      for _, id in ipairs(state.forget_client(client_id)) do
        require("agent_lsp.approval").cancel(id)
        require("agent_lsp.ask").cancel(id)
      end
    end,
  }
end

local listening = false

--- Wires the plugin to the daemon's events (once) and to diagnostics, with `opts`.
---@param opts agent_lsp.Options
local function wire(opts)
  if not listening then
    local listeners = require("agent_lsp.events").listeners
    table.insert(listeners, require("agent_lsp.approval").on_event)
    table.insert(listeners, require("agent_lsp.ask").on_event)
    table.insert(listeners, require("agent_lsp.controls").on_event)
    table.insert(listeners, require("agent_lsp.complete").on_event)
    table.insert(listeners, require("agent_lsp.mcp").on_event)
    table.insert(listeners, require("agent_lsp.review").on_event)
    table.insert(listeners, require("agent_lsp.queue").on_event)
    table.insert(listeners, require("agent_lsp.jobs").on_event)
    table.insert(listeners, require("agent_lsp.follow").on_event)
    listening = true
  end
  if opts.forward_diagnostics then
    require("agent_lsp.documents").watch_diagnostics(opts.name, opts.diagnostics_debounce_ms)
  end
end

--- Sets the plugin up. Safe to call again (options are replaced).
---@param user agent_lsp.Options|table|nil
function M.setup(user)
  local opts = config.merge(user)
  config.options = opts
  wire(opts)
  -- Done before the config is enabled: enabling resolves it, which runs `lsp/agent_lsp.lua`,
  -- and that must find the plugin set up with these options (`M.runtime_config`).
  M._setup_done = true
  -- Assigned, not merged with `vim.lsp.config(name, …)`: a `cmd_env` variable or option
  -- dropped from a later setup() must not live on in the previous call's table. Neovim merges
  -- this over the `lsp/<name>.lua` files on 'runtimepath': the plugin's own returns this same
  -- config (built from the same options), and a user's `after/lsp/agent_lsp.lua` still applies.
  vim.lsp.config[opts.name] = M.lsp_config(opts)
  vim.lsp.enable(opts.name)
end

--- The config `lsp/agent_lsp.lua` returns: the daemon's `vim.lsp.Config` for the current
--- options (the defaults until setup() runs). When setup() has not run, only
--- `vim.lsp.enable("agent_lsp")`, this also wires the plugin with the default options, so that
--- the commands, approvals and the chat work with that one line.
---@return vim.lsp.Config
function M.runtime_config()
  if not M._setup_done then
    wire(config.options)
    M._setup_done = true
  end
  return M.lsp_config(config.options)
end

--- Whether the plugin is set up: by setup(), or by `vim.lsp.enable("agent_lsp")` (resolving that
--- config runs `lsp/agent_lsp.lua`, which wires the plugin; it is resolved here when no buffer
--- has done it yet, as for `:AgentPrompt` in an empty Neovim).
---@return boolean
function M.ready()
  if not M._setup_done then
    local name = config.options.name
    local enabled
    if vim.lsp.is_enabled then
      enabled = vim.lsp.is_enabled(name)
    else
      enabled = vim.lsp._enabled_configs ~= nil and vim.lsp._enabled_configs[name] ~= nil
    end
    if enabled then
      local _ = vim.lsp.config[name]
    end
  end
  return M._setup_done == true
end

--- The command that starts the daemon as Neovim resolves it (`cmd` in setup(), or in a
--- `vim.lsp.config("agent_lsp", …)` of the user's).
---@return string[]
function M.cmd()
  local resolved = vim.lsp.config[config.options.name]
  if resolved and type(resolved.cmd) == "table" then
    return resolved.cmd
  end
  return config.options.cmd
end

--- Live clients: a stopped client stays listed until Neovim's exit callback runs.
---@param filter table?
---@return vim.lsp.Client[]
local function live(filter)
  local out = {}
  local f = vim.tbl_extend("force", { name = config.options.name }, filter or {})
  for _, c in ipairs(vim.lsp.get_clients(f)) do
    if not c:is_stopped() then
      out[#out + 1] = c
    end
  end
  return out
end

--- The client to talk to. One daemon runs per workspace root, so: the daemon that owns the
--- current session (the one the chat shows), else the current buffer's, else any.
---@param opts {for_session: boolean?}? `for_session = false` skips the session owner (new sessions)
---@return vim.lsp.Client?
function M.client(opts)
  local s = state.current and state.sessions[state.current]
  if s and s.client_id and not (opts and opts.for_session == false) then
    for _, c in ipairs(live()) do
      if c.id == s.client_id then
        return c
      end
    end
  end
  return live({ bufnr = vim.api.nvim_get_current_buf() })[1] or live()[1]
end

--- Calls `fn` with an initialized client, starting the daemon when no buffer has started it
--- yet (for example `:AgentPrompt` in an empty Neovim). When it cannot start, the reason is
--- notified and passed to `opts.on_error`.
---@param fn fun(client: vim.lsp.Client)
---@param opts {for_session: boolean?, on_error: fun(err: table)?}?
function M.with_client(fn, opts)
  local function give_up(message)
    waiting = {}
    vim.notify("agent-lsp: " .. message, vim.log.levels.ERROR)
    if opts and opts.on_error then
      opts.on_error({ message = message })
    end
  end
  if not M.ready() then
    return give_up('call require("agent_lsp").setup() or vim.lsp.enable("agent_lsp") first')
  end
  local client = M.client(opts)
  if client and client.initialized then
    return fn(client)
  end
  waiting[#waiting + 1] = { fn = fn, on_error = opts and opts.on_error }
  if client then
    return
  end
  local options = config.options
  local exe = M.cmd()[1]
  if vim.fn.executable(exe) ~= 1 then
    return give_up(require("agent_lsp.install").missing(exe))
  end
  local cfg = vim.tbl_extend("force", vim.deepcopy(vim.lsp.config[options.name]), {
    name = options.name,
    root_dir = vim.fs.root(0, options.root_markers) or vim.fn.getcwd(),
  })
  if not vim.lsp.start(cfg, { attach = false }) then
    give_up("the daemon did not start (see :LspLog)")
  end
end

--- Sends a request to the daemon; `on_result(result, client_id)` runs on success, errors are
--- notified and then passed to `opts.on_error` (a request that could not be sent too).
---@param method string
---@param params table
---@param on_result fun(result: any, client_id: integer)?
---@param opts {for_session: boolean?, on_error: fun(err: table)?}?
function M.request(method, params, on_result, opts)
  local function failed(err)
    vim.notify("agent-lsp: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
    if opts and opts.on_error then
      opts.on_error(err)
    end
  end
  M.with_client(function(client)
    local sent = client:request(method, params, function(err, result)
      if err then
        return failed(err)
      end
      if on_result then
        on_result(result, client.id)
      end
    end)
    if not sent then
      failed({ message = "the daemon is not running (see :LspLog)" })
    end
  end, opts)
end

--- Statusline component: `agent: idle`, `agent: running 1.2k tok +1q`, `agent: approval`.
---@return string
function M.statusline()
  return state.statusline()
end

--- Statusline component: the current session's model, thinking level, context use and cost,
--- e.g. `openai/gpt-4.1-mini · think off · ctx 1.2k/1.0M (0.1%) · $0.0012` (`%{}`-safe).
---@return string
function M.model_status()
  return require("agent_lsp.controls").status()
end

local commands = setmetatable({}, {
  __index = function(_, k)
    return require("agent_lsp.commands")[k]
  end,
})

--- Lua API mirroring the user commands (see `:help agent_lsp-api`).
M.prompt = function(...)
  return commands.prompt(...)
end
M.steer = function(...)
  return commands.steer(...)
end
M.follow_up = function(...)
  return commands.follow_up(...)
end
M.abort = function(...)
  return commands.abort(...)
end
M.new_session = function(...)
  return commands.new_session(...)
end
M.sessions = function(...)
  return commands.sessions(...)
end
M.model = function(...)
  return commands.model(...)
end
M.open_chat = function(...)
  return commands.open_chat(...)
end
M.pick_model = function(...)
  return require("agent_lsp.controls").pick_model(...)
end
M.thinking = function(...)
  return require("agent_lsp.controls").set_thinking(...)
end
M.compact = function(...)
  return require("agent_lsp.compact").compact(...)
end
M.input = function(...)
  return require("agent_lsp.input").open(...)
end
M.mcp = function(...)
  return require("agent_lsp.mcp").open(...)
end
M.sandbox = function(...)
  return require("agent_lsp.sandbox").show(...)
end
M.jobs = function(...)
  return require("agent_lsp.jobs").open(...)
end

return M
