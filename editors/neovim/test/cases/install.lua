--- Installing the plugin as users do, from a git URL, into a fresh Neovim:
--- - vim.pack (Neovim 0.12): `vim.pack.add({ url })` then only `vim.lsp.enable("agent_lsp")`;
--- - lazy.nvim's one-line spec `{ "agent-lsp/agent-lsp", opts = {} }`, EMULATED (see below).
--- The URL is a file:// git repository made from this working tree's runtime folders (so the
--- test sees the current files, committed or not). Each test runs its own Neovim with sealed XDG
--- folders (nothing else on 'runtimepath'), `agent-lsp` found on PATH as a user's would be, and
--- a driver that proves the commands exist, the config comes from the installed lsp/agent_lsp.lua,
--- and a prompt round-trips through the mock model with a tool approval answered in the editor.

--- Vim's runtime folder names: whichever of them the working tree has is part of the plugin.
local RUNTIME_DIRS = {
  "after", "autoload", "colors", "compiler", "doc", "ftdetect", "ftplugin", "indent", "lsp", "lua",
  "plugin", "queries", "syntax",
}

local function run(cmd, opts)
  local res = vim.system(cmd, vim.tbl_extend("force", { text = true }, opts or {})):wait(60000)
  if res.code ~= 0 then
    error(table.concat(cmd, " ") .. " failed (" .. res.code .. "): " .. (res.stderr or ""), 2)
  end
  return res.stdout
end

