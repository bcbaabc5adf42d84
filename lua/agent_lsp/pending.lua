--- Server requests waiting for the user (approvals, questions): each kind keeps a list, and
--- the request handler waits in a coroutine that the answer resumes.
local protocol = require("agent_lsp.protocol")

local M = {}

--- Removes `item` from `list` (nothing when it is not there).
---@param list table[]
---@param item table
function M.remove(list, item)
  for i, other in ipairs(list) do
    if other == item then
      table.remove(list, i)
      return
    end
  end
end

--- Resumes the waiting handler `co` with the reply, from the main loop: the picker's callback
--- may run inside another coroutine.
---@param co thread
function M.resume(co, result, err)
  vim.schedule(function()
    coroutine.resume(co, result, err)
  end)
end

--- Finishes every item of `list` of `session_id` (all when nil) as cancelled, saying `message`.
---@param list table[]
---@param session_id string?
---@param finish fun(item: table, result: table?, err: table)
---@param message string
function M.cancel(list, session_id, finish, message)
  for _, item in ipairs(vim.list_slice(list)) do
    if session_id == nil or item.params.sessionId == session_id then
      finish(item, nil, vim.lsp.rpc_response_error(protocol.REQUEST_CANCELLED, message))
    end
  end
end

return M
