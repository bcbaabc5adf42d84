--- agent_lsp.approval: answers `agent/beforeToolCall` through `vim.ui.select`.
---
--- The handler runs inside the coroutine Neovim's LSP client wraps server requests in, so it
--- yields while the user decides and its return value is the JSON-RPC reply. A float shows the
--- preview (the unified diff of an edit, or the command and cwd of bash) while the picker is open.
--- When the run is aborted the daemon cancels the request; the pending approval is then closed
--- and answered with RequestCancelled (the daemon has already treated it as declined).

local protocol = require("agent_lsp.protocol")
local pending = require("agent_lsp.pending")
local state = require("agent_lsp.state")

local M = {}

---@class agent_lsp.PendingApproval
---@field params table
---@field co thread
---@field preview_win integer?
---@field done boolean

---@type agent_lsp.PendingApproval[]
M.pending = {}

local choices = {
  { label = "Allow", decision = protocol.decisions.allow },
  { label = "Always allow (this session)", decision = protocol.decisions.allow_always },
  { label = "Reject", decision = protocol.decisions.block },
  { label = "Reject with a reason…", decision = protocol.decisions.block, ask_reason = true },
  { label = "Always reject (this session)", decision = protocol.decisions.block_always },
}
M.choices = choices

--- The `fetch` preview of a network approval (`{type = "fetch", url, host, local}`), or nil.
---@param params table
---@return table?
function M.fetch_preview(params)
  local p = params.preview
  if type(p) == "table" and p.type == protocol.preview_types.fetch and type(p.url) == "string" then
    return p
  end
  return nil
end

local default_ports = { http = "80", https = "443" }

--- What an "always" answer to a fetch covers (protocol.md §4.2): the URL's site, its host with
--- the port when the URL names one that is not the scheme's default (`localhost:8000`).
---@param fetch table the `fetch` preview
---@return string?
function M.site(fetch)
  local host = type(fetch.host) == "string" and fetch.host ~= "" and fetch.host or nil
  if not host then
    return nil
  end
  local scheme, authority = fetch.url:match("^(%a[%w+.-]*)://([^/?#]*)")
  local port = authority and authority:gsub("^.*@", ""):match(":(%d+)$")
  if port and port ~= default_ports[scheme:lower()] then
    return host .. ":" .. port
  end
  return host
end

--- The picker's choices for a request: "always" of a fetch covers its site only, and says so;
--- with `alwaysRules` (protocol.md §4.2) each "always" is offered per scope, naming its rules.
---@param params table
---@return table[]
function M.choices_for(params)
  return require("agent_lsp.scopes").expand(params, M.site_choices(params))
end

--- The picker's choices with a fetch's "always" naming its site (one scope, the session).
---@param params table
---@return table[]
function M.site_choices(params)
  local fetch = M.fetch_preview(params)
  local site = fetch and M.site(fetch)
  if not site then
    return choices
  end
  return vim.tbl_map(function(c)
    if c.decision == protocol.decisions.allow_always then
      return vim.tbl_extend("force", c, { label = "Always allow for " .. site .. " (this session)" })
    elseif c.decision == protocol.decisions.block_always then
      return vim.tbl_extend("force", c, { label = "Always reject for " .. site .. " (this session)" })
    end
    return c
  end, choices)
end

--- The picker's prompt: what the agent wants to do (for the network, the URL and its host).
---@param params table
---@return string
function M.prompt(params)
  if params.kind == "network" then
    local what = tostring(params.title or params.toolName)
    local fetch = M.fetch_preview(params)
    if fetch then
      if not what:find(fetch.url, 1, true) then
        what = what .. " " .. fetch.url
      end
      if fetch["local"] == true then
        what = what .. " (" .. tostring(fetch.host) .. " is this machine or a local network)"
      end
    end
    return "agent-lsp wants to reach the network: " .. what
  end
  return string.format("agent-lsp wants to %s: %s", params.kind or "run", params.title or params.toolName)
end

--- Shown when approving saves the user's own unsaved changes too (`savesUnsavedChanges`).
M.unsaved_warning = "Warning: approving also saves your unsaved changes in this file."

--- What sandboxed commands may reach: none, everything, or the allowlist's hosts.
---@param network boolean?
---@param domains string[]?
---@return string
function M.network_words(network, domains)
  if type(domains) == "table" then
    if #domains > 0 then
      return "network only to " .. table.concat(domains, ", ")
    end
    return "no network (the allowlist names no host)"
  end
  return network and "full network" or "no network"
end

--- Where a sandboxed command may write, under its mode.
---@param mode string?
---@return string
function M.write_words(mode)
  if mode == "readOnly" then
    return "nowhere but its temporary directory"
  end
  return "only inside the workspace (not its protected paths, such as .git) and its temporary directory"
