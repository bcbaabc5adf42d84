--- agent_lsp.plan: the model's plan (`todo_write`, protocol.md §3.18) as a checklist in the chat.
---
--- Each `plan_update` carries the whole plan. Within a run the checklist block is rewritten in
--- place, so the chat holds one block per run however often the model ticks an item off; the
--- first update of a later run starts a new block at the end, and the earlier one stays as the
--- plan stood when its run ended (the chat is a log of the runs). `todo_write`'s own tool line
--- is left out: the block is its rendering (a refused call still shows as a failed tool).
--- A resumed chat replays the stored calls (`agent_lsp.transcript`), then takes
--- `agent/getState.plan` as the last word.

local M = {}

--- The tool that writes the plan.
M.TOOL = require("agent_lsp.protocol").plan_tool

local marks = { completed = "[x]", in_progress = "[>]", pending = "[ ]" }

---@class agent_lsp.PlanBlock
---@field handle agent_lsp.ChatBlock where the block is in the chat
---@field run integer the run (see `new_run`) that wrote it
---@field todos table[] what it shows

---@type agent_lsp.PlanBlock?
local shown = nil
--- Counts the runs rendered into the chat (live and replayed alike).
local run = 0

--- How many items are completed, and how many there are.
---@param todos table[]
---@return integer done, integer total
function M.count(todos)
  local done = 0
  for _, t in ipairs(todos) do
    if type(t) == "table" and t.status == "completed" then
      done = done + 1
    end
  end
  return done, #todos
end

--- The plan in a few characters for the statusline and winbar ("plan 2/5"), nil without one.
---@param todos table[]?
---@return string?
function M.summary(todos)
  if type(todos) ~= "table" or #todos == 0 then
    return nil
  end
  return string.format("plan %d/%d", M.count(todos))
end

--- The checklist block's lines: a "**Plan 2/5**" heading, then `- [x]`, `- [>]` or `- [ ]` and
--- the item, one a line (an item's own line breaks become spaces).
---@param todos table[]
---@return string[]
function M.lines(todos)
  if #todos == 0 then
    return { "**Plan** cleared" }
  end
  local lines = { string.format("**Plan %d/%d**", M.count(todos)) }
  for _, t in ipairs(todos) do
    local content = tostring(type(t) == "table" and t.content or t):gsub("%s*\n%s*", " ")
    lines[#lines + 1] = string.format("- %s %s", marks[type(t) == "table" and t.status] or "[ ]", content)
  end
  return lines
end

--- A run starts in the chat: the plan's next update starts a new block.
function M.new_run()
  run = run + 1
end

--- Shows `todos`: rewrites this run's block in place, or starts a new one at the end.
---@param todos table[]
function M.show(todos)
  if type(todos) ~= "table" then
    return
  end
  local chat = require("agent_lsp.chat")
  local lines = M.lines(todos)
  if shown and shown.run == run and chat.replace_block(shown.handle, lines) then
    shown.todos = todos
    return
  end
  shown = { handle = chat.put_block(lines), run = run, todos = todos }
end

--- After a resumed history is replayed: the session's current plan (`agent/getState.plan`) is
--- shown when it is not what the last block shows (a compaction or a fork left the call that
--- wrote it out of the history).
---@param todos table[]?
function M.restore(todos)
  if type(todos) ~= "table" then
    return
  end
  local current = shown and shown.todos or {}
  if vim.deep_equal(current, todos) then
    return
  end
  M.new_run()
  M.show(todos)
end

--- What the chat's latest block shows (nil when none).
---@return table[]?
function M.shown()
  return shown and shown.todos
end

--- Forgets the block (the chat was cleared).
function M.clear()
  shown = nil
end

return M
