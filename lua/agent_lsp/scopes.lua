--- agent_lsp.scopes: the "always" answers of an approval per scope (protocol.md §4.2, §3.23).
---
--- When `agent/beforeToolCall` carries `alwaysRules {session, project, user}`, "Always allow" and
--- "Always reject" are offered for this session, this project
--- (`.agent-lsp/settings.local.json`) and the user (every project), each naming the rules it
--- saves; the answer carries the `scope`.

local protocol = require("agent_lsp.protocol")

local M = {}

--- How each scope is said in a label, in the order offered.
M.order = {
  { scope = protocol.scopes.session, says = "this session" },
  { scope = protocol.scopes.project, says = "this project" },
  { scope = protocol.scopes.user, says = "me, every project" },
}

--- The rules of a scope, or nil when there are none.
---@param params table
---@param scope string
---@return string[]?
function M.rules(params, scope)
  local always = params.alwaysRules
  local list = type(always) == "table" and always[scope]
  if type(list) ~= "table" or #list == 0 then
    return nil
  end
  return list
end

--- `choices` with each "always" item replaced by one per scope that has rules. Without
--- `alwaysRules` they are returned unchanged (the session's, as before).
---@param params table
---@param choices table[]
---@return table[]
function M.expand(params, choices)
  if type(params.alwaysRules) ~= "table" then
    return choices
  end
  local out = {}
  for _, c in ipairs(choices) do
    local always = c.decision == protocol.decisions.allow_always or c.decision == protocol.decisions.block_always
    if not always then
      out[#out + 1] = c
    else
      for _, o in ipairs(M.order) do
        local rules = M.rules(params, o.scope)
        if rules then
          local label = o.scope == protocol.scopes.session and c.label
            or c.label:gsub("%(this session%)", "(" .. o.says .. ")")
          out[#out + 1] = vim.tbl_extend("force", c, {
            label = label .. ": " .. table.concat(rules, ", "),
            scope = o.scope,
          })
        end
      end
    end
  end
  return out
end

return M