end

--- What a `bash` approval says about the command sandbox (`sandbox`, protocol.md §3.17, §4.2):
--- how the command runs once approved (for a sandboxed one where it may write and what it may
--- reach, the allowlist's hosts included), then, for a sandboxed one, the layers it runs in
--- (`layers`) and each thing the sandbox does not keep it from on this machine (`notIsolated`).
--- Empty for other tools.
---@param params table
---@return string[]
function M.sandbox_lines(params)
  local s = params.sandbox
  if type(s) ~= "table" then
    return {}
  end
  if type(s.justification) == "string" then
    return { "Runs OUTSIDE the sandbox, with your rights. The model says: " .. s.justification }
  end
  if type(s.unavailable) == "string" then
    return { "Runs unsandboxed, with your rights: the sandbox is unavailable (" .. s.unavailable .. ")" }
  end
  if s.sandboxed ~= true then
    return { "Runs with your full rights (no sandbox)" }
  end
  local network = s.mode == "readOnly" and "no network" or M.network_words(s.network, s.allowedDomains)
  local lines = { string.format("Runs sandboxed (%s): writes %s; %s", tostring(s.mode), M.write_words(s.mode), network) }
  local layers = vim.tbl_filter(function(l)
    return type(l) == "string" and l ~= ""
  end, type(s.layers) == "table" and s.layers or {})
  if #layers > 0 then
    lines[#lines + 1] = "Layers: " .. table.concat(layers, ", ")
  end
  local gaps = vim.tbl_filter(function(g)
    return type(g) == "string" and g ~= ""
  end, type(s.notIsolated) == "table" and s.notIsolated or {})
  if #gaps > 0 then
    lines[#lines + 1] = "Not isolated here:"
    for _, g in ipairs(gaps) do
      lines[#lines + 1] = "  - " .. g
    end
  end
  return lines
end

--- The sandbox in one line for the picker's prompt (`sandbox_lines` joined), or nil.
---@param params table
---@return string?
function M.sandbox_line(params)
  local lines = M.sandbox_lines(params)
  if #lines == 0 then
    return nil
  end
  local line = lines[1]
  local gaps = {}
  for i = 2, #lines do
    local l = lines[i]
    if l:find("^Layers: ") then
      line = line .. ". " .. l
    elseif l:find("^  %- ") then
      gaps[#gaps + 1] = (l:gsub("^  %- ", ""))
    end
  end
  if #gaps > 0 then
    line = line .. ". Not isolated here: " .. table.concat(gaps, "; ")
  end
  return line
end

--- The files a `diff` preview changes (`paths`, else its `path`), relative to the current
--- directory when under it.
---@param p table the preview
---@return string[]
function M.diff_files(p)
  local paths = type(p.paths) == "table" and p.paths or { p.path }
  local out = {}
  for _, path in ipairs(paths) do
    if type(path) == "string" then
      out[#out + 1] = vim.fn.fnamemodify(path, ":.")
    end
  end
  return out
end

--- The preview as lines plus a filetype for highlighting.
---@param params table
---@return string[] lines, string filetype
function M.preview_lines(params)
  if require("agent_lsp.mcp").is_trust(params) then
    return require("agent_lsp.mcp").trust_lines(params), "text"
  end
  local p = params.preview
  -- The header: the call, the warning when approving saves the user's changes, a blank line.
  local function head()
    local lines = { string.format("%s: %s", params.toolName or "tool", params.title or "") }
    if params.savesUnsavedChanges == true then
      lines[#lines + 1] = M.unsaved_warning
    end
    vim.list_extend(lines, M.sandbox_lines(params))
    lines[#lines + 1] = ""
    return lines
  end
  if type(p) == "string" then
    return vim.list_extend(head(), vim.split(p, "\n", { plain = true })), "diff"
  end
  if type(p) == "table" then
    if type(p.diff) == "string" then
      local lines = head()
      -- An edit of several files (`lsp_rename` with apply): name them before their diff, which
      -- has a ---/+++ header per file.
      local files = M.diff_files(p)
      if #files > 1 then
        lines[#lines + 1] = string.format("Changes %d files:", #files)
        for _, f in ipairs(files) do
          lines[#lines + 1] = "  " .. f
        end
        lines[#lines + 1] = ""
      end
      return vim.list_extend(lines, vim.split(p.diff, "\n", { plain = true })), "diff"
    end
    if M.fetch_preview(params) then
      local lines = head()
      lines[#lines + 1] = "GET " .. p.url
      if p["local"] == true then
        lines[#lines + 1] = tostring(p.host) .. " is this machine or a local network: approving lets the agent read from it."
      end
      local site = M.site(p)
      if site then
        lines[#lines + 1] = '"Always" answers for ' .. site .. " only, for the rest of the session."
      end
      return lines, "text"
    end
    if type(p.command) == "string" then
      local lines = head()
      vim.list_extend(lines, vim.split("$ " .. p.command, "\n", { plain = true }))
      if p.cwd then
        lines[#lines + 1] = "(in " .. tostring(p.cwd) .. ")"
      end
      return lines, "sh"
    end
  end
  local lines = head()
  lines[#lines + 1] = vim.json.encode(params.args or vim.empty_dict())
  return lines, "json"
end

--- Opens the preview float without taking focus.
---@param params table
---@return integer win
local function open_preview(params)
  local lines, ft = M.preview_lines(params)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].filetype = ft
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].modifiable = false
  local width = math.min(math.max(40, math.floor(vim.o.columns * 0.6)), vim.o.columns - 4)
  local height = math.min(#lines, math.max(3, math.floor(vim.o.lines * 0.5)))
  return vim.api.nvim_open_win(buf, false, {
    relative = "editor",
    width = width,
    height = height,
    row = 1,
    col = vim.o.columns - width - 2,
    border = "rounded",
    title = " agent-lsp: approve? ",
    style = "minimal",
  })
end

local function close_preview(p)
  if p.preview_win and vim.api.nvim_win_is_valid(p.preview_win) then
    vim.api.nvim_win_close(p.preview_win, true)
  end
  p.preview_win = nil
end

local function finish(p, result, err)
  if p.done then
    return
  end
  p.done = true
  close_preview(p)
  pending.remove(M.pending, p)
  local s = state.sessions[p.params.sessionId]
  if s and s.status == "approval" and #M.pending == 0 then
    s.status = "running"
  end
  pending.resume(p.co, result, err)
end

--- Cancels pending approvals (all, or those of one session): they close and reply cancelled.
---@param session_id string?
function M.cancel(session_id)
  pending.cancel(M.pending, session_id, finish, "approval cancelled")
end

--- Turns the picked item into the reply; asks for a reason when needed.
local function decide(p, item)
  if not item then
    finish(p, { decision = protocol.decisions.block, reason = "Rejected by the user" })
    return
  end
  if not item.ask_reason then
    finish(p, { decision = item.decision, scope = item.scope })
    return
  end
  vim.ui.input({ prompt = "Reason: " }, function(reason)
    finish(p, { decision = item.decision, reason = reason ~= "" and reason or nil })
  end)
end

--- The `agent/beforeToolCall` request handler.
---@param params table {sessionId, runId, toolCallId, toolName, args, kind, title, preview?, savesUnsavedChanges?, sandbox?}
function M.handler(_, params, _)
  local co = coroutine.running()
  if not co then
    return nil, vim.lsp.rpc_response_error(-32603, "approval handler must run in a coroutine")
  end
  local p = { params = params, co = co, done = false } ---@type agent_lsp.PendingApproval
  M.pending[#M.pending + 1] = p
  state.session(params.sessionId).status = "approval"
  local ok, win = pcall(open_preview, params)
  p.preview_win = ok and win or nil
  vim.schedule(function()
    local prompt = M.prompt(params)
    if params.savesUnsavedChanges == true then
      prompt = prompt .. " (" .. M.unsaved_warning .. ")"
    end
    local sandbox = M.sandbox_line(params)
    if sandbox then
      prompt = prompt .. " (" .. sandbox .. ")"
    end
    local trust = require("agent_lsp.mcp").is_trust(params)
    if trust then
      prompt = require("agent_lsp.mcp").trust_prompt(params)
    end
    -- Draw the preview first: a blocking picker (the builtin inputlist) would otherwise cover a
    -- screen that was never redrawn with it.
    pcall(vim.cmd.redraw)
    local ok_select, err = pcall(vim.ui.select, trust and require("agent_lsp.mcp").trust_choices or M.choices_for(params), {
      prompt = prompt,
      kind = "agent_lsp.approval",
      format_item = function(item)
        return item.label
      end,
    }, function(item)
      if p.done then
        vim.notify("agent-lsp: that approval is no longer pending", vim.log.levels.INFO)
        return
      end
      decide(p, item)
    end)
    if not ok_select then
      -- A broken picker must not leave the agent waiting: refuse, and say why.
      vim.notify("agent-lsp: the approval picker failed: " .. tostring(err), vim.log.levels.ERROR)
      finish(p, { decision = protocol.decisions.block, reason = "The editor could not ask the user" })
    end
  end)
  return coroutine.yield()
end

--- Event listener: a settled run has no approvals left to answer.
---@param params table
function M.on_event(params)
  local ev = params.event or {}
  if ev.type == "agent_settled" or ev.type == "agent_end" then
    M.cancel(params.sessionId)
  end
end

return M
