--- agent_lsp.sandbox: the command sandbox of the current session in words (protocol.md §3.17).
---
--- `:AgentSandbox` reads `agent/getState.sandbox` and shows its mode, where a command may write,
--- its network (the allowlist's hosts), every layer (Landlock and its ABI, the namespaces,
--- seccomp, the allowlist proxy), what it does not isolate on this machine (`notIsolated`) and
--- the hosts the allowlist refused. `:checkhealth agent_lsp` reports the same.

local protocol = require("agent_lsp.protocol")
local state = require("agent_lsp.state")

local M = {}

local function layer_state(l, details)
  if type(l) ~= "table" then
    return "not reported"
  end
  if not l.available then
    return "unavailable" .. (type(l.reason) == "string" and (" (" .. l.reason .. ")") or "")
  end
  return (l.active and "active" or "available, not used now") .. (details or "")
end

--- `agent/getState.sandbox` as lines (the same words as the VS Code extension's status).
---@param s table
---@return string[]
function M.status_lines(s)
  local words = require("agent_lsp.approval")
  local lines = {}
  if s.available == false then
    lines[#lines + 1] = "Unavailable on this machine"
      .. (type(s.reason) == "string" and (": " .. s.reason) or "")
      .. ". A command that would run sandboxed asks you first."
  end
  if s.mode == "off" then
    lines[#lines + 1] = "Mode: off" .. (s.explicit and " (set)" or "") .. ": commands run with your full rights."
  else
    lines[#lines + 1] = s.explicit
        and string.format("Mode: %s (set), for every command, those you approve too.", tostring(s.mode))
      or string.format(
        "Mode: %s (the default), for the commands that run without asking; those you approve by hand run with your rights.",
        tostring(s.mode)
      )
    lines[#lines + 1] = "Writes: " .. words.write_words(s.mode) .. "."
    local d = type(s.allowedDomains) == "table" and s.allowedDomains or nil
    local network
    if s.mode == "readOnly" then
      network = "none"
    elseif d then
      network = #d > 0 and ("only " .. table.concat(d, ", ") .. ", through the daemon's proxy")
        or "none (the allowlist names no host)"
    else
      network = s.network and "full (yours)" or "none"
    end
    lines[#lines + 1] = "Network: " .. network .. "."
  end
  local l = type(s.layers) == "table" and s.layers or nil
  if l then
    local ll = l.landlock
    local features = {}
    if type(ll) == "table" and ll.available then
      if ll.ioctlDev then
        features[#features + 1] = "device ioctls refused"
      end
      if ll.scopes then
        features[#features + 1] = "signals and abstract sockets kept inside"
      end
    end
    local abi = type(ll) == "table" and ll.abi and (" ABI " .. tostring(ll.abi)) or ""
    lines[#lines + 1] = string.format(
      "Landlock%s: %s.",
      abi,
      layer_state(ll, #features > 0 and (" (" .. table.concat(features, ", ") .. ")") or nil)
    )
    local ns = l.namespaces
    local kinds = type(ns) == "table" and ns.active and type(ns.kinds) == "table" and #ns.kinds > 0
      and (" (" .. table.concat(ns.kinds, ", ") .. ")")
    lines[#lines + 1] = "Namespaces: " .. layer_state(ns, kinds or nil) .. "."
    local sc = l.seccomp
    lines[#lines + 1] = "seccomp: "
      .. layer_state(sc, type(sc) == "table" and sc.active and " (Unix sockets, io_uring, keyrings refused)" or nil)
      .. "."
    local p = l.proxy
    local proxy = type(p) ~= "table" and "not reported"
      or p.active and "active"
      or p.available and "available, not used (no allowlist)"
      or "unavailable (it needs namespaces)"
    lines[#lines + 1] = "Allowlist proxy: " .. proxy .. "."
  end
  if type(s.notIsolated) == "table" then -- (an older daemon does not say)
    local gaps = vim.tbl_filter(function(g)
      return type(g) == "string" and g ~= ""
    end, s.notIsolated)
    lines[#lines + 1] = #gaps > 0 and "Not isolated here:" or "Not isolated here: nothing (every layer is in place)."
    for _, g in ipairs(gaps) do
      lines[#lines + 1] = "  - " .. g
    end
  end
  if type(s.refusedHosts) == "table" and #s.refusedHosts > 0 then
    lines[#lines + 1] = "Refused by the allowlist: " .. table.concat(s.refusedHosts, ", ") .. "."
  end
  return lines
end

--- Whether the status deserves a warning: no sandbox, an unavailable one, or gaps.
---@param s table
---@return boolean
function M.is_weak(s)
  return s.available == false or s.mode == "off" or (type(s.notIsolated) == "table" and #s.notIsolated > 0)
end

--- Shows the current session's sandbox (`:AgentSandbox`); with no session yet, one is created.
--- `on_done(lines, sandbox)` gets what was shown.
---@param on_done fun(lines: string[], sandbox: table)?
function M.show(on_done)
  if not state.current then
    return require("agent_lsp.sessions").new_session(nil, function()
      M.show(on_done)
    end)
  end
  local session = state.current
  require("agent_lsp").request(protocol.methods.get_state, { sessionId = session }, function(result)
    local s = type(result) == "table" and result.sandbox or nil
    if type(s) ~= "table" then
      vim.notify("agent-lsp: this daemon does not report a command sandbox", vim.log.levels.WARN)
      return
    end
    local lines = M.status_lines(s)
    vim.notify(
      "agent-lsp: the command sandbox of session " .. tostring(session) .. "\n" .. table.concat(lines, "\n"),
      M.is_weak(s) and vim.log.levels.WARN or vim.log.levels.INFO
    )
    if on_done then
      on_done(lines, s)
    end
  end)
end

return M
