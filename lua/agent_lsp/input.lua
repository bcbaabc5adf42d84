--- agent_lsp.input: the prompt input, a small scratch buffer to compose a message in.
---
--- `:AgentInput` opens it below the chat. Typing `/` at its start or `@` after a blank opens the
--- completion menu, narrowed fuzzily as you type (`completeopt` `fuzzy`) (commands with description and argument hint, workspace files; see
--- `agent_lsp.complete`); `<C-x><C-u>` asks for it by hand. `<CR>` in Normal mode or `<C-s>`
--- sends the text (a prompt when idle, steering while a run is active) with the pending
--- attachments, which the window's winbar lists; the buffer is emptied for the next message. A
--- message the daemon refuses (no model configured, say) comes back, text and attachments.

local complete = require("agent_lsp.complete")
local state = require("agent_lsp.state")

local M = {}

---@type integer?
M.buf = nil

local function valid()
  return M.buf ~= nil and vim.api.nvim_buf_is_valid(M.buf)
end

--- The input window's winbar: what goes along with the message.
---@return string
function M.winbar()
  local attached = require("agent_lsp.context").summary()
  return "agent prompt (<C-s> sends)" .. (attached ~= "" and ("  " .. attached) or "")
end

--- `/` and `@` insert themselves and open the completion menu (`i_CTRL-X_CTRL-U`) where they
--- start a command or a file mention; the menu then narrows fuzzily as you type.
---@param char "/"|"@"
---@return string keys
local function trigger(char)
  local row, col = unpack(vim.api.nvim_win_get_cursor(0))
  local before = vim.api.nvim_get_current_line():sub(1, col)
  local starts = char == "/" and row == 1 and before == "" or char == "@" and (before == "" or before:match("%s$"))
  if starts then
    return char .. vim.keycode("<C-x><C-u>")
  end
  return char
end

--- Sends the buffer's text and empties it.
function M.send()
  if not valid() then
    return
  end
  local buf = M.buf --[[@as integer]]
  local text = vim.trim(table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n"))
  if text == "" then
    return
  end
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, {})
  local s = state.current and state.sessions[state.current]
  local commands = require("agent_lsp.commands")
  if s and s.status ~= "idle" then
    commands.steer(text, nil, M.give_back)
  else
    commands.prompt(text, { on_refused = M.give_back })
  end
end

--- Puts the text of a message the daemon refused back at the top of the input (above anything
--- typed since), so it can be sent again once the cause is fixed.
---@param text string
function M.give_back(text)
  if not valid() then
    return
  end
  local lines = vim.split(text, "\n", { plain = true })
  local typed = vim.api.nvim_buf_get_lines(M.buf, 0, -1, false)
  local empty = #typed == 1 and typed[1] == ""
  vim.api.nvim_buf_set_lines(M.buf, 0, empty and -1 or 0, false, lines)
end

local function create()
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, "agent-lsp://input")
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "hide"
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = "markdown"
  vim.bo[buf].completefunc = "v:lua.require'agent_lsp.complete'.completefunc"
  pcall(function()
    vim.bo[buf].completeopt = "menuone,noinsert,fuzzy,popup"
  end)
  local function map(modes, lhs, fn, desc)
    vim.keymap.set(modes, lhs, fn, { buffer = buf, desc = "agent-lsp: " .. desc })
  end
  map("n", "<CR>", M.send, "send the prompt")
  map({ "n", "i" }, "<C-s>", M.send, "send the prompt")
  map("n", "q", "<cmd>close<cr>", "close the prompt input")
  for _, char in ipairs({ "/", "@" }) do
    vim.keymap.set("i", char, function()
      return trigger(char)
    end, { buffer = buf, expr = true, desc = "agent-lsp: complete " .. (char == "/" and "commands" or "files") })
  end
  M.buf = buf
  return buf
end

--- Opens the prompt input (below the chat window when it is open) and starts Insert mode.
--- The session's commands are fetched for completion; with no session yet one is created.
---@return integer win
function M.open()
  local buf = valid() and M.buf or create() --[[@as integer]]
  local win = vim.fn.bufwinid(buf)
  if win == -1 then
    local chat_win = require("agent_lsp.chat").win()
    win = vim.api.nvim_open_win(buf, true, { split = "below", win = chat_win or -1, height = 5 })
    vim.wo[win].winbar = "%{v:lua.require'agent_lsp.input'.winbar()}"
    vim.wo[win].wrap = true
  else
    vim.api.nvim_set_current_win(win)
  end
  if state.current then
    complete.fetch_commands()
  else
    require("agent_lsp.sessions").new_session(nil, function()
      complete.fetch_commands()
    end)
  end
  vim.cmd.startinsert({ bang = true })
  return win
end

return M
