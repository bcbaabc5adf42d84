--- agent_lsp.sessions: new sessions, switching between them, and resuming stored ones.
---
--- Sessions open on a daemon are known from its events and replies. Stored sessions (every
--- session is persisted by the daemon) are listed with `agent-lsp sessions list --json`, run with
--- the daemon's environment so it reads the same session directory, and resumed with
--- `agent/newSession {resume}`.

local chat = require("agent_lsp.chat")
local config = require("agent_lsp.config")
local protocol = require("agent_lsp.protocol")
local state = require("agent_lsp.state")

local M = {}

local function lsp()
  return require("agent_lsp")
end

--- Makes `id` the current session and shows its history in the (opened) chat.
---@param id string
---@param on_done fun()?
function M.switch(id, on_done)
  state.current = id
  state.session(id)
  chat.clear()
  require("agent_lsp.commands").open_chat()
  lsp().request(protocol.methods.get_messages, { sessionId = id }, function(result)
    require("agent_lsp.transcript").render(type(result) == "table" and (result.messages or result) or {})
    -- The session's plan is its state, not a message: the replayed calls drew it, and
    -- `agent/getState.plan` has the last word (a compacted or forked history may lack them).
    -- (An older daemon's getState has neither `plan` nor `jobs`.)
    lsp().request(protocol.methods.get_state, { sessionId = id }, function(st)
      local todos = type(st) == "table" and type(st.plan) == "table" and st.plan or nil
      if todos and state.current == id then
        state.session(id).plan = todos
        require("agent_lsp.plan").restore(todos)
      end
      -- Its background jobs too (`agent/getState.jobs`), for the winbar and :AgentJobs.
      if type(st) == "table" and type(st.jobs) == "table" then
        state.session(id).jobs = {}
        for _, job in ipairs(st.jobs) do
          if type(job) == "table" and job.jobId ~= nil then
            require("agent_lsp.jobs").remember(id, job)
          end
        end
      end
      pcall(vim.cmd, "redrawstatus!")
      if on_done then
        on_done()
      end
    end, { on_error = function()
      if on_done then
        on_done()
      end
    end })
  end)
end

--- Starts a new session (optionally in another directory) on the current buffer's daemon.
---@param cwd string?
---@param on_result fun(r: table)?
function M.new_session(cwd, on_result)
  lsp().request(protocol.methods.new_session, { cwd = cwd }, function(result, client_id)
    require("agent_lsp.commands").adopt(result, client_id)
    chat.clear()
    if on_result then
      on_result(result)
    end
  end, { for_session = false })
end

--- Continues a stored session (id, unique id prefix or file) and shows its history.
---@param id string
---@param on_result fun(r: table)?
function M.resume(id, on_result)
  lsp().request(protocol.methods.new_session, { resume = id }, function(result, client_id)
    require("agent_lsp.commands").adopt(result, client_id)
    M.switch(result.sessionId, function()
      if on_result then
        on_result(result)
      end
    end)
  end, { for_session = false })
end

--- Runs the daemon's binary with `args` (and the daemon's environment, so it reads the same
--- session directory) and calls `cb` with the JSON objects it prints, one a line; with `{}`
--- when it fails (the reason is notified, `what` says what was tried).
---@param args string[]
---@param what string
---@param cb fun(list: table[])
local function cli_json(args, what, cb)
  local opts = config.options
  local cmd = vim.list_extend({ opts.cmd[1] }, args)
  local env = vim.tbl_extend("force", vim.fn.environ(), opts.cmd_env or {})
  local ok, err = pcall(vim.system, cmd, { text = true, env = env, clear_env = true }, function(res)
    vim.schedule(function()
      if res.code ~= 0 then
        vim.notify("agent-lsp: " .. what .. " failed: " .. vim.trim(res.stderr or ""), vim.log.levels.WARN)
        return cb({})
      end
      local list = {}
      for line in (res.stdout or ""):gmatch("[^\n]+") do
        local decoded_ok, item = pcall(vim.json.decode, line)
        if decoded_ok and type(item) == "table" then
          list[#list + 1] = item
        end
      end
      cb(list)
    end)
  end)
  if not ok then
    vim.notify("agent-lsp: cannot run " .. opts.cmd[1] .. ": " .. tostring(err), vim.log.levels.WARN)
    cb({})
  end
end

--- Lists stored sessions of the workspace, newest first: `cb(list)` with `{id, name, title,
--- created, updated, messageCount, cwd, path}` items (empty when the binary cannot list them;
--- the reason is notified).
---@param cb fun(list: table[])
function M.stored(cb)
  local root = vim.fs.root(0, config.options.root_markers) or vim.fn.getcwd()
  cli_json({ "sessions", "list", "--json", "--cwd", root }, "listing stored sessions", function(list)
    cb(vim.tbl_filter(function(item)
      return item.id ~= nil
    end, list))
  end)
end

--- The user messages of a session, in order: `cb(list)` with `{messageId, text}` items, from
--- `agent/getMessages` (its `messageIds`: the session file entry of each user message the file
--- holds; a session without a file has none).
---@param session_id string
---@param cb fun(list: table[])
function M.user_messages(session_id, cb)
  lsp().request(protocol.methods.get_messages, { sessionId = session_id }, function(result)
    local out = {}
    local messages = type(result) == "table" and result.messages or {}
    local ids = type(result) == "table" and result.messageIds or {}
    for i, msg in ipairs(messages) do
      local id = ids[i]
      if type(msg) == "table" and msg.role == "user" and type(id) == "string" then
        out[#out + 1] = { messageId = id, text = chat.content_text(msg.content) }
      end
    end
    cb(out)
  end)
end

--- Seconds since the epoch of an ISO 8601 UTC time ("2026-12-02T16:29:25.123Z"), or nil.
---@param iso any
---@return integer?
function M.epoch(iso)
  if type(iso) ~= "string" then
    return nil
  end
  local y, mo, d, h, mi, se = iso:match("^(%d+)-(%d+)-(%d+)T(%d+):(%d+):(%d+)")
  if not y then
    return nil
  end
  y, mo, d = tonumber(y), tonumber(mo), tonumber(d)
  -- Days from the civil date (Howard Hinnant's algorithm): no dependence on the local zone.
  y = mo <= 2 and y - 1 or y
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local doy = math.floor((153 * (mo + (mo > 2 and -3 or 9)) + 2) / 5) + d - 1
  local doe = yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy
  local days = era * 146097 + doe - 719468
  return days * 86400 + tonumber(h) * 3600 + tonumber(mi) * 60 + tonumber(se)
end

--- "just now", "5 min ago", "3 h ago", "2 days ago" for an ISO time (nil when unknown).
---@param iso any
---@param now integer? seconds since the epoch (default: now)
---@return string?
function M.ago(iso, now)
  local t = M.epoch(iso)
  if not t then
    return nil
  end
  local s = math.max(0, (now or os.time()) - t)
  if s < 60 then
    return "just now"
  elseif s < 3600 then
    return string.format("%d min ago", math.floor(s / 60))
  elseif s < 86400 then
    return string.format("%d h ago", math.floor(s / 3600))
  end
  local days = math.floor(s / 86400)
  return days == 1 and "yesterday" or string.format("%d days ago", days)
end

--- A picker line: the title (the name, else the first prompt), the last activity, the message
--- count, and for a session open here its status.
local function label(item)
  if item.new then
    return "+ new session"
  end
  local mark = item.id == state.current and "* " or "  "
  local st = item.stored or {}
  local title = type(st.title) == "string" and st.title ~= "" and st.title or "(no prompt yet)"
  local parts = { title }
  parts[#parts + 1] = M.ago(st.updated)
  if type(st.messageCount) == "number" then
    parts[#parts + 1] = st.messageCount == 1 and "1 message" or (st.messageCount .. " messages")
  end
  if item.session then
    parts[#parts + 1] = item.session.status
  else
    parts[#parts + 1] = "stored"
  end
  return mark .. table.concat(parts, " · ")
end

--- Picks a session with `vim.ui.select`: this Neovim's open sessions, then the workspace's
--- stored ones (resumed when picked), then "+ new session".
---@param on_done fun(id: string?)?
function M.pick(on_done)
  M.stored(function(stored)
    local items, seen, by_id = {}, {}, {}
    for _, st in ipairs(stored) do
      by_id[st.id] = st
    end
    local open = {}
    for id, s in pairs(state.sessions) do
      open[#open + 1] = { id = id, session = s, stored = by_id[id] }
    end
    table.sort(open, function(a, b)
      return a.id < b.id
    end)
    for _, item in ipairs(open) do
      items[#items + 1] = item
      seen[item.id] = true
    end
    for _, st in ipairs(stored) do
      if not seen[st.id] then
        items[#items + 1] = { id = st.id, stored = st }
      end
    end
    items[#items + 1] = { new = true }
    vim.ui.select(items, { prompt = "agent-lsp sessions", kind = "agent_lsp.sessions", format_item = label }, function(item)
      local function done(id)
        if on_done then
          on_done(id)
        end
      end
      if not item then
        return
      end
      if item.new then
        M.new_session(nil, function(r)
          done(r and r.sessionId)
        end)
      elseif item.session then
        M.switch(item.id, function()
          done(item.id)
        end)
      else
        M.resume(item.id, function(r)
          done(r and r.sessionId)
        end)
      end
    end)
  end)
end

--- The user message under the cursor in the chat (the `## You` heading above it): `cb(item)`
--- with `{messageId, text}`, or nothing (and a notification) when the cursor is elsewhere.
--- The chat's user messages are matched to the session's from the end, so a chat that shows
--- only the newest of them (after a compaction) still finds the right one.
---@param cb fun(item: {messageId: string, text: string})
function M.message_at_cursor(cb)
  local function refuse(why)
    vim.notify("agent-lsp: " .. why, vim.log.levels.WARN)
  end
  if not state.current then
    return refuse("no session")
  end
  if vim.api.nvim_get_current_buf() ~= chat.buf then
    return refuse("put the cursor on a `## You` message in the chat")
  end
  local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  local cursor = vim.api.nvim_win_get_cursor(0)[1]
  local heading
  for l = cursor, 1, -1 do
    if lines[l]:match("^## ") then
      heading = l
      break
    end
  end
  if not heading or lines[heading] ~= "## You" then
    return refuse("put the cursor on a `## You` message in the chat")
  end
  local index, total = 0, 0
  for l, line in ipairs(lines) do
    if line == "## You" then
      total = total + 1
      if l <= heading then
        index = total
      end
    end
  end
  local session_id = state.current
  M.user_messages(session_id, function(list)
    local item = list[#list - (total - index)]
    if not item then
      return refuse("that message is not recorded in the session (yet)")
    end
    cb(item)
  end)
end

--- Shows the fork `result` (`{sessionId, cwd, text}` of `agent/forkSession`) in the chat and
--- puts the forked message back into the prompt input, to edit and send again.
---@param result table
---@param client_id integer?
---@param on_done fun(sessionId: string)?
function M.continue_fork(result, client_id, on_done)
  require("agent_lsp.commands").adopt(result, client_id)
  M.switch(result.sessionId, function()
    if on_done then
      on_done(result.sessionId)
    end
    vim.ui.input({ prompt = "Agent prompt: ", default = result.text or "" }, function(text)
      if text and text ~= "" then
        require("agent_lsp.commands").prompt(text)
      end
    end)
  end)
end

--- Forks the session before the user message under the cursor (`agent/forkSession`): the
--- chat shows the fork, and the message is offered again in the prompt input.
---@param on_done fun(sessionId: string)?
function M.fork(on_done)
  M.message_at_cursor(function(item)
    local params = { sessionId = state.current, messageId = item.messageId }
    lsp().request(protocol.methods.fork_session, params, function(result, client_id)
      M.continue_fork(result, client_id, on_done)
    end)
  end)
end

--- Names the current session (`agent/renameSession`); the picker shows the name as its title.
---@param name string
---@param on_done fun(name: string)?
function M.rename(name, on_done)
  if not state.current then
    vim.notify("agent-lsp: no session to rename", vim.log.levels.WARN)
    return
  end
  lsp().request(protocol.methods.rename_session, { sessionId = state.current, name = name }, function(result)
    local named = type(result) == "table" and result.name or name
    vim.notify("agent-lsp: session renamed to " .. tostring(named), vim.log.levels.INFO)
    if on_done then
      on_done(named)
    end
  end)
end

return M
