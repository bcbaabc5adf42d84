--- The README's pictures, taken from the real editor: Neovim runs in tmux against the daemon
--- and the mock model; the screen is captured with its colours (`tmux capture-pane -e`), turned
--- into HTML (test/ansi_html.py) and screenshotted by headless Chromium. The PNGs go to
--- test-artifacts/neovim/pictures/, or with UPDATE_PICTURES=1 to editors/neovim/media/ (what
--- scripts/pictures.sh does).

local here = vim.fs.dirname(vim.fs.dirname(vim.fs.abspath(debug.getinfo(1, "S").source:sub(2))))
local terminal = dofile(here .. "/terminal.lua")
local tmux, launch = terminal.tmux, terminal.launch

local COLS, ROWS = 110, 32

--- A loopback port free now, for the chat picture's dev server.
local function free_port()
  local tcp = assert(vim.uv.new_tcp())
  assert(tcp:bind("127.0.0.1", 0))
  local port = tcp:getsockname().port
  tcp:close()
  return port
end

local GREET = table.concat({
  "local M = {}",
  "",
  "--- Greets someone by name.",
  "function M.greet(name)",
  '  return "Hello, " .. name',
  "end",
  "",
  "return M",
  "",
}, "\n")

--- Where pictures are written.
local function picture_dir(H)
  if os.getenv("UPDATE_PICTURES") == "1" then
    return vim.fs.dirname(here) .. "/media"
  end
  return H.artifacts .. "/pictures"
end

local function run(cmd)
  local res = vim.system(cmd, { text = true }):wait(90000)
  if res.code ~= 0 then
    error(table.concat(cmd, " ") .. " failed (" .. tostring(res.code) .. "): " .. (res.stderr or ""))
  end
  return res.stdout or ""
end

--- Turns a colour capture into `<name>.png`; checks it is a real, small, colourful picture.
---@return string path
local function picture(H, name, ansi)
  local chromium = vim.fn.exepath("chromium")
  assert(chromium ~= "", "chromium is required for the pictures (run.sh installs it)")
  local work = H.tempdir()
  local screen_file, page = work .. "/" .. name .. ".ansi", work .. "/" .. name .. ".html"
  local f = assert(io.open(screen_file, "w"))
  f:write(ansi)
  f:close()
  local size = vim.trim(run({
    "python3", here .. "/ansi_html.py", screen_file, page,
    "--cols", tostring(COLS), "--rows", tostring(ROWS), "--print-size",
  }))
  local html = H.read(page)
  local colours = {}
  for c in html:gmatch("color:(#%x+)") do
    colours[c] = true
  end
  assert(vim.tbl_count(colours) >= 4, "the capture has hardly any colours: " .. vim.inspect(colours))
  local dir = picture_dir(H)
  vim.fn.mkdir(dir, "p")
  local out = dir .. "/" .. name .. ".png"
  os.remove(out)
  run({
    chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
    "--user-data-dir=" .. work .. "/chromium", "--window-size=" .. size,
    "--screenshot=" .. out, "file://" .. page,
  })
  local png = H.read(out)
  H.eq("\137PNG", png:sub(1, 4), name .. ".png signature")
  assert(#png > 5000 and #png < 200000, name .. ".png is " .. #png .. " bytes (expected a small picture)")
  return out
end

local GREET_TS = table.concat({
  "/** Greets someone by name. */",
  "export function greet(name: string): string {",
  '  return "Hello, " + name;',
  "}",
  "",
}, "\n")
local MAIN_TS = table.concat({
  'import { greet } from "./greet";',
  "",
  'console.log(greet("Ada"));',
  'console.log(greet("Grace"));',
  "",
}, "\n")

--- Lua for the terminal Neovim's init: typescript-language-server (AGENT_LSP_TSLS, installed by
--- run.sh) enabled for TypeScript; once it answers documentSymbol for the first buffer it
--- attached to, the file `ready` is written (tsserver loads the project on its first request).
local function ts_init(root, ready)
  local tsls = os.getenv("AGENT_LSP_TSLS")
  assert(tsls and vim.fn.executable(tsls) == 1, "AGENT_LSP_TSLS (typescript-language-server, installed by run.sh) is not executable: " .. tostring(tsls))
  local lib = vim.fs.dirname(vim.fs.dirname(tsls)) .. "/typescript/lib"
  return string.format(
    [[
vim.lsp.config("ts_ls", {
  cmd = { %q, "--stdio" },
  filetypes = { "typescript" },
  root_dir = %q,
  init_options = { disableAutomaticTypingAcquisition = true, tsserver = { path = %q } },
})
vim.lsp.enable("ts_ls")
-- Ready once the server finds greet's four references in both files (the project loaded, not
-- just the open file: a documentSymbol answer came before main.ts was part of it).
local function probe(client, buf)
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(buf) },
    position = { line = 1, character = 16 },
    context = { includeDeclaration = true },
  }
  client:request("textDocument/references", params, function(err, result)
    if not err and type(result) == "table" and #result >= 4 then
      local f = assert(io.open(%q, "w"))
      f:close()
    else
      vim.defer_fn(function() probe(client, buf) end, 200)
    end
  end, buf)
