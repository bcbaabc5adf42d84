--- Neovim in a real terminal for the e2e cases that look at the screen (cases/screen.lua,
--- cases/pictures.lua): a tmux server of its own runs Neovim with the plugin against the daemon
--- and the mock model; the screen is read back with `tmux capture-pane`.

local M = {}

--- Runs a tmux command on the test's own server; errors with tmux's message when it fails.
---@param socket string
---@param args string[]
---@return string stdout
function M.tmux(socket, args)
  local cmd = { "tmux", "-L", socket }
  vim.list_extend(cmd, args)
  local res = vim.system(cmd, { text = true }):wait(10000)
  if res.code ~= 0 then
    error("tmux " .. table.concat(args, " ") .. " failed: " .. (res.stderr or ""))
  end
  return res.stdout or ""
end

-- The repository root, where the plugin's runtime folders are (this file is editors/neovim/test/).
local plugin = vim.fs.dirname(vim.fs.dirname(vim.fs.dirname(vim.fs.dirname(vim.fs.abspath(debug.getinfo(1, "S").source:sub(2))))))

---@class agent_lsp.TerminalOptions
---@field cols integer? terminal width (default 110)
---@field rows integer? terminal height (default 34)
---@field colors boolean? 24-bit colours (`termguicolors`), for pictures
---@field setup string? more `setup()` fields, as Lua source (e.g. `approval = { read = "allow" },`)
---@field chat_size integer? rows of the chat split (default 12)
---@field init string? more Lua source run before `setup()` (e.g. a language server's config)

--- Starts Neovim with the plugin in a tmux terminal on `file` in `root`; returns the socket name
--- and a function that captures the screen (`screen(true)`: with colour escapes).
---@param opts agent_lsp.TerminalOptions?
function M.launch(H, mock, root, file, opts)
  opts = opts or {}
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
vim.o.termguicolors = %s
vim.o.statusline = "%%f %%= %%{v:lua.require'agent_lsp'.statusline()}"
%s
require("agent_lsp").setup({
  cmd = { %q, "--stdio" },
  cmd_env = { OPENAI_BASE_URL = %q, OPENAI_API_KEY = "test", HOME = %q, XDG_DATA_HOME = %q, XDG_STATE_HOME = %q, XDG_CONFIG_HOME = %q },
  chat = { layout = "split", size = %d },
  %s
})
]],
    plugin,
    tostring(opts.colors == true),
    opts.init or "",
    H.bin,
    mock.openaiBaseUrl,
    home,
    home .. "/data",
    home .. "/state",
    home .. "/config",
    opts.chat_size or 12,
    opts.setup or ""
  ))
  f:close()
  local socket = "agent-lsp-nvim-" .. vim.fn.getpid() .. "-" .. math.random(1e6)
  M.tmux(socket, {
    "new-session", "-d", "-x", tostring(opts.cols or 110), "-y", tostring(opts.rows or 34), "-c", root,
    string.format(
      "env HOME=%s XDG_STATE_HOME=%s/state TERM=tmux-256color %s --clean -u %s %s",
      home, home, vim.v.progpath, init, file
    ),
  })
  H.defer(function()
    pcall(M.tmux, socket, { "kill-server" })
  end)
  local function screen(colors)
    return M.tmux(socket, colors and { "capture-pane", "-e", "-p" } or { "capture-pane", "-p" })
  end
  H.wait("Neovim showing " .. file, function()
    return screen():find("agent: idle", 1, true)
  end)
  return socket, screen
end

return M
