--- The commands beyond a plain prompt: a range as context, a refused prompt while busy, steering,
--- :AgentModel (show, then switch by restarting the daemon), and the float layout.

--- Captures vim.notify messages for the rest of the test.
local function capture_notify(H)
  local seen = {}
  local orig = vim.notify
  vim.notify = function(msg, level)
    seen[#seen + 1] = { msg = msg, level = level }
  end
  H.defer(function()
    vim.notify = orig
  end)
  return seen
end

local function joined(seen)
  return table.concat(
    vim.tbl_map(function(n)
      return n.msg
    end, seen),
    "\n"
  )
end

return {
  {
    name = "a range goes along as context naming the file and lines",
    run = function(H)
      local mock = H.mock({ responses = { { text = "It adds numbers." } } })
      local root = H.workspace({ ["calc.py"] = "import os\n\ndef add(a, b):\n    return a + b\n" })
      vim.cmd.cd(root)
      H.setup(mock)
      vim.cmd.edit(root .. "/calc.py")
      vim.cmd("3,4AgentPrompt what does this do?")
      H.eq(false, H.settled().aborted, "aborted")
      local body = vim.json.encode(mock.requests()[1])
      H.contains(body, "calc.py lines 3-4", "context header sent to the model")
      H.contains(body, "def add(a, b):", "selected lines sent to the model")
      assert(not body:find("import os", 1, true), "lines outside the range were sent")
      H.contains(body, "what does this do?", "prompt text")
    end,
  },
  {
    name = "a prompt while the agent runs is refused with pi's message; steering is delivered",
    run = function(H)
      local mock = H.mock({
        responses = {
          { text = string.rep("working ", 12), chunkSize = 4, delayMs = 40 },
          { text = "Steered answer." },
        },
      })
      local root = H.workspace({})
      vim.cmd.cd(root)
      H.setup(mock)
      local seen = capture_notify(H)
      vim.cmd("AgentPrompt start working")
      H.wait("the first text delta", function()
        return #H.events_of("message_update") > 0
      end)
      vim.cmd("AgentPrompt another prompt")
      H.wait("the refusal", function()
        return joined(seen):find("Agent is already processing a prompt", 1, true)
      end)
      local result
      require("agent_lsp").steer("focus on the tests", function(r)
        result = r
      end)
      H.wait("the steer result", function()
        return result
      end)
      H.eq("steered", result.disposition, "steer disposition")
      H.eq(false, H.settled().aborted, "aborted")
      H.eq(1, #H.events_of("agent_start"), "runs")
      local text = require("agent_lsp.chat").text()
      H.contains(text, "focus on the tests", "steering message in the chat")
      H.contains(text, "Steered answer.", "answer after steering")
      assert(not vim.json.encode(mock.requests()):find("another prompt", 1, true), "refused prompt reached the model")
    end,
  },
  {
    name = "AgentModel shows the model and switches the live session's model without a restart",
    run = function(H)
      local mock = H.mock({ responses = { { text = "one" }, { text = "two" } } })
      local root = H.workspace({})
      vim.cmd.cd(root)
      H.setup(mock, { model = "openai/mock-one" })
      local seen = capture_notify(H)
      vim.cmd("AgentPrompt first")
      H.settled(1)
      require("agent_lsp").model()
      H.wait("the model notification", function()
        return joined(seen):find("agent-lsp model: openai/mock-one", 1, true)
      end)
      local client = require("agent_lsp").client()
      local switched
      require("agent_lsp").model("openai/mock-two", function(m)
        switched = m
      end)
      H.wait("the switch", function()
        return switched
      end)
      H.eq("openai/mock-two", switched, "the model the daemon reports")
      assert(not client:is_stopped(), "the daemon was restarted for a live switch")
      H.wait("the model_update event", function()
        return #H.events_of("model_update") == 1
      end)
      local state = require("agent_lsp.state")
      local first_session = H.events[1].sessionId
      H.eq(first_session, state.current, "the session stays current")
      H.contains(require("agent_lsp.chat").text(), "_model: openai/mock-two_", "the switch shown in the chat")
      vim.cmd("AgentPrompt second")
      H.settled(2)
      local reqs = mock.requests()
      H.eq(2, #reqs, "model requests")
      H.eq("mock-one", reqs[1].body.model, "first request's model")
      H.eq("mock-two", reqs[2].body.model, "second request's model")
      H.contains(vim.json.encode(reqs[2].body.messages), "first", "the conversation went on")
      H.eq(first_session, H.events_of("agent_settled")[2].sessionId, "second run's session")
    end,
  },
  {
    name = "the chat can open as a float",
    run = function(H)
      local mock = H.mock({ responses = { { text = "floating answer" } } })
      local root = H.workspace({})
      vim.cmd.cd(root)
      H.setup(mock, { chat = { layout = "float" } })
      vim.cmd("AgentPrompt hi")
      H.settled()
      local win = require("agent_lsp.chat").win()
      assert(win, "chat window open")
      H.eq("editor", vim.api.nvim_win_get_config(win).relative, "chat window is a float")
      H.contains(require("agent_lsp.chat").text(), "floating answer", "chat")
    end,
  },
}
