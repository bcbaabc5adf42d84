--- :AgentFollowUp while the agent runs queues a message (statusline shows it) that the daemon
--- delivers when the run would stop; :AgentNew and :AgentSessions switch the chat between
--- sessions.

return {
  {
    name = "a follow-up queued during a run is delivered in the same run",
    run = function(H)
      local mock = H.mock({
        responses = {
          { text = string.rep("first answer ", 8), chunkSize = 4, delayMs = 40 },
          { text = "Second answer." },
        },
      })
      local root = H.workspace({})
      vim.cmd.cd(root)
      H.setup(mock)
      -- The statusline while the follow-up waits, read when its queue_update is handled: read
      -- after the wait, the run may already have taken the follow-up (and emptied the queue).
      local queued_statusline
      local au = vim.api.nvim_create_autocmd("User", {
        pattern = "AgentLspEvent",
        callback = function(args)
          local ev = args.data.event
          if ev.type == "queue_update" and #(ev.followUp or {}) == 1 and not queued_statusline then
            queued_statusline = require("agent_lsp").statusline()
          end
        end,
      })
      H.defer(function()
        pcall(vim.api.nvim_del_autocmd, au)
      end)

      vim.cmd("AgentPrompt first question")
      H.wait("the first text delta", function()
        return #H.events_of("message_update") > 0
      end)
      vim.cmd("AgentFollowUp and then?")
      H.wait("the queue_update with the follow-up", function()
        return queued_statusline
      end)
      H.contains(queued_statusline, "+1q", "statusline with a queued message")
      H.eq(false, H.settled().aborted, "aborted")
      H.eq(1, #H.events_of("agent_start"), "runs")

      local text = require("agent_lsp.chat").text()
      H.contains(text, "and then?", "chat")
      H.contains(text, "Second answer.", "chat")
      H.eq(2, #mock.requests(), "model requests")
      assert(not require("agent_lsp").statusline():find("q"), "queue not empty after delivery")
    end,
  },
  {
    name = "AgentNew starts a session and AgentSessions switches back with its history",
    run = function(H)
      local mock = H.mock({ responses = { { text = "Answer in session one." }, { text = "Answer in session two." } } })
      local root = H.workspace({})
      vim.cmd.cd(root)
      H.setup(mock)
      local state = require("agent_lsp.state")
      local chat = require("agent_lsp.chat")

      vim.cmd("AgentPrompt question one")
      H.settled(1)
      local first = state.current

      vim.cmd("AgentNew")
      H.wait("the new session", function()
        return state.current ~= first
      end)
      H.eq("", chat.text(), "chat after AgentNew")
      vim.cmd("AgentPrompt question two")
      H.settled(2)
      H.contains(chat.text(), "Answer in session two.", "chat of session two")
      assert(not chat.text():find("session one", 1, true), "session one shown in session two")

      vim.ui.select = function(items, opts, on_choice)
        for _, item in ipairs(items) do
          if item.id == first then
            return on_choice(item)
          end
        end
        on_choice(nil)
      end
      vim.cmd("AgentSessions")
      H.wait("session one's history in the chat", function()
        return state.current == first and chat.text():find("Answer in session one.", 1, true)
      end)
      H.contains(chat.text(), "question one", "history")
    end,
  },
  {
    name = "AgentSessions resumes a stored session after the daemon restarted",
    run = function(H)
      local mock = H.mock({ responses = { { text = "Stored answer." }, { text = "Resumed answer." } } })
      local root = H.workspace({})
      vim.cmd.cd(root)
      H.setup(mock)
      local state = require("agent_lsp.state")
      vim.cmd("AgentPrompt remember the number 42")
      H.settled(1)
      local stored = state.current
      local old = require("agent_lsp").client()
      old:stop()
      H.wait("the daemon to exit and its sessions to be forgotten", function()
        return old:is_stopped() and state.sessions[stored] == nil
      end)

      local offered
      vim.ui.select = function(items, opts, on_choice)
        offered = vim.tbl_map(opts.format_item, items)
        for _, item in ipairs(items) do
          if item.id == stored then
            return on_choice(item)
          end
        end
        on_choice(nil)
      end
      vim.cmd("AgentSessions")
      H.wait("the stored session resumed with its history", function()
        return state.current == stored and require("agent_lsp.chat").text():find("Stored answer.", 1, true)
      end)
      local offer = table.concat(offered, "\n")
      H.contains(offer, "remember the number 42 · just now · 2 messages · stored", "stored session offered by its title")
      assert(not offer:find(stored, 1, true), "the picker shows the session's id:\n" .. offer)
      assert(require("agent_lsp.chat").win(), "the resumed session's chat is open")
      vim.cmd("AgentPrompt what was the number?")
      H.settled(2)
      H.eq(stored, H.events_of("agent_settled")[2].sessionId, "run in the resumed session")
      H.contains(vim.json.encode(mock.requests()[2].body.messages), "remember the number 42", "history sent to the model")
    end,
  },
  {
    name = "queued messages stay visible below the chat and AgentQueue removes one",
    run = function(H)
      local mock = H.mock({
        responses = {
          { text = string.rep("a long first answer ", 12), chunkSize = 8, delayMs = 60 },
          { text = "Steered answer." },
          { text = "Follow-up answer." },
        },
      })
      local root = H.workspace({})
      vim.cmd.cd(root)
      H.setup(mock)
      local queue = require("agent_lsp.queue")
      vim.cmd("AgentPrompt start talking")
      H.wait("the first text delta", function()
        return #H.events_of("message_update") > 0
      end)
      vim.cmd("AgentFollowUp drop this one")
      vim.cmd("AgentFollowUp keep this one")
      vim.cmd("AgentSteer steer now")
      H.wait("three queued messages shown below the chat", function()
        return #queue.shown() == 4
      end)
      H.eq({
        "⏳ queued steer: steer now",
        "⏳ queued follow-up: drop this one",
        "⏳ queued follow-up: keep this one",
        "   (:AgentQueue removes one)",
      }, queue.shown(), "the queue below the chat")

      local offered
      vim.ui.select = function(items, opts, on_choice)
        offered = vim.tbl_map(opts.format_item, items)
        for _, item in ipairs(items) do
          if item.text == "drop this one" then
            return on_choice(item)
          end
        end
      end
      vim.cmd("AgentQueue")
      H.wait("the removed message gone from the chat's queue", function()
        return #queue.shown() == 3
      end)
      H.eq({ "steer: steer now", "follow-up: drop this one", "follow-up: keep this one" }, offered, "AgentQueue's list")
      H.eq("⏳ queued follow-up: keep this one", queue.shown()[2], "the remaining follow-up")
      H.settled(1)
      H.eq({}, queue.shown(), "nothing queued after the run")
      local sent = vim.json.encode(vim.tbl_map(function(r)
        return r.body.messages
      end, mock.requests()))
      H.contains(sent, "steer now", "the steering message reached the model")
      H.contains(sent, "keep this one", "the kept follow-up reached the model")
      assert(not sent:find("drop this one", 1, true), "the removed follow-up reached the model")
    end,
  },
}
