--- agent_lsp.chat: the chat buffer, a markdown scratch buffer that streams the session.
---
--- Text deltas are appended at the end with `nvim_buf_set_text` (O(delta), no re-render). Tool
--- calls get one line each plus an extmark badge (running / done / failed) that is updated in
--- place, so the buffer text stays plain markdown that can be yanked or saved.

local M = {}

local ns = vim.api.nvim_create_namespace("agent_lsp.chat")
--- The marks of blocks rewritten in place (`put_block`).
local blocks_ns = vim.api.nvim_create_namespace("agent_lsp.chat.blocks")

---@type integer?
M.buf = nil
---@type table<string, {mark:integer, line:integer}> tool call id -> badge
local tools = {}
---@type boolean whether the assistant block currently being streamed is a thinking block
local in_thinking = false
---@type boolean a thinking block (`thinking_end`) or a note just ended: the next text starts a
--- paragraph
local paragraph_next = false
---@type boolean a text or thinking block is being streamed (from its first delta to its end)
local streaming = false
---@type string[] notes that came while a block streamed, written when it ends (`note`)
local notes = {}

local function valid_buf()
  return M.buf ~= nil and vim.api.nvim_buf_is_valid(M.buf)
end

--- Returns the chat buffer, creating it on first use.
---@return integer
function M.ensure_buf()
  if valid_buf() then
    return M.buf --[[@as integer]]
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, "agent-lsp://chat")
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "hide"
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = "markdown"
  vim.bo[buf].modifiable = false
  vim.keymap.set("n", "q", "<cmd>close<cr>", { buffer = buf, desc = "agent-lsp: close the chat" })
  M.buf = buf
  tools = {}
  return buf
end

--- The window showing the chat buffer in the current tab, if any.
---@return integer?
function M.win()
  if not valid_buf() then
    return nil
  end
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_win_get_buf(win) == M.buf then
      return win
    end
  end
  return nil
end

--- Opens the chat buffer (without moving the cursor out of the current window).
---@param opts agent_lsp.ChatOptions
---@return integer win
function M.open(opts)
  local buf = M.ensure_buf()
  local existing = M.win()
  if existing then
    return existing
  end
  local function dim(total)
    return opts.size < 1 and math.max(1, math.floor(total * opts.size)) or math.floor(opts.size)
  end
  local win
  if opts.layout == "float" then
    local width = math.floor(vim.o.columns * 0.8)
    local height = math.floor(vim.o.lines * 0.7)
    win = vim.api.nvim_open_win(buf, false, {
      relative = "editor",
      width = width,
      height = height,
      row = math.floor((vim.o.lines - height) / 2),
      col = math.floor((vim.o.columns - width) / 2),
      border = "rounded",
      title = " agent-lsp ",
    })
  elseif opts.layout == "vsplit" then
    win = vim.api.nvim_open_win(buf, false, { split = "right", width = dim(vim.o.columns) })
  else
    win = vim.api.nvim_open_win(buf, false, { split = "below", height = dim(vim.o.lines) })
  end
  vim.wo[win].wrap = true
  vim.wo[win].linebreak = true
  vim.wo[win].conceallevel = 2
  -- Vim's markdown syntax marks an underscore inside a word (`bash_output`) as an error: in
  -- tool names and results it is none.
  vim.wo[win].winhighlight = "markdownError:Normal"
  vim.wo[win].winbar = require("agent_lsp.controls").winbar_expr
  require("agent_lsp.compact").setup_window(win)
  return win
end

--- Closes the chat window(s) of the current tab; the buffer is kept.
function M.close()
  local win = M.win()
  if win then
    vim.api.nvim_win_close(win, true)
  end
end

--- Runs `fn` with the chat buffer modifiable.
local function edit(fn)
  local buf = M.ensure_buf()
  vim.bo[buf].modifiable = true
  local ok, err = pcall(fn, buf)
  vim.bo[buf].modifiable = false
  if not ok then
    error(err)
  end
end

