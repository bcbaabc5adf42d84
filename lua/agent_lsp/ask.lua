--- agent_lsp.ask: answers the model's questions (`agent/askUser`, the `ask_user` tool or an MCP
--- server's elicitation) through `vim.ui.select` and `vim.ui.input`.
---
--- The question shows in the chat while it waits; an MCP server's keeps the answer under it,
--- while the model's own `ask_user` leaves its tool line (the question) and result (the answer). With options, a picker offers them
--- (plus "Type an answer…" when free text is allowed, which opens `vim.ui.input`, and "Decline
--- to answer"); with `multiSelect` the picker comes back after each pick, which toggles the
--- option, until "Done". Without options `vim.ui.input` asks for the text (an empty answer
--- declines). Closing the picker, or the input of a question without options (a nil choice),
--- cancels; closing the input of "Type an answer…" goes back to the options. Like an approval, the handler yields in the coroutine Neovim runs server
--- requests in; when the run is aborted the daemon cancels the request and the question closes
--- (a picker already on screen cannot be taken back: its late answer is ignored).

local protocol = require("agent_lsp.protocol")
local pending = require("agent_lsp.pending")
local state = require("agent_lsp.state")

local M = {}

---@class agent_lsp.PendingQuestion
---@field params table
---@field block agent_lsp.ChatBlock? the question in the chat
---@field co thread
---@field done boolean

---@type agent_lsp.PendingQuestion[]
M.pending = {}

--- The picker's extra entries.
M.TYPE = "Type an answer…"
M.DECLINE = "Decline to answer"
M.DONE = "Done"

--- The options of a question, as `{label, description?}` items.
---@param params table
---@return table[]
local function options_of(params)
  return vim.tbl_filter(function(o)
    return type(o) == "table" and type(o.label) == "string"
  end, type(params.options) == "table" and params.options or {})
end

--- Who asks: the model, or an MCP server.
---@param params table
---@return string
function M.asker(params)
  local src = type(params.source) == "table" and params.source or nil
  if src and type(src.mcpServer) == "string" then
    return "the MCP server " .. src.mcpServer
  end
  return "the agent"
end

--- The question's lines in the chat: who asks, the question, its options.
---@param params table
---@return string[]
function M.chat_lines(params)
  -- One chat line each (an elicitation's first question leads with the server's message).
  local function one_line(text)
    return (tostring(text):gsub("%s*\n%s*", " "))
  end
  local lines = { string.format("**Question** from %s: %s", M.asker(params), one_line(params.question or "")) }
  for _, o in ipairs(options_of(params)) do
    local described = type(o.description) == "string" and o.description ~= ""
    lines[#lines + 1] = "- " .. one_line(o.label) .. (described and (" — " .. one_line(o.description)) or "")
  end
  return lines
end

--- The chat's line for the answer.
---@param result table {action, selected?, text?}
---@return string
function M.answer_text(result)
  if result.action == protocol.ask_actions.decline then
    return "_you declined to answer_"
  elseif result.action ~= protocol.ask_actions.accept then
    return "_question cancelled_"
  end
  local parts = {}
  for _, s in ipairs(result.selected or {}) do
    parts[#parts + 1] = s
  end
  if type(result.text) == "string" and result.text ~= "" then
    parts[#parts + 1] = '"' .. result.text .. '"'
  end
  return "_you answered: " .. (#parts > 0 and table.concat(parts, ", ") or "(nothing)") .. "_"
end

--- Shows the pending question in the chat (when its session is the one shown).
---@param q agent_lsp.PendingQuestion
local function show(q)
  if q.params.sessionId == state.current then
    q.block = require("agent_lsp.chat").put_block(M.chat_lines(q.params))
  end
end

--- The question was answered (or closed): the model's own `ask_user` call has a tool line that
--- names the question and a result that says the answer, so its block goes; an MCP server's
--- question stays, with the answer under it.
---@param q agent_lsp.PendingQuestion
---@param result table
local function settle(q, result)
  if not (q.block and q.params.sessionId == state.current) then
    return
  end
  local chat = require("agent_lsp.chat")
  if type(q.params.source) ~= "table" then
    chat.remove_block(q.block)
    return
  end
  local lines = M.chat_lines(q.params)
  lines[#lines + 1] = ""
  lines[#lines + 1] = M.answer_text(result)
  chat.replace_block(q.block, lines)
end

local function finish(q, result, err)
  if q.done then
    return
  end
  q.done = true
  pending.remove(M.pending, q)
  local s = state.sessions[q.params.sessionId]
  if s and s.status == "question" and #M.pending == 0 then
    s.status = "running"
    pcall(vim.cmd.redrawstatus)
  end
  settle(q, result or { action = protocol.ask_actions.cancel })
  pending.resume(q.co, result, err)
end

--- Cancels pending questions (all, or those of one session): they close and reply cancelled.
---@param session_id string?
function M.cancel(session_id)
  pending.cancel(M.pending, session_id, finish, "question cancelled")
end

--- Asks for free text; `cb(text)` (nil: cancelled).
local function ask_text(q, cb)
  vim.ui.input({ prompt = tostring(q.params.question or "") .. " " }, function(text)
    cb(text)
  end)
end

--- The picker for a question with options; `cb(result)` with the reply.
---@param q agent_lsp.PendingQuestion
---@param cb fun(result: table)
local function pick(q, cb)
  local params = q.params
  local options = options_of(params)
  local multi = params.multiSelect == true
  local chosen = {} ---@type table<string, boolean>
  local typed ---@type string?
  local function items()
    local out = {}
    for _, o in ipairs(options) do
      out[#out + 1] = { option = o }
    end
    if params.allowText == true then
      out[#out + 1] = { type = true }
    end
    if multi then
      out[#out + 1] = { done = true }
    end
    out[#out + 1] = { decline = true }
    return out
  end
  local function label(item)
    if item.option then
      local o = item.option
      local text = o.label .. (type(o.description) == "string" and o.description ~= "" and (" — " .. o.description) or "")
      return multi and ((chosen[o.label] and "[x] " or "[ ] ") .. text) or text
    elseif item.type then
      return multi and typed and ('[x] "' .. typed .. '" (' .. M.TYPE .. ")") or M.TYPE
    elseif item.done then
      local n = vim.tbl_count(chosen) + (typed and 1 or 0)
      return string.format("%s (%d chosen)", M.DONE, n)
    end
    return M.DECLINE
  end
  local function selected()
    local out = {}
    for _, o in ipairs(options) do
      if chosen[o.label] then
        out[#out + 1] = o.label
      end
    end
    return out
  end
  local function again()
    if q.done then
      return
    end
    vim.ui.select(items(), {
      prompt = string.format("%s asks: %s%s", M.asker(params), tostring(params.question or ""), multi and " (pick several, then Done)" or ""),
      kind = "agent_lsp.ask",
      format_item = label,
    }, function(item)
      if q.done then
        vim.notify("agent-lsp: that question is no longer pending", vim.log.levels.INFO)
        return
      end
      if not item then
        return cb({ action = protocol.ask_actions.cancel })
      elseif item.decline then
        return cb({ action = protocol.ask_actions.decline })
      elseif item.done then
        return cb({ action = protocol.ask_actions.accept, selected = selected(), text = typed })
      elseif item.type then
        return ask_text(q, function(text)
          -- Nothing typed: back to the options.
          if text == nil or text == "" then
            return again()
          end
          if not multi then
            return cb({ action = protocol.ask_actions.accept, selected = {}, text = text })
          end
          typed = text
          again()
        end)
      elseif not multi then
        return cb({ action = protocol.ask_actions.accept, selected = { item.option.label } })
      end
      chosen[item.option.label] = not chosen[item.option.label] or nil
      again()
    end)
  end
  again()
end

--- The `agent/askUser` request handler.
---@param params table {sessionId, runId, toolCallId?, question, options?, multiSelect, allowText, source?}
function M.handler(_, params, _)
  local co = coroutine.running()
  if not co then
    return nil, vim.lsp.rpc_response_error(-32603, "the question handler must run in a coroutine")
  end
  local q = { params = params, co = co, done = false } ---@type agent_lsp.PendingQuestion
  M.pending[#M.pending + 1] = q
  state.session(params.sessionId).status = "question"
  pcall(vim.cmd.redrawstatus)
  show(q)
  vim.schedule(function()
    pcall(vim.cmd.redraw)
    local ok, err = pcall(function()
      if #options_of(params) == 0 then
        -- No options: the answer is text. An empty one is no answer (declined).
        ask_text(q, function(text)
          if text == nil then
            finish(q, { action = protocol.ask_actions.cancel })
          elseif text == "" then
            finish(q, { action = protocol.ask_actions.decline })
          else
            finish(q, { action = protocol.ask_actions.accept, text = text })
          end
        end)
      else
        pick(q, function(result)
          finish(q, result)
        end)
      end
    end)
    if not ok then
      -- A broken picker must not leave the agent waiting.
      vim.notify("agent-lsp: the question picker failed: " .. tostring(err), vim.log.levels.ERROR)
      finish(q, { action = protocol.ask_actions.cancel })
    end
  end)
  return coroutine.yield()
end

--- Event listener: a settled run has no questions left to answer.
---@param params table
function M.on_event(params)
  local ev = params.event or {}
  if ev.type == "agent_settled" or ev.type == "agent_end" then
    M.cancel(params.sessionId)
  end
end

return M
