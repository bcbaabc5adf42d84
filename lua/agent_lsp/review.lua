--- agent_lsp.review: what a run changed, and undoing it (protocol.md §3.16).
---
--- `:AgentChanges` puts the files of the last run that changed files (`agent/runChanges`) in the
--- quickfix list; `:AgentDiff` shows one in a diff split against the content before the run,
--- rebuilt from the unified diff the daemon sends; `:AgentRevert` / `:AgentRevertFile` restore
--- the run's before-images (`agent/revert`), `:AgentRestore` those of every run since a user
--- message of the chat (a checkpoint). A file the user changed since the agent did is listed
--- as a conflict and left alone unless the command gets a `!`.

local protocol = require("agent_lsp.protocol")
local state = require("agent_lsp.state")

local M = {}

M.TITLE = "agent-lsp: run changes"

---@class agent_lsp.RunChanges
---@field session_id string
---@field run_id string?
---@field files table<string, table> path -> FileChange {path, change, diff, userChanged, revertible, reason?}

---@type agent_lsp.RunChanges? the changes last listed
M.last = nil

---@type integer? the scratch buffer holding the before-image of the diff split
local before_buf = nil

local function lsp()
  return require("agent_lsp")
end

--- The line (in the content now) of the first change of a unified diff (1 when there is none).
---@param diff string
---@return integer
local function first_changed_line(diff)
  local line
  for _, l in ipairs(vim.split(diff, "\n", { plain = true })) do
    local c = l:match("^@@ %-%d+,?%d* %+(%d+)")
    if c then
      line = tonumber(c)
    elseif line and (l:sub(1, 1) == "+" or l:sub(1, 1) == "-") then
      return math.max(1, line)
    elseif line then
      line = line + 1
    end
  end
  return 1
end