--- Keeps every window on the chat buffer scrolled to the end, except where the user sits.
local function follow()
  local buf = M.buf
  local last = vim.api.nvim_buf_line_count(buf)
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(win) == buf and win ~= vim.api.nvim_get_current_win() then
      vim.api.nvim_win_set_cursor(win, { last, 0 })
    end
  end
end

---@type string? a heading not written yet (`heading(title, {lazy = true})`): it comes with the
--- first text after it, and is dropped when nothing comes
local pending_heading = nil

--- Inserts text at the very end of the buffer.
---@param text string
local function raw_append(text)
  if text == "" then
    return
  end
  edit(function(buf)
    local last = vim.api.nvim_buf_line_count(buf) - 1
    local line = vim.api.nvim_buf_get_lines(buf, last, last + 1, false)[1] or ""
    vim.api.nvim_buf_set_text(buf, last, #line, last, #line, vim.split(text, "\n", { plain = true }))
  end)
  follow()
end

--- Starts a new paragraph: the next text goes after a blank line.
local function block()
  local buf = M.ensure_buf()
  local count = vim.api.nvim_buf_line_count(buf)
  local lines = vim.api.nvim_buf_get_lines(buf, count - 1, count, false)
  if count == 1 and lines[1] == "" then
    return
  end
  if lines[1] ~= "" then
    raw_append("\n\n")
  else
    local prev = count > 1 and vim.api.nvim_buf_get_lines(buf, count - 2, count - 1, false)[1] or ""
    if prev ~= "" then
      raw_append("\n")
    end
  end
end

--- Writes the pending heading, if any (text is about to follow it).
function M.flush_heading()
  if pending_heading then
    local title = pending_heading
    pending_heading = nil
    block()
    raw_append("## " .. title .. "\n\n")
  end
end

--- Forgets the pending heading: its message showed nothing.
function M.drop_heading()
  pending_heading = nil
end

--- Appends raw text (which may contain newlines) at the very end of the buffer.
---@param text string
function M.append(text)
  if text == "" then
    return
  end
  M.flush_heading()
  raw_append(text)
end

--- Clears the buffer (a new or switched session).
function M.clear()
  edit(function(buf)
    vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
    vim.api.nvim_buf_clear_namespace(buf, blocks_ns, 0, -1)
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, {})
  end)
  tools = {}
  in_thinking = false
  paragraph_next = false
  streaming = false
  notes = {}
  pending_heading = nil
  require("agent_lsp.compact").clear()
  require("agent_lsp.plan").clear()
  require("agent_lsp.jobs").forget_chat()
  require("agent_lsp.subagents").clear()
end

--- The whole buffer text (for tests and captures).
---@return string
function M.text()
  if not valid_buf() then
    return ""
  end
  return table.concat(vim.api.nvim_buf_get_lines(M.buf, 0, -1, false), "\n")
end

