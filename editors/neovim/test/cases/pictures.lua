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

return {
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
