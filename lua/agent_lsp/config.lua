--- agent_lsp.config: user options, their defaults and validation.

local M = {}

---@class agent_lsp.ChatOptions
---@field layout "split"|"vsplit"|"float" where the chat buffer opens
---@field size number rows (split) or columns (vsplit); a fraction of the screen when < 1
---@field auto_open boolean open the chat when a prompt is sent

---@class agent_lsp.Options
---@field name string LSP config and client name ("agent_lsp", as `lsp/agent_lsp.lua` names it)
---@field cmd string[] command that starts the daemon
---@field cmd_env table<string,string>? extra environment for the daemon
---@field root_markers string[] files that mark the workspace root
---@field filetypes string[]? attach only to these filetypes (nil: every file buffer)
---@field model string? "provider/id", sent as initializationOptions.model
---@field approval table<string,string>? per-tool policy, e.g. { read = "allow", bash = "ask" }
---@field init_options table? extra initializationOptions
---@field chat agent_lsp.ChatOptions
---@field save_on_request boolean answer agent/saveDocuments by writing the buffers
---@field save_after_edit "ifClean"|"always"|"never"|nil saving a buffer the agent edited (initializationOptions.saveAfterEdit; nil: the daemon's default, "ifClean")
---@field sandbox "workspaceWrite"|"readOnly"|"off"|nil the command sandbox of every command (initializationOptions.sandbox; nil: the daemon's default, commands that run unasked in workspaceWrite)
---@field sandbox_network boolean|string[]|nil what sandboxed commands reach: false (none), true, or a domain allowlist ({ "crates.io", "*.npmjs.org" })
---@field sandbox_env string[]? variables sandboxed commands keep although they hold model keys (nil: settings.json `sandbox.env`)
---@field sandbox_protected_paths string[]? paths kept read-only in every writable root (nil: settings.json `sandbox.protectedPaths`, else the built-in list)
---@field forward_diagnostics boolean send agent/diagnostics for attached buffers
---@field diagnostics_debounce_ms integer
---@field follow boolean show the file the agent reads, edits or asks the language servers about (`agent_lsp.follow`)

---@type agent_lsp.Options
M.defaults = {
  name = "agent_lsp",
  cmd = { "agent-lsp", "--stdio" },
  cmd_env = nil,
  root_markers = { ".git" },
  filetypes = nil,
  model = nil,
  approval = nil,
  init_options = nil,
  chat = { layout = "split", size = 0.4, auto_open = true },
  save_on_request = true,
  save_after_edit = nil,
  sandbox = nil,
  sandbox_network = nil,
  sandbox_env = nil,
  sandbox_protected_paths = nil,
  forward_diagnostics = true,
  diagnostics_debounce_ms = 200,
  follow = false,
}

---@type agent_lsp.Options
M.options = vim.deepcopy(M.defaults)

--- Merges user options over the defaults and validates them; errors name the bad field.
---@param user table?
---@return agent_lsp.Options
function M.merge(user)
  local opts = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), user or {})
  vim.validate("name", opts.name, "string")
  vim.validate("cmd", opts.cmd, "table")
  vim.validate("cmd_env", opts.cmd_env, "table", true)
  vim.validate("root_markers", opts.root_markers, "table")
  vim.validate("filetypes", opts.filetypes, "table", true)
  vim.validate("model", opts.model, "string", true)
  vim.validate("approval", opts.approval, "table", true)
  vim.validate("init_options", opts.init_options, "table", true)
  vim.validate("chat.layout", opts.chat.layout, function(v)
    return v == "split" or v == "vsplit" or v == "float"
  end, "one of split, vsplit, float")
  vim.validate("chat.size", opts.chat.size, "number")
  vim.validate("save_on_request", opts.save_on_request, "boolean")
  vim.validate("save_after_edit", opts.save_after_edit, function(v)
    return v == nil or v == "ifClean" or v == "always" or v == "never"
  end, "one of ifClean, always, never")
  vim.validate("sandbox", opts.sandbox, function(v)
    return v == nil or v == "workspaceWrite" or v == "readOnly" or v == "off"
  end, "one of workspaceWrite, readOnly, off")
  vim.validate("sandbox_network", opts.sandbox_network, function(v)
    if v == nil or type(v) == "boolean" then
      return true
    end
    if type(v) ~= "table" or not vim.islist(v) then
      return false, "true, false or a list of domains"
    end
    for _, d in ipairs(v) do
      if not M.domain(d) then
        return false, string.format("a domain (letters, digits, '-', '.', an optional '*.' prefix), not %s", vim.inspect(d))
      end
    end
    return true
  end)
  for _, name in ipairs({ "sandbox_env", "sandbox_protected_paths" }) do
    vim.validate(name, opts[name], function(v)
      return v == nil or (type(v) == "table" and vim.islist(v) and vim.iter(v):all(function(x)
        return type(x) == "string"
      end))
    end, "a list of strings")
  end
  vim.validate("forward_diagnostics", opts.forward_diagnostics, "boolean")
  vim.validate("follow", opts.follow, "boolean")
  return opts
end

--- A domain as the daemon's allowlist takes it (`src/sandbox/policy.rs`), or nil.
---@param d any
---@return string?
function M.domain(d)
  if type(d) ~= "string" then
    return nil
  end
  local v = vim.trim(d):gsub("%.+$", ""):lower()
  local bare = v:gsub("^%*%.", "", 1)
  if bare ~= "" and not bare:find("[^%w%.%-]") then
    return v
  end
  return nil
end

--- setup() options passed as they are, by the initializationOptions field they become.
local INIT_FIELDS = {
  model = "model",
  approval = "approval",
  save_after_edit = "saveAfterEdit",
  sandbox = "sandbox",
  sandbox_env = "sandboxEnv",
  sandbox_protected_paths = "sandboxProtectedPaths",
}

--- The initializationOptions the daemon receives (nil when there are none: an empty Lua table
--- would be encoded as a JSON array).
---@param opts agent_lsp.Options
---@return table?
function M.init_options(opts)
  local init = vim.deepcopy(opts.init_options or {})
  for option, field in pairs(INIT_FIELDS) do
    if opts[option] then
      init[field] = opts[option]
    end
  end
  if type(opts.sandbox_network) == "table" then
    -- An empty list is an allowlist naming no host (vim.json encodes {} as []).
    init.sandboxNetwork = vim.tbl_map(M.domain, opts.sandbox_network)
  elseif opts.sandbox_network ~= nil then
    init.sandboxNetwork = opts.sandbox_network
  end
  if next(init) == nil then
    return nil
  end
  return init
end

return M
