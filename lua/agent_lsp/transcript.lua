--- agent_lsp.transcript: a stored session's messages (`agent/getMessages`) rendered as the
--- chat showed them live.
---
--- There is one renderer: the messages are replayed as the `$/agentEvent`s the run sent
--- (`message_start`, the text and thinking deltas, `message_end`, `tool_execution_start` and
--- `_end`, `agent_settled`, and a `todo_write` result's `plan_update`) through
--- `agent_lsp.events`' renderers. What history does not keep
--- is left out: tool durations, retries, withdrawn responses. Runs are not recorded as such: a
--- run is taken to end at an answer that called no tools (a follow-up the run took then looks
--- like the next prompt, as it does live: a separator before it).

local M = {}

--- The events one stored message stood for, in the order the live run sent them.
---@param msg table an AgentMessage
---@param tool_names table<string, string> tool call id -> tool name, filled from answers
---@return table[] events
local function events_of(msg, tool_names)
  if msg.role == "user" then
    return { { type = "message_start", message = msg }, { type = "message_end", message = msg } }
  end
  if msg.role == "toolResult" then
    local name = msg.toolName or tool_names[msg.toolCallId]
    local out = {}
    -- The plan a `todo_write` wrote, as the tool stored it (its `details`), came as a
    -- `plan_update` before the call's end.
    local details = type(msg.details) == "table" and msg.details or {}
    if name == require("agent_lsp.plan").TOOL and msg.isError ~= true and type(details.todos) == "table" then
      out[#out + 1] = { type = "plan_update", todos = details.todos }
    end
    out[#out + 1] = {
      type = "tool_execution_end",
      toolCallId = msg.toolCallId,
      toolName = name,
      result = { content = msg.content, details = msg.details },
      isError = msg.isError == true,
    }
    return out
  end
  if msg.role ~= "assistant" then
    return {}
  end
  local out = { { type = "message_start", message = msg } }
  local calls = {}
  for _, b in ipairs(type(msg.content) == "table" and msg.content or {}) do
    if b.type == "text" and b.text ~= "" then
      out[#out + 1] = { type = "message_update", assistantMessageEvent = { type = "text_delta", delta = b.text } }
      out[#out + 1] = { type = "message_update", assistantMessageEvent = { type = "text_end" } }
    elseif b.type == "thinking" and (b.thinking or "") ~= "" then
      out[#out + 1] = { type = "message_update", assistantMessageEvent = { type = "thinking_delta", delta = b.thinking } }
      out[#out + 1] = { type = "message_update", assistantMessageEvent = { type = "thinking_end" } }
    elseif b.type == "toolCall" then
      calls[#calls + 1] = b
    end
  end
  out[#out + 1] = { type = "message_end", message = msg }
  for _, call in ipairs(calls) do
    tool_names[call.id] = call.name
    out[#out + 1] = { type = "tool_execution_start", toolCallId = call.id, toolName = call.name, args = call.arguments }
  end
  return out
end

--- Whether an answer ends its run: it called no tools (or was aborted or failed).
---@param msg table
---@return boolean
local function ends_run(msg)
  return msg.role == "assistant" and msg.stopReason ~= "toolUse"
end

--- The events a whole history replays as.
---@param messages table[]
---@return table[]
function M.events(messages)
  local out, tool_names = {}, {}
  local open = false -- a run has started and not settled
  -- A run that did not end with an answer (a tool call's result is its last message) was
  -- aborted while the tool ran.
  local function settle(last)
    local aborted = last ~= nil and (last.role ~= "assistant" or last.stopReason == "aborted")
    out[#out + 1] = { type = "agent_settled", aborted = aborted }
    open = false
  end
  local last
  for _, msg in ipairs(messages or {}) do
    if msg.role == "user" and not open then
      out[#out + 1] = { type = "agent_start" }
      open = true
    end
    vim.list_extend(out, events_of(msg, tool_names))
    if msg.role ~= "system" then
      last = msg
    end
    if open and ends_run(msg) then
      settle(msg)
    end
  end
  if open then
    settle(last)
  end
  return out
end

--- Clears the chat and renders `messages` into it.
---@param messages table[]
function M.render(messages)
  local chat = require("agent_lsp.chat")
  local render = require("agent_lsp.events").render
  chat.clear()
  for _, ev in ipairs(M.events(messages)) do
    local fn = render[ev.type]
    if fn then
      fn(ev)
    end
  end
end

return M
