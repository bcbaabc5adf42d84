--- agent_lsp.complete: completion of slash commands and `@file` mentions.
---
--- `/` at the start of a message completes the session's commands (`agent/listCommands`:
--- built-ins, prompt templates, skills, MCP prompts; protocol.md §3.14) with their description
--- (`menu`, `info`) and argument hint (`abbr`). `@` after a blank completes workspace files,
--- fuzzily (`matchfuzzy`). The same items serve the prompt input's `completefunc`, its
--- auto-trigger, and the `:AgentPrompt` command line.

local protocol = require("agent_lsp.protocol")
local state = require("agent_lsp.state")

local M = {}

--- At most this many files are listed outside a git repository (a walk of a huge tree would
--- block the editor), and at most `max_items` fuzzy matches are offered for a typed prefix.
M.max_walk = 5000
M.max_items = 50

---@type table<string, table[]> session id -> commands
M.commands = {}

--- Fetches the session's commands into the cache; `on_done(commands)`.
---@param id string?
---@param on_done fun(commands: table[])?
function M.fetch_commands(id, on_done)
  id = id or state.current
  if not id then
    return on_done and on_done({})
  end
  require("agent_lsp").request(protocol.methods.list_commands, { sessionId = id }, function(result)
    M.commands[id] = type(result) == "table" and result.commands or {}
    if on_done then
      on_done(M.commands[id])
    end
  end)
end

--- Event listener: `commands_update` replaces a session's cached commands.
---@param params table
function M.on_event(params)
  local ev = params.event or {}
  if ev.type == "commands_update" and type(ev.commands) == "table" then
    M.commands[params.sessionId] = ev.commands
  end
end

--- Completion items for a `/command` prefix (without the slash).
---@param base string
---@return table[]
function M.command_items(base)
  local items = {}
  for _, c in ipairs(M.commands[state.current or ""] or {}) do
    local name = tostring(c.name)
    if name:sub(1, #base) == base then
      local hint = type(c.argumentHint) == "string" and c.argumentHint or nil
      local desc = type(c.description) == "string" and c.description or ""
      items[#items + 1] = {
        word = "/" .. name,
        abbr = "/" .. name .. (hint and (" " .. hint) or ""),
        menu = desc,
        kind = tostring(c.source or ""),
        info = desc .. (hint and ("\n\nArguments: " .. hint) or "") .. "\nSource: " .. tostring(c.source or "?"),
        user_data = { command = c },
      }
    end
  end
  return items
end

local cache = { root = nil, files = nil, at = 0 }

--- The workspace's files, relative to `root`. In a git repository `git ls-files --cached
--- --others --exclude-standard` (tracked and untracked files, `.gitignore` respected); else a
--- walk of the tree that skips dot-directories and stops at `max_walk` files (no ignore rules
--- without git). Cached for two seconds, so typing does not list the tree again per key.
---@param root string
---@return string[]
function M.files(root)
  local now = vim.uv.now()
  if cache.root == root and cache.files and now - cache.at < 2000 then
    return cache.files
  end
  local files = {}
  local ok, res = pcall(function()
    return vim.system({ "git", "ls-files", "--cached", "--others", "--exclude-standard" }, { cwd = root, text = true }):wait(3000)
  end)
  if ok and res.code == 0 then
    for line in (res.stdout or ""):gmatch("[^\n]+") do
      files[#files + 1] = line
    end
  else
    for name, kind in vim.fs.dir(root, {
      depth = 20,
      skip = function(dir)
        return not vim.startswith(vim.fs.basename(dir), ".")
      end,
    }) do
      if kind == "file" then
        files[#files + 1] = name
        if #files >= M.max_walk then
          break
        end
      end
    end
    table.sort(files)
  end
  cache = { root = root, files = files, at = now }
  return files
end

--- The directory `@` paths are relative to: the current directory (where `:AgentAddFile` and
--- the `@path` mentions resolve, see `agent_lsp.context`).
---@return string
function M.root()
  return vim.fn.getcwd()
end

--- Completion items for an `@path` prefix (without the `@`): fuzzy matches, best first.
---@param base string
---@return table[]
function M.file_items(base)
  local files = M.files(M.root())
  local matched
  if base == "" then
    -- Right after `@`: every file, for the menu to narrow as the user types.
    matched = files
  else
    matched = vim.fn.matchfuzzy(files, base, { limit = M.max_items })
  end
  return vim.tbl_map(function(f)
    return { word = "@" .. f, abbr = f, menu = "[file]", kind = "file" }
  end, matched)
end

--- What to complete before the cursor: the column (0-based) where the item starts and the items,
--- or nil when neither `/` nor `@` applies.
---@param line string text of the line up to the cursor
---@param first_line boolean whether it is the message's first line
---@return integer?, table[]?
function M.at(line, first_line)
  local cmd = line:match("^/([%w_%-:%.]*)$")
  if cmd and first_line then
    return 0, M.command_items(cmd)
  end
  local before, path = line:match("^(.-)@([^%s@]*)$")
  if path and (before == "" or before:match("%s$")) then
    return #before, M.file_items(path)
  end
  return nil, nil
end

--- `completefunc` of the prompt input (`i_CTRL-X_CTRL-U`).
---@param findstart integer
---@param base string
---@return integer|table[]
function M.completefunc(findstart, base)
  local row, col = unpack(vim.api.nvim_win_get_cursor(0))
  local line = vim.api.nvim_get_current_line():sub(1, col)
  if findstart == 1 then
    local start = M.at(line, row == 1)
    return start or -3
  end
  local _, items = M.at(base, row == 1)
  return items or {}
end

--- `:AgentPrompt` argument completion: `/command` as the first word, `@file` anywhere.
---@param arglead string
---@param cmdline string
---@return string[]
function M.cmdline(arglead, cmdline)
  local first = cmdline:match("^%s*%S+%s+(%S*)$") ~= nil
  local _, items = M.at(arglead, first)
  return vim.tbl_map(function(i)
    return i.word
  end, items or {})
end

return M