end
vim.api.nvim_create_autocmd("LspAttach", {
  callback = function(args)
    local client = vim.lsp.get_client_by_id(args.data.client_id)
    if client and client.name == "ts_ls" then
      probe(client, args.buf)
      return true -- (agent-lsp attaches too: only ts_ls's attach ends this autocmd)
    end
  end,
})
]],
    tsls,
    root,
    lib,
    ready
  )
end

return {
  {
    name = "picture: the agent asks the editor's language server for references, then a rename",
    run = function(H)
      local mock = H.mock({
        responses = {
          {
            text = "First, where `greet` is used:",
            toolCalls = { { id = "call_1", name = "lsp_references", arguments = { path = "greet.ts", line = 2, symbol = "greet" } } },
          },
          { toolCalls = { { id = "call_2", name = "lsp_rename", arguments = { path = "greet.ts", line = 2, symbol = "greet", newName = "welcome" } } } },
          {
            text = "The rename changes the declaration, the import and both calls in `main.ts`. Apply it?",
            usage = { input = 610, output = 38 },
          },
        },
      })
      local root = H.workspace({
        ["greet.ts"] = GREET_TS,
        ["main.ts"] = MAIN_TS,
        ["tsconfig.json"] = '{"compilerOptions": {"strict": true}, "include": ["*.ts"]}\n',
      })
      local ready = H.tempdir() .. "/ready"
      local socket, screen = launch(H, mock, root, "greet.ts", {
        cols = COLS,
        rows = ROWS,
        colors = true,
        chat_size = 24,
        init = ts_init(root, ready),
      })
      -- (The test's own clock: the terminal Neovim writes the file when tsserver answers.)
      H.wait("typescript-language-server to answer in the terminal Neovim", function()
        return vim.uv.fs_stat(ready)
      end, 90000)
      tmux(socket, { "send-keys", ":AgentPrompt rename greet to welcome", "Enter" })
      H.wait("the references and the proposed rename in the chat, the run settled", function()
        local text = screen()
        return text:find("Apply it?", 1, true) and text:find("agent: idle", 1, true)
      end, 60000)
      local plain = screen()
      H.contains(plain, "4 references in 2 files:", "screen: the references")
      H.contains(plain, 'main.ts:3:13: console.log(greet("Ada"));', "screen: a reference with its line")
      H.contains(plain, "Renaming greet to welcome would change 4 places in 2 files", "screen: the proposed rename")
      picture(H, "language", screen(true))
    end,
  },
  {
    name = "picture: the chat streams an answer under the plan, with a job running",
    run = function(H)
      local function plan(states)
        local steps = { "Read greet.lua", "Start a dev server to try it", "Make the greeting friendlier" }
        local todos = {}
        for i, st in ipairs(states) do
          todos[i] = { content = steps[i], status = st }
        end
        return { todos = todos }
      end
      -- A dev server on loopback, sandboxed with the network on (with it off the sandbox makes
      -- no socket at all).
      local server = string.format("python3 -m http.server %d --bind 127.0.0.1", free_port())
      local mock = H.mock({
        responses = {
          {
            thinking = "The user wants a friendlier greeting to try out: read the module first.",
            toolCalls = { { id = "call_1", name = "read", arguments = { path = "greet.lua" } } },
          },
          {
            text = "A small change. My plan:",
            toolCalls = { { id = "call_2", name = "todo_write", arguments = plan({ "completed", "in_progress", "pending" }) } },
          },
          { toolCalls = { { id = "call_3", name = "bash", arguments = { command = server, background = true } } } },
          { toolCalls = { { id = "call_4", name = "todo_write", arguments = plan({ "completed", "completed", "in_progress" }) } } },
          {
            text = "The dev server runs in the background as job-1. Now the greeting: `M.greet(name)` "
              .. "will say **\"Hello, \" .. name .. \"! Nice to see you.\"**",
            chunkSize = 2,
            delayMs = 60,
            usage = { input = 420, output = 64 },
          },
        },
      })
      local root = H.workspace({ ["greet.lua"] = GREET })
      local socket, screen = launch(H, mock, root, "greet.lua", {
        cols = COLS,
        rows = ROWS,
        colors = true,
        chat_size = 21,
        setup = 'approval = { bash = "allow" }, sandbox_network = true,',
      })
      tmux(socket, { "send-keys", ":AgentPrompt make the greeting friendlier and let me try it", "Enter" })
      H.wait("the answer streaming under the plan, the job running", function()
        local text = screen()
        return text:find("Nice to see", 1, true) and text:find("agent: running", 1, true)
      end)
      local ansi = screen(true)
      local plain = screen()
      -- (Markdown's conceal hides the asterisks.)
      H.contains(plain, "Plan 2/3", "screen: the plan")
      H.contains(plain, "- [>] Make the greeting friendlier", "screen: the step in progress")
      H.contains(plain, "job-1 started in the background", "screen: the job")
      H.contains(plain, "1 job", "screen: the running job counted")
      picture(H, "chat", ansi)
      H.wait("the run settled", function()
        return screen():find("agent: idle", 1, true)
      end)
    end,
  },
  {
    name = "picture: an approval with its diff, then the run's review",
    run = function(H)
      local mock = H.mock({
        responses = {
          {
            text = "I'll make the greeting friendlier.",
            toolCalls = {
              {
                id = "call_1",
                name = "edit",
                arguments = {
                  path = "greet.lua",
                  edits = { { oldText = '"Hello, " .. name', newText = '"Hello, " .. name .. "! Nice to see you."' } },
                },
              },
            },
          },
          { text = "Done: `M.greet` now says it is nice to see you." },
        },
      })
      local root = H.workspace({ ["greet.lua"] = GREET })
      local socket, screen = launch(H, mock, root, "greet.lua", { cols = COLS, rows = ROWS, colors = true, chat_size = 12 })
      tmux(socket, { "send-keys", ":AgentPrompt make the greeting friendlier", "Enter" })
      H.wait("the approval picker with the diff", function()
        local text = screen()
        return text:find("1: Allow", 1, true) and text:find("Nice to see you", 1, true)
      end)
      picture(H, "approval", screen(true))

      tmux(socket, { "send-keys", "1", "Enter" })
      H.wait("the edit made and the run settled", function()
        local text = screen()
        return text:find("Done:", 1, true) and text:find("agent: idle", 1, true)
      end)
      tmux(socket, { "send-keys", ":lua require('agent_lsp.chat').close()", "Enter" })
      tmux(socket, { "send-keys", ":AgentChanges", "Enter" })
      H.wait("the run's changes in the quickfix list", function()
        return screen():find("modified", 1, true)
      end)
      tmux(socket, { "send-keys", ":AgentDiff", "Enter" })
      local text = ""
      local ok = vim.wait(15000, function()
        text = screen()
        return text:find("before the run: greet.lua", 1, true)
          and text:find("| modified", 1, true)
          and text:find('.. "! Nice to see you."', 1, true)
      end, 50)
      assert(ok, "the diff split of the change is not on screen:\n" .. text)
      H.contains(text, 'return "Hello, " .. name .. "! Nice to see you."', "the file now")
      picture(H, "review", screen(true))
      H.eq((GREET:gsub('name\n', 'name .. "! Nice to see you."\n', 1)), H.read(root .. "/greet.lua"), "the edit saved")
    end,
  },
}
