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

return {
  {
    name = "in a real terminal the chat split streams the answer and the statusline settles",
    run = function(H)
      assert(vim.fn.executable("tmux") == 1, "tmux is required (run.sh installs it)")
      local mock = H.mock({
        responses = { { text = "Hello from the terminal test.", chunkSize = 5, delayMs = 20, usage = { input = 7, output = 5 } } },
      })
      local root = H.workspace({ ["hello.txt"] = "hello\n" })
      local home = H.tempdir()
      local init = home .. "/init.lua"
      local plugin = vim.fs.dirname(vim.fs.dirname(vim.fs.dirname(vim.fs.abspath(debug.getinfo(1, "S").source:sub(2)))))
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
      local socket = "agent-lsp-nvim-" .. vim.fn.getpid()
      local nvim = vim.v.progpath
      tmux(socket, {
        "new-session", "-d", "-x", "110", "-y", "34", "-c", root,
        string.format("env HOME=%s XDG_STATE_HOME=%s/state %s --clean -u %s hello.txt", home, home, nvim, init),
      })
      H.defer(function()
        pcall(tmux, socket, { "kill-server" })
      end)
      local screen = ""
      H.wait("Neovim showing hello.txt", function()
        screen = tmux(socket, { "capture-pane", "-p" })
        return screen:find("agent: idle", 1, true)
      end)
      tmux(socket, { "send-keys", ":AgentPrompt say hello", "Enter" })
      H.wait("the answer on screen and the statusline back to idle with tokens", function()
        screen = tmux(socket, { "capture-pane", "-p" })
        return screen:find("Hello from the terminal test.", 1, true) and screen:find("agent: idle 12 tok", 1, true)
      end, 30000)
      local out = assert(io.open(H.artifacts .. "/screen.txt", "w"))
      out:write(screen)
      out:close()
      H.contains(screen, "## Agent", "screen")
      H.contains(screen, "say hello", "screen")
      H.contains(screen, "hello.txt", "screen")
    end,
  },
}
