--- agent_lsp.commands: what `:AgentPrompt`, `:AgentSteer`, … do, as a Lua API.

local chat = require("agent_lsp.chat")
local config = require("agent_lsp.config")
local protocol = require("agent_lsp.protocol")
local state = require("agent_lsp.state")

local M = {}

local function lsp()
  return require("agent_lsp")
end

--- Opens the chat buffer with the configured layout.
---@return integer win
function M.open_chat()
  return chat.open(config.options.chat)
end

--- The message sent to the daemon: plain text, or content blocks when context is attached
--- (the `context` strings, then the pending attachments and `@path` mentions of `agent_lsp.context`).
---@param text string
---@param context string[]? extra text blocks (e.g. a selection with its file and range)
---@return string|table[] message
---@return agent_lsp.Attachment[] taken the attachments it took (see `context.restore`)
local function message(text, context)
  local attached, taken = require("agent_lsp.context").take(text)
  if (not context or #context == 0) and #attached == 0 then
    return text, taken
  end
  local own = { type = "text", text = text }
  -- A slash command is expanded only when it starts the first text block (protocol.md §3.14).
  local command = text:sub(1, 1) == "/"
  local blocks = command and { own } or {}
  for _, c in ipairs(context or {}) do
    blocks[#blocks + 1] = { type = "text", text = c }
  end
  vim.list_extend(blocks, attached)
  if not command then
    blocks[#blocks + 1] = own
  end
  return blocks, taken
end

--- Request options that, when the daemon refuses a message (no model, busy, bad params) or
--- cannot be reached, put its attachments back and hand its text to `on_refused`: nothing the
--- user composed is lost.
---@param taken agent_lsp.Attachment[]
---@param text string
---@param on_refused fun(text: string, err: table)?
local function keep_on_error(taken, text, on_refused)
  return {
    on_error = function(err)
      require("agent_lsp.context").restore(taken)
      if on_refused then
        on_refused(text, err)
      end
    end,
  }
end

--- A context block for lines `l1..l2` (1-based) of a buffer.
---@param bufnr integer
---@param l1 integer
---@param l2 integer
---@return string
function M.selection_context(bufnr, l1, l2)
  local name = vim.api.nvim_buf_get_name(bufnr)
  local path = name ~= "" and vim.fn.fnamemodify(name, ":.") or "[No Name]"
  local lines = vim.api.nvim_buf_get_lines(bufnr, l1 - 1, l2, false)
  local ft = vim.bo[bufnr].filetype
  return string.format(
    "%s lines %d-%d:\n```%s\n%s\n```",
    path,
    l1,
    l2,
    ft,
    table.concat(lines, "\n")
  )
end

--- Makes the session of a prompt/newSession result current and remembers its daemon.
---@param result table?
---@param client_id integer?
function M.adopt(result, client_id)
  if type(result) == "table" and result.sessionId then
    if state.current ~= result.sessionId then
      state.current = result.sessionId
    end
    local s = state.session(result.sessionId)
    s.client_id = client_id or s.client_id
    -- (agent/newSession answers with the session's canonical cwd; relative tool paths start there.)
    s.cwd = result.cwd or s.cwd
    if result.runId then
      s.run_id = result.runId
    end
    require("agent_lsp.controls").seen(result.sessionId)
  end
end

--- Sends a prompt. While a run is active the daemon refuses it unless `opts.streaming_behavior`
--- is given ("steer" or "followUp"): use `steer`/`follow_up` then. When it is refused, the
--- attachments it took are pending again and `opts.on_refused(text, err)` runs.
---@param text string
---@param opts {context: string[]?, streaming_behavior: string?, on_result: fun(r: table)?, on_refused: fun(text: string, err: table)?}?
function M.prompt(text, opts)
  opts = opts or {}
  if config.options.chat.auto_open then
    M.open_chat()
  end
  local msg, taken = message(text, opts.context)
  local params = {
    sessionId = state.current,
    message = msg,
    streamingBehavior = opts.streaming_behavior,
  }
  lsp().request(protocol.methods.prompt, params, function(result, client_id)
    M.adopt(result, client_id)
    require("agent_lsp.controls").on_prompt_result(result)
    if opts.on_result then
      opts.on_result(result)
    end
  end, keep_on_error(taken, text, opts.on_refused))
end

--- Queues a message for the running session (`agent/steer` or `agent/followUp`); with no
--- session yet it sends a prompt with the matching streaming behaviour.
local function queue(method, behavior, text, on_result, on_refused)
  if not state.current then
    return M.prompt(text, { streaming_behavior = behavior, on_result = on_result, on_refused = on_refused })
  end
  local msg, taken = message(text)
  lsp().request(method, { sessionId = state.current, message = msg }, function(result)
    if on_result then
      on_result(result)
    end
  end, keep_on_error(taken, text, on_refused))
end

--- Steers the running agent: delivered after the current tool batch.
---@param text string
---@param on_result fun(r: table)?
---@param on_refused fun(text: string, err: table)? runs when the daemon refuses it
function M.steer(text, on_result, on_refused)
  queue(protocol.methods.steer, protocol.streaming_behavior.steer, text, on_result, on_refused)
end

--- Queues a follow-up: delivered when the agent would otherwise stop.
---@param text string
---@param on_result fun(r: table)?
---@param on_refused fun(text: string, err: table)? runs when the daemon refuses it
function M.follow_up(text, on_result, on_refused)
  queue(protocol.methods.follow_up, protocol.streaming_behavior.follow_up, text, on_result, on_refused)
end

--- Aborts the current session's run (safe when idle).
---@param on_result fun(r: table)?
function M.abort(on_result)
  if not state.current then
    vim.notify("agent-lsp: no session to abort", vim.log.levels.INFO)
    return
  end
  lsp().request(protocol.methods.abort, { sessionId = state.current }, function(result)
    if type(result) == "table" and result.aborted == false then
      vim.notify("agent-lsp: nothing was running", vim.log.levels.INFO)
    end
    if on_result then
      on_result(result)
    end
  end)
end

local sessions = require("agent_lsp.sessions")

--- Session commands live in `agent_lsp.sessions`.
M.switch = sessions.switch
M.new_session = sessions.new_session
M.sessions = sessions.pick
M.resume = sessions.resume

--- Restarts the daemon so that new `initializationOptions` take effect; `on_done` runs once
--- the old daemon has exited and the new configuration is enabled.
---@param on_done fun()?
local function restart(on_done)
  local name = config.options.name
  -- The old daemon's sessions die with it: forget them now, not when its exit callback runs,
  -- so that a prompt sent right away does not name a session the new daemon never had.
  require("agent_lsp.approval").cancel(nil)
  state.reset()
  local clients = vim.lsp.get_clients({ name = name })
  vim.lsp.enable(name, false)
  local function again()
    for _, c in ipairs(clients) do
      if not c:is_stopped() then
        return vim.defer_fn(again, 50)
      end
    end
    vim.lsp.config(name, { init_options = config.init_options(config.options) })
    vim.lsp.enable(name)
    if on_done then
      on_done()
    end
  end
  again()
end

--- Shows the current session's model, or switches to `spec` ("provider/id").
--- With a current session the switch is live (`agent/setModel`): its next request, even in the
--- middle of a run, goes to the new model with the whole history. Without one, `spec` becomes the
--- daemon's default (`initializationOptions.model`), which takes a restart.
---@param spec string?
---@param on_result fun(model: string?)?
function M.model(spec, on_result)
  if spec then
    config.options.model = spec
    if not state.current then
      restart(function()
        chat.paragraph("_model: " .. spec .. "_")
        if on_result then
          on_result(spec)
        end
      end)
      return
    end
    -- A refusal (unknown model, missing key) is shown by `request` with the daemon's message.
    lsp().request(protocol.methods.set_model, { sessionId = state.current, model = spec }, function(result)
      if type(result) ~= "table" or type(result.model) ~= "table" then
        return
      end
      local m = result.model.provider .. "/" .. tostring(result.model.id)
      chat.paragraph("_model: " .. m .. "_")
      if on_result then
        on_result(m)
      end
    end)
    return
  end
  if not state.current then
    local m = config.options.model or "from the environment (see :checkhealth agent_lsp)"
    vim.notify("agent-lsp model: " .. m, vim.log.levels.INFO)
    if on_result then
      on_result(config.options.model)
    end
    return
  end
  lsp().request(protocol.methods.get_state, { sessionId = state.current }, function(result)
    local m = type(result) == "table" and type(result.model) == "table" and result.model or {}
    local text = m.provider and (m.provider .. "/" .. tostring(m.id)) or "unknown"
    vim.notify("agent-lsp model: " .. text, vim.log.levels.INFO)
    if on_result then
      on_result(text)
    end
  end)
end

return M
