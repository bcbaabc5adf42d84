--- The model's questions (`agent/askUser`): answered through `vim.ui.select` and `vim.ui.input`
--- (stubbed here as a user's picker plugin would answer them), shown in the chat with the answer.

--- Runs the `agent/askUser` handler as Neovim runs server requests (in a coroutine) and returns
--- a function that gives its reply once it came.
local function ask(params)
  local reply
  local co = coroutine.create(function()
    local result, err = require("agent_lsp.ask").handler(nil, params, {})
    reply = { result = result, err = err }
  end)
  assert(coroutine.resume(co))
  return function()
    return reply
  end
end

--- Answers the next pickers with the labels in `answers` (nil: close the picker), recording
--- each picker's prompt and labels.
local function stub_select(answers)
  local calls = {}
  vim.ui.select = function(items, opts, on_choice)
    local labels = vim.tbl_map(opts.format_item, items)
    calls[#calls + 1] = { prompt = opts.prompt, kind = opts.kind, labels = labels }
    local want = table.remove(answers, 1)
    for i, l in ipairs(labels) do
      if want and l == want then
        return on_choice(items[i], i)
      end
    end
    on_choice(nil)
  end
  return calls
end

local function stub_input(answers)
  local prompts = {}
  vim.ui.input = function(opts, on_confirm)
    prompts[#prompts + 1] = opts.prompt
    on_confirm(table.remove(answers, 1))
  end
  return prompts
end

local function base(extra)
  return vim.tbl_extend("force", {
    sessionId = "s1",
    runId = "r1",
    question = "Which database?",
    options = { { label = "Postgres", description = "the server one" }, { label = "SQLite" } },
    multiSelect = false,
    allowText = false,
  }, extra or {})
end

local function answered(H, reply)
  H.wait("the reply", reply, 5000)
  return reply()
end

return {
  {
    name = "client: one option picked, text typed, declined, cancelled; the chat shows question and answer",
    run = function(H)
      require("agent_lsp.state").current = "s1"
      local chat = require("agent_lsp.chat")
      local calls = stub_select({ "Postgres — the server one" })
      local r = answered(H, ask(base()))
      H.eq({ action = "accept", selected = { "Postgres" } }, r.result, "picked an option")
      H.eq("agent_lsp.ask", calls[1].kind, "picker kind")
      H.contains(calls[1].prompt, "the agent asks: Which database?", "picker prompt")
      H.eq({ "Postgres — the server one", "SQLite", "Decline to answer" }, calls[1].labels, "labels without free text")
      H.contains(chat.text(), "**Question** from the agent: Which database?\n- Postgres — the server one\n- SQLite", "the question in the chat")
      H.contains(chat.text(), "_you answered: Postgres_", "the answer in the chat")

      calls = stub_select({ "Type an answer…" })
      local prompts = stub_input({ "MySQL" })
      r = answered(H, ask(base({ allowText = true })))
      H.eq({ action = "accept", selected = {}, text = "MySQL" }, r.result, "typed an answer")
      H.eq({ "Postgres — the server one", "SQLite", "Type an answer…", "Decline to answer" }, calls[1].labels, "labels with free text")
      H.eq({ "Which database? " }, prompts, "the input asks the question")

      stub_select({ "Decline to answer" })
      H.eq({ action = "decline" }, answered(H, ask(base())).result, "declined")
      stub_select({ nil })
      H.eq({ action = "cancel" }, answered(H, ask(base())).result, "closed picker cancels")
      H.contains(chat.text(), "_you declined to answer_", "declined in the chat")
      H.contains(chat.text(), "_question cancelled_", "cancelled in the chat")
      H.eq(0, #require("agent_lsp.ask").pending, "nothing pending")
    end,
  },
  {
    name = "client: several options picked with repeated selects and Done, plus typed text",
    run = function(H)
      require("agent_lsp.state").current = "s1"
      local calls = stub_select({
        "[ ] SQLite",
        "[ ] Postgres — the server one",
        "[x] SQLite",
        "Type an answer…",
        "Done (2 chosen)",
      })
      stub_input({ "Redis" })
      local params = base({ multiSelect = true, allowText = true })
      local r = answered(H, ask(params))
      H.eq({ action = "accept", selected = { "Postgres" }, text = "Redis" }, r.result, "the picks (SQLite toggled off again)")
      H.contains(calls[1].prompt, "(pick several, then Done)", "multi prompt")
      H.eq({ "[ ] Postgres — the server one", "[ ] SQLite", "Type an answer…", "Done (0 chosen)", "Decline to answer" }, calls[1].labels, "first picker")
      H.eq('[x] "Redis" (Type an answer…)', calls[5].labels[3], "the typed text is shown chosen")
      H.contains(require("agent_lsp.chat").text(), '_you answered: Postgres, "Redis"_', "the answer in the chat")
    end,
  },
  {
    name = "client: a question without options is asked with vim.ui.input; an MCP server's names it",
    run = function(H)
      require("agent_lsp.state").current = "s1"
      local prompts = stub_input({ "main", "" })
      local params = base({ question = "Which branch?", source = { mcpServer = "git" } })
      params.options = nil
      local r = answered(H, ask(params))
      H.eq({ action = "accept", text = "main" }, r.result, "typed")
      H.eq({ "Which branch? " }, prompts, "input prompt")
      H.contains(require("agent_lsp.chat").text(), "**Question** from the MCP server git: Which branch?", "who asks")
      r = answered(H, ask(base({ options = {}, question = "Anything else?" })))
      H.eq({ action = "decline" }, r.result, "an empty answer declines")
    end,
  },
  {
    name = "client: a cancelled question closes, replies RequestCancelled, and ignores the late answer",
    run = function(H)
      require("agent_lsp.state").current = "s1"
      local later
      vim.ui.select = function(items, opts, on_choice)
        later = function()
          on_choice(items[1])
        end
      end
      local notes = H.capture_notify()
      local reply = ask(base())
      H.wait("the picker", function()
        return later
      end)
      H.eq("question", require("agent_lsp.state").sessions.s1.status, "the session waits for the user")
      -- What `$/cancelRequest` does when this is the one pending request.
      require("agent_lsp.ask").cancel(nil)
      local r = answered(H, reply)
      H.eq(nil, r.result, "no result")
      H.eq(-32800, r.err.code, "RequestCancelled")
      later()
      H.contains(table.concat(notes, "\n"), "no longer pending", "the late answer is ignored")
      H.eq(0, #require("agent_lsp.ask").pending, "nothing pending")
    end,
  },
  {
    name = "the client advertises experimental.agent.askUser",
    run = function(H)
      H.eq(true, require("agent_lsp.protocol").client_capability().askUser, "capability")
    end,
  },
}
