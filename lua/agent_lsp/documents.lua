--- agent_lsp.documents: `agent/saveDocuments` (write the buffers the agent edited) and
--- `agent/diagnostics` (forward the editor's diagnostics to the daemon).
---
--- Neovim applies `workspace/applyEdit` to buffers but never writes them; the daemon asks us to
--- `:write` them so that a following shell command (build, tests, git) sees the agent's edits.

local protocol = require("agent_lsp.protocol")

local M = {}

--- Writes one buffer; returns an error message or nil.
---@param uri string
---@return string?
local function write(uri)
  local bufnr = vim.uri_to_bufnr(uri)
  if not vim.api.nvim_buf_is_loaded(bufnr) then
    return "buffer is not loaded"
  end
  if vim.bo[bufnr].buftype ~= "" then
    return "not a file buffer"
  end
  local ok, err = pcall(vim.api.nvim_buf_call, bufnr, function()
    vim.cmd("silent keepalt write")
  end)
  if not ok then
    return tostring(err)
  end
  return nil
end

--- The `agent/saveDocuments` request handler: `{uris}` -> `{saved}`. URIs left out of `saved`
--- are written to disk by the daemon itself, so a failure here is reported, not fatal.
---@param params {uris: string[]}
function M.save_handler(_, params, _)
  local saved = {}
  if not require("agent_lsp.config").options.save_on_request then
    return { saved = saved }
  end
  for _, uri in ipairs(params and params.uris or {}) do
    local err = write(uri)
    if err then
      vim.notify(string.format("agent-lsp: could not save %s: %s", uri, err), vim.log.levels.WARN)
    else
      saved[#saved + 1] = uri
    end
  end
  return { saved = saved }
end

local timers = {} ---@type table<integer, uv.uv_timer_t>

--- Diagnostics of a buffer in LSP shape, leaving out those agent-lsp itself published.
---@param bufnr integer
---@param own_ns table<integer, boolean>
---@return table[]
local function lsp_diagnostics(bufnr, own_ns)
  local list = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    if not own_ns[d.namespace] then
      list[#list + 1] = d
    end
  end
  if vim.lsp.diagnostic.from then
    return vim.lsp.diagnostic.from(list)
  end
  -- Older runtimes: the same conversion by hand (columns are bytes, i.e. utf-8 positions).
  return vim.tbl_map(function(d)
    return {
      range = {
        start = { line = d.lnum, character = d.col },
        ["end"] = { line = d.end_lnum or d.lnum, character = d.end_col or d.col },
      },
      severity = d.severity,
      message = d.message,
      source = d.source,
      code = d.code,
    }
  end, list)
end

--- Sends `agent/diagnostics {uri, diagnostics}` for one buffer.
---@param client vim.lsp.Client
---@param bufnr integer
function M.forward(client, bufnr)
  if not vim.api.nvim_buf_is_valid(bufnr) or client:is_stopped() then
    return
  end
  local own = {}
  for _, pull in ipairs({ false, true }) do
    own[vim.lsp.diagnostic.get_namespace(client.id, pull)] = true
  end
  client:notify(protocol.client_notifications.diagnostics, {
    uri = vim.uri_from_bufnr(bufnr),
    diagnostics = lsp_diagnostics(bufnr, own),
  })
end

--- Forwards diagnostics of buffers attached to the client, debounced per buffer.
---@param client_name string
---@param debounce_ms integer
---@return integer autocmd id
function M.watch_diagnostics(client_name, debounce_ms)
  local group = vim.api.nvim_create_augroup("agent_lsp.diagnostics", { clear = true })
  return vim.api.nvim_create_autocmd("DiagnosticChanged", {
    group = group,
    callback = function(args)
      local bufnr = args.buf
      local client = vim.lsp.get_clients({ name = client_name, bufnr = bufnr })[1]
      if not client then
        return
      end
      local t = timers[bufnr]
      if not t then
        t = assert(vim.uv.new_timer())
        timers[bufnr] = t
      end
      t:stop()
      t:start(debounce_ms, 0, function()
        vim.schedule(function()
          M.forward(client, bufnr)
        end)
      end)
    end,
  })
end

return M
