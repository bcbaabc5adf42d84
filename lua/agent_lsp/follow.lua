--- agent_lsp.follow: "follow the agent" (`setup({ follow = true })`, off by default).
---
--- When the model reads, edits or writes a file or asks the language servers about one (`read`,
--- `edit`, `write`, `lsp_*`), the file is shown in the last window that is not the chat, with
--- the cursor on the line it is about; an edit's changed lines once it landed. The cursor stays
--- where the user is (in the chat or its input): only that other window moves.

local config = require("agent_lsp.config")
local state = require("agent_lsp.state")

local M = {}

local ns = vim.api.nvim_create_namespace("agent_lsp.follow")

--- The files of the followed calls still running, by tool call id (an edit's changed lines
--- are shown when it ends).
---@type table<string, string>
M.calls = {}

--- Extensions `read` returns as images (not shown).
local IMAGES = { png = true, jpg = true, jpeg = true, gif = true, webp = true }

--- How long a changed range stays highlighted (ms).
M.highlight_ms = 1500

--- Whether a tool's calls are followed.
---@param name string?
---@return boolean
function M.followed(name)
  return name == "read" or name == "edit" or name == "write" or (type(name) == "string" and name:find("^lsp_") ~= nil)
end

--- Whether a window may show the followed file: a normal window on a file buffer, not the
--- chat, nor a float, nor a special buffer (the prompt input, quickfix, help, a terminal).
---@param win integer?
---@return boolean
local function eligible(win)
  if not win or win == 0 or not vim.api.nvim_win_is_valid(win) then
    return false
  end
  if vim.api.nvim_win_get_config(win).relative ~= "" then
    return false
  end
  local buf = vim.api.nvim_win_get_buf(win)
  return buf ~= require("agent_lsp.chat").buf and vim.bo[buf].buftype == ""
end

--- The window to show a followed file in: the current one when it is eligible, else the
--- previous one (`wincmd p`), else the last eligible window of the tab; nil when there is none.
---@return integer?
function M.window()
  local current = vim.api.nvim_get_current_win()
  if eligible(current) then
    return current
  end
  local previous = vim.fn.win_getid(vim.fn.winnr("#"))
  if eligible(previous) then
    return previous
  end
  local wins = vim.api.nvim_tabpage_list_wins(0)
  for i = #wins, 1, -1 do
    if eligible(wins[i]) then
      return wins[i]
    end
  end
  return nil
end

--- Where the session's relative paths start: its cwd, else its daemon's root, else Neovim's.
---@param session_id string?
---@return string
function M.base(session_id)
  local s = session_id and state.sessions[session_id]
  if s and s.cwd then
    return s.cwd
  end
  local client = s and s.client_id and vim.lsp.get_client_by_id(s.client_id)
  return client and client.root_dir or vim.fn.getcwd()
end

--- A tool's `path` made absolute against `base`.
---@param path string
---@param base string
---@return string
function M.resolve(path, base)
  if path:sub(1, 1) == "/" then
    return vim.fs.normalize(path)
  end
  return vim.fs.normalize(base .. "/" .. path)
end

--- Shows `path` in the follow window with the cursor on `line` (1-based, clamped), and
--- highlights lines `line`..`last` when `last` is given. Returns the window, or nil when there
--- was nothing to show it in or the file is not there.
---@param path string absolute
---@param line integer?
---@param last integer?
---@return integer?
function M.show(path, line, last)
  -- `read` also reads images, which a text window cannot show.
  local ext = (path:match("%.(%w+)$") or ""):lower()
  if IMAGES[ext] then
    return nil
  end
  local buf = vim.fn.bufnr(path)
  if buf == -1 then
    if vim.fn.filereadable(path) ~= 1 then
      return nil
    end
    buf = vim.fn.bufadd(path)
  end
  vim.bo[buf].buflisted = true
  local win = M.window()
  if not win then
    -- Only the chat (and floats) on screen: make room above it.
    local chat = require("agent_lsp.chat").win()
    if not chat or vim.api.nvim_win_get_config(chat).relative ~= "" then
      return nil
    end
    win = vim.api.nvim_open_win(buf, false, { split = "above", win = chat })
  end
  if vim.api.nvim_win_get_buf(win) ~= buf then
    -- `:buffer` in that window loads the file as opening it there would (autocommands,
    -- filetype, language servers); the user's window and cursor stay where they are.
    local ok, err = pcall(vim.api.nvim_win_call, win, function()
      vim.cmd("keepalt buffer " .. buf)
    end)
    if not ok then
      vim.notify("agent-lsp: cannot follow the agent to " .. path .. ": " .. tostring(err), vim.log.levels.WARN)
      return nil
    end
  end
  if line then
    local count = vim.api.nvim_buf_line_count(buf)
    local first = math.max(1, math.min(line, count))
    vim.api.nvim_win_set_cursor(win, { first, 0 })
    vim.api.nvim_win_call(win, function()
      vim.cmd("normal! zz")
    end)
    if last then
      local stop = math.max(first, math.min(last, count))
      vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
      local hl = vim.hl or vim.highlight
      pcall(hl.range, buf, ns, "Visual", { first - 1, 0 }, { stop - 1, 0 }, {
        regtype = "V",
        timeout = M.highlight_ms,
      })
    end
  end
  return win
end

--- The new text's changed lines of a unified patch (its first hunk's added lines, 1-based).
---@param patch string?
---@return integer? first, integer? last
function M.changed_lines(patch)
  if type(patch) ~= "string" then
    return nil
  end
  local new_line, first, last
  for line in (patch .. "\n"):gmatch("([^\n]*)\n") do
    local start = line:match("^@@ %-%d+,?%d* %+(%d+),?%d* @@")
    if start then
      if first then
        break
      end
      new_line = tonumber(start)
    elseif new_line then
      local mark = line:sub(1, 1)
      if mark == "+" then
        first = first or new_line
        last = new_line
        new_line = new_line + 1
      elseif mark == " " then
        new_line = new_line + 1
      end
    end
  end
  return first, last
end

--- Event listener: follows the current session's `read`, `edit`, `write` and `lsp_*` calls.
---@param params table
function M.on_event(params)
  if not config.options.follow or params.sessionId ~= state.current then
    return
  end
  local ev = params.event or {}
  if not M.followed(ev.toolName) then
    return
  end
  if ev.type == "tool_execution_start" then
    local args = type(ev.args) == "table" and ev.args or {}
    if type(args.path) ~= "string" then
      return
    end
    local path = M.resolve(args.path, M.base(params.sessionId))
    local line = ev.toolName == "read" and tonumber(args.offset) or tonumber(args.line)
    if ev.toolName == "write" then
      line = 1
    end
    M.show(path, line)
    M.calls[ev.toolCallId or ""] = path
  elseif ev.type == "tool_execution_end" and ev.toolName == "edit" and ev.isError ~= true then
    local path = M.calls[ev.toolCallId or ""]
    local details = type(ev.result) == "table" and ev.result.details or {}
    local first, last = M.changed_lines(details.patch)
    first = first or tonumber(details.firstChangedLine)
    if path and first then
      M.show(path, first, last or first)
    end
  end
  if ev.type == "tool_execution_end" then
    M.calls[ev.toolCallId or ""] = nil
  end
end

return M
