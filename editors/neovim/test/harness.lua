--- Test harness: runs ONE case file inside headless Neovim with the plugin loaded, against the
--- real daemon (`agent-lsp`) and the loopback mock model server (`agent-lsp-mock`).
---
--- Usage: nvim --clean --headless -l harness.lua CASE.lua
--- Environment (set by run.sh): AGENT_LSP_BIN, AGENT_LSP_MOCK_BIN, AGENT_LSP_MOCK_MCP_BIN,
--- AGENT_LSP_ARTIFACTS.
--- A case file returns a list of `{ name = string, run = function(H) … end }`. Each test prints
--- `PASS name` or `FAIL name: reason`; the process exits non-zero when any failed.

local case_file = assert(_G.arg[1], "usage: harness.lua CASE.lua")
local here = vim.fs.dirname(vim.fs.abspath(debug.getinfo(1, "S").source:sub(2)))
-- The plugin's runtime folders (lua/, plugin/, lsp/, doc/) sit at the repository root, three
-- levels above editors/neovim/test/: plugin managers put a repository's root on 'runtimepath'.
local root = vim.fs.dirname(vim.fs.dirname(vim.fs.dirname(here)))

vim.opt.rtp:prepend(root)
vim.cmd("filetype on")
vim.cmd.runtime("plugin/agent_lsp.lua")

local H = {}

