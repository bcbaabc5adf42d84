--- agent_lsp.config: user options, their defaults and validation.

local M = {}

---@class agent_lsp.ChatOptions
---@field layout "split"|"vsplit"|"float" where the chat buffer opens
---@field size number rows (split) or columns (vsplit); a fraction of the screen when < 1
---@field auto_open boolean open the chat when a prompt is sent

---@class agent_lsp.Options
---@field name string LSP client name
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
---@field forward_diagnostics boolean send agent/diagnostics for attached buffers
---@field diagnostics_debounce_ms integer

---@type agent_lsp.Options
M.defaults = {
  name = "agent-lsp",
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
  forward_diagnostics = true,
  diagnostics_debounce_ms = 200,
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
  vim.validate("forward_diagnostics", opts.forward_diagnostics, "boolean")
  return opts
end

--- The initializationOptions the daemon receives (nil when there are none: an empty Lua table
--- would be encoded as a JSON array).
---@param opts agent_lsp.Options
---@return table?
function M.init_options(opts)
  local init = vim.deepcopy(opts.init_options or {})
  if opts.model then
    init.model = opts.model
  end
  if opts.approval then
    init.approval = opts.approval
  end
  if opts.save_after_edit then
    init.saveAfterEdit = opts.save_after_edit
  end
  if next(init) == nil then
    return nil
  end
  return init
end

return M
