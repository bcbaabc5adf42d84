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

return M