--- A git repository named agent-lsp holding the working tree's runtime folders, one commit.
---@return string url, string[] dirs the runtime folders copied
local function plugin_repo(H)
  local repo = H.tempdir() .. "/agent-lsp"
  vim.fn.mkdir(repo, "p")
  local dirs = {}
  for _, d in ipairs(RUNTIME_DIRS) do
    if vim.fn.isdirectory(H.root .. "/" .. d) == 1 then
      run({ "cp", "-R", H.root .. "/" .. d, repo .. "/" .. d })
      dirs[#dirs + 1] = d
    end
  end
  run({ "git", "init", "-q", "-b", "main" }, { cwd = repo })
  run({ "git", "add", "." }, { cwd = repo })
  run({ "git", "-c", "user.name=test", "-c", "user.email=test@example.invalid", "commit", "-q", "-m", "plugin" }, { cwd = repo })
  return "file://" .. repo, dirs
end

--- Runs in the fresh Neovim after startup: what it finds, then a prompt that asks to edit a
--- file, the approval answered "Allow" through vim.ui.select. Writes its findings as JSON.
local DRIVER = [=[
local out_path, root = ...
local result = {}
local function wait(what, cond, ms)
  if not vim.wait(ms or 60000, function() return cond() and true or false end, 10) then
    error("timed out waiting for " .. what)
  end
end
local ok, err = xpcall(function()
  result.setup_done_at_start = require("agent_lsp")._setup_done == true
  result.commands = {}
  for _, c in ipairs({ "AgentPrompt", "AgentChat", "AgentSessions", "AgentAbort", "AgentChanges" }) do
    result.commands[c] = vim.fn.exists(":" .. c) == 2
  end
  result.lsp_files = vim.api.nvim_get_runtime_file("lsp/agent_lsp.lua", true)
  result.plugin_files = vim.api.nvim_get_runtime_file("plugin/agent_lsp.lua", true)
  result.module = debug.getinfo(require("agent_lsp").setup, "S").source:gsub("^@", "")
  result.help = vim.fn.globpath(vim.o.runtimepath, "doc/agent_lsp.txt", false, true)
  result.enabled = vim.lsp.is_enabled("agent_lsp")
  local cfg = vim.lsp.config.agent_lsp
  result.config = {
    cmd = cfg.cmd,
    root_markers = cfg.root_markers,
    handlers = vim.tbl_keys(cfg.handlers or {}),
    agent = cfg.capabilities.experimental.agent ~= nil,
  }
  table.sort(result.config.handlers)
  result.approvals = {}
  vim.ui.select = function(items, opts, on_choice)
    if opts.kind ~= "agent_lsp.approval" then
      return on_choice(nil)
    end
    result.approvals[#result.approvals + 1] = opts.prompt
    for _, item in ipairs(items) do
      if opts.format_item(item) == "Allow" then
        return on_choice(item)
      end
    end
    on_choice(nil)
  end
  local settled = 0
  vim.api.nvim_create_autocmd("User", {
    pattern = "AgentLspEvent",
    callback = function(args)
      if args.data.event.type == "agent_settled" then
        settled = settled + 1
      end
    end,
  })
  vim.cmd.cd(root)
  vim.cmd.edit(root .. "/notes.txt")
  local buf = vim.api.nvim_get_current_buf()
  local client
  wait("the agent_lsp client to attach and initialize", function()
    client = vim.lsp.get_clients({ bufnr = buf, name = "agent_lsp" })[1]
    return client and client.initialized
  end)
  result.client_cmd = client.config.cmd
  vim.cmd("AgentPrompt replace beta with gamma")
  wait("agent_settled", function() return settled > 0 end)
  result.chat = require("agent_lsp.chat").text()
  result.buffer = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
  result.clients = #vim.lsp.get_clients()
end, debug.traceback)
result.error = not ok and err or nil
local f = assert(io.open(out_path, "w"))
f:write(vim.json.encode(result))
f:close()
vim.cmd("qall!")
]=]

--- A fresh Neovim whose init.lua is `init` (the user's lines), then DRIVER after VimEnter;
--- returns the driver's findings and the sealed data folder. Its output goes to
--- test-artifacts/neovim/install.<label>.nvim.log.
---@return table result, string data stdpath("data")
local function fresh_nvim(H, label, mock, init)
  local dir = H.tempdir()
  local xdg = {}
  for _, k in ipairs({ "CONFIG", "DATA", "STATE", "CACHE" }) do
    xdg[k] = dir .. "/" .. k:lower()
    vim.fn.mkdir(xdg[k], "p")
  end
  vim.fn.mkdir(xdg.CONFIG .. "/nvim", "p")
  -- `agent-lsp` on PATH, as an install puts it.
  local bin = dir .. "/bin"
  vim.fn.mkdir(bin, "p")
  assert(vim.uv.fs_symlink(H.bin, bin .. "/agent-lsp"))
  local root = H.workspace({ ["notes.txt"] = "alpha\nbeta\n" })
  local out = dir .. "/result.json"
  local driver = dir .. "/driver.lua"
  local f = assert(io.open(driver, "w"))
  f:write(DRIVER)
  f:close()
  local init_path = xdg.CONFIG .. "/nvim/init.lua"
  f = assert(io.open(init_path, "w"))
  f:write(init, "\n")
  f:write(string.format(
    [[vim.api.nvim_create_autocmd("VimEnter", { once = true, callback = function() vim.schedule(function() loadfile(%q)(%q, %q) end) end })]],
    driver,
    out,
    root
  ))
  f:close()
  local env = vim.fn.environ()
  env.NVIM, env.VIMINIT, env.MYVIMRC, env.NVIM_APPNAME = nil, nil, nil, nil
  env.HOME = dir .. "/home"
  vim.fn.mkdir(env.HOME, "p")
  env.XDG_CONFIG_HOME, env.XDG_DATA_HOME = xdg.CONFIG, xdg.DATA
  env.XDG_STATE_HOME, env.XDG_CACHE_HOME = xdg.STATE, xdg.CACHE
  -- No system-wide site folders either: only what the install puts there is on 'runtimepath'.
  env.XDG_CONFIG_DIRS, env.XDG_DATA_DIRS = dir .. "/none", dir .. "/none"
  env.PATH = bin .. ":" .. env.PATH
  env.OPENAI_BASE_URL, env.OPENAI_API_KEY = mock.openaiBaseUrl, "test"
  env.AGENT_LSP_SESSION_DIR = dir .. "/sessions"
  local log = H.artifacts .. "/" .. H.case .. "." .. label .. ".nvim.log"
  local res = vim.system({ vim.v.progpath, "--headless", "-i", "NONE" }, {
    env = env,
    clear_env = true,
    cwd = root,
    text = true,
  }):wait(150000)
  local lf = assert(io.open(log, "w"))
  lf:write("exit ", tostring(res.code), " signal ", tostring(res.signal), "\n", res.stdout or "", res.stderr or "")
  lf:close()
  assert(vim.uv.fs_stat(out), "the fresh Neovim wrote no result (exit " .. tostring(res.code) .. ", see " .. log .. ")")
  local result = vim.json.decode(H.read(out))
  if result.error then
    error("in the fresh Neovim: " .. result.error)
  end
  H.eq(0, res.code, "the fresh Neovim's exit status")
  result.root = root
  return result, xdg.DATA .. "/nvim"
end

--- What every install must give: the commands, the config from the installed lsp/ file with the
--- plugin's handlers, the binary from PATH, and a prompt whose edit was approved and applied.
local function check_working(H, result, installed, mock)
  local installed_real = vim.uv.fs_realpath(installed) or installed
  for name, present in pairs(result.commands) do
    H.eq(true, present, ":" .. name .. " exists")
  end
  H.eq({ installed_real .. "/lsp/agent_lsp.lua" }, vim.tbl_map(function(p)
    return vim.uv.fs_realpath(p) or p
  end, result.lsp_files), "lsp/agent_lsp.lua on 'runtimepath'")
  H.eq(installed_real .. "/lua/agent_lsp/init.lua", vim.uv.fs_realpath(result.module), "agent_lsp loaded from")
  H.eq(1, #result.plugin_files, "plugin/agent_lsp.lua on 'runtimepath'")
  H.eq(1, #result.help, "doc/agent_lsp.txt on 'runtimepath'")
  H.eq({ "agent-lsp", "--stdio" }, result.config.cmd, "vim.lsp.config.agent_lsp.cmd")
  H.eq({ ".git" }, result.config.root_markers, "vim.lsp.config.agent_lsp.root_markers")
  H.eq(true, result.config.agent, "the agent capability")
  local protocol = require("agent_lsp.protocol")
  for _, method in ipairs({ protocol.server.event, protocol.server.before_tool_call, protocol.server.save_documents }) do
    assert(vim.tbl_contains(result.config.handlers, method), "handler for " .. method .. " in " .. vim.inspect(result.config.handlers))
  end
  H.eq({ "agent-lsp", "--stdio" }, result.client_cmd, "the client's command")
  H.eq(1, result.clients, "one daemon")
  H.eq(1, #result.approvals, "approval prompts")
  H.contains(result.chat, "replace beta with gamma", "chat")
  H.contains(result.chat, "Done: beta is gamma now.", "chat")
  H.eq("alpha\ngamma", result.buffer, "the edited buffer")
  H.eq("alpha\ngamma\n", H.read(result.root .. "/notes.txt"), "notes.txt on disk")
  H.eq(2, #mock.requests(), "model requests")
end

local function edit_script()
  return {
    responses = {
      {
        toolCalls = {
          {
            id = "e1",
            name = "edit",
            arguments = { path = "notes.txt", edits = { { oldText = "beta", newText = "gamma" } } },
          },
        },
      },
      { text = "Done: beta is gamma now." },
    },
  }
end

return {
  {
    name = "vim.pack.add from a git URL, then vim.lsp.enable('agent_lsp') alone: a working agent",
    run = function(H)
      assert(vim.pack and vim.pack.add, "this Neovim has no vim.pack")
      local url = plugin_repo(H)
      local mock = H.mock(edit_script())
      -- The README's lines with the plugin's address swapped for the local clone. vim.pack
      -- asks before installing: the user answers "Yes" (confirm()'s first choice).
      local result, data = fresh_nvim(H, "vim_pack", mock, string.format(
        [[
local asked = {}
vim.fn.confirm = function(msg)
  asked[#asked + 1] = msg
  return 1
end
vim.pack.add({ %q })
vim.lsp.enable("agent_lsp")
assert(#asked == 1 and asked[1]:find(%q, 1, true), "vim.pack did not ask to install the plugin: " .. vim.inspect(asked))
]],
        url,
        url
      ))
      -- The vim.lsp.enable line alone set the plugin up (lsp/agent_lsp.lua did, at the first buffer).
      H.eq(false, result.setup_done_at_start, "setup() ran before the first buffer")
      H.eq(true, result.enabled, "agent_lsp enabled")
      local installed = data .. "/site/pack/core/opt/agent-lsp"
      H.eq(url, vim.trim(run({ "git", "remote", "get-url", "origin" }, { cwd = installed })), "the clone's origin")
      check_working(H, result, installed, mock)
    end,
  },
  {
    name = "lazy.nvim's one-line spec with opts = {} (its git install and loading, emulated): a working agent",
    run = function(H)
      -- EMULATION. lazy.nvim is published only on GitHub (and luarocks), which CI cannot
      -- reach; npm and PyPI have no lazy.nvim. So this does, step by step, what lazy.nvim
      -- (folke/lazy.nvim, lua/lazy/…) does for the spec
      --   { "agent-lsp/agent-lsp", url = <file:// clone>, opts = {} }
      -- and nothing more; it is not lazy.nvim and does not vendor it.
      local url = plugin_repo(H)
      local mock = H.mock(edit_script())
      local result, data = fresh_nvim(H, "lazy_emulated", mock, string.format(
        [==[
local spec = { "agent-lsp/agent-lsp", url = %q, opts = {} }
-- core/config.lua: plugins go to stdpath("data")/lazy; core/plugin.lua Spec.get_name(url).
local root = vim.fn.stdpath("data") .. "/lazy"
vim.fn.mkdir(root, "p")
local name = spec.url:gsub("%%.git$", ""):gsub("/$", ""):match("[^/]+$")
local dir = root .. "/" .. name
-- manage/task/git.lua M.clone (git.filter defaults to true).
local res = vim.system({ "git", "clone", spec.url, "--filter=blob:none", "--recurse-submodules",
  "--origin=origin", "-c", "core.autocrlf=false", "--progress", dir }):wait()
assert(res.code == 0, "git clone failed: " .. (res.stderr or ""))
-- core/loader.lua add_to_rtp: before the first after/ folder, else at the end.
local rtp = vim.api.nvim_get_runtime_file("", true)
local at = #rtp + 1
for i, p in ipairs(rtp) do
  if p:sub(-6) == "/after" then at = i break end
end
table.insert(rtp, at, dir)
vim.opt.rtp = rtp
-- core/loader.lua packadd → source_runtime(dir, "plugin"): plugin/**/*.{lua,vim}, sorted.
local files = vim.fn.globpath(dir, "plugin/**/*.{lua,vim}", false, true)
table.sort(files)
for _, f in ipairs(files) do vim.cmd.source(f) end
-- core/loader.lua config → get_main: the one top-level Lua module, or the one whose
-- normalized name (util.lua normname) is the plugin's; then require(main).setup(opts).
local function normname(n)
  return (n:lower():gsub("^n?vim%%-", ""):gsub("%%.n?vim$", ""):gsub("[%%.%%-]lua", ""):gsub("[^a-z]+", ""))
end
local mods = {}
for _, p in ipairs(vim.fn.globpath(dir, "lua/*", false, true)) do
  local mod = vim.fn.fnamemodify(p, ":t"):gsub("%%.lua$", "")
  if mod == vim.fn.fnamemodify(p, ":t") and vim.fn.filereadable(p .. "/init.lua") == 0 then mod = nil end
  if mod then
    if normname(mod) == normname(name) then mods = { mod } break end
    mods[#mods + 1] = mod
  end
end
assert(#mods == 1, "lazy.nvim would find no main module: " .. vim.inspect(mods))
require(mods[1]).setup(spec.opts)
]==],
        url
      ))
      -- setup() ran (lazy's opts), before the first buffer.
      H.eq(true, result.setup_done_at_start, "setup() ran at startup")
      H.eq(true, result.enabled, "agent_lsp enabled")
      check_working(H, result, data .. "/lazy/agent-lsp", mock)
    end,
  },
}
