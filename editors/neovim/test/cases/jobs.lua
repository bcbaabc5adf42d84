--- Background jobs (`bash {background: true}`): `:AgentJobs` lists them from `agent/listJobs`,
--- `job_update` redraws the list, `<CR>` shows a job's output (`agent/jobOutput`), `x` stops it
--- (`agent/killJob`); the chat says when a job starts and ends, the statusline counts them.

local function job(id, status, extra)
  return vim.tbl_extend("force", { jobId = id, command = "npm run dev", status = status, startedAt = 1000000 }, extra or {})
end

--- Lets every approval through (a command the machine cannot sandbox asks).
local function allow_all()
  vim.ui.select = function(items, opts, on_choice)
    if opts.kind == "agent_lsp.approval" then
      return on_choice(items[1])
    end
    on_choice(nil)
  end
end

--- The text of the :AgentJobs buffer.
local function list_text()
  local buf = require("agent_lsp.jobs").buf
  if not (buf and vim.api.nvim_buf_is_valid(buf)) then
    return ""
  end
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
end

--- Puts the cursor of the :AgentJobs window on the line of `job_id`.
local function cursor_on(H, job_id)
  local jobs = require("agent_lsp.jobs")
  local win = vim.fn.bufwinid(jobs.buf)
  assert(win ~= -1, "the jobs list is shown")
  vim.api.nvim_set_current_win(win)
  for i, l in ipairs(vim.api.nvim_buf_get_lines(jobs.buf, 0, -1, false)) do
    if l:find(job_id, 1, true) then
      return vim.api.nvim_win_set_cursor(win, { i, 0 })
    end
  end
  error("no line of " .. job_id .. " in:\n" .. list_text())
end

local function buffer_named(name)
  local buf = vim.fn.bufnr(name)
  if buf == -1 then
    return nil
  end
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
end

