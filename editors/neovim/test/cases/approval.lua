--- Approvals go through `vim.ui.select` (stubbed here as a user would answer it) with a diff
--- preview float; rejecting with a reason reaches the model, allowing applies the edit, and
--- "Always allow" is remembered by the daemon for the session. A command's approval says how it
--- runs: sandboxed (where it writes, its network allowlist, its layers, what is not isolated on
--- this machine), unsandboxed, or asking to leave the sandbox.

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
    return vim.lsp.get_clients({ bufnr = buf, name = "agent_lsp" })[1]
  end)
  return buf
end

return {
  {
    name = "a sandboxed command's approval names the allowlist, its layers and everything not isolated here",
    run = function(H)
      local mock = H.mock({
        responses = {
          { toolCalls = { { id = "b1", name = "bash", arguments = { command = "echo sandboxed-ok key=$OPENAI_API_KEY" } } } },
          { text = "ok" },
        },
      })
      local root = H.workspace({ ["notes.txt"] = "alpha\n" })
      vim.cmd.cd(root)
      H.setup(mock, {
        sandbox = "workspaceWrite",
        sandbox_network = { "crates.io", "*.npmjs.org" },
        -- The model key the daemon has is removed from sandboxed commands unless named.
        sandbox_env = { "OPENAI_API_KEY" },
        -- This machine may have every layer: the daemon's test switch takes namespaces away.
        cmd_env = { AGENT_LSP_TEST_SANDBOX_NO_NAMESPACES = "1" },
      })
      open_notes(H, root)
      local init = H.client().config.init_options
      H.eq({ "crates.io", "*.npmjs.org" }, init.sandboxNetwork, "initializationOptions.sandboxNetwork")
      H.eq({ "OPENAI_API_KEY" }, init.sandboxEnv, "initializationOptions.sandboxEnv")
      H.eq("workspaceWrite", init.sandbox, "initializationOptions.sandbox")
      local calls = stub_select({ "Allow" })
      vim.cmd("AgentPrompt fetch the crates")
      H.eq(false, H.settled().aborted, "aborted")
      H.eq(1, #calls, "approval prompts")
      local prompt, preview = calls[1].prompt, table.concat(calls[1].previews, "\n")
      local runs = "Runs sandboxed (workspaceWrite): writes only inside the workspace (not its protected paths, such as .git) and its temporary directory; network only to crates.io, *.npmjs.org"
      H.contains(prompt, runs, "prompt")
      H.contains(prompt, ". Layers: Landlock ABI ", "prompt")
      H.contains(prompt, ". Not isolated here: ", "prompt")
      H.contains(prompt, "System V IPC of your other processes: no IPC namespace", "prompt")
      H.contains(preview, runs .. "\nLayers: Landlock ABI ", "preview")
      H.contains(preview, "\nNot isolated here:\n  - ", "preview")
      H.contains(preview, "\n  - the network allowlist: without a network namespace commands get no network at all", "preview")
      -- It ran sandboxed with the key sandbox_env named.
      H.contains(vim.json.encode(mock.requests()[2]), "sandboxed-ok key=test", "the command's output")
    end,
  },
  {
    name = "the sandbox lines: full network, an empty allowlist, readOnly, unsandboxed, unavailable",
    run = function(H)
      local approval = require("agent_lsp.approval")
      local function lines(sandbox)
        return approval.sandbox_lines({ toolName = "bash", sandbox = sandbox })
      end
      H.eq({ "Runs sandboxed (workspaceWrite): writes only inside the workspace (not its protected paths, such as .git) and its temporary directory; full network" },
        lines({ sandboxed = true, mode = "workspaceWrite", network = true }), "full network")
      H.eq({ "Runs sandboxed (workspaceWrite): writes only inside the workspace (not its protected paths, such as .git) and its temporary directory; no network (the allowlist names no host)" },
        lines({ sandboxed = true, mode = "workspaceWrite", network = false, allowedDomains = {} }), "empty allowlist")
      H.eq({ "Runs sandboxed (readOnly): writes nowhere but its temporary directory; no network", "Layers: Landlock ABI 7, seccomp" },
        lines({ sandboxed = true, mode = "readOnly", network = false, layers = { "Landlock ABI 7", "seccomp" } }), "readOnly")
      H.eq({ "Runs with your full rights (no sandbox)" }, lines({ sandboxed = false, mode = "off", network = true, notIsolated = { "x" } }), "unsandboxed")
      H.eq({ "Runs unsandboxed, with your rights: the sandbox is unavailable (no Landlock)" },
        lines({ sandboxed = false, mode = "off", network = true, unavailable = "no Landlock" }), "unavailable")
      H.eq({}, approval.sandbox_lines({ toolName = "edit" }), "other tools")
      H.eq(nil, approval.sandbox_line({ toolName = "edit" }), "other tools, one line")
    end,
  },
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
      local calls = stub_select({ "Always allow (this session): edit" })

      vim.cmd("AgentPrompt change beta twice")
      H.eq(false, H.settled().aborted, "aborted")
      H.eq(1, #calls, "approval prompts")
      H.eq({ "alpha", "delta" }, vim.api.nvim_buf_get_lines(buf, 0, -1, false), "buffer")
    end,
  },
}
