--- Sessions in real Neovim: a stored session resumed after the daemon restarted opens the chat
--- with its history exactly as it looked live; the picker names sessions by title and last
--- activity; :AgentFork forks before a chat message and offers it again; :AgentRename names it.

--- Picks the session `id` (or nothing) in the next `vim.ui.select`; returns the labels shown.
local function pick_session(id)
  local shown = {}
  vim.ui.select = function(items, opts, on_choice)
    for _, item in ipairs(items) do
      shown[#shown + 1] = opts.format_item(item)
    end
    for _, item in ipairs(items) do
      if item.id == id then
        return on_choice(item)
      end
    end
    on_choice(nil)
  end
  return shown
end

--- Stops the daemon and waits until its sessions are forgotten.
local function restart_daemon(H, session)
  local state = require("agent_lsp.state")
  local old = require("agent_lsp").client()
  old:stop()
  H.wait("the daemon to exit and its sessions to be forgotten", function()
    return old:is_stopped() and state.sessions[session] == nil
  end)
end

--- Moves the cursor into the chat, on the n-th `## You` heading.
local function cursor_on_user_message(H, n)
  local chat = require("agent_lsp.chat")
  local win = assert(chat.win(), "the chat is open")
  vim.api.nvim_set_current_win(win)
  local seen = 0
  for l, line in ipairs(vim.api.nvim_buf_get_lines(chat.buf, 0, -1, false)) do
    if line == "## You" then
      seen = seen + 1
      if seen == n then
        -- On the message's text, below its heading.
        return vim.api.nvim_win_set_cursor(win, { l + 2, 0 })
      end
    end
  end
  error("no user message #" .. n .. " in the chat:\n" .. chat.text())
end

return {
  {
    name = "a resumed session opens the chat with its history as it looked live",
    run = function(H)
      local mock = H.mock({
        responses = {
          {
            thinking = "The user wants the file.",
            text = "Reading.",
            toolCalls = { { id = "call_1", name = "read", arguments = { path = "notes.txt" } } },
          },
          { text = "The file says alpha and beta." },
          { text = string.rep("streaming slowly ", 30), chunkSize = 4, delayMs = 60 },
        },
      })
      local root = H.workspace({ ["notes.txt"] = "alpha\nbeta\n" })
      vim.cmd.cd(root)
      H.setup(mock)
      local chat = require("agent_lsp.chat")
      local state = require("agent_lsp.state")

      vim.cmd("AgentPrompt read notes.txt")
      H.settled(1)
      vim.cmd("AgentPrompt talk for a while")
      H.wait("the second answer streaming", function()
        return chat.text():find("streaming slowly", 1, true)
      end)
      vim.cmd("AgentAbort")
      H.eq(true, H.settled(2).aborted, "the second run aborted")
      local live = chat.text()
      H.contains(live, "- tool `read` notes.txt\n    alpha\n    beta", "live tool line with its path and result")
      H.contains(live, "> The user wants the file.", "live thinking")
      H.contains(live, "_aborted_\n\n---", "live aborted marker and separator")
      local session = state.current

      restart_daemon(H, session)
      chat.close()
      chat.clear()
      local shown = pick_session(session)
      vim.cmd("AgentSessions")
      H.wait("the resumed history in the chat", function()
        return state.current == session and chat.text() ~= ""
      end)
      vim.wait(5000, function()
        return chat.text() == live
      end, 20)
      H.eq(live, chat.text(), "the resumed chat is the live chat")
      assert(chat.win(), "the chat window opened on resume")
      -- The picker names the session by its first prompt, with its activity and size.
      H.contains(table.concat(shown, "\n"), "read notes.txt · just now · 6 messages · stored", "picker")
      for _, line in ipairs(shown) do
        assert(not line:find(session, 1, true), "the picker shows a UUID: " .. line)
      end
      -- The daemon counts the messages as the picker does.
      local counted
      require("agent_lsp").request("agent/getState", { sessionId = session }, function(r)
        counted = r.messageCount
      end)
      H.wait("agent/getState", function()
        return counted
      end)
      H.eq(6, counted, "agent/getState messageCount")
    end,
  },
  {
    name = "a run that took a follow-up looks the same resumed as live",
    run = function(H)
      local mock = H.mock({
        responses = {
          { text = string.rep("first answer ", 8), chunkSize = 4, delayMs = 40 },
          { text = "Follow-up answer." },
        },
      })
      local root = H.workspace({})
      vim.cmd.cd(root)
      H.setup(mock)
      local chat = require("agent_lsp.chat")
      local state = require("agent_lsp.state")
      vim.cmd("AgentPrompt first question")
      H.wait("the first text delta", function()
        return #H.events_of("message_update") > 0
      end)
      vim.cmd("AgentFollowUp and then?")
      H.settled(1)
      H.eq(1, #H.events_of("agent_start"), "one run")
      local live = chat.text()
      H.contains(live, "first answer \n\n---\n\n## You\n\nand then?", "the follow-up after a separator")
      local session = state.current
      restart_daemon(H, session)
      chat.clear()
      pick_session(session)
      vim.cmd("AgentSessions")
      vim.wait(10000, function()
        return chat.text() == live
      end, 20)
      H.eq(live, chat.text(), "the resumed chat is the live chat")
    end,
  },
  {
    name = "AgentFork forks before the chat message under the cursor and offers it again",
    run = function(H)
      local mock = H.mock({
        responses = { { text = "First answer." }, { text = "Second answer." }, { text = "Answer in the fork." } },
      })
      local root = H.workspace({})
      vim.cmd.cd(root)
      H.setup(mock)
      local chat = require("agent_lsp.chat")
      local state = require("agent_lsp.state")
      vim.cmd("AgentPrompt first question")
      H.settled(1)
      vim.cmd("AgentPrompt second question")
      H.settled(2)
      local source = state.current

      local offered
      vim.ui.input = function(opts, on_confirm)
        offered = opts.default
        on_confirm("second question, asked again")
      end
      cursor_on_user_message(H, 2)
      vim.cmd("AgentFork")
      H.settled(3)
      H.eq("second question", offered, "the forked message offered in the prompt input")
      assert(state.current ~= source, "the chat shows the fork")
      local text = chat.text()
      H.contains(text, "first question", "the fork keeps the conversation before the message")
      H.contains(text, "First answer.", "fork")
      H.contains(text, "second question, asked again", "fork")
      H.contains(text, "Answer in the fork.", "fork")
      assert(not text:find("Second answer.", 1, true), "the fork holds the message it was forked before:\n" .. text)
      local body = vim.json.encode(mock.requests()[3].body.messages)
      H.contains(body, "First answer.", "the model sees the history before the fork point")
      assert(not body:find("Second answer.", 1, true), "the model saw the message after the fork point")

      local refused = false
      local notify = vim.notify
      vim.notify = function(msg, ...)
        refused = refused or msg:find("## You", 1, true) ~= nil
        return notify(msg, ...)
      end
      H.defer(function()
        vim.notify = notify
      end)
      vim.cmd("wincmd p")
      vim.cmd("AgentFork")
      assert(refused, "AgentFork outside the chat says where to put the cursor")
    end,
  },
  {
    name = "AgentRename names the session, and the picker shows the name",
    run = function(H)
      local mock = H.mock({ responses = { { text = "Hi." } } })
      local root = H.workspace({})
      vim.cmd.cd(root)
      H.setup(mock)
      vim.cmd("AgentPrompt hello there")
      H.settled(1)
      local named
      require("agent_lsp.sessions").rename("my work", function(n)
        named = n
      end)
      H.wait("the rename", function()
        return named
      end)
      H.eq("my work", named, "renamed")
      vim.cmd("AgentRename bug hunt")
      H.wait("the second rename in the stored session", function()
        local title
        require("agent_lsp.sessions").stored(function(list)
          title = list[1] and list[1].title
        end)
        vim.wait(2000, function()
          return title ~= nil
        end, 20)
        return title == "bug hunt"
      end)
      local shown = pick_session(false) -- look, pick nothing
      vim.cmd("AgentSessions")
      H.wait("the picker", function()
        return #shown > 0
      end)
      H.contains(shown[1], "* bug hunt · just now · 2 messages · idle", "the current session, by its name")
    end,
  },
}
