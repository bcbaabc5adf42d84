--- Approvals go through `vim.ui.select` (stubbed here as a user would answer it) with a diff
--- preview float; rejecting with a reason reaches the model, allowing applies the edit, and
--- "Always allow" is remembered by the daemon for the session.

local function edit_call(id, new)
  return {
    toolCalls = {
      { id = id, name = "edit", arguments = { path = "notes.txt", edits = { { oldText = "beta", newText = new } } } },
    },
  }
end

--- Text of every floating window currently open.
local function floats()
  local out = {}
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_config(win).relative ~= "" then
      local buf = vim.api.nvim_win_get_buf(win)
      out[#out + 1] = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
    end
  end
  return out
end

--- Replaces vim.ui.select for approvals: answers with the labels in `answers`, in order, and
--- records the prompt and the preview shown at the time.
local function stub_select(answers)
  local calls = {}
  vim.ui.select = function(items, opts, on_choice)
    if opts.kind ~= "agent_lsp.approval" then
      return on_choice(nil)
    end
    local label = table.remove(answers, 1)
    local pick
    for _, item in ipairs(items) do
      if opts.format_item(item) == label then
        pick = item
      end
    end
    calls[#calls + 1] = { prompt = opts.prompt, previews = floats(), label = label }
    on_choice(pick)
  end
  return calls
end

local function open_notes(H, root)
  vim.cmd.edit(root .. "/notes.txt")
  local buf = vim.api.nvim_get_current_buf()
  H.wait("the daemon to attach", function()
    return vim.lsp.get_clients({ bufnr = buf, name = "agent-lsp" })[1]
  end)
  return buf
end

return {
  {
    name = "an escalation out of the sandbox says so in the prompt and the preview",
    run = function(H)
      local outside = H.tempdir()
      local command = "echo x > " .. outside .. "/out.txt"
      local mock = H.mock({
        responses = {
          { toolCalls = { { id = "b1", name = "bash", arguments = { command = command, sandbox = false, justification = "writes the report" } } } },
          { text = "ok" },
        },
      })
      local root = H.workspace({ ["notes.txt"] = "alpha\n" })
      vim.cmd.cd(root)
      H.setup(mock)
      open_notes(H, root)
      local calls = stub_select({ "Allow" })
      vim.cmd("AgentPrompt write the report")
      H.eq(false, H.settled().aborted, "aborted")
      H.eq(1, #calls, "approval prompts")
      H.contains(calls[1].prompt, "Run outside the sandbox: " .. command, "approval prompt")
      H.contains(calls[1].prompt, "The model says: writes the report", "approval prompt")
      H.contains(table.concat(calls[1].previews, "\n"), "Runs OUTSIDE the sandbox", "preview")
      H.eq({ "x" }, vim.fn.readfile(outside .. "/out.txt"), "the approved command ran unsandboxed")
    end,
  },
  {
    name = "reject with a reason, then allow, via vim.ui.select with a diff preview",
    run = function(H)
      local mock = H.mock({ responses = { edit_call("call_1", "gamma"), edit_call("call_2", "delta"), { text = "ok" } } })
      local root = H.workspace({ ["notes.txt"] = "alpha\nbeta\n" })
      vim.cmd.cd(root)
      H.setup(mock)
      local buf = open_notes(H, root)
      local calls = stub_select({ "Reject with a reason…", "Allow" })
      vim.ui.input = function(_, on_confirm)
        on_confirm("not gamma, use delta")
      end

      vim.cmd("AgentPrompt change beta")
      H.eq(false, H.settled().aborted, "aborted")

      H.eq(2, #calls, "approval prompts")
      H.contains(calls[1].prompt, "notes.txt", "approval prompt")
      H.contains(table.concat(calls[1].previews, "\n"), "+gamma", "diff preview of the first edit")
      H.contains(table.concat(calls[1].previews, "\n"), "-beta", "diff preview of the first edit")
      H.contains(table.concat(calls[2].previews, "\n"), "+delta", "diff preview of the second edit")
      H.eq({}, floats(), "preview floats left open")

      H.eq({ "alpha", "delta" }, vim.api.nvim_buf_get_lines(buf, 0, -1, false), "buffer")
      local reqs = mock.requests()
      H.eq(3, #reqs, "model requests")
      H.contains(vim.json.encode(reqs[2]), "not gamma, use delta", "rejection reason sent to the model")
      H.eq({}, require("agent_lsp.approval").pending, "pending approvals")
    end,
  },
  {
    name = "always allow is asked once per session",
    run = function(H)
      local mock = H.mock({ responses = { edit_call("call_1", "gamma"), {
        toolCalls = {
          { id = "call_2", name = "edit", arguments = { path = "notes.txt", edits = { { oldText = "gamma", newText = "delta" } } } },
        },
      }, { text = "ok" } } })
      local root = H.workspace({ ["notes.txt"] = "alpha\nbeta\n" })
      vim.cmd.cd(root)
      H.setup(mock)
      local buf = open_notes(H, root)
      local calls = stub_select({ "Always allow (this session)" })

      vim.cmd("AgentPrompt change beta twice")
      H.eq(false, H.settled().aborted, "aborted")
      H.eq(1, #calls, "approval prompts")
      H.eq({ "alpha", "delta" }, vim.api.nvim_buf_get_lines(buf, 0, -1, false), "buffer")
    end,
  },
}
