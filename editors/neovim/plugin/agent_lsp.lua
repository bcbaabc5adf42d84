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
  { nargs = "*", range = true, desc = "agent-lsp: send a prompt (a range adds the lines as context)" }
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
  cmds().model(args.args ~= "" and args.args or nil)
end, { nargs = "?", desc = "agent-lsp: show or switch the model (provider/id)" })
vim.api.nvim_create_user_command("AgentChat", function()
  cmds().open_chat()
end, { desc = "agent-lsp: open the chat buffer" })
