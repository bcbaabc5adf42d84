--- agent_lsp.jobs: the session's background jobs (commands the model started with
--- `bash {background: true}`).
---
--- `:AgentJobs` lists them (`agent/listJobs`, protocol.md §3.18) in a buffer that every `job_update` of the session
--- redraws; on a job's line `<CR>` (or `o`) shows its output (`agent/jobOutput`, the last 64 KiB
--- it printed) and `x` stops it (`agent/killJob`). The chat gets one line when a job starts and
--- one when it ends, and the winbar counts the running ones.

local protocol = require("agent_lsp.protocol")
local state = require("agent_lsp.state")

local M = {}

---@class agent_lsp.Job
---@field jobId string "job-1", "job-2", … per session
---@field command string
---@field status "running"|"exited"|"killed"|"failed"
---@field exitCode integer?
---@field startedAt integer? ms since the epoch
---@field endedAt integer? ms since the epoch

---@type integer? the list's buffer
M.buf = nil
---@type string? the session the list shows
M.session = nil
--- The job on each line of the list (1-based line -> job id).
local line_jobs = {} ---@type table<integer, string|integer>
--- Output buffers by job key (`session\0jobId`).
local outputs = {} ---@type table<string, integer>
--- What the chat said of each job (job key -> status), so each start and end is said once.
local announced = {} ---@type table<string, string>

local function lsp()
  return require("agent_lsp")
end

local function key(session, job_id)
  return tostring(session) .. "\0" .. tostring(job_id)
end

--- Stores a job in its session's state; returns the stored job.
---@param session string
---@param job agent_lsp.Job
---@return agent_lsp.Job
function M.remember(session, job)
  local s = state.session(session)
  s.jobs = s.jobs or {}
  s.jobs[tostring(job.jobId)] = job
  return job
end

--- The jobs of a session, oldest first.
---@param session string?
---@return agent_lsp.Job[]
function M.list(session)
  local s = session and state.sessions[session]
  local out = vim.tbl_values(s and s.jobs or {})
  table.sort(out, function(a, b)
    if (a.startedAt or 0) ~= (b.startedAt or 0) then
      return (a.startedAt or 0) < (b.startedAt or 0)
    end
    return tostring(a.jobId) < tostring(b.jobId)
  end)
  return out
end

--- "1 job" / "3 jobs" running in the session, for the winbar and statusline; nil when none.
---@param session string?
---@return string?
function M.summary(session)
  local n = 0
  for _, job in ipairs(M.list(session)) do
    if job.status == "running" then
      n = n + 1
    end
  end
  if n == 0 then
    return nil
  end
  return n == 1 and "1 job" or (n .. " jobs")
end

--- "4s", "2m 05s", "1h 03m".
---@param ms number
---@return string
function M.duration(ms)
  local s = math.max(0, math.floor(ms / 1000))
  if s < 60 then
    return s .. "s"
  elseif s < 3600 then
    return string.format("%dm %02ds", math.floor(s / 60), s % 60)
  end
  return string.format("%dh %02dm", math.floor(s / 3600), math.floor(s / 60) % 60)
end

--- How a job stands: "running 12s", "exited 0 after 3s", "exited 1 after 2s", "stopped after
--- 1m 04s", "failed to start".
---@param job agent_lsp.Job
---@param now_ms number? (default: now)
---@return string
function M.status_text(job, now_ms)
  -- (JSON null arrives as vim.NIL: `exitCode` is null while a job runs, and for a stopped one.)
  local started = type(job.startedAt) == "number" and job.startedAt or nil
  local ended = type(job.endedAt) == "number" and job.endedAt or nil
  local code = type(job.exitCode) == "number" and job.exitCode or nil
  local took = started and M.duration((ended or now_ms or os.time() * 1000) - started)
  if job.status == "running" then
    return "running" .. (took and (" " .. took) or "")
  end
  local after = took and ended and (" after " .. took) or ""
  if job.status == "exited" then
    return "exited " .. tostring(code or "?") .. after
  elseif job.status == "killed" then
    return "stopped" .. after
  end
  return "failed" .. (code and (" " .. tostring(code)) or "") .. after
end

local icons = { running = "●", exited = "✓", killed = "■", failed = "✗" }

--- One line of the list: icon, id, how it stands, the command (its first line).
---@param job agent_lsp.Job
---@param now_ms number?
---@return string
function M.label(job, now_ms)
  local icon = icons[job.status] or "?"
  if job.status == "exited" and type(job.exitCode) == "number" and job.exitCode ~= 0 then
    icon = "✗"
  end
  local command = tostring(job.command or ""):gsub("\n.*", " …")
  return string.format("%s %-6s %-22s %s", icon, tostring(job.jobId), M.status_text(job, now_ms), command)
