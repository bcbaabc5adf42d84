--- A person's view: Neovim runs in a real terminal (tmux), the user types :AgentPrompt, and the
--- screen shows the streamed answer in the chat split and the statusline going back to idle.
--- The captured screen is kept as test-artifacts/neovim/screen.txt.

local function tmux(socket, args)
  local cmd = { "tmux", "-L", socket }
  vim.list_extend(cmd, args)
  local res = vim.system(cmd, { text = true }):wait(10000)
  if res.code ~= 0 then
    error("tmux " .. table.concat(args, " ") .. " failed: " .. (res.stderr or ""))
  end
  return res.stdout or ""
end


local plugin = vim.fs.dirname(vim.fs.dirname(vim.fs.dirname(vim.fs.abspath(debug.getinfo(1, "S").source:sub(2)))))

--- Starts Neovim with the plugin in a tmux terminal on `file` in `root`; returns the socket name
--- and a function that captures the screen.
local function launch(H, mock, root, file)
  assert(vim.fn.executable("tmux") == 1, "tmux is required (run.sh installs it)")
  local home = H.tempdir()
  local init = home .. "/init.lua"
  local f = assert(io.open(init, "w"))
  f:write(string.format(
    [[
vim.opt.rtp:prepend(%q)
vim.cmd("filetype on")
vim.cmd.runtime("plugin/agent_lsp.lua")
vim.o.laststatus = 3
vim.o.statusline = "%%f %%= %%{v:lua.require'agent_lsp'.statusline()}"
require("agent_lsp").setup({
  cmd = { %q, "--stdio" },
  cmd_env = { OPENAI_BASE_URL = %q, OPENAI_API_KEY = "test", HOME = %q, XDG_DATA_HOME = %q, XDG_STATE_HOME = %q, XDG_CONFIG_HOME = %q },
  chat = { layout = "split", size = 12 },
})
]],
    plugin,
    H.bin,
    mock.openaiBaseUrl,
    home,
    home .. "/data",
    home .. "/state",
    home .. "/config"
  ))
  f:close()
  local socket = "agent-lsp-nvim-" .. vim.fn.getpid() .. "-" .. math.random(1e6)
  tmux(socket, {
    "new-session", "-d", "-x", "110", "-y", "34", "-c", root,
    string.format("env HOME=%s XDG_STATE_HOME=%s/state %s --clean -u %s %s", home, home, vim.v.progpath, init, file),
  })
  H.defer(function()
    pcall(tmux, socket, { "kill-server" })
  end)
  local function screen()
    return tmux(socket, { "capture-pane", "-p" })
  end
  H.wait("Neovim showing " .. file, function()
    return screen():find("agent: idle", 1, true)
  end)
  return socket, screen
end

local function keep(H, name, text)
  local out = assert(io.open(H.artifacts .. "/" .. name, "w"))
  out:write(text)
  out:close()
end

return {
  {
    name = "in a real terminal the chat split streams the answer and the statusline settles",
    run = function(H)
      local mock = H.mock({
        responses = { { text = "Hello from the terminal test.", chunkSize = 5, delayMs = 20, usage = { input = 7, output = 5 } } },
      })
      local root = H.workspace({ ["hello.txt"] = "hello\n" })
      local socket, screen = launch(H, mock, root, "hello.txt")
      tmux(socket, { "send-keys", ":AgentPrompt say hello", "Enter" })
      local text = ""
      H.wait("the answer on screen and the statusline back to idle with tokens", function()
        text = screen()
        return text:find("Hello from the terminal test.", 1, true) and text:find("agent: idle 12 tok", 1, true)
      end)
      keep(H, "screen.txt", text)
      H.contains(text, "## Agent", "screen")
      H.contains(text, "say hello", "screen")
      H.contains(text, "hello.txt", "screen")
      -- The chat window's winbar: model, thinking, context use and cost (gpt-4.1: $2/$8 per M).
      H.wait("the winbar with the stats on screen", function()
        text = screen()
        return text:find("agent: idle · openai/gpt-4.1 · think off · ctx 12/1.0M (0.0%) · $0.0001", 1, true)
      end)
    end,
  },
  {
    name = "in a real terminal an approval is answered in Neovim's own picker",
    run = function(H)
      local mock = H.mock({
        responses = {
          {
            toolCalls = {
              { id = "call_1", name = "edit", arguments = { path = "hello.txt", edits = { { oldText = "hello", newText = "world" } } } },
            },
          },
          { text = "Edited." },
        },
      })
      local root = H.workspace({ ["hello.txt"] = "hello\n" })
      local socket, screen = launch(H, mock, root, "hello.txt")
      tmux(socket, { "send-keys", ":AgentPrompt change hello", "Enter" })
      local text = ""
      H.wait("the approval picker on screen", function()
        text = screen()
        return text:find("1: Allow", 1, true)
      end)
      keep(H, "screen-approval.txt", text)
      H.contains(text, "agent-lsp wants to edit", "picker prompt")
      H.contains(text, "+world", "diff preview on screen")
      tmux(socket, { "send-keys", "1", "Enter" })
      H.wait("the edit in the buffer and the run settled", function()
        text = screen()
        return text:find("Edited.", 1, true) and text:find("agent: idle", 1, true) and text:match("^world\n")
      end)
      keep(H, "screen-approved.txt", text)
      H.eq("world\n", H.read(root .. "/hello.txt"), "file saved on the daemon's request")
    end,
  },
}
