--- The user commands of agent-lsp. They load the plugin lazily; `setup()` must have run.

if vim.g.loaded_agent_lsp then
  return
end
vim.g.loaded_agent_lsp = true

local function cmds()
  return require("agent_lsp.commands")
end

--- Runs `fn(text)` with the command's argument, or asks for it when empty.
local function with_text(prompt, fn)
  return function(args)
    local context
    if args.range and args.range > 0 then
      context = { cmds().selection_context(vim.api.nvim_get_current_buf(), args.line1, args.line2) }
    end
    if args.args ~= "" then
      return fn(args.args, context)
    end
    vim.ui.input({ prompt = prompt }, function(text)
      if text and text ~= "" then
        fn(text, context)
      end
    end)
  end
end

vim.api.nvim_create_user_command(
  "AgentPrompt",
  with_text("Agent prompt: ", function(text, context)
    cmds().prompt(text, { context = context })
  end),
  {
    nargs = "*",
    range = true,
    complete = function(arglead, cmdline)
      return require("agent_lsp.complete").cmdline(arglead, cmdline)
    end,
    desc = "agent-lsp: send a prompt (a range adds the lines as context)",
  }
)
vim.api.nvim_create_user_command(
  "AgentSteer",
  with_text("Steer: ", function(text)
    cmds().steer(text)
  end),
  { nargs = "*", desc = "agent-lsp: steer the running agent" }
)
vim.api.nvim_create_user_command(
  "AgentFollowUp",
  with_text("Follow-up: ", function(text)
    cmds().follow_up(text)
  end),
  { nargs = "*", desc = "agent-lsp: queue a follow-up message" }
)
vim.api.nvim_create_user_command("AgentAbort", function()
  cmds().abort()
end, { desc = "agent-lsp: abort the running agent" })
vim.api.nvim_create_user_command("AgentNew", function(args)
  cmds().new_session(args.args ~= "" and vim.fn.fnamemodify(args.args, ":p") or nil)
end, { nargs = "?", complete = "dir", desc = "agent-lsp: start a new session" })
vim.api.nvim_create_user_command("AgentSessions", function()
  cmds().sessions()
end, { desc = "agent-lsp: pick a session" })
vim.api.nvim_create_user_command("AgentModel", function(args)
  if args.args == "" then
    return require("agent_lsp.controls").pick_model()
  end
  cmds().model(args.args)
end, {
  nargs = "?",
  complete = function(arglead)
    return require("agent_lsp.controls").complete_models(arglead)
  end,
  desc = "agent-lsp: pick a model, or switch to provider/id",
})
vim.api.nvim_create_user_command("AgentThinking", function(args)
  local controls = require("agent_lsp.controls")
  if args.args == "" then
    return controls.pick_thinking()
  end
  controls.set_thinking(args.args)
end, {
  nargs = "?",
  complete = function()
    return require("agent_lsp.controls").levels
  end,
  desc = "agent-lsp: pick or set the thinking level",
})
vim.api.nvim_create_user_command("AgentInput", function()
  require("agent_lsp.input").open()
end, { desc = "agent-lsp: open the prompt input (/ commands and @ files complete)" })
vim.api.nvim_create_user_command("AgentAddFile", function(args)
  local path = args.args ~= "" and args.args or vim.api.nvim_buf_get_name(0)
  if path == "" then
    return vim.notify("agent-lsp: this buffer has no file", vim.log.levels.WARN)
  end
  require("agent_lsp.context").add_file(path)
end, { nargs = "?", complete = "file", desc = "agent-lsp: attach a file (default: this one) to the next message" })
vim.api.nvim_create_user_command("AgentAddSelection", function(args)
  require("agent_lsp.context").add_selection(vim.api.nvim_get_current_buf(), args.line1, args.line2)
end, { range = true, desc = "agent-lsp: attach the selected lines to the next message" })
vim.api.nvim_create_user_command("AgentAddImage", function(args)
  require("agent_lsp.context").add_image(args.args)
end, { nargs = 1, complete = "file", desc = "agent-lsp: attach an image file to the next message" })
vim.api.nvim_create_user_command("AgentDetach", function()
  require("agent_lsp.context").clear()
end, { desc = "agent-lsp: drop the attachments waiting for the next message" })
vim.api.nvim_create_user_command("AgentCompact", function(args)
  require("agent_lsp.compact").compact(args.args)
end, { nargs = "*", desc = "agent-lsp: summarize the conversation to free context" })
vim.api.nvim_create_user_command("AgentMcp", function()
  require("agent_lsp.mcp").open()
end, { desc = "agent-lsp: show the MCP servers, updated live" })
vim.api.nvim_create_user_command("AgentSandbox", function()
  require("agent_lsp.sandbox").show()
end, { desc = "agent-lsp: show the command sandbox: mode, network, layers, what it does not isolate" })
vim.api.nvim_create_user_command("AgentJobs", function()
  require("agent_lsp.jobs").open()
end, { desc = "agent-lsp: the background jobs: <CR> shows a job's output, x stops it" })
vim.api.nvim_create_user_command("AgentLogin", function()
  require("agent_lsp.install").login()
end, { desc = "agent-lsp: store a provider's key (agent-lsp login in a terminal)" })
vim.api.nvim_create_user_command("AgentChat", function()
  cmds().open_chat()
end, { desc = "agent-lsp: open the chat buffer" })

-- Review and undo (agent_lsp.review), sessions (agent_lsp.sessions), the queue (agent_lsp.queue).
local function review()
  return require("agent_lsp.review")
end
vim.api.nvim_create_user_command("AgentChanges", function()
  review().changes()
end, { desc = "agent-lsp: the files the last run changed, in the quickfix list" })
vim.api.nvim_create_user_command("AgentDiff", function()
  review().diff()
end, { desc = "agent-lsp: diff a changed file against its content before the run" })
vim.api.nvim_create_user_command("AgentRevert", function(args)
  review().revert({ force = args.bang })
end, { bang = true, desc = "agent-lsp: revert the run's changes (! overwrites your later changes)" })
vim.api.nvim_create_user_command("AgentRevertFile", function(args)
  review().revert_file({ force = args.bang })
end, { bang = true, desc = "agent-lsp: revert the run's change of this file (! overwrites your later changes)" })
vim.api.nvim_create_user_command("AgentRestore", function(args)
  review().restore({ force = args.bang, fork = args.args == "fork" })
end, {
  bang = true,
  nargs = "?",
  complete = function()
    return { "fork" }
  end,
  desc = "agent-lsp: restore the files as they were before the chat message under the cursor (fork: the conversation too)",
})
vim.api.nvim_create_user_command("AgentFork", function()
  require("agent_lsp.sessions").fork()
end, { desc = "agent-lsp: fork the session before the chat message under the cursor" })
vim.api.nvim_create_user_command("AgentRename", function(args)
  require("agent_lsp.sessions").rename(args.args)
end, { nargs = 1, desc = "agent-lsp: name the current session" })
vim.api.nvim_create_user_command("AgentQueue", function()
  require("agent_lsp.queue").pick()
end, { desc = "agent-lsp: the queued steering and follow-up messages; pick one to remove it" })
