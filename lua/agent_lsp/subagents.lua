--- agent_lsp.subagents: a `task` call's child agent shown under the call's line (protocol.md
--- §3.24), and hook events as one line (§3.22).
---
--- Each `subagent_event` carries one loop event of the child; its tool calls and answers become
--- step lines (`  › explore: tool `read` notes.txt`, with a running / done / failed badge) right
--- under the `task` line, as they arrive. The steps are a fold of the chat window (level 1 in
--- `agent_lsp.compact.foldexpr`, closed by default): `za` opens it.

local chat = require("agent_lsp.chat")

local M = {}

--- What every step line starts with (the fold is made of these lines).
M.PREFIX = "  › "

local ns = vim.api.nvim_create_namespace("agent_lsp.subagents")

---@type table<string, integer> a child's tool call id -> its badge extmark
local badges = {}

local function buf_lines(row, count)
  return vim.api.nvim_buf_get_lines(chat.buf, row, row + count, false)
end

local function is_step(line)
  return line ~= nil and line:sub(1, #M.PREFIX) == M.PREFIX
end

--- The first 0-based line at or after `row` that is not a step line (where the next step or the
--- call's result goes).
---@param row integer
---@return integer
function M.after_steps(row)
  if not (chat.buf and vim.api.nvim_buf_is_valid(chat.buf)) then
    return row
  end
  local count = vim.api.nvim_buf_line_count(chat.buf)
  while row < count and is_step(buf_lines(row, 1)[1]) do
    row = row + 1
  end
  return row
end

--- Fold level of a 1-based line for the chat's `foldexpr`: a step line is level 1 (the first
--- one of a run of steps starts a fold), nil for any other line.
---@param lnum integer
---@return string?
function M.fold_level(lnum)
  local buf = chat.buf
  if not (buf and vim.api.nvim_buf_is_valid(buf)) then
    return nil
  end
  local here = vim.api.nvim_buf_get_lines(buf, lnum - 1, lnum, false)[1]
  if not is_step(here) then
    return nil
  end
  local above = lnum > 1 and vim.api.nvim_buf_get_lines(buf, lnum - 2, lnum - 1, false)[1] or nil
  return is_step(above) and "1" or ">1"
end

local function set_badge(row, text, hl, id)
  return vim.api.nvim_buf_set_extmark(chat.buf, ns, row, 0, {
    id = id,
    virt_text = { { " " .. text, hl } },
    virt_text_pos = "eol",
  })
end

--- Adds a step line under the `task` call's line; returns its row, or nil when the call is not
--- in the chat.
---@param parent string the task call's toolCallId
---@param text string
---@return integer?
local function add_step(parent, text)
  local row = chat.tool_row(parent)
  if not row then
    return nil
  end
  local at = M.after_steps(row + 1)
  chat.insert_lines(at, { M.PREFIX .. text })
  return at
end

--- One line of an argument summary (the path, the command, the pattern…).
local function summary(args)
  if type(args) ~= "table" then
    return ""
  end
  local v = args.path or args.command or args.pattern or args.url or args.query
  return type(v) == "string" and (" " .. v:gsub("\n.*", " …")) or ""
end

--- Handles one `subagent_event {parentToolCallId, agent, event}`.
---@param ev table
function M.on_event(ev)
  local child = type(ev.event) == "table" and ev.event or {}
  local parent, agent = ev.parentToolCallId, tostring(ev.agent or "agent")
  if type(parent) ~= "string" then
    return
  end
  if child.type == "tool_execution_start" then
    local row = add_step(parent, string.format("%s: tool `%s`%s", agent, tostring(child.toolName), summary(child.args)))
    if row and type(child.toolCallId) == "string" then
      badges[child.toolCallId] = set_badge(row, "⋯ running", "DiagnosticWarn")
    end
  elseif child.type == "tool_execution_end" then
    local mark = badges[child.toolCallId]
    if mark and chat.buf and vim.api.nvim_buf_is_valid(chat.buf) then
      local pos = vim.api.nvim_buf_get_extmark_by_id(chat.buf, ns, mark, {})
      if pos[1] then
        local failed = child.isError == true
        local text = failed and "✗ failed" or "✓ done"
        if child.durationMs then
          text = text .. string.format(" (%d ms)", child.durationMs)
        end
        set_badge(pos[1], text, failed and "DiagnosticError" or "DiagnosticOk", mark)
      end
    end
  elseif child.type == "message_end" and type(child.message) == "table" and child.message.role == "assistant" then
    local text = vim.trim(chat.content_text(child.message.content))
    if text ~= "" then
      local first = vim.split(text, "\n", { plain = true })[1]
      if #first > 100 then
        first = first:sub(1, 97) .. "…"
      end
      add_step(parent, agent .. ": " .. first)
    end
  end
end

--- Forgets the steps' badges (the chat was cleared).
function M.clear()
  badges = {}
  if chat.buf and vim.api.nvim_buf_is_valid(chat.buf) then
    vim.api.nvim_buf_clear_namespace(chat.buf, ns, 0, -1)
  end
end

--- The badge text of a child's tool call (for tests).
---@param id string
---@return string?
function M.badge(id)
  local mark = badges[id]
  if not mark or not (chat.buf and vim.api.nvim_buf_is_valid(chat.buf)) then
    return nil
  end
  local m = vim.api.nvim_buf_get_extmark_by_id(chat.buf, ns, mark, { details = true })
  local vt = m[3] and m[3].virt_text
  return vt and vt[1] and vt[1][1] or nil
end

--- The chat line of a `hook` event (§3.22): `_hook PreToolUse `./check.sh`: deny — no rm -rf (12 ms)_`.
---@param ev table
---@return string
function M.hook_line(ev)
  local parts = { string.format("_hook %s `%s`: %s", tostring(ev.event), tostring(ev.hook), tostring(ev.outcome)) }
  local said = type(ev.message) == "string" and ev.message ~= "" and ev.message
    or type(ev.additionalContext) == "string" and ev.additionalContext ~= "" and ("added context: " .. ev.additionalContext)
    or nil
  if said then
    parts[#parts + 1] = " — " .. said:gsub("\n", "; ")
  end
  if type(ev.durationMs) == "number" then
    parts[#parts + 1] = string.format(" (%d ms)", ev.durationMs)
  end
  return table.concat(parts) .. "_"
end

return M
