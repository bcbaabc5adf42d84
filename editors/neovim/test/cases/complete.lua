--- The prompt input (:AgentInput): `/` at its start completes the session's commands from
--- agent/listCommands with description and argument hint, `@` completes workspace files
--- (fuzzy, .gitignore respected) and a mention attaches the file; :AgentPrompt completes the same
--- on the command line. Keys are typed into real Insert mode with feedkeys.

local TEMPLATE = "---\ndescription: Review a file\nargument-hint: <file>\n---\nPlease review $1 carefully.\n"

--- Records the completion menu each time it is shown.
local function record_menus(H)
  local menus = {}
  local id = vim.api.nvim_create_autocmd("CompleteChanged", {
    callback = function()
      local info = vim.fn.complete_info({ "items", "pum_visible" })
      menus[#menus + 1] = info
    end,
  })
  H.defer(function()
    pcall(vim.api.nvim_del_autocmd, id)
  end)
  return menus
end

local function words(items)
  return vim.tbl_map(function(i)
    return i.word
  end, items)
end

local function git(root, args)
  local res = vim.system(vim.list_extend({ "git", "-C", root }, args), { text = true }):wait()
  assert(res.code == 0, "git " .. table.concat(args, " ") .. ": " .. tostring(res.stderr))
end

--- Waits until the input buffer's session has its commands.
local function commands_ready(H)
  local complete = require("agent_lsp.complete")
  H.wait("the session's commands", function()
    local state = require("agent_lsp.state")
    return state.current and complete.commands[state.current]
  end)
end

return {
  {
    name = "slash at the start of the input completes commands with description and hint, and sends one",
    run = function(H)
      local mock = H.mock({ responses = { { text = "Reviewed." } } })
      local root = H.workspace({ [".agent-lsp/prompts/review.md"] = TEMPLATE, ["calc.py"] = "x = 1\n" })
      vim.cmd.cd(root)
      H.setup(mock)
      local menus = record_menus(H)
      vim.cmd("AgentInput")
      commands_ready(H)
      local input = require("agent_lsp.input")
      H.eq(input.buf, vim.api.nvim_get_current_buf(), "the input is the current buffer")

      -- Typing "/" opens the menu on its own.
      vim.api.nvim_feedkeys("a/", "x", false)
      H.eq(1, #menus, "menus shown after typing /")
      local items = menus[1].items
      local by_word = {}
      for _, i in ipairs(items) do
        by_word[i.word] = i
      end
      assert(by_word["/compact"] and by_word["/model"], "built-ins offered: " .. vim.inspect(words(items)))
      local review = assert(by_word["/review"], "the template offered: " .. vim.inspect(words(items)))
      H.eq("/review <file>", review.abbr, "argument hint")
      H.eq("Review a file", review.menu, "description")
      H.eq("prompt", review.kind, "source")
      H.contains(review.info, "Arguments: <file>", "info")
      H.eq("/compact [instructions]", by_word["/compact"].abbr, "built-in hint")

      -- Narrowing: "/rev" offers only the template; <C-x><C-u> is the same completefunc.
      vim.api.nvim_buf_set_lines(input.buf, 0, -1, false, {})
      vim.api.nvim_feedkeys(vim.keycode("a/rev<C-x><C-u><C-y> calc.py"), "x", false)
      H.eq({ "/review calc.py" }, vim.api.nvim_buf_get_lines(input.buf, 0, -1, false), "accepted item")
      H.eq({ "/review" }, words(menus[#menus].items), "narrowed menu")

      vim.api.nvim_feedkeys(vim.keycode("<C-s>"), "x", false)
      H.eq(false, H.settled().aborted, "aborted")
      H.eq({ "" }, vim.api.nvim_buf_get_lines(input.buf, 0, -1, false), "the input is emptied")
      H.contains(vim.json.encode(mock.requests()[1].body), "Please review calc.py carefully.", "the template expanded")
      H.eq({ "/review" }, vim.fn.getcompletion("AgentPrompt /rev", "cmdline"), ":AgentPrompt completes commands")
    end,
  },
  {
    name = "at-sign completes workspace files fuzzily without ignored ones, and the mention attaches the file",
    run = function(H)
      local mock = H.mock({ responses = { { text = "It adds." } } })
      local root = H.workspace({
        ["src/calc.py"] = "def add(a, b):\n    return a + b\n",
        ["src/util.py"] = "pass\n",
        ["build/calc_out.txt"] = "generated\n",
        [".gitignore"] = "build/\n",
      })
      vim.fn.delete(root .. "/.git", "rf")
      git(root, { "init", "-q" })
      git(root, { "add", "src/util.py" })
      vim.cmd.cd(root)
      H.setup(mock)
      local menus = record_menus(H)
      vim.cmd("AgentInput")
      commands_ready(H)
      local input = require("agent_lsp.input")

      -- "@" opens the menu, "clc" narrows it fuzzily, <C-y> takes the best match.
      vim.api.nvim_feedkeys(vim.keycode("aexplain @clc<C-y> please"), "x", false)
      local all = words(menus[1].items)
      table.sort(all)
      -- Tracked and untracked files, never what .gitignore excludes.
      H.eq({ "@.gitignore", "@src/calc.py", "@src/util.py" }, all, "files offered after @")
      H.eq({ "explain @src/calc.py please" }, vim.api.nvim_buf_get_lines(input.buf, 0, -1, false), "accepted file")
      H.eq({ "@src/calc.py" }, vim.fn.getcompletion("AgentPrompt explain @clc", "cmdline"), ":AgentPrompt completes files")

      vim.api.nvim_feedkeys(vim.keycode("<C-s>"), "x", false)
      H.eq(false, H.settled().aborted, "aborted")
      local body = vim.json.encode(mock.requests()[1].body)
      H.contains(body, "src/calc.py:\\n```python\\ndef add(a, b):", "the mentioned file went along")
      H.contains(body, "explain @src/calc.py please", "the text itself")
      H.eq({}, require("agent_lsp.context").pending, "nothing left attached")
    end,
  },
  {
    name = "an MCP server's prompt joins the completion when it arrives, and runs as a command",
    run = function(H)
      local mock = H.mock({ responses = { { text = "Hello, World." } } })
      local root = H.workspace({})
      vim.cmd.cd(root)
      H.setup(mock, {
        init_options = {
          mcpServers = { mock = { command = H.mock_mcp_bin, args = { "300" }, env = { MOCK_MCP_PROMPTS = "1" } } },
        },
      })
      local complete = require("agent_lsp.complete")
      local fetched = 0
      local fetch = complete.fetch_commands
      complete.fetch_commands = function(...)
        fetched = fetched + 1
        return fetch(...)
      end
      H.defer(function()
        complete.fetch_commands = fetch
      end)
      local menus = record_menus(H)
      vim.cmd("AgentInput")
      H.wait("the commands_update with the MCP prompt", function()
        local state = require("agent_lsp.state")
        for _, c in ipairs(state.current and complete.commands[state.current] or {}) do
          if c.name == "mock:greet" then
            return true
          end
        end
      end, 20000)
      assert(#H.events_of("commands_update") >= 1, "commands_update events")
      H.eq(1, fetched, "listCommands asked once: the prompt came with commands_update")
      vim.api.nvim_feedkeys("a/", "x", false)
      local greet
      for _, i in ipairs(menus[#menus].items) do
        if i.word == "/mock:greet" then
          greet = i
        end
      end
      assert(greet, "the MCP prompt offered")
      H.eq("/mock:greet <who>", greet.abbr, "argument hint")
      H.eq("Greets someone by name", greet.menu, "description")
      H.eq("mcp", greet.kind, "source")
      local input = require("agent_lsp.input")
      vim.api.nvim_buf_set_lines(input.buf, 0, -1, false, { "/mock:greet World" })
      input.send()
      H.eq(false, H.settled().aborted, "aborted")
      H.contains(vim.json.encode(mock.requests()[1].body), "Say hello to World.", "the prompt's text reached the model")
    end,
  },
  {
    name = "the input sends a prompt when idle and steers while the run is active",
    run = function(H)
      local mock = H.mock({
        responses = {
          { text = string.rep("working ", 12), chunkSize = 4, delayMs = 40 },
          { text = "Steered answer." },
        },
      })
      local root = H.workspace({})
      vim.cmd.cd(root)
      H.setup(mock)
      vim.cmd("AgentInput")
      commands_ready(H)
      vim.api.nvim_feedkeys(vim.keycode("astart working<Esc><CR>"), "x", false)
      H.wait("the first text delta", function()
        return #H.events_of("message_update") > 0
      end)
      vim.api.nvim_feedkeys(vim.keycode("afocus on the tests<C-s>"), "x", false)
      H.eq(false, H.settled().aborted, "aborted")
      H.eq(1, #H.events_of("agent_start"), "one run: the second message steered it")
      local text = require("agent_lsp.chat").text()
      H.contains(text, "focus on the tests", "steering message in the chat")
      H.contains(text, "Steered answer.", "answer after steering")
    end,
  },
  {
    name = "outside a git repository files come from a walk that skips dot-directories",
    run = function(H)
      local root = H.tempdir()
      for _, name in ipairs({ "a/deep/nested.txt", "top.txt", ".cache/nested.txt" }) do
        vim.fn.mkdir(vim.fs.dirname(root .. "/" .. name), "p")
        vim.fn.writefile({ "x" }, root .. "/" .. name)
      end
      vim.cmd.cd(root)
      local complete = require("agent_lsp.complete")
      local files = complete.files(root)
      table.sort(files)
      H.eq({ "a/deep/nested.txt", "top.txt" }, files, "walked files")
      H.eq({ "@a/deep/nested.txt" }, words(complete.file_items("nst")), "fuzzy")
    end,
  },
}