H.bin = assert(os.getenv("AGENT_LSP_BIN"), "AGENT_LSP_BIN is not set")
H.mock_bin = assert(os.getenv("AGENT_LSP_MOCK_BIN"), "AGENT_LSP_MOCK_BIN is not set")
--- A stdio MCP server with one tool, `timed_echo`; its first argument delays `initialize` (ms).
H.mock_mcp_bin = assert(os.getenv("AGENT_LSP_MOCK_MCP_BIN"), "AGENT_LSP_MOCK_MCP_BIN is not set")
H.artifacts = assert(os.getenv("AGENT_LSP_ARTIFACTS"), "AGENT_LSP_ARTIFACTS is not set")
H.case = vim.fn.fnamemodify(case_file, ":t:r")
--- The repository root (the plugin's runtime folders are there) and the test folder.
H.root = root
H.test_dir = here

local cleanups = {} ---@type fun()[]

--- Registers a function run after the current test.
function H.defer(fn)
  cleanups[#cleanups + 1] = fn
end

--- Collects the messages of `vim.notify` until the test ends (then the original is back).
---@return string[]
function H.capture_notify()
  local seen = {}
  local orig = vim.notify
  vim.notify = function(msg)
    seen[#seen + 1] = msg
  end
  H.defer(function()
    vim.notify = orig
  end)
  return seen
end

--- Waits until `cond()` is truthy; fails the test with `what` on timeout.
---@param what string
---@param cond fun(): any
---@param timeout_ms integer?
function H.wait(what, cond, timeout_ms)
  local ok = vim.wait(timeout_ms or 30000, function()
    return cond() and true or false
  end, 10)
  if not ok then
    error("timed out waiting for: " .. what, 2)
  end
end

--- Asserts equality with a readable message.
function H.eq(expected, actual, what)
  if not vim.deep_equal(expected, actual) then
    error(
      string.format("%s: expected %s, got %s", what or "value", vim.inspect(expected), vim.inspect(actual)),
      2
    )
  end
end

--- Asserts that `haystack` contains `needle` (plain).
function H.contains(haystack, needle, what)
  if type(haystack) ~= "string" or not haystack:find(needle, 1, true) then
    error(string.format("%s: %q not found in:\n%s", what or "text", needle, tostring(haystack)), 2)
  end
end

--- A temp directory (removed after the test).
---@return string
function H.tempdir()
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir, "p")
  H.defer(function()
    vim.fn.delete(dir, "rf")
  end)
  return vim.uv.fs_realpath(dir) or dir
end

--- A workspace (a git-marked temp dir) with the given files.
---@param files table<string,string>
---@return string root
function H.workspace(files)
  local root = H.tempdir()
  vim.fn.mkdir(root .. "/.git", "p")
  for name, text in pairs(files or {}) do
    local path = root .. "/" .. name
    vim.fn.mkdir(vim.fs.dirname(path), "p")
    local f = assert(io.open(path, "wb"))
    f:write(text)
    f:close()
  end
  return root
end

--- Reads a file's bytes.
function H.read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

--- Starts the mock model server with a script; returns its info plus a `requests()` reader.
---@param script table {responses = {...}}
---@return table info {port, openaiBaseUrl, requests: fun(): table[]}
function H.mock(script)
  local dir = H.tempdir()
  local script_path = dir .. "/script.json"
  local log_path = dir .. "/requests.jsonl"
  local f = assert(io.open(script_path, "w"))
  f:write(vim.json.encode(script))
  f:close()
  local out = ""
  local proc = vim.system({ H.mock_bin, "--script", script_path, "--log", log_path }, {
    stdin = true,
    stdout = function(_, data)
      out = out .. (data or "")
    end,
    stderr = function() end,
  })
  H.defer(function()
    pcall(function()
      proc:kill(15)
    end)
  end)
  H.wait("the mock server's port line", function()
    return out:find("\n")
  end)
  local info = vim.json.decode(out:match("^[^\n]+"))
  info.log_path = log_path
  info.requests = function()
    local reqs = {}
    if not vim.uv.fs_stat(log_path) then
      return reqs
    end
    for line in H.read(log_path):gmatch("[^\n]+") do
      reqs[#reqs + 1] = vim.json.decode(line)
    end
    return reqs
  end
  return info
end

H.events = {} ---@type table[] every $/agentEvent params seen in this test

vim.api.nvim_create_autocmd("User", {
  pattern = "AgentLspEvent",
  callback = function(args)
    H.events[#H.events + 1] = args.data
  end,
})

--- Events of a type (optionally only those matching `pred`).
function H.events_of(kind, pred)
  local out = {}
  for _, p in ipairs(H.events) do
    if p.event.type == kind and (not pred or pred(p)) then
      out[#out + 1] = p
    end
  end
  return out
end

--- Sets the plugin up against the daemon and the mock, in a sandboxed HOME.
---@param mock table from H.mock
---@param extra table? more setup options
function H.setup(mock, extra)
  local home = H.tempdir()
  local opts = vim.tbl_deep_extend("force", {
    cmd = { H.bin, "--stdio" },
    cmd_env = {
      OPENAI_BASE_URL = mock.openaiBaseUrl,
      OPENAI_API_KEY = "test",
      HOME = home,
      XDG_CONFIG_HOME = home .. "/config",
      XDG_DATA_HOME = home .. "/data",
      XDG_STATE_HOME = home .. "/state",
      XDG_CACHE_HOME = home .. "/cache",
      AGENT_LSP_SESSION_DIR = home .. "/sessions",
      RUST_LOG = "info",
    },
    chat = { layout = "split" },
  }, extra or {})
  require("agent_lsp").setup(opts)
end

--- Waits for the daemon to be running and initialized.
---@return vim.lsp.Client
function H.client()
  local client
  H.wait("the agent-lsp client to initialize", function()
    client = require("agent_lsp").client()
    return client and client.initialized
  end)
  return client
end

--- Waits for `agent_settled` of a run (the n-th settled event overall, default the first).
---@param n integer?
---@return table event
function H.settled(n, timeout_ms)
  n = n or 1
  H.wait("agent_settled #" .. n, function()
    return #H.events_of("agent_settled") >= n
  end, timeout_ms or 60000)
  return H.events_of("agent_settled")[n].event
end

--- Saves what a person would look at: the chat buffer and :messages.
---@param name string
function H.capture(name)
  vim.fn.mkdir(H.artifacts, "p")
  local base = H.artifacts .. "/" .. H.case .. "." .. name
  local chat = require("agent_lsp.chat").text()
  local f = assert(io.open(base .. ".chat.md", "w"))
  f:write(chat)
  f:close()
  local m = assert(io.open(base .. ".messages.txt", "w"))
  m:write(vim.api.nvim_exec2("messages", { output = true }).output)
  m:close()
  local e = assert(io.open(base .. ".events.jsonl", "w"))
  for _, p in ipairs(H.events) do
    e:write(vim.json.encode(p), "\n")
  end
  e:close()
end

--- Stops the daemon and waits for it to exit.
local function stop_clients()
  local clients = vim.lsp.get_clients()
  for _, c in ipairs(clients) do
    c:stop()
  end
  vim.wait(5000, function()
    for _, c in ipairs(clients) do
      if not c:is_stopped() then
        return false
      end
    end
    return true
  end, 20)
  for _, c in ipairs(clients) do
    if not c:is_stopped() then
      c:stop(true)
    end
  end
  -- Neovim forgets a stopped client in a scheduled callback: let it run before the next test.
  vim.wait(5000, function()
    return #vim.lsp.get_clients() == 0
  end, 20)
end

local ui_select, ui_input = vim.ui.select, vim.ui.input
local tests = dofile(case_file)
-- Results go to their own file: Neovim's messages share stdout/stderr without newlines.
vim.fn.mkdir(H.artifacts, "p")
local results = assert(io.open(H.artifacts .. "/" .. H.case .. ".results", "w"))
results:write("TESTS " .. #tests .. "\n")
results:flush()
local function report(line)
  results:write(line, "\n")
  results:flush()
  io.stdout:write("\n", line, "\n")
end

local failed = 0
for _, t in ipairs(tests) do
  H.events = {}
  local ok, err = xpcall(t.run, debug.traceback, H)
  pcall(H.capture, (t.name:gsub("%W+", "_")))
  vim.cmd("messages clear")
  stop_clients()
  for i = #cleanups, 1, -1 do
    pcall(cleanups[i])
  end
  cleanups = {}
  vim.ui.select, vim.ui.input = ui_select, ui_input
  vim.cmd("silent! %bwipeout!")
  if ok then
    report("PASS " .. H.case .. ": " .. t.name)
  else
    failed = failed + 1
    report("FAIL " .. H.case .. ": " .. t.name .. ": " .. tostring(err):gsub("\n", "\n    "))
  end
end
results:close()
io.stdout:flush()
vim.cmd(failed == 0 and "qall!" or "cquit 1")
