--- agent_lsp.queue: the steering and follow-up messages waiting for the running agent.
---
--- They stay visible below the end of the chat (virtual lines, so the chat text is unchanged)
--- until the run takes them; `:AgentQueue` lists them and removes the one picked
--- (`agent/removeQueued`).

local protocol = require("agent_lsp.protocol")
local state = require("agent_lsp.state")

local M = {}

local ns = vim.api.nvim_create_namespace("agent_lsp.queue")

---@class agent_lsp.QueuedItem
---@field kind "steer"|"followUp"
---@field messageId string
---@field text string

---@type table<string, agent_lsp.QueuedItem[]> session id -> its queue, steering first
M.items = {}

--- The queue of a `queue_update` event or an `agent/removeQueued` result.
---@param queues {steering: table[]?, followUp: table[]?}
---@return agent_lsp.QueuedItem[]
local function items_of(queues)
  local out = {}
  for _, kind in ipairs({ "steering", "followUp" }) do
    for _, q in ipairs(queues[kind] or {}) do
      if type(q) == "table" then
        out[#out + 1] = { kind = kind == "steering" and "steer" or "followUp", messageId = q.messageId, text = tostring(q.text or "") }
      end
    end
  end
  return out
end

--- One line for a queued item.
---@param item agent_lsp.QueuedItem
---@return string
function M.label(item)
  return (item.kind == "steer" and "steer: " or "follow-up: ") .. item.text:gsub("\n", " ")
end

--- Shows the current session's queue as virtual lines below the last line of the chat.
function M.show()
  local chat = require("agent_lsp.chat")
  local buf = chat.buf
  if not buf or not vim.api.nvim_buf_is_valid(buf) then
    return
  end
  vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  local items = state.current and M.items[state.current] or {}
  if #items == 0 then
    return
  end
  local lines = {}
  for _, item in ipairs(items) do
    lines[#lines + 1] = { { "⏳ queued " .. M.label(item), "Comment" } }
  end
  lines[#lines + 1] = { { "   (:AgentQueue removes one)", "NonText" } }
  local last = vim.api.nvim_buf_line_count(buf) - 1
  vim.api.nvim_buf_set_extmark(buf, ns, last, 0, { virt_lines = lines })
end

--- The virtual lines shown (for tests and captures).
---@return string[]
function M.shown()
  local chat = require("agent_lsp.chat")
  if not chat.buf or not vim.api.nvim_buf_is_valid(chat.buf) then
    return {}
  end
  local out = {}
  for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(chat.buf, ns, 0, -1, { details = true })) do
    for _, chunks in ipairs(mark[4].virt_lines or {}) do
      out[#out + 1] = chunks[1][1]
    end
  end
  return out
end

--- Event listener: keeps the queue and its lines current (they follow the end of the chat).
---@param params table
function M.on_event(params)
  local ev = params.event or {}
  if ev.type == "queue_update" then
    M.items[params.sessionId] = items_of(ev)
  elseif ev.type == "agent_settled" then
    M.items[params.sessionId] = nil
  end
  if params.sessionId == state.current then
    M.show()
  end
end

--- Lists the current session's queued messages; the one picked is removed from the queue.
---@param on_done fun(result: table?)?
function M.pick(on_done)
  local session_id = state.current
  local items = session_id and M.items[session_id] or {}
  if #items == 0 then
    vim.notify("agent-lsp: nothing is queued", vim.log.levels.INFO)
    return
  end
  vim.ui.select(items, { prompt = "agent-lsp: remove a queued message", kind = "agent_lsp.queue", format_item = M.label }, function(item)
    if not item then
      return
    end
    local params = { sessionId = session_id, messageId = item.messageId }
    require("agent_lsp").request(protocol.methods.remove_queued, params, function(result)
      if type(result) == "table" then
        M.items[session_id] = items_of(result)
        M.show()
      end
      if on_done then
        on_done(result)
      end
    end)
  end)
end

return M
