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

--- Renders a session's stored messages into the (cleared) chat buffer.
---@param messages table[]
local function render_history(messages)
  chat.clear()
  for _, msg in ipairs(messages or {}) do
    if msg.role == "user" then
      chat.heading("You")
      chat.append(chat.content_text(msg.content))
    elseif msg.role == "assistant" then
      chat.heading("Agent")
      chat.append(chat.content_text(msg.content))
      for _, b in ipairs(type(msg.content) == "table" and msg.content or {}) do
        if b.type == "toolCall" then
          chat.paragraph(string.format("- tool `%s`", b.name or "?"))
        end
      end
    end
  end
end

--- Makes `id` the current session and shows its history.
---@param id string
---@param on_done fun()?
function M.switch(id, on_done)
  state.current = id
  state.session(id)
  chat.clear()
  lsp().request(protocol.methods.get_messages, { sessionId = id }, function(result)
    render_history(type(result) == "table" and (result.messages or result) or {})
    if on_done then
      on_done()
    end
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

--- Lists stored sessions of the workspace, newest first: `cb(list)` with `{id, name, updated,
--- messageCount, cwd}` items (empty when the binary cannot list them; the reason is notified).
---@param cb fun(list: table[])
function M.stored(cb)
  local opts = config.options
  local root = vim.fs.root(0, opts.root_markers) or vim.fn.getcwd()
  local cmd = { opts.cmd[1], "sessions", "list", "--json", "--cwd", root }
  local env = vim.tbl_extend("force", vim.fn.environ(), opts.cmd_env or {})
  local ok, err = pcall(vim.system, cmd, { text = true, env = env, clear_env = true }, function(res)
    vim.schedule(function()
      if res.code ~= 0 then
        vim.notify("agent-lsp: listing stored sessions failed: " .. vim.trim(res.stderr or ""), vim.log.levels.WARN)
        return cb({})
      end
      local list = {}
      for line in (res.stdout or ""):gmatch("[^\n]+") do
        local decoded_ok, item = pcall(vim.json.decode, line)
        if decoded_ok and type(item) == "table" and item.id then
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

local function label(item)
  if item.new then
    return "+ new session"
  end
  local mark = item.id == state.current and "* " or "  "
  if item.session then
    local s = item.session
    return string.format("%s%s  %s, %d tok", mark, item.id, s.status, s.tokens)
  end
  local st = item.stored
  return string.format(
    "%s%s  stored, %s messages, %s%s",
    mark,
    item.id,
    tostring(st.messageCount or "?"),
    tostring(st.updated or ""),
    st.name and st.name ~= vim.NIL and ("  " .. tostring(st.name)) or ""
  )
end

--- Picks a session with `vim.ui.select`: this Neovim's open sessions, then the workspace's
--- stored ones (resumed when picked), then "+ new session".
---@param on_done fun(id: string?)?
function M.pick(on_done)
  M.stored(function(stored)
    local items, seen = {}, {}
    local open = {}
    for id, s in pairs(state.sessions) do
      open[#open + 1] = { id = id, session = s }
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

return M