--- Plain text of a message's content (string or content blocks).
---@param content any
---@return string
function M.content_text(content)
  if type(content) == "string" then
    return content
  end
  local parts = {}
  for _, b in ipairs(type(content) == "table" and content or {}) do
    if b.type == "text" then
      parts[#parts + 1] = b.text
    elseif b.type == "image" then
      parts[#parts + 1] = "[image]"
    end
  end
  return table.concat(parts, "\n")
end

--- Writes a heading for a new message. A lazy one waits for the first text after it (an
--- answer that only updates the plan in place shows nothing, so it gets no heading).
---@param title string
---@param opts {lazy: boolean?}?
function M.heading(title, opts)
  pending_heading = title
  if not (opts and opts.lazy) then
    M.flush_heading()
  end
end

--- Appends a paragraph of text.
---@param text string
function M.paragraph(text)
  M.flush_heading()
  block()
  M.append(text)
end

---@class agent_lsp.ChatBlock
---@field mark integer an extmark on the block's first line
---@field count integer how many lines it has

--- Appends `lines` as a paragraph of their own, to be rewritten in place later (`replace_block`).
---@param lines string[]
---@return agent_lsp.ChatBlock
function M.put_block(lines)
  M.flush_heading()
  block()
  local buf = M.ensure_buf()
  local first = vim.api.nvim_buf_line_count(buf) - 1
  M.append(table.concat(lines, "\n"))
  -- Set after the text is in: a mark where text is inserted would move to its end.
  return { mark = vim.api.nvim_buf_set_extmark(buf, blocks_ns, first, 0, {}), count = #lines }
end

--- Rewrites a block from `put_block` with `lines`; the text around it stays. False when the
--- block is gone (the chat was cleared).
---@param handle agent_lsp.ChatBlock
---@param lines string[]
---@return boolean
function M.replace_block(handle, lines)
  if not valid_buf() then
    return false
  end
  local row = vim.api.nvim_buf_get_extmark_by_id(M.buf, blocks_ns, handle.mark, {})[1]
  if not row then
    return false
  end
  edit(function(buf)
    vim.api.nvim_buf_set_lines(buf, row, row + handle.count, false, lines)
    -- The replaced lines took the mark along: put it back on the block's first line.
    vim.api.nvim_buf_set_extmark(buf, blocks_ns, row, 0, { id = handle.mark })
  end)
  handle.count = #lines
  follow()
  return true
end

--- Removes a block from `put_block` with the blank line that set it apart.
---@param handle agent_lsp.ChatBlock
function M.remove_block(handle)
  if not valid_buf() then
    return
  end
  local row = vim.api.nvim_buf_get_extmark_by_id(M.buf, blocks_ns, handle.mark, {})[1]
  if not row then
    return
  end
  edit(function(buf)
    local first = row
    if row > 0 and vim.api.nvim_buf_get_lines(buf, row - 1, row, false)[1] == "" then
      first = row - 1
    end
    vim.api.nvim_buf_set_lines(buf, first, row + handle.count, false, {})
    vim.api.nvim_buf_del_extmark(buf, blocks_ns, handle.mark)
  end)
  follow()
end

--- Streams assistant text or thinking.
---@param kind "text"|"thinking"
---@param delta string
function M.stream(kind, delta)
  M.flush_heading()
  streaming = true
  if kind == "thinking" then
    paragraph_next = false
    if not in_thinking then
      block()
      M.append("> ")
      in_thinking = true
    end
    M.append((delta:gsub("\n", "\n> ")))
  else
    if in_thinking or paragraph_next then
      in_thinking, paragraph_next = false, false
      block()
    end
    M.append(delta)
  end
end

--- Ends a streamed block (text_end / thinking_end, and a message's end); the notes that came
--- meanwhile follow it.
function M.end_block()
  paragraph_next = paragraph_next or in_thinking
  in_thinking = false
  streaming = false
  if #notes > 0 then
    local queued = notes
    notes = {}
    for _, text in ipairs(queued) do
      M.paragraph(text)
    end
    paragraph_next = true
  end
end

--- A paragraph about something that happened beside the conversation (a background job that
--- started or ended): written at once, or after the block being streamed, never inside it.
---@param text string
function M.note(text)
  if streaming then
    notes[#notes + 1] = text
    return
  end
  M.paragraph(text)
end

--- One-line summary of tool arguments: the path, the command, the pattern, the URL or query of
--- the web tools, the question of `ask_user`, the job of `bash_output` and `bash_kill`.
---@param args table?
---@return string
local function summarize(args)
  if type(args) ~= "table" then
    return ""
  end
  -- The language tools (`lsp_*`) name a place: `b.ts:3 greet`, a rename `→ welcome`.
  if type(args.path) == "string" and type(args.line) == "number" then
    local place = string.format("%s:%d", args.path, args.line)
    if type(args.symbol) == "string" then
      place = place .. " " .. args.symbol
    elseif type(args.column) == "number" then
      place = place .. ":" .. args.column
    end
    if type(args.newName) == "string" then
      place = place .. " → " .. args.newName .. (args.apply == true and " (apply)" or "")
    end
    return place
  end
  local v = args.path or args.command or args.pattern or args.url or args.query or args.question or args.jobId
    or args.description
  if type(v) ~= "string" then
    return ""
  end
  v = v:gsub("\n.*", " …")
  return v
end

local function set_badge(line, text, hl)
  local buf = M.ensure_buf()
  return vim.api.nvim_buf_set_extmark(buf, ns, line, 0, {
    virt_text = { { " " .. text, hl } },
    virt_text_pos = "eol",
  })
end

--- The line a tool call's badge is on now (a plan block above it may have grown or shrunk).
---@param t {mark: integer, line: integer}
---@return integer
local function badge_line(t)
  return vim.api.nvim_buf_get_extmark_by_id(M.buf, ns, t.mark, {})[1] or t.line
end

--- A tool call started: one line with a "running" badge.
---@param id string
---@param name string
---@param args table?
function M.tool_start(id, name, args)
  M.flush_heading()
  block()
  M.append(string.format("- tool `%s` %s", name, summarize(args)))
  local line = vim.api.nvim_buf_line_count(M.buf) - 1
  tools[id] = { line = line, mark = set_badge(line, "⋯ running", "DiagnosticWarn") }
end

--- A tool call reported progress: the badge shows the last line of its partial output.
---@param id string
---@param partial table? partial AgentToolResult
function M.tool_update(id, partial)
  local t = tools[id]
  if not t then
    return
  end
  local lines = vim.split(M.content_text(partial and partial.content), "\n", { plain = true, trimempty = true })
  local last = lines[#lines]
  if not last then
    return
  end
  if #last > 60 then
    last = last:sub(1, 57) .. "…"
  end
  t.line = badge_line(t)
  vim.api.nvim_buf_del_extmark(M.buf, ns, t.mark)
  t.mark = set_badge(t.line, "⋯ " .. last, "DiagnosticWarn")
end

--- A tool call finished: the badge turns into done/failed and the first result lines follow.
---@param id string
---@param name string
---@param result table?
---@param is_error boolean
---@param duration_ms integer?
function M.tool_end(id, name, result, is_error, duration_ms)
  local t = tools[id]
  local badge = is_error and "✗ failed" or "✓ done"
  if duration_ms then
    badge = badge .. string.format(" (%d ms)", duration_ms)
  end
  local hl = is_error and "DiagnosticError" or "DiagnosticOk"
  if t then
    t.line = badge_line(t)
    vim.api.nvim_buf_del_extmark(M.buf, ns, t.mark)
    t.mark = set_badge(t.line, badge, hl)
  else
    M.tool_start(id, name, nil)
    return M.tool_end(id, name, result, is_error, duration_ms)
  end
  local text = M.content_text(result and result.content)
  local lines = vim.split(text, "\n", { plain = true, trimempty = true })
  local shown = {}
  for i = 1, math.min(#lines, 5) do
    shown[#shown + 1] = "    " .. lines[i]
  end
  if #lines > 5 then
    shown[#shown + 1] = string.format("    … %d more lines", #lines - 5)
  end
  if #shown > 0 then
    -- Right under the tool's line: a line written since (a job that started, another call of
    -- the batch) stays below the result.
    -- A `task` call's result comes after its subagent's steps.
    local row = require("agent_lsp.subagents").after_steps(t.line + 1)
    edit(function(buf)
      vim.api.nvim_buf_set_lines(buf, row, row, false, shown)
    end)
    follow()
  end
end

--- The line (0-based) of a tool call's line now, or nil when the chat has no such call.
---@param id string
---@return integer?
function M.tool_row(id)
  local t = tools[id]
  if not t or not valid_buf() then
    return nil
  end
  t.line = badge_line(t)
  return t.line
end

--- Inserts `lines` before the 0-based line `row` (a subagent's steps under its `task` line).
---@param row integer
---@param lines string[]
function M.insert_lines(row, lines)
  edit(function(buf)
    vim.api.nvim_buf_set_lines(buf, row, row, false, lines)
  end)
  follow()
end

--- The badge text of a tool call (for tests).
---@param id string
---@return string?
function M.badge(id)
  local t = tools[id]
  if not t then
    return nil
  end
  local mark = vim.api.nvim_buf_get_extmark_by_id(M.buf, ns, t.mark, { details = true })
  local vt = mark[3] and mark[3].virt_text
  return vt and vt[1] and vt[1][1] or nil
end

return M
