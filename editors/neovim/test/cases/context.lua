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
}
