--- agent_lsp.mcp: the MCP servers of the current session, and the trust prompt's wording.
---
--- `:AgentMcp` shows `agent/mcpStatus` (each server's state, error and tools) in a float; while
--- it is open every `mcp_update` event of that session redraws it (protocol.md §3.10). The
--- daemon asks before it starts a project's `.mcp.json` servers with an `agent/beforeToolCall`
--- named `mcp_servers`; `trust_prompt` and `trust_lines` say which servers and commands, and what
--- changed since the user's last answer (`args.changes`). After a
--- "no", `t` in the view (or `ask_trust()`) has the daemon ask again (`agent/mcpAskTrust`).

local protocol = require("agent_lsp.protocol")
local state = require("agent_lsp.state")

local M = {}

---@type integer? the view's buffer
M.buf = nil
---@type string? the session the view shows
M.session = nil
---@type table[] the servers last shown
M.servers = {}

local icons = { ready = "●", starting = "…", failed = "✗", disabled = "○", untrusted = "?" }

--- The view's lines for a server list.
---@param servers table[]
---@return string[]
function M.lines(servers)
  local lines = { "MCP servers of session " .. tostring(M.session), "" }
  if #servers == 0 then
    lines[#lines + 1] = "(no MCP servers: see :help agent_lsp-mcp)"
  end
  for _, s in ipairs(servers) do
    local tools = type(s.tools) == "table" and s.tools or {}
    lines[#lines + 1] = string.format("%s %s  %s  %d tools", icons[s.state] or " ", tostring(s.name), tostring(s.state), #tools)
    if type(s.error) == "string" and s.error ~= "" then
      for i, l in ipairs(vim.split(s.error, "\n", { plain = true, trimempty = true })) do
        lines[#lines + 1] = (i == 1 and "    error: " or "           ") .. l
      end
    end
    if #tools > 0 then
      lines[#lines + 1] = "    tools: " .. table.concat(tools, ", ")
    end
  end
  lines[#lines + 1] = ""
  local waiting = vim.iter(servers):any(function(s)
    return s.state == "untrusted"
  end)
  lines[#lines + 1] = waiting and "t: trust the project's servers (asks again)  r: refresh  q: close"
    or "r: refresh  q: close"
  return lines
end

local function valid()
  return M.buf ~= nil and vim.api.nvim_buf_is_valid(M.buf)
end

--- Redraws the view with `servers`.
---@param servers table[]
function M.render(servers)
  M.servers = servers
  if not valid() then
    return
  end
  local buf = M.buf --[[@as integer]]
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, M.lines(servers))
  vim.bo[buf].modifiable = false
end

--- Asks the daemon for the servers of the shown session and redraws.
---@param on_done fun(servers: table[])?
function M.refresh(on_done)
  if not M.session then
    return
  end
  require("agent_lsp").request(protocol.methods.mcp_status, { sessionId = M.session }, function(result)
    local servers = type(result) == "table" and result.servers or {}
    M.render(servers)
    if on_done then
      on_done(servers)
    end
  end)
end

local function open_float(buf)
  local width = math.min(math.max(50, math.floor(vim.o.columns * 0.6)), vim.o.columns - 4)
  local height = math.max(5, math.floor(vim.o.lines * 0.4))
  return vim.api.nvim_open_win(buf, true, {
    relative = "editor",
    width = width,
    height = height,
    row = math.floor((vim.o.lines - height) / 2),
    col = math.floor((vim.o.columns - width) / 2),
    border = "rounded",
    title = " agent-lsp: MCP servers ",
  })
end

--- Opens (or focuses) the view of the current session's servers. With no session yet, one is
--- created: its servers start with it.
---@param on_done fun(servers: table[])?
function M.open(on_done)
  if not state.current then
    return require("agent_lsp.sessions").new_session(nil, function()
      M.open(on_done)
    end)
  end
  M.session = state.current
  if not valid() then
    local buf = vim.api.nvim_create_buf(false, true)
    vim.bo[buf].buftype = "nofile"
    vim.bo[buf].bufhidden = "wipe"
    vim.bo[buf].modifiable = false
    vim.api.nvim_buf_set_name(buf, "agent-lsp://mcp")
    vim.keymap.set("n", "q", "<cmd>close<cr>", { buffer = buf, desc = "agent-lsp: close the MCP view" })
    vim.keymap.set("n", "r", function()
      M.refresh()
    end, { buffer = buf, desc = "agent-lsp: refresh the MCP view" })
    vim.keymap.set("n", "t", function()
      M.ask_trust()
    end, { buffer = buf, desc = "agent-lsp: ask again about the project's MCP servers" })
    M.buf = buf
  end
  local shown = vim.fn.bufwinid(M.buf)
  if shown ~= -1 then
    vim.api.nvim_set_current_win(shown)
  else
    open_float(M.buf)
  end
  M.render(M.servers)
  M.refresh(on_done)
end

--- Has the daemon ask again whether the project's `.mcp.json` servers may start (after a "no",
--- remembered or not): its trust question follows as usual.
---@param on_done fun(asked: boolean)?
function M.ask_trust(on_done)
  local session = M.session or state.current
  if not session then
    vim.notify("agent-lsp: no session", vim.log.levels.INFO)
    return
  end
  require("agent_lsp").request(protocol.methods.mcp_ask_trust, { sessionId = session }, function(result)
    local asked = type(result) == "table" and result.asked == true
    if not asked then
      vim.notify("agent-lsp: no MCP server of this project waits to be allowed", vim.log.levels.INFO)
    end
    if on_done then
      on_done(asked)
    end
  end)
end

--- Event listener: `mcp_update` of the shown session redraws the view.
---@param params table
function M.on_event(params)
  local ev = params.event or {}
  if ev.type == "mcp_update" and params.sessionId == M.session and type(ev.servers) == "table" then
    M.render(ev.servers)
  end
end

--- Whether an approval request is the daemon asking to trust a project's `.mcp.json`.
---@param params table
---@return boolean
function M.is_trust(params)
  return params.toolName == "mcp_servers"
end

--- The servers a trust request names: `{name, command}` items.
---@param params table
---@return table[]
local function trust_servers(params)
  local args = type(params.args) == "table" and params.args or {}
  return type(args.servers) == "table" and args.servers or {}
end

--- What changed since the user's last answer (`args.changes`, `[]` for a first question).
---@param params table
---@return string[]
function M.trust_changes(params)
  local args = type(params.args) == "table" and params.args or {}
  return vim.tbl_filter(function(c)
    return type(c) == "string" and c ~= ""
  end, type(args.changes) == "table" and args.changes or {})
end

--- The picker prompt of a trust request, naming each server and its command, and what
--- changed since the last answer.
---@param params table
---@return string
function M.trust_prompt(params)
  local args = type(params.args) == "table" and params.args or {}
  local named = vim.tbl_map(function(s)
    return string.format("%s (%s)", tostring(s.name), tostring(s.command))
  end, trust_servers(params))
  local prompt = string.format(
    "agent-lsp: start the MCP servers of %s/.mcp.json? %s",
    tostring(args.project or "the project"),
    table.concat(named, ", ")
  )
  local changes = M.trust_changes(params)
  if #changes > 0 then
    prompt = prompt .. " (changed since your last answer: " .. table.concat(changes, "; ") .. ")"
  end
  return prompt
end

--- The preview float's lines for a trust request.
---@param params table
---@return string[]
function M.trust_lines(params)
  local args = type(params.args) == "table" and params.args or {}
  local lines = {
    string.format("%s/.mcp.json wants to start these programs:", tostring(args.project or "the project")),
    "",
  }
  for _, s in ipairs(trust_servers(params)) do
    lines[#lines + 1] = string.format("  %s: %s", tostring(s.name), tostring(s.command))
  end
  local changes = M.trust_changes(params)
  if #changes > 0 then
    lines[#lines + 1] = ""
    lines[#lines + 1] = "Changed since your last answer:"
    for _, c in ipairs(changes) do
      lines[#lines + 1] = "  " .. c
    end
  end
  lines[#lines + 1] = ""
  lines[#lines + 1] = "Either answer is remembered for this project until the file's servers change"
  lines[#lines + 1] = "(after a no, t in :AgentMcp asks again)."
  return lines
end

--- The picker's choices for a trust request.
M.trust_choices = {
  { label = "Start them (remembered for this project)", decision = protocol.decisions.allow },
  { label = "Do not start them (remembered for this project)", decision = protocol.decisions.block },
}

return M
