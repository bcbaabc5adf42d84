--- agent_lsp: the Neovim client of the agent-lsp daemon.
---
--- `setup()` registers the daemon with `vim.lsp.config`/`vim.lsp.enable` (no `filetypes`: it
--- attaches to every file buffer, so the agent sees unsaved text), opts into the agent protocol
--- (`capabilities.experimental.agent`) and adds `workspace.workspaceEdit.documentChanges`, which
--- Neovim handles but does not advertise. The commands live in `agent_lsp.commands`.

local config = require("agent_lsp.config")
local protocol = require("agent_lsp.protocol")
local state = require("agent_lsp.state")

local M = {}

local waiting = {} ---@type fun(client: vim.lsp.Client)[]

--- The handlers the daemon's server->client traffic goes to.
---@return table<string, function>
local function handlers()
  local approval = require("agent_lsp.approval")
  local documents = require("agent_lsp.documents")
  local events = require("agent_lsp.events")
  return {
    [protocol.server.event] = function(_, params)
      events.on_event(params)
    end,
    [protocol.server.before_tool_call] = approval.handler,
    [protocol.server.save_documents] = documents.save_handler,
    [protocol.server.cancel_request] = function()
      approval.on_cancel_request()
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
      experimental = { agent = protocol.client_capability() },
    },
    handlers = handlers(),
    on_init = function(client)
      local queued = waiting
      waiting = {}
      vim.schedule(function()
        for _, fn in ipairs(queued) do
          fn(client)
        end
      end)
    end,
    on_exit = function()
      require("agent_lsp.approval").cancel(nil)
      state.reset()
    end,
  }
end

--- Sets the plugin up. Safe to call again (options are replaced).
---@param user agent_lsp.Options|table|nil
function M.setup(user)
  local opts = config.merge(user)
  config.options = opts
  vim.lsp.config(opts.name, M.lsp_config(opts))
  vim.lsp.enable(opts.name)
  if not M._setup_done then
    table.insert(require("agent_lsp.events").listeners, require("agent_lsp.approval").on_event)
  end
  if opts.forward_diagnostics then
    require("agent_lsp.documents").watch_diagnostics(opts.name, opts.diagnostics_debounce_ms)
  end
  M._setup_done = true
end

--- The running client, if any. A client that has stopped stays listed until Neovim's exit
--- callback runs, so stopped ones are skipped here.
---@return vim.lsp.Client?
function M.client()
  for _, c in ipairs(vim.lsp.get_clients({ name = config.options.name })) do
    if not c:is_stopped() then
      return c
    end
  end
  return nil
end

--- Calls `fn` with an initialized client, starting the daemon when no buffer has started it
--- yet (for example `:AgentPrompt` in an empty Neovim).
---@param fn fun(client: vim.lsp.Client)
function M.with_client(fn)
  if not M._setup_done then
    vim.notify('agent-lsp: call require("agent_lsp").setup() first', vim.log.levels.ERROR)
    return
  end
  local client = M.client()
  if client and client.initialized then
    return fn(client)
  end
  waiting[#waiting + 1] = fn
  if client then
    return
  end
  local opts = config.options
  if vim.fn.executable(opts.cmd[1]) ~= 1 then
    waiting = {}
    vim.notify(
      string.format("agent-lsp: %q is not executable; set `cmd` in setup()", opts.cmd[1]),
      vim.log.levels.ERROR
    )
    return
  end
  local cfg = vim.tbl_extend("force", vim.deepcopy(vim.lsp.config[opts.name]), {
    name = opts.name,
    root_dir = vim.fs.root(0, opts.root_markers) or vim.fn.getcwd(),
  })
  if not vim.lsp.start(cfg, { attach = false }) then
    waiting = {}
    vim.notify("agent-lsp: the daemon did not start (see :LspLog)", vim.log.levels.ERROR)
  end
end

--- Sends a request to the daemon; `on_result(result)` runs on success, errors are notified.
---@param method string
---@param params table
---@param on_result fun(result: any)?
function M.request(method, params, on_result)
  M.with_client(function(client)
    local sent = client:request(method, params, function(err, result)
      if err then
        vim.notify("agent-lsp: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
        return
      end
      if on_result then
        on_result(result)
      end
    end)
    if not sent then
      vim.notify("agent-lsp: the daemon is not running (see :LspLog)", vim.log.levels.ERROR)
    end
  end)
end

--- Statusline component: `agent: idle`, `agent: running 1.2k tok +1q`, `agent: approval`.
---@return string
function M.statusline()
  return state.statusline()
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

return M
