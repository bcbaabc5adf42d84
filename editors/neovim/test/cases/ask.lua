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
    calls[#calls + 1] = { prompt = opts.prompt, kind = opts.kind, labels = labels, chat = require("agent_lsp.chat").text() }
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

--- Answers the next inputs with `answers`; returns the prompts, and the chat at each input.
local function stub_input(answers)
  local prompts, chats = {}, {}
  vim.ui.input = function(opts, on_confirm)
    prompts[#prompts + 1] = opts.prompt
    chats[#chats + 1] = require("agent_lsp.chat").text()
    on_confirm(table.remove(answers, 1))
  end
  return prompts, chats
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

--- The text of the tool results the model got in its `n`-th request.
local function tool_results(mock, n)
  local req = assert(mock.requests()[n], "request " .. n .. " was made")
  local out = {}
  for _, m in ipairs(req.body.messages or {}) do
    if m.role == "tool" then
      out[#out + 1] = type(m.content) == "string" and m.content or vim.json.encode(m.content)
    end
  end
  return table.concat(out, "\n")
end

local DB_QUESTION = {
  question = "Which database?",
  options = { { label = "Postgres", description = "what production runs" }, { label = "SQLite" } },
}

return {
  {
    name = "an ask_user question answered in vim.ui.select reaches the model",
    run = function(H)
      local mock = H.mock({
        responses = {
          { toolCalls = { { id = "q1", name = "ask_user", arguments = DB_QUESTION } } },
          { toolCalls = { { id = "q2", name = "ask_user", arguments = vim.tbl_extend("force", DB_QUESTION, { multiSelect = true }) } } },
          { toolCalls = { { id = "q3", name = "ask_user", arguments = { question = "Which branch?" } } } },
          { text = "SQLite and Postgres on main it is." },
        },
      })
      local root = H.workspace({})
      vim.cmd.cd(root)
      H.setup(mock)
      local init = H.client().config.capabilities.experimental.agent
      H.eq(true, init.askUser, "the client advertises askUser")
      local calls = stub_select({ "SQLite", "[ ] Postgres — what production runs", "[ ] SQLite", "Done (2 chosen)" })
      local prompts, chats = stub_input({ "main" })
      vim.cmd("AgentPrompt set up the database")
      H.settled(1)
      H.eq({ "Postgres — what production runs", "SQLite", "Type an answer…", "Decline to answer" }, calls[1].labels, "the options, free text, decline")
      H.contains(calls[1].prompt, "the agent asks: Which database?", "the picker's prompt")
      H.eq({ "Which branch? " }, prompts, "a question without options is typed")
      H.contains(tool_results(mock, 2), "The user answered: SQLite", "the single choice reached the model")
      H.contains(tool_results(mock, 3), "The user selected: Postgres, SQLite", "the multiple choice reached the model")
      H.contains(tool_results(mock, 4), "The user answered: main", "the typed answer reached the model")
      -- While it waits the question is in the chat, under its call; answered, the call's line
      -- (the question) and its result (the answer) say it all.
      H.contains(calls[1].chat, "- tool `ask_user` Which database?\n\n**Question** from the agent: Which database?\n- Postgres — what production runs\n- SQLite", "the question in the chat")
      H.contains(chats[1], "**Question** from the agent: Which branch?", "the typed question in the chat")
      local text = require("agent_lsp.chat").text()
      H.contains(text, "- tool `ask_user` Which database?\n    The user answered: SQLite\n\n## Agent\n\n- tool `ask_user` Which database?\n    The user selected: Postgres, SQLite", "the answers under their calls")
      H.contains(text, "- tool `ask_user` Which branch?\n    The user answered: main", "the typed answer under its call")
      assert(not text:find("**Question**", 1, true), "no question left over:\n" .. text)
    end,
  },
  {
    name = "AgentAbort closes a pending question; its late answer is ignored",
    run = function(H)
      local mock = H.mock({
        responses = {
          { toolCalls = { { id = "q1", name = "ask_user", arguments = DB_QUESTION } } },
          { text = "never asked for" },
        },
      })
      local root = H.workspace({})
      vim.cmd.cd(root)
      H.setup(mock)
      local late
      vim.ui.select = function(items, _, on_choice)
        late = function()
          on_choice(items[1])
        end
      end
      local notes = H.capture_notify()
      vim.cmd("AgentPrompt set up the database")
      H.wait("the question", function()
        return late
      end)
      H.eq("agent: question", require("agent_lsp").statusline():match("^agent: %a+"), "the statusline says a question waits")
      vim.cmd("AgentAbort")
      H.eq(true, H.settled(1).aborted, "the run aborted")
      H.wait("the question closed", function()
        return #require("agent_lsp.ask").pending == 0
      end)
      late()
      H.contains(table.concat(notes, "\n"), "that question is no longer pending", "the late answer is ignored")
      H.contains(require("agent_lsp.chat").text(), "- tool `ask_user` Which database?\n    The question was cancelled.", "the chat says so")
      H.eq(1, #mock.requests(), "the model was not asked again")
    end,
  },
  {
    name = "client: one option picked, text typed, declined, cancelled; the question in the chat while it waits",
    run = function(H)
      require("agent_lsp.state").current = "s1"
      local chat = require("agent_lsp.chat")
      local calls = stub_select({ "Postgres — the server one" })
      local r = answered(H, ask(base()))
      H.eq({ action = "accept", selected = { "Postgres" } }, r.result, "picked an option")
      H.eq("agent_lsp.ask", calls[1].kind, "picker kind")
      H.contains(calls[1].prompt, "the agent asks: Which database?", "picker prompt")
      H.eq({ "Postgres — the server one", "SQLite", "Decline to answer" }, calls[1].labels, "labels without free text")
      H.eq("**Question** from the agent: Which database?\n- Postgres — the server one\n- SQLite", calls[1].chat, "the question in the chat while it waits")
      H.eq("", chat.text(), "answered, the model's question leaves the chat to its tool line and result")

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
      H.eq("", chat.text(), "no question left in the chat")
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
      H.eq('_you answered: Postgres, "Redis"_', require("agent_lsp.ask").answer_text(r.result), "the answer in words")
    end,
  },
  {
    name = "client: a question without options is asked with vim.ui.input; an MCP server's names it",
    run = function(H)
      require("agent_lsp.state").current = "s1"
      local prompts = stub_input({ "main", "" })
      local params = base({ question = "Set up the repository.\n\nWhich branch?", source = { mcpServer = "git" } })
      params.options = nil
      local r = answered(H, ask(params))
      H.eq({ action = "accept", text = "main" }, r.result, "typed")
      H.eq({ "Set up the repository.\n\nWhich branch? " }, prompts, "input prompt")
      H.eq("**Question** from the MCP server git: Set up the repository. Which branch?\n\n_you answered: \"main\"_", require("agent_lsp.chat").text(), "an MCP server's question stays, with the answer")
      require("agent_lsp.chat").clear()
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
