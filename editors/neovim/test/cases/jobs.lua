--- Background jobs (`bash {background: true}`): `:AgentJobs` lists them from `agent/listJobs`,
--- `job_update` redraws the list, `<CR>` shows a job's output (`agent/jobOutput`), `x` stops it
--- (`agent/killJob`); the chat says when a job starts and ends, the statusline counts them.

local function job(id, status, extra)
  return vim.tbl_extend("force", { jobId = id, command = "npm run dev", status = status, startedAt = 1000000 }, extra or {})
end

return {
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