end

--- The list's lines and the job on each line.
---@param session string?
---@param jobs agent_lsp.Job[]
---@return string[] lines, table<integer, string|integer> line_jobs
function M.lines(session, jobs)
  local lines = {
    "Background jobs of session " .. tostring(session),
    "<CR>/o: output   x: stop   r: refresh   q: close",
    "",
  }
  local at = {}
  if #jobs == 0 then
    lines[#lines + 1] = "(no jobs: the agent starts one with bash in the background)"
  end
  for _, job in ipairs(jobs) do
    lines[#lines + 1] = M.label(job)
    at[#lines] = job.jobId
  end
  return lines, at
end

local function valid(buf)
  return buf ~= nil and vim.api.nvim_buf_is_valid(buf)
end

local function set_lines(buf, lines)
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
end

--- Redraws the list from the session's jobs.
function M.render()
  if not valid(M.buf) then
    return
  end
  local lines
  lines, line_jobs = M.lines(M.session, M.list(M.session))
  set_lines(M.buf, lines)
end

--- Asks the daemon for the shown session's jobs (`agent/listJobs`) and redraws.
---@param on_done fun(jobs: agent_lsp.Job[])?
function M.refresh(on_done)
  local session = M.session
  if not session then
    return
  end
  lsp().request(protocol.methods.list_jobs, { sessionId = session }, function(result)
    local s = state.session(session)
    s.jobs = {}
    for _, job in ipairs(type(result) == "table" and result.jobs or {}) do
      if type(job) == "table" and job.jobId ~= nil then
        M.remember(session, job)
      end
    end
    M.render()
    if on_done then
      on_done(M.list(session))
    end
  end)
end

--- The job on the cursor's line of the list, or nil (and a hint).
---@return string|integer?
local function job_at_cursor()
  local id = line_jobs[vim.api.nvim_win_get_cursor(0)[1]]
  if id == nil then
    vim.notify("agent-lsp: put the cursor on a job's line", vim.log.levels.INFO)
  end
  return id
end

--- Opens (or focuses) the list of the current session's jobs.
---@param on_done fun(jobs: agent_lsp.Job[])?
function M.open(on_done)
  if not state.current then
    vim.notify("agent-lsp: no session", vim.log.levels.INFO)
    return
  end
  M.session = state.current
  if not valid(M.buf) then
    local buf = vim.api.nvim_create_buf(false, true)
    vim.bo[buf].buftype = "nofile"
    vim.bo[buf].bufhidden = "hide"
    vim.bo[buf].swapfile = false
    vim.bo[buf].modifiable = false
    vim.api.nvim_buf_set_name(buf, "agent-lsp://jobs")
    local function map(lhs, fn, desc)
      vim.keymap.set("n", lhs, fn, { buffer = buf, desc = "agent-lsp: " .. desc })
    end
    local function output()
      local id = job_at_cursor()
      if id ~= nil then
        M.output(id)
      end
    end
    map("<CR>", output, "show the job's output")
    map("o", output, "show the job's output")
    map("x", function()
      local id = job_at_cursor()
      if id ~= nil then
        M.kill(id)
      end
    end, "stop the job")
    map("r", function()
      M.refresh()
    end, "refresh the jobs")
    map("q", "<cmd>close<cr>", "close the jobs")
    M.buf = buf
  end
  local win = vim.fn.bufwinid(M.buf)
  if win ~= -1 then
    vim.api.nvim_set_current_win(win)
  else
    vim.api.nvim_open_win(M.buf, true, { split = "below", height = 8 })
  end
  M.render()
  M.refresh(on_done)
end

--- The output buffer of a job (created on first use).
---@param session string
---@param job_id string|integer
---@return integer
local function output_buf(session, job_id)
  local k = key(session, job_id)
  local buf = outputs[k]
  if valid(buf) then
    return buf --[[@as integer]]
  end
  buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].swapfile = false
  vim.bo[buf].modifiable = false
  vim.api.nvim_buf_set_name(buf, "agent-lsp://job/" .. tostring(job_id))
  vim.keymap.set("n", "r", function()
    M.output(job_id, { session = session })
  end, { buffer = buf, desc = "agent-lsp: refresh the job's output" })
  vim.keymap.set("n", "x", function()
    M.kill(job_id, { session = session })
  end, { buffer = buf, desc = "agent-lsp: stop the job" })
  vim.keymap.set("n", "q", "<cmd>close<cr>", { buffer = buf, desc = "agent-lsp: close the output" })
  vim.api.nvim_create_autocmd("BufWipeout", {
    buffer = buf,
    once = true,
    callback = function()
      outputs[k] = nil
    end,
  })
  outputs[k] = buf
  return buf
end

--- The output view's lines: what the job is, then what it printed (the last 64 KiB).
---@param job agent_lsp.Job?
---@param result table {jobId, output, truncated}
---@return string[]
function M.output_lines(job, result)
  local head = job and string.format("%s: %s (%s)", tostring(job.jobId), tostring(job.command), M.status_text(job))
    or tostring(result.jobId)
  local lines = { head, "r: refresh   x: stop   q: close", "" }
  if result.truncated then
    lines[#lines + 1] = "[… earlier output cut: the daemon keeps the last 64 KiB]"
  end
  local text = tostring(result.output or "")
  if text == "" then
    lines[#lines + 1] = "(no output yet)"
  else
    vim.list_extend(lines, vim.split((text:gsub("\n$", "")), "\n", { plain = true }))
  end
  return lines
end

--- Shows a job's output (`agent/jobOutput`) in a split of its own (or refreshes it there),
--- scrolled to the end.
---@param job_id string|integer
---@param opts {session: string?, on_done: fun(lines: string[])?, focus: boolean?}?
function M.output(job_id, opts)
  opts = opts or {}
  local session = opts.session or M.session or state.current
  if not session then
    return
  end
  local params = { sessionId = session, jobId = job_id }
  lsp().request(protocol.methods.job_output, params, function(result)
    if type(result) ~= "table" then
      return
    end
    local s = state.sessions[session]
    local job = s and s.jobs and s.jobs[tostring(job_id)]
    local lines = M.output_lines(job, result)
    local buf = output_buf(session, job_id)
    set_lines(buf, lines)
    local win = vim.fn.bufwinid(buf)
    if win == -1 and opts.focus ~= false then
      win = vim.api.nvim_open_win(buf, true, { split = "above", height = math.max(6, math.floor(vim.o.lines * 0.4)) })
    end
    if win ~= -1 then
      vim.api.nvim_win_set_cursor(win, { #lines, 0 })
    end
    if opts.on_done then
      opts.on_done(lines)
    end
  end)
end

--- Stops a job (`agent/killJob`); the list shows it stopped.
---@param job_id string|integer
---@param opts {session: string?, on_done: fun(job: agent_lsp.Job)?}?
function M.kill(job_id, opts)
  opts = opts or {}
  local session = opts.session or M.session or state.current
  if not session then
    return
  end
  lsp().request(protocol.methods.kill_job, { sessionId = session, jobId = job_id }, function(result)
    local job = type(result) == "table" and result.job or nil
    if type(job) == "table" then
      M.remember(session, job)
      M.render()
    end
    vim.notify("agent-lsp: " .. tostring(job_id) .. " stopped", vim.log.levels.INFO)
    if opts.on_done then
      opts.on_done(job)
    end
  end)
end

--- The chat's line for a job that started or ended, once per change; nil when there is
--- nothing new to say.
---@param session string
---@param job agent_lsp.Job
---@return string?
function M.chat_line(session, job)
  local k = key(session, job.jobId)
  local ended = job.status ~= "running"
  local said = announced[k]
  if said == job.status or (said and said ~= "running" and ended) then
    return nil
  end
  announced[k] = job.status
  local command = tostring(job.command or ""):gsub("\n.*", " …")
  if not ended then
    return string.format("_%s started in the background: `%s` (:AgentJobs)_", tostring(job.jobId), command)
  end
  return string.format("_%s %s: `%s`_", tostring(job.jobId), M.status_text(job), command)
end

--- The chat was cleared: what it said of jobs is gone with it.
function M.forget_chat()
  announced = {}
end

--- Event listener: `job_update` redraws the list and refreshes an open output of that job.
---@param params table
function M.on_event(params)
  local ev = params.event or {}
  if ev.type ~= "job_update" or type(ev.job) ~= "table" then
    return
  end
  if params.sessionId == M.session then
    M.render()
  end
  local buf = outputs[key(params.sessionId, ev.job.jobId)]
  if valid(buf) and vim.fn.bufwinid(buf) ~= -1 then
    M.output(ev.job.jobId, { session = params.sessionId, focus = false })
  end
end

return M
