--- Context for the next message: :AgentAddFile (the active buffer, unsaved text included),
--- :'<,'>AgentAddSelection, :AgentAddImage (an image block the model receives), :AgentDetach;
--- the prompt input's winbar lists what is attached.

local PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

local function input_winbar()
  local input = require("agent_lsp.input")
  local win = vim.fn.bufwinid(input.buf)
  assert(win ~= -1, "the input window is open")
  return vim.api.nvim_eval_statusline(vim.wo[win].winbar, { winid = win, use_winbar = true }).str
end

return {
  {
    name = "the active file and a selection are attached with one command each and go with the next prompt",
    run = function(H)
      local mock = H.mock({ responses = { { text = "Seen both." } } })
      local root = H.workspace({
        ["calc.py"] = "import os\n\ndef add(a, b):\n    return a + b\n",
        ["notes.txt"] = "remember\n",
      })
      vim.cmd.cd(root)
      H.setup(mock)
      vim.cmd.edit(root .. "/notes.txt")
      vim.cmd("AgentAddFile")
      vim.cmd("AgentDetach")
      H.eq({}, require("agent_lsp.context").pending, "detached")

      vim.cmd.edit(root .. "/calc.py")
      vim.api.nvim_buf_set_lines(0, 0, 0, false, { "# unsaved note" })
      vim.cmd("AgentAddFile")
      vim.cmd("4,5AgentAddSelection")
      vim.cmd("AgentAddFile") -- the same file again is not attached twice
      vim.cmd("AgentInput")
      H.eq("agent prompt (<C-s> sends)  attached: calc.py, calc.py:4-5", input_winbar(), "input winbar")
      vim.cmd.stopinsert()

      vim.cmd("AgentPrompt what changed?")
      H.eq(false, H.settled().aborted, "aborted")
      local body = vim.json.encode(mock.requests()[1].body)
      H.contains(body, "calc.py:\\n```python\\n# unsaved note\\nimport os", "the buffer's text, unsaved line included")
      H.contains(body, "calc.py lines 4-5:\\n```python\\ndef add(a, b):\\n    return a + b\\n```", "the selection")
      H.contains(body, "what changed?", "the prompt")
      local _, count = body:gsub("# unsaved note", "")
      H.eq(1, count, "the file went once")
      assert(not body:find("remember", 1, true), "a detached file was sent")
      H.eq({}, require("agent_lsp.context").pending, "attachments are taken by the prompt")
      H.eq("agent prompt (<C-s> sends)", input_winbar(), "input winbar after sending")
    end,
  },
  {
    name = "an image attached by path reaches the model as an image",
    run = function(H)
      local mock = H.mock({ responses = { { text = "A single pixel." } } })
      local root = H.workspace({})
      vim.cmd.cd(root)
      H.setup(mock, { model = "openai/gpt-4.1-mini" })
      local f = assert(io.open(root .. "/pixel.png", "wb"))
      f:write(vim.base64.decode(PNG))
      f:close()
      local seen = H.capture_notify()
      vim.cmd("AgentAddImage " .. root .. "/notes.md")
      H.contains(table.concat(seen, "\n"), "not an image this can attach (png, jpg, gif, webp)", "refusal")
      vim.cmd("AgentAddImage pixel.png")
      H.eq("image pixel.png", require("agent_lsp.context").pending[1].label, "label")
      vim.cmd("AgentPrompt what is in the picture?")
      H.eq(false, H.settled().aborted, "aborted")
      local body = vim.json.encode(mock.requests()[1].body):gsub("\\/", "/")
      H.contains(body, "data:image/png;base64," .. PNG, "the image in the model request")
      H.contains(require("agent_lsp.chat").text(), "[image]", "the chat shows the image")
    end,
  },
  {
    name = "a prompt the daemon refuses gives its text and attachments back",
    run = function(H)
      -- No model anywhere: the daemon refuses every prompt with -32003 (protocol.md §2).
      local vars = { "AGENT_LSP_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL" }
      local saved = {}
      for _, v in ipairs(vars) do
        saved[v] = vim.env[v]
        vim.env[v] = nil
      end
      H.defer(function()
        for _, v in ipairs(vars) do
          vim.env[v] = saved[v]
        end
      end)
      local root = H.workspace({ ["calc.py"] = "def add(a, b):\n    return a + b\n", ["notes.txt"] = "remember\n" })
      vim.cmd.cd(root)
      local home = H.tempdir()
      require("agent_lsp").setup({
        cmd = { H.bin, "--stdio" },
        cmd_env = { HOME = home, XDG_CONFIG_HOME = home .. "/config", AGENT_LSP_SESSION_DIR = home .. "/sessions" },
        chat = { layout = "split" },
      })
      local seen = H.capture_notify()
      vim.cmd.edit(root .. "/calc.py")
      vim.cmd("AgentAddFile")
      vim.cmd("AgentInput")
      vim.cmd.stopinsert()
      local input = require("agent_lsp.input")
      vim.api.nvim_buf_set_lines(input.buf, 0, -1, false, { "explain add", "and @notes.txt" })
      input.send()
      H.wait("the refused text back in the input", function()
        return vim.api.nvim_buf_get_lines(input.buf, 0, 1, false)[1] ~= ""
      end)
      H.eq({ "explain add", "and @notes.txt" }, vim.api.nvim_buf_get_lines(input.buf, 0, -1, false), "the text is back")
      H.contains(table.concat(seen, "\n"), "agent-lsp: no model is configured", "the refusal is shown")
      local labels = vim.tbl_map(function(p)
        return p.label
      end, require("agent_lsp.context").pending)
      -- The mention stays in the text, so it is read again when the message is sent again.
      H.eq({ "calc.py" }, labels, "the attachment is pending again, the mention is not")
      H.eq("agent prompt (<C-s> sends)  attached: calc.py", input_winbar(), "input winbar")

      -- Typed meanwhile, then refused again from the command line: attachments still kept.
      vim.api.nvim_set_current_win(vim.fn.bufwinid(vim.fn.bufnr(root .. "/calc.py")))
      vim.cmd("AgentAddSelection")
      vim.cmd("AgentPrompt once more")
      H.wait("the second refusal", function()
        return #require("agent_lsp.context").pending == 2
      end)
      labels = vim.tbl_map(function(p)
        return p.label
      end, require("agent_lsp.context").pending)
      H.eq({ "calc.py", "calc.py:1-1" }, labels, "both attachments kept, in the order attached")
    end,
  },
  {
    name = "a prompt to a daemon that exits before it is ready comes back too",
    run = function(H)
      local root = H.workspace({ ["calc.py"] = "x = 1\n" })
      vim.cmd.cd(root)
      require("agent_lsp.context").clear() -- what the case before left pending
      require("agent_lsp").setup({ cmd = { "sh", "-c", "exit 3" }, chat = { layout = "split" } })
      local seen = H.capture_notify()
      vim.cmd.edit(root .. "/calc.py")
      vim.cmd("AgentAddFile")
      vim.cmd("AgentInput")
      vim.cmd.stopinsert()
      local input = require("agent_lsp.input")
      vim.api.nvim_buf_set_lines(input.buf, 0, -1, false, { "still here?" })
      input.send()
      H.wait("the text back in the input", function()
        return vim.api.nvim_buf_get_lines(input.buf, 0, 1, false)[1] ~= ""
      end)
      H.eq({ "still here?" }, vim.api.nvim_buf_get_lines(input.buf, 0, -1, false), "the text is back")
      H.eq(1, #require("agent_lsp.context").pending, "the attachment is pending again")
      H.contains(table.concat(seen, "\n"), "the daemon exited (code 3) before it was ready", "why")
    end,
  },
}