--- The quickfix text of a changed file: what happened to it, and why it may not revert.
---@param f table FileChange
---@return string
function M.describe(f)
  local parts = { f.change or "changed" }
  if f.userChanged then
    parts[#parts + 1] = "changed by you since (a revert is a conflict; ! forces it)"
  end
  if f.revertible == false then
    parts[#parts + 1] = "not revertible: " .. tostring(f.reason or "its content before the run is unknown")
  end
  return table.concat(parts, " · ")
end

--- Whether the quickfix list is the one `:AgentChanges` made.
---@return boolean
local function showing_changes()
  local ctx = vim.fn.getqflist({ context = 0 }).context
  return type(ctx) == "table" and ctx.agent_lsp == "changes"
end

--- Fills the quickfix list with the files a run changed and opens it.
---@param opts {run_id: string?, open: boolean?, on_result: fun(r: table)?}?
function M.changes(opts)
  opts = opts or {}
  if not state.current then
    vim.notify("agent-lsp: no session", vim.log.levels.WARN)
    return
  end
  local session_id = state.current
  lsp().request(protocol.methods.run_changes, { sessionId = session_id, runId = opts.run_id }, function(result)
    local files = type(result) == "table" and result.files or {}
    M.last = { session_id = session_id, run_id = result and result.runId, files = {} }
    local items = {}
    for _, f in ipairs(files) do
      M.last.files[f.path] = f
      items[#items + 1] = {
        filename = f.path,
        lnum = f.change == "deleted" and 1 or first_changed_line(f.diff or ""),
        text = M.describe(f),
        type = (f.userChanged or f.revertible == false) and "W" or nil,
      }
    end
    vim.fn.setqflist({}, " ", { title = M.TITLE, items = items, context = { agent_lsp = "changes" } })
    if #items == 0 then
      vim.notify("agent-lsp: no run of this session changed files", vim.log.levels.INFO)
    elseif opts.open ~= false then
      vim.cmd("botright copen " .. math.min(10, #items + 1))
      M.map_quickfix()
      vim.cmd("wincmd p")
    end
    if opts.on_result then
      opts.on_result(result)
    end
  end)
end

--- `D` in the quickfix window (while it shows the run's changes) opens the diff of the entry.
function M.map_quickfix()
  local qfbuf = vim.fn.getqflist({ qfbufnr = 0 }).qfbufnr
  if not qfbuf or qfbuf == 0 then
    return
  end
  vim.keymap.set("n", "D", function()
    if showing_changes() then
      M.diff()
    end
  end, { buffer = qfbuf, desc = "agent-lsp: diff the changed file against its content before the run" })
end

--- The content before the change, rebuilt by undoing the hunks of `diff` on `current`.
---@param current string[] the lines now
---@param diff string unified diff from the before-image to the content now
---@return string[] before
function M.before_image(current, diff)
  local out, pos = {}, 1 -- pos: the next line of `current` not yet copied
  local old_left, new_left = 0, 0
  for _, line in ipairs(vim.split(diff, "\n", { plain = true })) do
    if old_left > 0 or new_left > 0 then
      local mark, text = line:sub(1, 1), line:sub(2)
      if mark == "-" then
        out[#out + 1] = text
        old_left = old_left - 1
      elseif mark == "+" then
        pos = pos + 1
        new_left = new_left - 1
      elseif mark == " " or line == "" then
        out[#out + 1] = text
        pos = pos + 1
        old_left, new_left = old_left - 1, new_left - 1
      end
    else
      local ob, c, nb = line:match("^@@ %-%d+,?(%d*) %+(%d+),?(%d*) @@")
      if c then
        old_left = ob == "" and 1 or tonumber(ob)
        new_left = nb == "" and 1 or tonumber(nb)
        -- A hunk that adds nothing names the line before it.
        local start = new_left == 0 and tonumber(c) + 1 or tonumber(c)
        for i = pos, start - 1 do
          out[#out + 1] = current[i]
        end
        pos = math.max(pos, start)
      end
    end
  end
  for i = pos, #current do
    out[#out + 1] = current[i]
  end
  return out
end

--- The lines of `path` now: its buffer's when it is loaded, else the disk's (none if absent).
---@param path string
---@return string[]
local function current_lines(path)
  local buf = vim.fn.bufnr(path)
  if buf > 0 and vim.api.nvim_buf_is_loaded(buf) then
    return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  end
  if vim.fn.filereadable(path) == 1 then
    return vim.fn.readfile(path)
  end
  return {}
end

--- The changed file the user points at: the quickfix entry under the cursor (in the quickfix
--- window), the current buffer when the run changed it, else the current quickfix entry.
---@return string? path
function M.target_path()
  local files = M.last and M.last.files or {}
  if vim.bo.buftype == "quickfix" then
    if not showing_changes() then
      return nil
    end
    local item = vim.fn.getqflist()[vim.api.nvim_win_get_cursor(0)[1]]
    return item and vim.api.nvim_buf_get_name(item.bufnr) or nil
  end
  local name = vim.api.nvim_buf_get_name(0)
  if name ~= "" and files[vim.fs.normalize(name)] then
    return vim.fs.normalize(name)
  end
  if showing_changes() then
    local idx = vim.fn.getqflist({ idx = 0 }).idx
    local item = vim.fn.getqflist()[idx]
    return item and vim.api.nvim_buf_get_name(item.bufnr) or nil
  end
  return nil
end

--- Moves to a window for a file: the previous one when it shows a file, else the first in the
--- tab that does, else a new split above the quickfix and chat windows.
function M.goto_file_window()
  local function shows_file(win)
    return vim.api.nvim_win_is_valid(win)
      and vim.api.nvim_win_get_config(win).relative == ""
      and vim.bo[vim.api.nvim_win_get_buf(win)].buftype == ""
  end
  if shows_file(vim.api.nvim_get_current_win()) then
    return
  end
  local prev = vim.fn.win_getid(vim.fn.winnr("#"))
  if prev ~= 0 and shows_file(prev) then
    return vim.api.nvim_set_current_win(prev)
  end
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if shows_file(win) then
      return vim.api.nvim_set_current_win(win)
    end
  end
  vim.cmd("topleft new")
end

--- Opens a diff split of a changed file (default: the one pointed at) against its content
--- before the run: the file on the right, a read-only scratch buffer on the left.
---@param path string?
---@return integer? before_buf
function M.diff(path)
  path = path or M.target_path()
  local f = path and M.last and M.last.files[path]
  if not f then
    vim.notify("agent-lsp: no changed file here (run :AgentChanges)", vim.log.levels.WARN)
    return nil
  end
  if (f.diff or "") == "" then
    vim.notify("agent-lsp: its content before the run is unknown: " .. tostring(f.reason or "no diff"), vim.log.levels.WARN)
    return nil
  end
  local before = M.before_image(current_lines(path), f.diff)
  M.goto_file_window()
  if before_buf and vim.api.nvim_buf_is_valid(before_buf) then
    vim.api.nvim_buf_delete(before_buf, { force = true })
  end
  vim.cmd("diffoff!")
  vim.cmd.edit(vim.fn.fnameescape(path))
  local file_win = vim.api.nvim_get_current_win()
  local ft = vim.bo.filetype
  vim.cmd("diffthis")
  vim.cmd("leftabove vnew")
  local buf = vim.api.nvim_get_current_buf()
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].swapfile = false
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, before)
  vim.api.nvim_buf_set_name(buf, "agent-lsp://before/" .. vim.fn.fnamemodify(path, ":."))
  vim.bo[buf].filetype = ft
  vim.bo[buf].modifiable = false
  vim.cmd("diffthis")
  vim.wo.winbar = "before the run: " .. vim.fn.fnamemodify(path, ":.")
  before_buf = buf
  vim.api.nvim_set_current_win(file_win)
  return buf
end

--- Says what a revert did; conflicts and skipped files go to the quickfix list.
---@param result table {reverted, conflicts, skipped}
local function report(result)
  local reverted = result.reverted or {}
  local conflicts = result.conflicts or {}
  local skipped = result.skipped or {}
  local items = {}
  for _, p in ipairs(reverted) do
    items[#items + 1] = { filename = p, lnum = 1, text = "reverted" }
  end
  for _, c in ipairs(conflicts) do
    items[#items + 1] = { filename = c.path, lnum = 1, text = "conflict: " .. tostring(c.reason) .. " (! overwrites it)", type = "E" }
  end
  for _, s in ipairs(skipped) do
    items[#items + 1] = { filename = s.path, lnum = 1, text = "skipped: " .. tostring(s.reason), type = "W" }
  end
  vim.fn.setqflist({}, " ", { title = "agent-lsp: revert", items = items, context = { agent_lsp = "revert" } })
  local msg = string.format("agent-lsp: reverted %d file(s)", #reverted)
  if #conflicts > 0 then
    msg = msg .. string.format("; %d conflict(s) left alone (add ! to overwrite)", #conflicts)
  end
  if #skipped > 0 then
    msg = msg .. string.format("; %d skipped", #skipped)
  end
  vim.notify(msg, #conflicts > 0 and vim.log.levels.WARN or vim.log.levels.INFO)
  if #conflicts > 0 or #skipped > 0 then
    vim.cmd("botright copen")
    vim.cmd("wincmd p")
  end
end

--- Reverts the last listed run (or the session's last run that changed files), or one file of
--- it: `agent/revert {runId, paths?, force?}`.
---@param opts {force: boolean?, path: string?, on_result: fun(r: table)?}?
function M.revert(opts)
  opts = opts or {}
  if not state.current then
    vim.notify("agent-lsp: no session", vim.log.levels.WARN)
    return
  end
  local run_id = M.last and M.last.session_id == state.current and M.last.run_id or nil
  local params = {
    sessionId = state.current,
    runId = run_id ~= vim.NIL and run_id or nil,
    paths = opts.path and { opts.path } or nil,
    force = opts.force or nil,
  }
  lsp().request(protocol.methods.revert, params, function(result)
    report(result or {})
    if opts.on_result then
      opts.on_result(result)
    end
  end)
end

--- Reverts the changed file pointed at (see `target_path`).
---@param opts {force: boolean?, on_result: fun(r: table)?}?
function M.revert_file(opts)
  opts = opts or {}
  local path = M.target_path()
  if not path then
    vim.notify("agent-lsp: no changed file here (run :AgentChanges)", vim.log.levels.WARN)
    return
  end
  M.revert({ force = opts.force, path = path, on_result = opts.on_result })
end

--- Restores the files as they were before the user message under the cursor in the chat
--- (every run since: `agent/revert {messageId}`); with `fork`, the conversation is forked
--- there too and the message offered again in the prompt input.
---@param opts {force: boolean?, fork: boolean?, on_result: fun(r: table)?}?
function M.restore(opts)
  opts = opts or {}
  local sessions = require("agent_lsp.sessions")
  sessions.message_at_cursor(function(item)
    local params = {
      sessionId = state.current,
      messageId = item.messageId,
      force = opts.force or nil,
      fork = opts.fork or nil,
    }
    lsp().request(protocol.methods.revert, params, function(result, client_id)
      report(result or {})
      if type(result) == "table" and type(result.fork) == "table" then
        sessions.continue_fork(result.fork, client_id)
      end
      if opts.on_result then
        opts.on_result(result)
      end
    end)
  end)
end

--- Event listener: after a run that changed files, say so and how to review them.
---@param params table
function M.on_event(params)
  local ev = params.event or {}
  if ev.type ~= "changes_update" or params.sessionId ~= state.current then
    return
  end
  local n = #(ev.files or {})
  if n > 0 then
    vim.notify(
      string.format("agent-lsp: the run changed %d file(s): :AgentChanges to review, :AgentRevert to undo", n),
      vim.log.levels.INFO
    )
  end
end

return M
