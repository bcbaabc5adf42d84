--- agent_lsp.install: how to get the `agent-lsp` binary, said where it is found missing (the
--- first start, `:checkhealth agent_lsp`). The plugin looks for it on PATH (`cmd` in setup()
--- or `vim.lsp.config("agent_lsp", { cmd = … })` names another).

local M = {}

--- Each way installs the release binary in one line (the installer and cargo binstall put it in
--- ~/.cargo/bin; Mason in its own bin folder, which mason.nvim adds to PATH).
M.ways = {
  "curl --proto '=https' --tlsv1.2 -LsSf https://github.com/agent-lsp/agent-lsp/releases/latest/download/agent-lsp-installer.sh | sh",
  "cargo binstall agent-lsp",
  ":MasonInstall agent-lsp",
}

--- The advice lines: the three one-line installs, then where the binary must be.
---@return string[]
function M.advice()
  local lines = { "Install agent-lsp with one of:" }
  for _, way in ipairs(M.ways) do
    lines[#lines + 1] = "  " .. way
  end
  lines[#lines + 1] = "then make sure it is on Neovim's PATH (~/.cargo/bin for the first two), or set `cmd`"
  return lines
end

--- The message for a daemon command that is not executable.
---@param exe string
---@return string
function M.missing(exe)
  return string.format("%q is not executable.\n%s", exe, table.concat(M.advice(), "\n"))
end

--- `:AgentLogin`: `agent-lsp login` (the daemon's own binary, in its environment) in a terminal
--- split: pick a provider, paste its key (not echoed); the daemon stores it for the user and new
--- sessions use it.
---@return integer? channel the terminal's job, nil when the binary is missing
function M.login()
  local agent = require("agent_lsp")
  local exe = agent.cmd()[1]
  if vim.fn.executable(exe) ~= 1 then
    vim.notify("agent-lsp: " .. M.missing(exe), vim.log.levels.ERROR)
    return nil
  end
  local env = require("agent_lsp.config").options.cmd_env
  vim.cmd("botright 12new")
  local chan = vim.fn.jobstart({ exe, "login" }, { term = true, env = env })
  vim.cmd.startinsert()
  return chan
end

return M
