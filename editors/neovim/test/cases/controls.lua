--- Live controls: :AgentModel picks from agent/listModels and switches the running session,
--- :AgentThinking sets the level the model accepts, and the chat window's winbar (and
--- model_status() for statuslines) shows model, thinking, context use and cost, refreshed after
--- each run and on every switch.

--- Replaces vim.ui.select for the rest of the test: records each call, answers with `choose`.
local function stub_select(choose)
  local calls = {}
  vim.ui.select = function(items, opts, on_choice)
    local call = { items = items, opts = opts, labels = {} }
    for i, item in ipairs(items) do
      call.labels[i] = opts.format_item and opts.format_item(item) or tostring(item)
    end
    calls[#calls + 1] = call
    vim.schedule(function()
      on_choice(choose(items, call))
    end)
  end
  return calls
end

--- The chat window's winbar as drawn.
local function winbar()
  local win = assert(require("agent_lsp.chat").win(), "the chat window is open")
  local bar = vim.wo[win].winbar
  return vim.api.nvim_eval_statusline(bar, { winid = win, use_winbar = true }).str
end

--- A models.json with one reasoning model served by the mock (no key needed).
local function models_json(H, mock)
  local config = H.tempdir()
  vim.fn.mkdir(config .. "/agent-lsp", "p")
  local f = assert(io.open(config .. "/agent-lsp/models.json", "w"))
  f:write(vim.json.encode({
    providers = {
      ["local"] = {
        baseUrl = mock.openaiBaseUrl,
        api = "openai-completions",
        models = {
          {
            id = "thinker",
            contextWindow = 10000,
            reasoning = true,
            input = { "text" },
            cost = { input = 100, output = 1000, cacheRead = 0, cacheWrite = 0 },
          },
        },
      },
    },
  }))
  f:close()
  return config
end

return {
  {
    name = "AgentModel picks from listModels and switches the live session; the winbar follows",
    run = function(H)
      local mock = H.mock({
        responses = {
          { text = "one", usage = { input = 1000, output = 200 } },
          { text = "two", usage = { input = 1500, output = 100 } },
        },
      })
      local root = H.workspace({})
      vim.cmd.cd(root)
      H.setup(mock, { model = "openai/gpt-4.1-mini" })
      vim.cmd("AgentPrompt first")
      H.settled(1)
      -- gpt-4.1-mini: $0.40 / $1.60 per million tokens, a 1,047,576-token window.
      H.wait("the stats after the run", function()
        return winbar():find("$0.0007", 1, true)
      end)
      H.eq("agent: idle · openai/gpt-4.1-mini · think off · ctx 1.2k/1.0M (0.1%) · $0.0007", winbar(), "winbar")
      H.eq("openai/gpt-4.1-mini · think off · ctx 1.2k/1.0M (0.1%) · $0.0007", require("agent_lsp").model_status(), "model_status()")

      H.eq({ "openai/gpt-4o", "openai/gpt-4o-mini" }, vim.fn.getcompletion("AgentModel openai/gpt-4o", "cmdline"), ":AgentModel completes")
      local client = require("agent_lsp").client()
      local calls = stub_select(function(items)
        for _, m in ipairs(items) do
          if m.provider == "openai" and m.id == "gpt-4o" then
            return m
          end
        end
      end)
      vim.cmd("AgentModel")
      H.wait("the model_update event", function()
        return #H.events_of("model_update") == 1
      end)
      H.eq(1, #calls, "pickers shown")
      H.contains(calls[1].opts.prompt, "(now openai/gpt-4.1-mini)", "picker prompt")
      local labels = table.concat(calls[1].labels, "\n")
      H.contains(labels, "* openai/gpt-4.1-mini  GPT-4.1 mini  ctx 1.0M  $0.4/$1.6 per M", "the current model, marked")
      H.contains(labels, "  openai/gpt-4o  GPT-4o  ctx 128.0k  $2.5/$10 per M", "another model")
      assert(not client:is_stopped(), "the daemon was restarted for a live switch")
      -- Same history, a smaller window: the percentage grows.
      H.wait("the winbar after the switch", function()
        return winbar():find("gpt-4o", 1, true) and winbar():find("128.0k", 1, true)
      end)
      H.eq("agent: idle · openai/gpt-4o · think off · ctx 1.2k/128.0k (0.9%) · $0.0007", winbar(), "winbar after the switch")

      vim.cmd("AgentPrompt second")
      H.settled(2)
      local reqs = mock.requests()
      H.eq("gpt-4.1-mini", reqs[1].body.model, "first request's model")
      H.eq("gpt-4o", reqs[2].body.model, "second request's model")
      -- gpt-4o: 1500 * 2.5 + 100 * 10 per million = $0.00475 on top.
      H.wait("the cost after the second run", function()
        return winbar():find("$0.0055", 1, true)
      end)
      H.contains(winbar(), "ctx 1.6k/128.0k (1.3%)", "context after the second run")
    end,
  },
  {
    name = "a new session shows its model in the winbar before any prompt",
    run = function(H)
      local mock = H.mock({ responses = {} })
      local root = H.workspace({})
      vim.cmd.cd(root)
      H.setup(mock, { model = "openai/gpt-4.1-mini" })
      vim.cmd("AgentNew")
      vim.cmd("AgentChat")
      H.wait("the model in the winbar", function()
        return winbar():find("agent: idle · openai/gpt-4.1-mini · think off", 1, true)
      end)
    end,
  },
  {
    name = "AgentThinking offers the model's levels, sets one, clamps what the model cannot take; an image for it warns",
    run = function(H)
      local mock = H.mock({ responses = { { text = "plain" }, { text = "deep" } } })
      local root = H.workspace({})
      vim.cmd.cd(root)
      local config = models_json(H, mock)
      H.setup(mock, { model = "local/thinker", cmd_env = { XDG_CONFIG_HOME = config } })
      vim.cmd("AgentPrompt first")
      H.settled(1)
      H.wait("the status", function()
        return winbar():find("local/thinker · think off", 1, true)
      end)
      local calls = stub_select(function()
        return "high"
      end)
      vim.cmd("AgentThinking")
      H.wait("the model_update event", function()
        return #H.events_of("model_update") == 1
      end)
      H.eq({ "off", "low", "medium", "high" }, calls[1].items, "levels offered")
      H.eq("high", H.events_of("model_update")[1].event.thinkingLevel, "level set")
      H.wait("the winbar", function()
        return winbar():find("think high", 1, true)
      end)
      vim.cmd("AgentPrompt second")
      H.settled(2)
      H.eq("high", mock.requests()[2].body.reasoning_effort, "the next request thinks")

      local seen = H.capture_notify()
      vim.cmd("AgentPrompt /model")
      H.wait("the /model answer", function()
        return table.concat(seen, "\n"):find("agent-lsp model: local/thinker, thinking high", 1, true)
      end)
      vim.cmd("AgentThinking xhigh")
      H.wait("the clamp notice", function()
        return table.concat(seen, "\n"):find("local/thinker does not take thinking xhigh; set to high", 1, true)
      end)
      -- A text-only model: attaching an image says so.
      local png = root .. "/pixel.png"
      vim.fn.writefile({ "not really a png" }, png)
      vim.cmd("AgentAddImage " .. png)
      H.wait("the image warning", function()
        return table.concat(seen, "\n"):find("local/thinker does not take images (its input is text only); the image is sent as it is", 1, true)
      end)
    end,
  },
}
