--- agent_lsp.controls: the live model and thinking level, and what the session costs.
---
--- `:AgentModel` picks from `agent/listModels` and switches the running session
--- (`agent/setModel`, no restart); `:AgentThinking` sets `agent/setThinkingLevel`. What the chat
--- window's winbar and `require("agent_lsp").model_status()` show (model, thinking level,
--- context use from `agent/getStats`, cost) is refreshed when a session is first seen, after
--- each run, after a compaction and on every `model_update` (protocol.md §3.11).

local protocol = require("agent_lsp.protocol")
local state = require("agent_lsp.state")

local M = {}

---@class agent_lsp.Controls
---@field model table? ModelInfo
---@field thinking string?
---@field stats table? the last agent/getStats result

---@type table<string, agent_lsp.Controls>
M.sessions = {}

local function lsp()
  return require("agent_lsp")
end

local function info(id)
  local c = M.sessions[id]
  if not c then
    c = {}
    M.sessions[id] = c
  end
  return c
end

local function redraw()
  -- `:redrawstatus!` redraws every statusline and winbar.
  pcall(vim.cmd.redrawstatus, { bang = true })
end

--- Compact count: 950, 1.2k, 3.4M.
---@param n number
---@return string
function M.short(n)
  if n >= 1e6 then
    return string.format("%.1fM", n / 1e6)
  elseif n >= 1e3 then
    return string.format("%.1fk", n / 1e3)
  end
  return tostring(math.floor(n))
end

--- Cost in USD: four decimals below a cent.
---@param usd number
---@return string
function M.money(usd)
  return string.format(usd < 0.01 and "$%.4f" or "$%.2f", usd)
end

local function num(v)
  return type(v) == "number" and v or nil
end

