--- agent_lsp.events: turns `$/agentEvent` notifications into state and chat buffer output.
---
--- Events are pi's AgentEvent shapes plus the session events (`queue_update`, `agent_settled`,
--- `plan_update`, …); `message_update` carries only the delta (`assistantMessageEvent`).

local chat = require("agent_lsp.chat")
local plan = require("agent_lsp.plan")
local state = require("agent_lsp.state")

local M = {}

---@type table<string, fun(ev: table, params: table?)>
local render = {}

--- Whether the last answer of the run being rendered ended it (it called no tools): a user
--- message after it is a follow-up the run took, shown after a separator as a new prompt is
--- (stored history cannot tell the two apart, and must look the same).
local answered = false

render.message_start = function(ev)
  local msg = ev.message or {}
  if msg.role == "user" then
    if answered then
      chat.paragraph("---")
      answered = false
    end
    chat.heading("You")
    chat.append(chat.content_text(msg.content))
  elseif msg.role == "assistant" then
    -- Written with the answer's first text; see `message_end`.
    chat.heading("Agent", { lazy = true })
  end
end

--- Whether an answer called `tool`.
---@param msg table
---@param tool string
---@return boolean
local function calls(msg, tool)
  for _, b in ipairs(type(msg.content) == "table" and msg.content or {}) do
    if type(b) == "table" and b.type == "toolCall" and b.name == tool then
      return true
    end
  end
  return false
end

render.message_update = function(ev)
  local ame = ev.assistantMessageEvent or {}
  if ame.type == "text_delta" then
    chat.stream("text", ame.delta or "")
  elseif ame.type == "thinking_delta" then
    chat.stream("thinking", ame.delta or "")
  elseif ame.type == "text_end" or ame.type == "thinking_end" then
    chat.end_block()
  elseif ame.type == "retry" then
    chat.paragraph(
      string.format(
        "_retrying (%s/%s): %s_",
        ame.attempt or "?",
        ame.maxAttempts or "?",
        ame.errorMessage or ""
      )
    )
  end
end

--- Whether the run being rendered already shows its `_aborted_` marker (an aborted answer),
--- so that its `agent_settled {aborted}` does not mark it a second time.
local aborted_marked = false

render.agent_start = function()
  aborted_marked = false
  answered = false
  plan.new_run()
end

render.message_end = function(ev)
  local msg = ev.message or {}
  if msg.role ~= "assistant" then
    return
  end
  answered = msg.stopReason ~= "toolUse"
  -- (An aborted stream may end without its text_end.)
  chat.end_block()
  -- An answer that showed nothing yet still gets its heading, unless it updates the plan: that
  -- may only rewrite the block in place, and a heading with nothing under it says nothing.
  if not calls(msg, plan.TOOL) then
    chat.flush_heading()
  end
  if msg.stopReason == "error" then
    chat.paragraph("**Error:** " .. (msg.errorMessage or "the model request failed"))
  elseif msg.stopReason == "aborted" then
    chat.paragraph("_aborted_")
    aborted_marked = true
  end
end

render.message_discard = function(ev)
  chat.paragraph("_(response withdrawn: " .. (ev.reason or "") .. ")_")
end

-- `todo_write` shows as the plan's block (`plan_update`), not as a tool line; a refused call
-- changed no plan and shows as a failed tool.
render.tool_execution_start = function(ev)
  if ev.toolName ~= plan.TOOL then
    chat.tool_start(ev.toolCallId, ev.toolName, ev.args)
  end
end

render.tool_execution_update = function(ev)
  if ev.toolName ~= plan.TOOL then
    chat.tool_update(ev.toolCallId, ev.partialResult)
  end
end

render.tool_execution_end = function(ev)
  if ev.toolName == plan.TOOL and ev.isError ~= true then
    return
  end
  chat.tool_end(ev.toolCallId, ev.toolName, ev.result, ev.isError == true, ev.durationMs)
end

render.subagent_event = function(ev)
  require("agent_lsp.subagents").on_event(ev)
end

render.hook = function(ev)
  chat.note(require("agent_lsp.subagents").hook_line(ev))
end

render.plan_update = function(ev)
  plan.show(ev.todos)
end

render.job_update = function(ev, params)
  if type(ev.job) ~= "table" or not params then
    return
  end
  local line = require("agent_lsp.jobs").chat_line(params.sessionId, ev.job)
  if line then
    chat.note(line)
  end
end

render.provider_retry = function(ev)
  chat.paragraph(
    string.format(
      "_retrying in %d ms (%s/%s): %s_",
      ev.delayMs or 0,
      ev.attempt or "?",
      ev.maxAttempts or "?",
      ev.errorMessage or ""
    )
  )
end

render.compaction_start = function(ev)
  require("agent_lsp.compact").on_start(ev)
end

render.compaction_end = function(ev)
  require("agent_lsp.compact").on_end(ev)
end

render.agent_settled = function(ev)
  chat.end_block()
  chat.drop_heading()
  -- A run aborted between answers (during a tool call) has no aborted answer to show it.
  if ev.aborted and not aborted_marked then
    chat.paragraph("_aborted_")
  end
  aborted_marked = false
  answered = false
  chat.paragraph("---")
end

--- The renderers by event type: the live stream and a resumed history (`agent_lsp.transcript`
--- replays stored messages as these events) look the same.
M.render = render

--- Listeners called after each event (used by the approval UI and by users).
---@type fun(params: table)[]
M.listeners = {}

--- Handles one `$/agentEvent` notification.
---@param params table {sessionId, runId, seq, event}
---@param client_id integer? the daemon it came from
function M.on_event(params, client_id)
  if type(params) ~= "table" or type(params.event) ~= "table" then
    return
  end
  local before = state.sessions[params.sessionId]
  local status, tokens, todos = before and before.status, before and before.tokens, before and before.plan
  local s = state.apply(params, client_id)
  if s.plan ~= todos or params.event.type == "job_update" then
    -- The plan's progress and the running jobs are in the chat window's winbar too, which need
    -- not be the current window.
    pcall(vim.cmd, "redrawstatus!")
  elseif s.status ~= status or s.tokens ~= tokens then
    -- Statuslines only redraw on their own at the next screen update; ask for one.
    pcall(vim.cmd.redrawstatus)
  end
  if state.current == nil then
    state.current = params.sessionId
  end
  if params.sessionId == state.current then
    local fn = render[params.event.type]
    if fn then
      fn(params.event, params)
    end
  end
  for _, listener in ipairs(M.listeners) do
    pcall(listener, params)
  end
  vim.api.nvim_exec_autocmds("User", {
    pattern = "AgentLspEvent",
    data = params,
    modeline = false,
  })
end

return M
