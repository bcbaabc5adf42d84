--- agent_lsp.state: what the plugin knows about sessions, fed by `$/agentEvent`.
---
--- One table per session id: status (idle/running/approval), accumulated token usage, the
--- steering and follow-up queues, and the last event sequence number seen. The statusline reads
--- from here; nothing here talks to the daemon.

local M = {}

---@class agent_lsp.Session
---@field id string
---@field status "idle"|"running"|"approval"
---@field run_id string?
---@field tokens integer total tokens reported by finished assistant messages
---@field cost number
---@field context_tokens integer tokens of the last assistant message (the context size)
---@field steering string[]
---@field follow_up string[]
---@field last_seq integer
---@field gaps integer sequence gaps observed (should stay 0)
---@field aborted boolean whether the last settled run was aborted
---@field model string?
---@field client_id integer? the LSP client (daemon) the session lives in
---@field cwd string? the session's working directory, when the daemon said it (agent/newSession)
---@field plan table[]? the model's plan (`plan_update`, `agent/getState.plan`): `{content, status}` items
---@field jobs table<string, agent_lsp.Job>? background jobs by id (`job_update`, `agent/listJobs`)

---@type table<string, agent_lsp.Session>
M.sessions = {}

---@type string? the session the chat buffer shows and commands target
M.current = nil

--- Returns the session's state, creating it on first sight.
---@param id string
---@return agent_lsp.Session
function M.session(id)
  local s = M.sessions[id]
  if not s then
    s = {
      id = id,
      status = "idle",
      tokens = 0,
      cost = 0,
      context_tokens = 0,
      steering = {},
      follow_up = {},
      last_seq = 0,
      gaps = 0,
      aborted = false,
    }
    M.sessions[id] = s
  end
  return s
end

--- Forgets everything.
function M.reset()
  M.sessions = {}
  M.current = nil
end

--- Forgets the sessions of a daemon that exited; returns their ids.
---@param client_id integer?
---@return string[]
function M.forget_client(client_id)
  local gone = {}
  for id, s in pairs(M.sessions) do
    if s.client_id == nil or s.client_id == client_id then
      gone[#gone + 1] = id
    end
  end
  for _, id in ipairs(gone) do
    M.sessions[id] = nil
    if M.current == id then
      M.current = nil
    end
  end
  return gone
end

--- Text of a queued message (`QueuedMessage {messageId, text}`).
---@param item any
---@return string
local function queued_text(item)
  if type(item) == "table" then
    return tostring(item.text or "")
  end
  return tostring(item)
end

--- Updates session state from one `$/agentEvent` notification. Returns the session.
---@param params {sessionId:string, runId:string?, seq:integer, event:table}
---@param client_id integer?
---@return agent_lsp.Session
function M.apply(params, client_id)
  local s = M.session(params.sessionId)
  s.client_id = client_id or s.client_id
  if type(params.seq) == "number" then
    if s.last_seq > 0 and params.seq ~= s.last_seq + 1 then
      s.gaps = s.gaps + 1
    end
    s.last_seq = params.seq
  end
  local ev = params.event or {}
  if ev.type == "agent_start" then
    s.status = "running"
    s.run_id = params.runId
    s.aborted = false
  elseif ev.type == "message_end" and ev.message and ev.message.role == "assistant" then
    local usage = ev.message.usage
    if type(usage) == "table" then
      s.tokens = s.tokens + (usage.totalTokens or 0)
      s.context_tokens = usage.totalTokens or s.context_tokens
      if type(usage.cost) == "table" then
        s.cost = s.cost + (usage.cost.total or 0)
      end
    end
    if ev.message.provider and ev.message.model then
      s.model = ev.message.provider .. "/" .. ev.message.model
    end
  elseif ev.type == "queue_update" then
    s.steering = vim.tbl_map(queued_text, ev.steering or {})
    s.follow_up = vim.tbl_map(queued_text, ev.followUp or {})
  elseif ev.type == "agent_settled" then
    s.status = "idle"
    s.aborted = ev.aborted == true
  elseif ev.type == "plan_update" and type(ev.todos) == "table" then
    s.plan = ev.todos
  elseif ev.type == "job_update" and type(ev.job) == "table" and ev.job.jobId ~= nil then
    s.jobs = s.jobs or {}
    s.jobs[tostring(ev.job.jobId)] = ev.job
  end
  return s
end

--- Compact token count: 950, 1.2k, 3.4M.
---@param n integer
---@return string
local function short(n)
  if n >= 1e6 then
    return string.format("%.1fM", n / 1e6)
  elseif n >= 1e3 then
    return string.format("%.1fk", n / 1e3)
  end
  return tostring(n)
end

--- The statusline text for the current session: `agent: idle`, `agent: running 1.2k tok +2q`,
--- then the plan's progress (`plan 2/5`) when the model keeps one and the running background
--- jobs (`1 job`).
---@return string
function M.statusline()
  local s = M.current and M.sessions[M.current]
  if not s then
    return "agent: idle"
  end
  local parts = { "agent: " .. s.status }
  if s.tokens > 0 then
    parts[#parts + 1] = short(s.tokens) .. " tok"
  end
  local queued = #s.steering + #s.follow_up
  if queued > 0 then
    parts[#parts + 1] = "+" .. queued .. "q"
  end
  parts[#parts + 1] = require("agent_lsp.plan").summary(s.plan)
  parts[#parts + 1] = require("agent_lsp.jobs").summary(s.id)
  return table.concat(parts, " ")
end

return M