return {
  {
    name = "a background job is listed by AgentJobs, its output shown and stopped from there",
    run = function(H)
      local mock = H.mock({
        responses = {
          {
            text = "Starting the server.",
            toolCalls = {
              { id = "b1", name = "bash", arguments = { command = "echo job-says-hello; sleep 300", background = true } },
            },
          },
          { text = "It runs in the background." },
        },
      })
      local root = H.workspace({})
      vim.cmd.cd(root)
      H.setup(mock, { approval = { bash = "allow" } })
      allow_all()
      vim.cmd("AgentPrompt start the server")
      H.settled(1)
      local chat = require("agent_lsp.chat")
      H.contains(chat.text(), "_job-1 started in the background: `echo job-says-hello; sleep 300` (:AgentJobs)_", "the chat says it started")
      H.contains(require("agent_lsp").statusline(), "1 job", "the statusline counts it")

      vim.cmd("AgentJobs")
      H.wait("the job listed", function()
        return list_text():find("job-1  running", 1, true)
      end)
      H.contains(list_text(), "echo job-says-hello; sleep 300", "its command")
      cursor_on(H, "job-1")
      vim.cmd.normal(vim.keycode("<CR>"))
      H.wait("its output", function()
        return (buffer_named("agent-lsp://job/job-1") or ""):find("job-says-hello", 1, true)
      end)
      H.contains(buffer_named("agent-lsp://job/job-1"), "job-1: echo job-says-hello; sleep 300 (running", "the output's header")

      cursor_on(H, "job-1")
      vim.cmd.normal("x")
      H.wait("the job stopped", function()
        return list_text():find("job-1  stopped", 1, true)
      end)
      local updates = H.events_of("job_update")
      H.eq("killed", updates[#updates].event.job.status, "its last job_update")
      H.wait("the chat says it ended", function()
        return chat.text():find("_job-1 stopped after ", 1, true)
      end)
      assert(not require("agent_lsp").statusline():find("job", 1, true), "no running job counted")
    end,
  },
  {
    name = "the list follows job_update while the model reads and stops its job",
    run = function(H)
      local mock = H.mock({
        responses = {
          { toolCalls = { { id = "b1", name = "bash", arguments = { command = "echo tick; sleep 300", background = true } } } },
          { toolCalls = { { id = "o1", name = "bash_output", arguments = { jobId = "job-1" } } } },
          { toolCalls = { { id = "k1", name = "bash_kill", arguments = { jobId = "job-1" } } } },
          { text = "Stopped it." },
        },
      })
      local root = H.workspace({})
      vim.cmd.cd(root)
      H.setup(mock, { approval = { bash = "allow", bash_kill = "allow" } })
      allow_all()
      local done
      require("agent_lsp.sessions").new_session(nil, function()
        done = true
      end)
      H.wait("a session", function()
        return done
      end)
      local listed
      require("agent_lsp.jobs").open(function(jobs)
        listed = jobs
      end)
      H.wait("the empty list", function()
        return listed
      end)
      H.contains(list_text(), "(no jobs", "no jobs yet")
      -- What the list shows at each job_update, drawn from the event alone.
      local shown = {}
      table.insert(require("agent_lsp.events").listeners, function(params)
        if params.event.type == "job_update" then
          shown[#shown + 1] = list_text()
        end
      end)
      vim.cmd("AgentPrompt start and stop a job")
      H.settled(1)
      H.eq(2, #shown, "two job_updates: started and stopped")
      H.contains(shown[1], "job-1  running", "started")
      H.contains(shown[2], "job-1  stopped", "stopped")
      H.contains(vim.json.encode(mock.requests()[3].body), "tick", "bash_output gave the model the job's output")
    end,
  },
  {
    name = "client: job_update says start and end once in the chat and counts running jobs",
    run = function(H)
      local state = require("agent_lsp.state")
      local events = require("agent_lsp.events")
      local chat = require("agent_lsp.chat")
      state.current = "s1"
      local seq = 0
      local function update(j)
        seq = seq + 1
        events.on_event({ sessionId = "s1", runId = "r1", seq = seq, event = { type = "job_update", job = j } })
      end
      update(job("job-1", "running"))
      update(job("job-1", "running")) -- nothing new to say
      update(job("job-2", "running", { command = "sleep 100" }))
      H.contains(require("agent_lsp").statusline(), "2 jobs", "statusline counts the running jobs")
      update(job("job-1", "exited", { exitCode = 0, endedAt = 1003000 }))
      update(job("job-2", "killed", { command = "sleep 100", endedAt = 1065000 }))
      update(job("job-2", "killed", { command = "sleep 100", endedAt = 1065000 }))
      local text = chat.text()
      H.eq(
        table.concat({
          "_job-1 started in the background: `npm run dev` (:AgentJobs)_",
          "",
          "_job-2 started in the background: `sleep 100` (:AgentJobs)_",
          "",
          "_job-1 exited 0 after 3s: `npm run dev`_",
          "",
          "_job-2 stopped after 1m 05s: `sleep 100`_",
        }, "\n"),
        text,
        "one chat line per start and end"
      )
      assert(not require("agent_lsp").statusline():find("job", 1, true), "no running job counted")
    end,
  },
  {
    name = "client: a job that starts while its bash call runs is said below the call's result",
    run = function(H)
      local state = require("agent_lsp.state")
      local events = require("agent_lsp.events")
      state.current = "s1"
      local seq = 0
      local function send(ev)
        seq = seq + 1
        events.on_event({ sessionId = "s1", runId = "r1", seq = seq, event = ev })
      end
      local args = { command = "npm run dev", background = true }
      send({ type = "tool_execution_start", toolCallId = "b1", toolName = "bash", args = args })
      send({ type = "job_update", job = job("job-1", "running") })
      send({
        type = "tool_execution_end",
        toolCallId = "b1",
        toolName = "bash",
        result = { content = { { type = "text", text = "Started background job job-1" } } },
        isError = false,
      })
      H.eq(
        "- tool `bash` npm run dev\n    Started background job job-1\n\n_job-1 started in the background: `npm run dev` (:AgentJobs)_",
        require("agent_lsp.chat").text(),
        "the result under its call, the job line after"
      )
    end,
  },
  {
    name = "client: a job that ends while an answer streams is said after the streamed block",
    run = function(H)
      local state = require("agent_lsp.state")
      local events = require("agent_lsp.events")
      state.current = "s1"
      local seq = 0
      local function send(ev)
        seq = seq + 1
        events.on_event({ sessionId = "s1", runId = "r1", seq = seq, event = ev })
      end
      local function delta(kind, text)
        send({ type = "message_update", assistantMessageEvent = { type = kind, contentIndex = 0, delta = text } })
      end
      send({ type = "message_start", message = { role = "assistant", content = {} } })
      delta("text_delta", "The server ")
      send({ type = "job_update", job = job("job-1", "exited", { exitCode = 1, endedAt = 1000000 }) })
      delta("text_delta", "runs.")
      send({ type = "message_update", assistantMessageEvent = { type = "text_end", contentIndex = 0 } })
      delta("text_delta", "More.")
      H.eq(
        "## Agent\n\nThe server runs.\n\n_job-1 exited 1 after 0s: `npm run dev`_\n\nMore.",
        require("agent_lsp.chat").text(),
        "the streamed text is whole, the job's line after it"
      )
    end,
  },
  {
    name = "client: the list's lines and a job's output view",
    run = function(H)
      local jobs = require("agent_lsp.jobs")
      local now = 1012000
      local lines, at = jobs.lines("s1", {
        job("job-1", "running", { exitCode = vim.NIL }),
        job("job-2", "exited", { exitCode = 2, endedAt = 1002000, command = "cargo test\n--all" }),
        job("job-3", "failed", { exitCode = vim.NIL }),
      })
      H.eq("Background jobs of session s1", lines[1], "title")
      H.contains(lines[2], "<CR>/o: output   x: stop", "keys")
      H.eq({ [4] = "job-1", [5] = "job-2", [6] = "job-3" }, at, "the job of each line")
      H.eq("running 12s", jobs.status_text(job("job-1", "running"), now), "running duration")
      H.contains(lines[5], "✗ job-2  exited 2 after 2s", "a failed exit")
      H.contains(lines[5], "cargo test …", "the command's first line")
      H.contains(lines[6], "✗ job-3  failed", "a job that failed")
      local out = jobs.output_lines(job("job-1", "running"), { jobId = "job-1", output = "listening on :3000\n", truncated = true })
      H.contains(out[1], "job-1: npm run dev (running", "output header")
      H.eq("[… earlier output cut: the daemon keeps the last 64 KiB]", out[4], "truncated")
      H.eq("listening on :3000", out[5], "output")
      H.eq(5, #out, "no trailing empty line")
    end,
  },
}
