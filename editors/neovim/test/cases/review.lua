--- Review and undo in real Neovim (protocol.md §3.16): after a run that changed files,
--- :AgentChanges fills the quickfix list, :AgentDiff (or `D` in the quickfix window) opens a diff
--- split against the content before the run, :AgentRevert / :AgentRevertFile undo the run (a file
--- the user changed since is a conflict until `!`), :AgentRestore on a chat message undoes every
--- run since it, and with `fork` forks the conversation there too.

local ALLOW = { approval = { edit = "allow", write = "allow", bash = "allow" } }

--- One run that modifies a.txt, creates new.txt and deletes old.txt (in two turns).
local function changing_run(H)
  local mock = H.mock({
    responses = {
      {
        toolCalls = {
          { id = "call_1", name = "edit", arguments = { path = "a.txt", edits = { { oldText = "two", newText = "TWO" } } } },
          { id = "call_2", name = "write", arguments = { path = "new.txt", content = "fresh\n" } },
        },
      },
      -- In a turn of its own: a command running beside `write` can see write's temporary file
      -- and list it as created too.
      { toolCalls = { { id = "call_3", name = "bash", arguments = { command = "rm old.txt" } } } },
      { text = "Changed three files." },
    },
  })
  local root = H.workspace({ ["a.txt"] = "one\ntwo\nthree\n", ["old.txt"] = "bye\n" })
  vim.cmd.cd(root)
  H.setup(mock, ALLOW)
  vim.cmd("AgentPrompt change the files")
  H.settled(1)
  local updates = H.events_of("changes_update")
  H.eq(1, #updates, "changes_update events")
  H.eq(3, #updates[1].event.files, "files in changes_update: " .. vim.inspect(updates[1].event.files))
  return root
end

--- :AgentChanges, waiting for the quickfix list; returns its items by file name.
local function list_changes(H, root)
  vim.fn.setqflist({}, "f") -- no list of an earlier test can pass for this one
  vim.cmd("AgentChanges")
  H.wait("the run's changes in the quickfix list", function()
    return vim.fn.getqflist({ title = 0 }).title == require("agent_lsp.review").TITLE
  end)
  local by_name = {}
  for i, item in ipairs(vim.fn.getqflist()) do
    local name = vim.fs.basename(vim.api.nvim_buf_get_name(item.bufnr))
    by_name[name] = { index = i, text = item.text, path = root .. "/" .. name, lnum = item.lnum }
  end
  return by_name
end

local function lines(buf)
  return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
end

return {
  {
    name = "AgentChanges lists the run's files and AgentDiff splits each against its content before",
    run = function(H)
      local root = changing_run(H)
      local items = list_changes(H, root)
      H.eq(3, vim.tbl_count(items), "changed files")
      H.eq("modified", items["a.txt"].text, "a.txt")
      H.eq(2, items["a.txt"].lnum, "a.txt's entry is on its first changed line")
      H.eq("created", items["new.txt"].text, "new.txt")
      H.eq("deleted", items["old.txt"].text, "old.txt")
      assert(vim.fn.getqflist({ winid = 0 }).winid ~= 0, "the quickfix window is open")

      -- :AgentDiff on the current quickfix entry.
      vim.cmd("cc " .. items["a.txt"].index)
      local before = require("agent_lsp.review").diff()
      assert(before, "a diff split opened")
      H.eq(items["a.txt"].path, vim.api.nvim_buf_get_name(0), "the file's window is current")
      H.eq({ "one", "TWO", "three" }, lines(0), "the file now")
      H.eq({ "one", "two", "three" }, lines(before), "its content before the run")
      H.eq(true, vim.wo.diff, "the file's window is in diff mode")
      local before_win = vim.fn.bufwinid(before)
      H.eq(true, vim.wo[before_win].diff, "the before-image's window is in diff mode")
      H.eq(false, vim.bo[before].modifiable, "the before-image is read-only")

      -- `D` in the quickfix window, on the deleted file.
      vim.cmd("copen")
      vim.api.nvim_win_set_cursor(0, { items["old.txt"].index, 0 })
      vim.cmd("normal D")
      local name = vim.api.nvim_buf_get_name(0)
      H.eq(items["old.txt"].path, name, "D opened the deleted file")
      local before_old = vim.fn.bufnr("agent-lsp://before/old.txt")
      assert(before_old > 0, "the deleted file's before-image buffer")
      H.eq({ "bye" }, lines(before_old), "the deleted file's content before the run")
      H.eq(-1, vim.fn.bufnr("agent-lsp://before/a.txt"), "the previous before-image is gone")
    end,
  },
  {
    name = "AgentRevert undoes the run, a file changed since is a conflict until AgentRevertFile!",
    run = function(H)
      local root = changing_run(H)
      -- The user edits the agent's file afterwards (unsaved: the daemon sees the buffer).
      vim.cmd.edit(root .. "/a.txt")
      local buf = vim.api.nvim_get_current_buf()
      H.wait("the daemon to attach", function()
        return vim.lsp.get_clients({ bufnr = buf, name = "agent_lsp" })[1]
      end)
      vim.api.nvim_buf_set_lines(buf, 0, 1, false, { "ONE (mine)" })
      H.wait("the daemon's mirror of the buffer to hold the user's change", function()
        local text
        require("agent_lsp").request("agent/getDocument", { uri = vim.uri_from_bufnr(buf) }, function(r)
          text = r.text
        end)
        vim.wait(1000, function()
          return text ~= nil
        end, 10)
        return text and text:find("ONE (mine)", 1, true)
      end)
      local items = list_changes(H, root)
      H.contains(items["a.txt"].text, "changed by you since", "a.txt's entry")
      -- The user opened the file the agent created: the revert deletes it through Neovim.
      vim.cmd.edit(root .. "/new.txt")
      local new_buf = vim.api.nvim_get_current_buf()
      H.wait("the daemon to attach to new.txt", function()
        return vim.lsp.get_clients({ bufnr = new_buf, name = "agent_lsp" })[1]
      end)
      vim.api.nvim_set_current_buf(buf)

      local result
      require("agent_lsp.review").revert({
        on_result = function(r)
          result = r
        end,
      })
      H.wait("the revert", function()
        return result
      end)
      H.eq(1, #result.conflicts, "conflicts: " .. vim.inspect(result))
      H.eq(root .. "/a.txt", result.conflicts[1].path, "the conflict")
      H.eq(nil, vim.uv.fs_stat(root .. "/new.txt"), "the created file is gone")
      H.wait("the created file's buffer closed", function()
        return not vim.api.nvim_buf_is_valid(new_buf)
      end)
      H.eq("bye\n", H.read(root .. "/old.txt"), "the deleted file is back")
      H.eq({ "ONE (mine)", "TWO", "three" }, lines(buf), "the user's change is left alone")
      local qf = vim.fn.getqflist({ title = 0, items = 0 })
      H.eq("agent-lsp: revert", qf.title, "the revert's quickfix list")
      local texts = vim.tbl_map(function(i)
        return i.text
      end, qf.items)
      H.contains(table.concat(texts, "\n"), "conflict: ", "the conflict listed")
      H.contains(table.concat(texts, "\n"), "(! overwrites it)", "how to force it")

      -- In a.txt's own buffer: :AgentRevertFile! overwrites, through the buffer (undoable).
      vim.api.nvim_set_current_buf(buf)
      vim.cmd("AgentRevertFile!")
      H.wait("a.txt reverted in its buffer", function()
        return vim.deep_equal({ "one", "two", "three" }, lines(buf))
      end)
      vim.cmd("undo")
      H.eq({ "ONE (mine)", "TWO", "three" }, lines(buf), "the revert is undone with u")
    end,
  },
  {
    name = "AgentRestore on a chat message undoes every run since it, with fork the conversation too",
    run = function(H)
      local mock = H.mock({
        responses = {
          { toolCalls = { { id = "call_1", name = "edit", arguments = { path = "a.txt", edits = { { oldText = "two", newText = "TWO" } } } } } },
          { text = "First change done." },
          { toolCalls = { { id = "call_2", name = "write", arguments = { path = "b.txt", content = "bee\n" } } } },
          { text = "Second change done." },
        },
      })
      local root = H.workspace({ ["a.txt"] = "one\ntwo\nthree\n" })
      vim.cmd.cd(root)
      H.setup(mock, ALLOW)
      local chat = require("agent_lsp.chat")
      local state = require("agent_lsp.state")
      vim.cmd("AgentPrompt first change")
      H.settled(1)
      vim.cmd("AgentPrompt second change")
      H.settled(2)
      H.eq("bee\n", H.read(root .. "/b.txt"), "b.txt written")
      local source = state.current

      local function cursor_on(n)
        local win = assert(chat.win(), "the chat is open")
        vim.api.nvim_set_current_win(win)
        local seen = 0
        for l, line in ipairs(lines(chat.buf)) do
          if line == "## You" then
            seen = seen + 1
            if seen == n then
              return vim.api.nvim_win_set_cursor(win, { l, 0 })
            end
          end
        end
      end

      -- Back to before the second message: only the second run is undone.
      cursor_on(2)
      vim.cmd("AgentRestore")
      H.wait("b.txt removed", function()
        return vim.uv.fs_stat(root .. "/b.txt") == nil
      end)
      H.eq("one\nTWO\nthree\n", H.read(root .. "/a.txt"), "the first run's change stays")
      H.eq(source, state.current, "no fork without `fork`")

      -- Back to before the first message, forking the conversation there.
      local offered
      vim.ui.input = function(opts)
        offered = opts.default
      end
      cursor_on(1)
      vim.cmd("AgentRestore fork")
      H.wait("the fork", function()
        return offered ~= nil
      end)
      H.eq("one\ntwo\nthree\n", H.read(root .. "/a.txt"), "the first run's change undone")
      H.eq("first change", offered, "the message offered again")
      assert(state.current ~= source, "the chat shows the fork")
      H.eq("", chat.text(), "the fork before the first message is empty")
    end,
  },
  {
    name = "AgentDiff rebuilds the exact content before a change of several hunks",
    run = function(H)
      local original = {}
      for i = 1, 40 do
        original[#original + 1] = "line " .. i
      end
      local mock = H.mock({
        responses = {
          {
            toolCalls = {
              {
                id = "call_1",
                name = "edit",
                arguments = {
                  path = "long.txt",
                  edits = {
                    { oldText = "line 1\n", newText = "" },
                    { oldText = "line 20\n", newText = "line 20\nan added line\nand another\n" },
                    { oldText = "line 39\nline 40", newText = "the end" },
                  },
                },
              },
            },
          },
          { text = "Edited in three places." },
        },
      })
      local root = H.workspace({ ["long.txt"] = table.concat(original, "\n") .. "\n" })
      vim.cmd.cd(root)
      H.setup(mock, ALLOW)
      vim.cmd("AgentPrompt edit long.txt")
      H.settled(1)
      local items = list_changes(H, root)
      H.eq(1, items["long.txt"].lnum, "the entry is on the first change")
      -- From the chat window: the diff opens in a file window, never over the chat.
      vim.api.nvim_set_current_win(assert(require("agent_lsp.chat").win()))
      vim.cmd("AgentDiff")
      local before = vim.fn.bufnr("agent-lsp://before/long.txt")
      assert(before > 0, "the before-image buffer")
      H.eq(original, lines(before), "the content before the run")
      H.eq(root .. "/long.txt", vim.api.nvim_buf_get_name(0), "the file's window is current")
      assert(require("agent_lsp.chat").win(), "the chat window still shows the chat")
      local now = lines(0)
      H.eq("line 2", now[1], "the file now starts at line 2")
      H.eq("the end", now[#now], "the file now ends with the replacement")
    end,
  },
}
