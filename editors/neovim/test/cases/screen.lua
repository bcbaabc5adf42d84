--- A person's view: Neovim runs in a real terminal (tmux), the user types :AgentPrompt, and the
--- screen shows the streamed answer in the chat split and the statusline going back to idle.
--- The captured screen is kept as test-artifacts/neovim/screen.txt.

local terminal = dofile(vim.fs.dirname(vim.fs.dirname(vim.fs.abspath(debug.getinfo(1, "S").source:sub(2)))) .. "/terminal.lua")
local tmux, launch = terminal.tmux, terminal.launch

local function keep(H, name, text)
  local out = assert(io.open(H.artifacts .. "/" .. name, "w"))
  out:write(text)
  out:close()
end

return {
  {
    name = "in a real terminal the chat split streams the answer and the statusline settles",
    run = function(H)
      local mock = H.mock({
        responses = { { text = "Hello from the terminal test.", chunkSize = 5, delayMs = 20, usage = { input = 7, output = 5 } } },
      })
      local root = H.workspace({ ["hello.txt"] = "hello\n" })
      local socket, screen = launch(H, mock, root, "hello.txt")
      tmux(socket, { "send-keys", ":AgentPrompt say hello", "Enter" })
      local text = ""
      H.wait("the answer on screen and the statusline back to idle with tokens", function()
        text = screen()
        return text:find("Hello from the terminal test.", 1, true) and text:find("agent: idle 12 tok", 1, true)
      end)
      keep(H, "screen.txt", text)
      H.contains(text, "## Agent", "screen")
      H.contains(text, "say hello", "screen")
      H.contains(text, "hello.txt", "screen")
      -- The chat window's winbar: model, thinking, context use and cost (gpt-4.1: $2/$8 per M).
      H.wait("the winbar with the stats on screen", function()
        text = screen()
        return text:find("agent: idle · openai/gpt-4.1 · think off · ctx 12/1.0M (0.0%) · $0.0001", 1, true)
      end)
    end,
  },
  {
    name = "in a real terminal an approval is answered in Neovim's own picker",
    run = function(H)
      local mock = H.mock({
        responses = {
          {
            toolCalls = {
              { id = "call_1", name = "edit", arguments = { path = "hello.txt", edits = { { oldText = "hello", newText = "world" } } } },
            },
          },
          { text = "Edited." },
        },
      })
      local root = H.workspace({ ["hello.txt"] = "hello\n" })
      local socket, screen = launch(H, mock, root, "hello.txt")
      tmux(socket, { "send-keys", ":AgentPrompt change hello", "Enter" })
      local text = ""
      H.wait("the approval picker on screen", function()
        text = screen()
        return text:find("1: Allow", 1, true)
      end)
      keep(H, "screen-approval.txt", text)
      H.contains(text, "agent-lsp wants to edit", "picker prompt")
      H.contains(text, "+world", "diff preview on screen")
      tmux(socket, { "send-keys", "1", "Enter" })
      H.wait("the edit in the buffer and the run settled", function()
        text = screen()
        return text:find("Edited.", 1, true) and text:find("agent: idle", 1, true) and text:match("^world\n")
      end)
      keep(H, "screen-approved.txt", text)
      H.eq("world\n", H.read(root .. "/hello.txt"), "file saved on the daemon's request")
    end,
  },
}
