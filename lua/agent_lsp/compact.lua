--- agent_lsp.compact: `:AgentCompact` and the compaction marker in the chat buffer.
---
--- Every compaction (manual, or automatic: `threshold` / `overflow`, protocol.md §3.15) writes a
--- marker line into the chat when it starts and, when it ends, the outcome with the summary the
--- model wrote below it as a block quote. The summary lines are a fold of the chat window
--- (`foldexpr` below, closed by default): `za` opens it.

local chat = require("agent_lsp.chat")
local protocol = require("agent_lsp.protocol")
local state = require("agent_lsp.state")

local M = {}

local ns = vim.api.nvim_create_namespace("agent_lsp.compact")

--- Summary regions of the chat buffer: extmark ids of their first and last line.
---@type {first: integer, last: integer}[]
local regions = {}

--- Compacts the current session (`agent/compact`); `on_result(result)` gets pi's
--- CompactionResult. A refusal (`Nothing to compact …`) is notified with pi's message.
---@param instructions string?
---@param on_result fun(result: table)?
function M.compact(instructions, on_result)
  if not state.current then
    vim.notify("agent-lsp: no session to compact", vim.log.levels.INFO)
    return
  end
  local params = { sessionId = state.current }
  if instructions and instructions ~= "" then
    params.instructions = instructions
  end
  require("agent_lsp").request(protocol.methods.compact, params, function(result)
    if on_result then
      on_result(result)
    end
  end)
end

local function tokens(n)
  return type(n) == "number" and require("agent_lsp.controls").short(n) or "?"
end

--- `compaction_start {reason}`.
---@param ev table
function M.on_start(ev)
  chat.paragraph(string.format("_compacting the conversation (%s)…_", tostring(ev.reason or "manual")))
end

--- `compaction_end {reason, result?, aborted, willRetry, errorMessage?}`.
---@param ev table
function M.on_end(ev)
  local reason = tostring(ev.reason or "manual")
  if ev.aborted then
    return chat.paragraph(string.format("_compaction cancelled (%s)_", reason))
  end
  local result = type(ev.result) == "table" and ev.result or nil
  if not result then
    return chat.paragraph(string.format("**Compaction failed** (%s): %s", reason, tostring(ev.errorMessage or "no result")))
  end
  chat.paragraph(
    string.format(
      "**Compacted** (%s): %s → %s tokens%s; summary below (`za` toggles it)",
      reason,
      tokens(result.tokensBefore),
      tokens(result.estimatedTokensAfter),
      ev.willRetry and ", retrying the request" or ""
    )
  )
  local summary = tostring(result.summary or "")
  local lines = vim.split(summary, "\n", { plain = true })
  local quoted = vim.tbl_map(function(l)
    return l == "" and ">" or ("> " .. l)
  end, lines)
  chat.append("\n\n")
  local buf = chat.ensure_buf()
  local first = vim.api.nvim_buf_line_count(buf) - 1
  chat.append(table.concat(quoted, "\n"))
  local last = vim.api.nvim_buf_line_count(buf) - 1
  -- Set after the text is in: a mark where text is inserted would move to its end.
  regions[#regions + 1] = {
    first = vim.api.nvim_buf_set_extmark(buf, ns, first, 0, {}),
    last = vim.api.nvim_buf_set_extmark(buf, ns, last, 0, {}),
  }
  chat.paragraph("")
  -- Folds are recomputed lazily: make the chat windows see the new region now.
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(win) == buf then
      vim.api.nvim_win_call(win, function()
        vim.cmd("silent! normal! zx")
      end)
    end
  end
end

--- The summary regions as 0-based `{first, last}` rows (cleared regions left out).
---@return {[1]: integer, [2]: integer}[]
function M.regions()
  local out, kept = {}, {}
  local buf = chat.buf
  if not (buf and vim.api.nvim_buf_is_valid(buf)) then
    return out
  end
  for _, r in ipairs(regions) do
    local a = vim.api.nvim_buf_get_extmark_by_id(buf, ns, r.first, {})
    local b = vim.api.nvim_buf_get_extmark_by_id(buf, ns, r.last, {})
    if a[1] and b[1] and b[1] >= a[1] and not (a[1] == 0 and b[1] == 0) then
      out[#out + 1] = { a[1], b[1] }
      kept[#kept + 1] = r
    end
  end
  regions = kept
  return out
end

--- Clears the regions (with the chat buffer's text).
function M.clear()
  regions = {}
  if chat.buf and vim.api.nvim_buf_is_valid(chat.buf) then
    vim.api.nvim_buf_clear_namespace(chat.buf, ns, 0, -1)
  end
end

--- `foldexpr` of the chat windows: summary lines and a subagent's steps (`agent_lsp.subagents`)
--- are fold level 1, everything else 0.
---@param lnum integer 1-based
---@return integer
function M.foldexpr(lnum)
  local step = require("agent_lsp.subagents").fold_level(lnum)
  if step then
    return step
  end
  if #regions == 0 then
    return 0
  end
  for _, r in ipairs(M.regions()) do
    if lnum - 1 >= r[1] and lnum - 1 <= r[2] then
      return 1
    end
  end
  return 0
end

--- Window options that make a chat window fold the summaries.
---@param win integer
function M.setup_window(win)
  vim.wo[win].foldmethod = "expr"
  vim.wo[win].foldexpr = "v:lua.require'agent_lsp.compact'.foldexpr(v:lnum)"
  vim.wo[win].foldlevel = 0
  vim.wo[win].foldenable = true
  -- A one-line summary folds too.
  vim.wo[win].foldminlines = 0
end

return M
