--- `saveAfterEdit` in real Neovim: each mode with a clean and a modified buffer. The daemon
--- never writes the file behind a buffer (Neovim would see the file changed on disk: W12), and
--- the user's unsaved text is saved only when they chose `always` (and the approval said so).

--- Runs one agent edit of notes.txt (`beta` -> `gamma`) with these options.
---@param opts {mode: string?, modify: boolean, save_on_request: boolean?, answer: fun(prompt: string, lines: string[])?}
---@return {buf: integer, root: string, result: string, changed_on_disk: boolean}
local function run_edit(H, opts)
  local mock = H.mock({
    responses = {
      {
        toolCalls = {
          {
            id = "call_1",
            name = "edit",
            arguments = { path = "notes.txt", edits = { { oldText = "beta", newText = "gamma" } } },
          },
        },
      },
      { text = "done" },
    },
  })
  local root = H.workspace({ ["notes.txt"] = "alpha\nbeta\n" })
  vim.cmd.cd(root)
  local setup = { approval = { edit = opts.answer and "ask" or "allow" } }
  -- vim.lsp.config merges with the previous test's config: later tests name their mode, only
  -- the first one (the default) leaves it out.
  if opts.mode then
    setup.save_after_edit = opts.mode -- the setup() option, sent as initializationOptions.saveAfterEdit
  end
  if opts.save_on_request ~= nil then
    setup.save_on_request = opts.save_on_request
  end
  if opts.answer then
    vim.ui.select = function(items, sel, on_choice)
      if sel.kind ~= "agent_lsp.approval" then
        return on_choice(nil)
      end
      local approval = require("agent_lsp.approval")
      opts.answer(sel.prompt, approval.preview_lines(approval.pending[#approval.pending].params))
      on_choice(items[1]) -- Allow
    end
  end
  H.setup(mock, setup)
  vim.cmd.edit(root .. "/notes.txt")
  local buf = vim.api.nvim_get_current_buf()
  H.wait("the daemon to attach", function()
    return vim.lsp.get_clients({ bufnr = buf, name = "agent_lsp" })[1]
  end)
  -- Whether Neovim finds the file changed on disk behind the buffer (what W12 warns about).
  local changed_on_disk = false
  vim.api.nvim_create_autocmd("FileChangedShell", {
    buffer = buf,
    callback = function()
      changed_on_disk = true
      vim.v.fcs_choice = ""
    end,
  })
  if opts.modify then
    vim.api.nvim_buf_set_lines(buf, 0, 1, false, { "ALPHA (unsaved)" })
    assert(vim.bo[buf].modified, "buffer has unsaved changes")
  end
  vim.cmd("AgentPrompt edit it")
  H.eq(false, H.settled().aborted, "aborted")
  vim.cmd.checktime(buf)
  local ends = H.events_of("tool_execution_end")
  H.eq(1, #ends, "tool executions")
  H.eq(false, ends[1].event.isError, "edit isError")
  return { buf = buf, root = root, result = vim.json.encode(ends[1].event.result), changed_on_disk = changed_on_disk }
end

local function lines(buf)
  return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
end

return {
  {
    name = "ifClean (default) saves a clean buffer",
    run = function(H)
      local r = run_edit(H, { modify = false })
      H.eq({ "alpha", "gamma" }, lines(r.buf), "buffer")
      H.eq(false, vim.bo[r.buf].modified, "saved by Neovim")
      H.eq("alpha\ngamma\n", H.read(r.root .. "/notes.txt"), "disk")
      H.eq(false, r.changed_on_disk, "file changed behind the buffer (W12)")
    end,
  },
  {
    name = "ifClean leaves a modified buffer unsaved and tells the model",
    run = function(H)
      local r = run_edit(H, { modify = true })
      H.eq({ "ALPHA (unsaved)", "gamma" }, lines(r.buf), "buffer holds both changes")
      H.eq(true, vim.bo[r.buf].modified, "still unsaved")
      H.eq("alpha\nbeta\n", H.read(r.root .. "/notes.txt"), "the user's text is not saved")
      H.eq(false, r.changed_on_disk, "file changed behind the buffer (W12)")
      H.contains(r.result, "not saved to disk", "tool result")
      H.contains(r.result, "unsaved changes of the user", "tool result")
    end,
  },
  {
    name = "always saves a modified buffer after an approval that warned about it",
    run = function(H)
      local prompt, preview
      local r = run_edit(H, {
        mode = "always",
        modify = true,
        answer = function(p, l)
          prompt, preview = p, l
        end,
      })
      local approval = require("agent_lsp.approval")
      H.contains(prompt, approval.unsaved_warning, "approval prompt")
      H.eq(approval.unsaved_warning, preview[2], "preview's warning line")
      H.eq({ "ALPHA (unsaved)", "gamma" }, lines(r.buf), "buffer")
      H.eq(false, vim.bo[r.buf].modified, "saved by Neovim")
      H.eq("ALPHA (unsaved)\ngamma\n", H.read(r.root .. "/notes.txt"), "disk")
      H.eq(false, r.changed_on_disk, "file changed behind the buffer (W12)")
    end,
  },
  {
    name = "always on a clean buffer asks without a warning",
    run = function(H)
      local prompt
      local r = run_edit(H, {
        mode = "always",
        modify = false,
        answer = function(p)
          prompt = p
        end,
      })
      assert(not prompt:find(require("agent_lsp.approval").unsaved_warning, 1, true), prompt)
      H.eq("alpha\ngamma\n", H.read(r.root .. "/notes.txt"), "disk")
    end,
  },
  {
    name = "never leaves a clean buffer unsaved",
    run = function(H)
      local r = run_edit(H, { mode = "never", modify = false })
      H.eq({ "alpha", "gamma" }, lines(r.buf), "buffer")
      H.eq(true, vim.bo[r.buf].modified, "unsaved")
      H.eq("alpha\nbeta\n", H.read(r.root .. "/notes.txt"), "disk")
      H.eq(false, r.changed_on_disk, "file changed behind the buffer (W12)")
      H.contains(r.result, "saveAfterEdit: never", "tool result")
    end,
  },
  {
    name = "never leaves a modified buffer unsaved",
    run = function(H)
      local r = run_edit(H, { mode = "never", modify = true })
      H.eq({ "ALPHA (unsaved)", "gamma" }, lines(r.buf), "buffer")
      H.eq(true, vim.bo[r.buf].modified, "unsaved")
      H.eq("alpha\nbeta\n", H.read(r.root .. "/notes.txt"), "disk")
      H.eq(false, r.changed_on_disk, "file changed behind the buffer (W12)")
      H.contains(r.result, "saveAfterEdit: never", "tool result")
    end,
  },
  {
    name = "with save_on_request = false the daemon never writes the file behind the buffer",
    run = function(H)
      local r = run_edit(H, { mode = "ifClean", modify = false, save_on_request = false })
      H.eq({ "alpha", "gamma" }, lines(r.buf), "buffer")
      H.eq(true, vim.bo[r.buf].modified, "unsaved")
      H.eq("alpha\nbeta\n", H.read(r.root .. "/notes.txt"), "disk untouched")
      H.eq(false, r.changed_on_disk, "file changed behind the buffer (W12)")
      H.contains(r.result, "did not save it when asked", "tool result")
    end,
  },
}