--- A background request about session `id`, to the daemon the session lives in (with two
--- workspace roots, another session's events come from another daemon). Errors are not shown:
--- nobody asked for this refresh; `cb(nil)` then.
---@param id string
---@param method string
---@param params table
---@param cb fun(result: any)
local function ask(id, method, params, cb)
  local s = state.sessions[id]
  local client = s and s.client_id and vim.lsp.get_client_by_id(s.client_id) or lsp().client()
  if not (client and client.initialized and not client:is_stopped()) then
    return cb(nil)
  end
  local sent = client:request(method, params, function(err, result)
    cb(not err and result or nil)
  end)
  if not sent then
    cb(nil)
  end
end

--- Fetches model, thinking level and stats of a session; `on_done` runs once both answered.
---@param id string?
---@param on_done fun()?
function M.refresh(id, on_done)
  id = id or state.current
  if not id then
    if on_done then
      on_done()
    end
    return
  end
  local pending = 2
  local function one()
    pending = pending - 1
    if pending == 0 then
      redraw()
      if on_done then
        on_done()
      end
    end
  end
  ask(id, protocol.methods.get_state, { sessionId = id }, function(result)
    if type(result) == "table" then
      local c = info(id)
      -- getState's model is {provider, id}; keep the full ModelInfo when it is the same model.
      local m = type(result.model) == "table" and result.model or nil
      if m and not (c.model and c.model.provider == m.provider and c.model.id == m.id) then
        c.model = m
      end
      c.thinking = result.thinkingLevel or c.thinking
    end
    one()
  end)
  ask(id, protocol.methods.get_stats, { sessionId = id }, function(result)
    if type(result) == "table" then
      info(id).stats = result
    end
    one()
  end)
end

--- The status of a session as one line: `gpt-4.1-mini · think off · ctx 1.2k/1.0M (0.1%) · $0.0012`.
---@param id string?
---@return string
function M.status(id)
  id = id or state.current
  local c = id and M.sessions[id]
  if not c then
    return "agent: no session"
  end
  local parts = {}
  if c.model then
    parts[#parts + 1] = tostring(c.model.provider) .. "/" .. tostring(c.model.id)
  end
  if c.thinking then
    parts[#parts + 1] = "think " .. c.thinking
  end
  local stats = c.stats
  local usage = stats and type(stats.contextUsage) == "table" and stats.contextUsage or nil
  if usage then
    local tokens, window, percent = num(usage.tokens), num(usage.contextWindow), num(usage.percent)
    parts[#parts + 1] = string.format(
      "ctx %s/%s (%s)",
      tokens and M.short(tokens) or "?",
      window and M.short(window) or "?",
      percent and string.format("%.1f%%", percent) or "?"
    )
  elseif stats then
    parts[#parts + 1] = "ctx ?"
  end
  if stats and num(stats.cost) then
    parts[#parts + 1] = M.money(stats.cost)
  end
  return table.concat(parts, " · ")
end

--- The chat window's winbar: the session status (idle/running/approval/question), the plan's
--- progress (`plan 2/5`), the running background jobs (`1 job`) and `status()`.
---@return string
function M.winbar()
  local id = state.current
  local s = id and state.sessions[id]
  local head = "agent: " .. (s and s.status or "idle")
  for _, part in ipairs({
    s and require("agent_lsp.plan").summary(s.plan) or false,
    s and require("agent_lsp.jobs").summary(id) or false,
  }) do
    if part then
      head = head .. " · " .. part
    end
  end
  if not (id and M.sessions[id]) then
    return head
  end
  return head .. " · " .. M.status(id)
end

--- The winbar option value for a window showing the chat (`%{}`: no `%` escaping needed).
M.winbar_expr = "%{v:lua.require'agent_lsp.controls'.winbar()}"

--- A session the plugin has just learned of (from a reply): its status is fetched once.
---@param id string
function M.seen(id)
  if not M.sessions[id] then
    info(id)
    M.refresh(id)
  end
end

--- Event listener: keeps the status of each session current.
---@param params table
function M.on_event(params)
  local ev = params.event or {}
  local id = params.sessionId
  if type(id) ~= "string" then
    return
  end
  if ev.type == "model_update" then
    local c = info(id)
    c.model = type(ev.model) == "table" and ev.model or c.model
    c.thinking = ev.thinkingLevel or c.thinking
    -- A new model has another context window: the percentage changes with it.
    M.refresh(id)
  elseif ev.type == "agent_settled" or ev.type == "compaction_end" then
    M.refresh(id)
  else
    M.seen(id)
  end
end

--- A `/model` prompt sends no message: the daemon answers with the model (protocol.md §3.14),
--- which is shown here.
---@param result table?
function M.on_prompt_result(result)
  if type(result) ~= "table" or result.disposition ~= "command" or result.command ~= "model" then
    return
  end
  local m = type(result.model) == "table" and result.model or nil
  if not m then
    return
  end
  if result.sessionId then
    local c = info(result.sessionId)
    c.model, c.thinking = m, result.thinkingLevel or c.thinking
    redraw()
  end
  vim.notify(
    string.format("agent-lsp model: %s/%s, thinking %s", tostring(m.provider), tostring(m.id), tostring(result.thinkingLevel)),
    vim.log.levels.INFO
  )
end

--- `agent/listModels` -> `cb(models)`.
---@param cb fun(models: table[])
function M.list_models(cb)
  lsp().request(protocol.methods.list_models, vim.empty_dict(), function(result)
    cb(type(result) == "table" and result.models or {})
  end, { for_session = state.current ~= nil })
end

--- `:AgentModel` argument completion: the `provider/id` of every usable model (asked from the
--- running daemon, at most a second).
---@param arglead string
---@return string[]
function M.complete_models(arglead)
  local client = lsp().client()
  if not (client and client.initialized) then
    return {}
  end
  local res = client:request_sync(protocol.methods.list_models, vim.empty_dict(), 1000)
  local models = res and type(res.result) == "table" and res.result.models or {}
  local out = {}
  for _, m in ipairs(models) do
    local spec = tostring(m.provider) .. "/" .. tostring(m.id)
    if vim.startswith(spec, arglead) then
      out[#out + 1] = spec
    end
  end
  return out
end

--- Warns when the current session's model does not list image input (`ModelInfo.input`): the
--- daemon sends an attached image to it all the same.
function M.check_images()
  local id = state.current
  if not id then
    return
  end
  local c = info(id)
  local function check(m)
    if type(m.input) == "table" and not vim.tbl_contains(m.input, "image") then
      vim.notify(
        string.format("agent-lsp: %s/%s does not take images (its input is text only); the image is sent as it is", tostring(m.provider), tostring(m.id)),
        vim.log.levels.WARN
      )
    end
  end
  if c.model and c.model.input then
    return check(c.model)
  end
  M.list_models(function(models)
    for _, m in ipairs(models) do
      if c.model and m.provider == c.model.provider and m.id == c.model.id then
        c.model = m
        return check(m)
      end
    end
  end)
end

--- One picker line for a ModelInfo.
---@param m table
---@param current table?
---@return string
function M.model_label(m, current)
  local mark = current and current.provider == m.provider and current.id == m.id and "* " or "  "
  local cost = type(m.cost) == "table" and string.format("  $%s/$%s per M", tostring(m.cost.input), tostring(m.cost.output)) or ""
  local ctx = num(m.contextWindow) and ("  ctx " .. M.short(m.contextWindow)) or ""
  local name = m.name and m.name ~= m.id and ("  " .. tostring(m.name)) or ""
  return string.format("%s%s/%s%s%s%s%s", mark, m.provider, m.id, name, ctx, cost, m.reasoning and "  thinking" or "")
end

--- Picks a model with `vim.ui.select` and switches to it (see `commands.model`).
---@param on_done fun(model: string?)?
function M.pick_model(on_done)
  M.list_models(function(models)
    if #models == 0 then
      vim.notify("agent-lsp: no usable models (see :checkhealth agent_lsp)", vim.log.levels.WARN)
      return
    end
    local current = state.current and info(state.current).model
    vim.ui.select(models, {
      prompt = "agent-lsp model" .. (current and (" (now " .. current.provider .. "/" .. current.id .. ")") or ""),
      kind = "agent_lsp.model",
      format_item = function(m)
        return M.model_label(m, current)
      end,
    }, function(m)
      if not m then
        return
      end
      local spec = m.provider .. "/" .. m.id
      -- The status follows the daemon's model_update, not the pick (a switch can be refused).
      require("agent_lsp.commands").model(spec, function(switched)
        if on_done then
          on_done(switched)
        end
      end)
    end)
  end)
end

--- Sets the thinking level of the current session; answers `on_done(level)` with the level the
--- daemon kept (clamped to what the model accepts).
---@param level string
---@param on_done fun(level: string)?
function M.set_thinking(level, on_done)
  if not state.current then
    vim.notify("agent-lsp: no session yet; send a prompt first", vim.log.levels.INFO)
    return
  end
  local id = state.current
  lsp().request(protocol.methods.set_thinking_level, { sessionId = id, level = level }, function(result)
    if type(result) ~= "table" then
      return
    end
    local c = info(id)
    c.model = type(result.model) == "table" and result.model or c.model
    c.thinking = result.thinkingLevel
    redraw()
    if result.thinkingLevel ~= level then
      vim.notify(
        string.format(
          "agent-lsp: %s does not take thinking %s; set to %s",
          c.model and (tostring(c.model.provider) .. "/" .. tostring(c.model.id)) or "the model",
          level,
          tostring(result.thinkingLevel)
        ),
        vim.log.levels.INFO
      )
    end
    if on_done then
      on_done(result.thinkingLevel)
    end
  end)
end

--- Every level the protocol knows (`agent/setThinkingLevel`).
M.levels = { "off", "minimal", "low", "medium", "high", "xhigh" }

--- Picks the thinking level among those the current model accepts.
---@param on_done fun(level: string)?
function M.pick_thinking(on_done)
  if not state.current then
    vim.notify("agent-lsp: no session yet; send a prompt first", vim.log.levels.INFO)
    return
  end
  local c = info(state.current)
  local function pick(levels)
    vim.ui.select(levels, {
      prompt = "agent-lsp thinking level" .. (c.thinking and (" (now " .. c.thinking .. ")") or ""),
      kind = "agent_lsp.thinking",
    }, function(level)
      if level then
        M.set_thinking(level, on_done)
      end
    end)
  end
  if c.model and type(c.model.thinkingLevels) == "table" then
    return pick(c.model.thinkingLevels)
  end
  -- getState names the model without its levels: find them in the listing.
  M.list_models(function(models)
    for _, m in ipairs(models) do
      if c.model and m.provider == c.model.provider and m.id == c.model.id then
        c.model = m
        return pick(m.thinkingLevels or { "off" })
      end
    end
    pick(M.levels)
  end)
end

return M
