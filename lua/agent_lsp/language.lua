--- agent_lsp.language: answers `agent/languageRequest` with the editor's other language servers.
---
--- The daemon's `lsp_*` tools (definition, references, hover, symbols, implementations,
--- rename) ask the editor: the document's buffer is found, or loaded with its filetype set so
--- that its servers attach (they then see the user's unsaved text, since the buffers are the
--- editor's), every other client attached to it that supports the method is asked, the position
--- converted from agent-lsp's negotiated encoding to each server's, and the results merged and
--- converted back. `{servers = {}}` says that no server answers the method for that file; the
--- daemon then tells the model so. Every request gets a reply, an LSP error when all servers
--- failed or an unexpected error happened, so the tool never waits for its own timeout.

local config = require("agent_lsp.config")
local encoding = require("agent_lsp.encoding")

local M = {}

--- How long one server may take (ms). Below the daemon's default `languageTimeoutMs` (15 s), so
--- that the servers that answered are still heard when another hangs.
M.timeout_ms = 10000
--- How long to wait for servers to attach to a buffer this module just loaded (ms), when some
--- server is starting for it; `attach_grace_ms` when none has shown up yet (a `root_dir`
--- function starts its server a moment after the FileType event).
M.attach_wait_ms = 10000
M.attach_grace_ms = 1000

local INTERNAL_ERROR = -32603

--- How many language requests are being answered (a `$/cancelRequest` cannot be matched to its
--- request while one is: see init.lua).
M.in_flight = 0

--- Whether a client is agent-lsp itself (any of its daemons), which is never asked.
---@param client vim.lsp.Client
---@return boolean
local function is_agent(client)
  return client.name == config.options.name
end

--- The other language servers of a buffer (initialized ones, or also those still starting).
---@param bufnr integer
---@param starting boolean?
---@return vim.lsp.Client[]
local function others(bufnr, starting)
  return vim.tbl_filter(function(c)
    return not is_agent(c) and not c:is_stopped()
  end, vim.lsp.get_clients({ bufnr = bufnr, _uninitialized = starting }))
end

--- Runs `fn` guarded: an error in it becomes the reply (`reply` answers once).
local function guard(reply, fn)
  return function(...)
    local ok, err = pcall(fn, ...)
    if not ok then
      reply(nil, vim.lsp.rpc_response_error(INTERNAL_ERROR, "agent-lsp (Neovim): " .. tostring(err)))
    end
  end
end

--- The document's buffer, loaded (its filetype set, so servers attach); `loaded` says whether
--- this call loaded it. Nil and a message when the file cannot be opened.
---@param uri string
---@return integer? bufnr, boolean|string loaded_or_error
function M.document(uri)
  local buf = encoding.loaded_buf(uri)
  if buf then
    return buf, false
  end
  local ok, fname = pcall(vim.uri_to_fname, uri)
  if not ok or vim.fn.filereadable(fname) ~= 1 then
    return nil, "cannot open " .. tostring(uri)
  end
  buf = vim.uri_to_bufnr(uri)
  vim.fn.bufload(buf)
  if vim.bo[buf].filetype == "" then
    -- bufload() reads the file but runs no filetype detection: without a filetype, servers
    -- enabled with `vim.lsp.enable` (a FileType autocmd) would never attach.
    local ft = vim.filetype.match({ buf = buf })
    if ft then
      vim.bo[buf].filetype = ft
    end
  end
  return buf, true
end

--- Calls `done()` once the servers of a just-loaded buffer have attached: by `LspAttach`,
--- bounded (`attach_wait_ms` while one is starting, `attach_grace_ms` while none is).
---@param bufnr integer
---@param done fun()
function M.wait_for_servers(bufnr, done)
  local finished = false
  local timer = assert(vim.uv.new_timer())
  local autocmd
  local function finish()
    if finished then
      return
    end
    finished = true
    timer:stop()
    timer:close()
    pcall(vim.api.nvim_del_autocmd, autocmd)
    vim.schedule(done)
  end
  local function ready()
    local starting = others(bufnr, true)
    return #starting > 0 and #others(bufnr) == #starting
  end
  if ready() then
    return finish()
  end
  autocmd = vim.api.nvim_create_autocmd("LspAttach", {
    buffer = bufnr,
    callback = function()
      -- After Neovim's own LspAttach work: the client is attached and initialized then.
      vim.schedule(function()
        if ready() then
          finish()
        end
      end)
    end,
  })
  local started = vim.uv.now()
  local function arm(ms)
    timer:start(ms, 0, function()
      vim.schedule(function()
        if finished then
          return
        end
        local waited = vim.uv.now() - started
        if #others(bufnr, true) > 0 and waited < M.attach_wait_ms then
          -- A server is starting: give it the rest of the longer bound.
          return arm(M.attach_wait_ms - waited)
        end
        finish()
      end)
    end)
  end
  arm(M.attach_grace_ms)
end

--- Asks every client for `method`; `done(answers)` with `{client, result?, err?}` per client,
--- each request bounded by `timeout_ms` (a server that does not answer in time is cancelled).
---@param clients vim.lsp.Client[]
---@param method string
---@param params_for fun(client: vim.lsp.Client): table
---@param bufnr integer?
---@param done fun(answers: table[])
function M.ask(clients, method, params_for, bufnr, done)
  local answers, left, finished = {}, #clients, false
  local timer = assert(vim.uv.new_timer())
  local function finish()
    if finished then
      return
    end
    finished = true
    timer:stop()
    timer:close()
    vim.schedule(function()
      done(answers)
    end)
  end
  local pending = {} ---@type table<integer, {client: vim.lsp.Client, id: integer}>
  for i, client in ipairs(clients) do
    answers[i] = { client = client }
    local ok, id = client:request(method, params_for(client), function(err, result)
      if finished or answers[i].answered then
        return
      end
      answers[i].answered = true
      answers[i].result, answers[i].err = result, err
      pending[i] = nil
      left = left - 1
      if left == 0 then
        finish()
      end
    end, bufnr)
    if ok and not answers[i].answered then
      pending[i] = { client = client, id = id }
    elseif not ok then
      answers[i].answered = true
      answers[i].err = { message = "the server is not running" }
      left = left - 1
    end
  end
  if left == 0 then
    return finish()
  end
  timer:start(M.timeout_ms, 0, function()
    vim.schedule(function()
      for i, p in pairs(pending) do
        answers[i].err = { message = string.format("no answer within %d s", math.floor(M.timeout_ms / 1000)) }
        pcall(p.client.cancel_request, p.client, p.id)
      end
      finish()
    end)
  end)
end

--- A canonical text of a value (sorted keys), to find duplicates among the servers' results.
local function canon(v)
  if type(v) ~= "table" then
    return vim.json.encode(v)
  end
  if vim.islist(v) then
    return "[" .. table.concat(vim.tbl_map(canon, v), ",") .. "]"
  end
  local keys = vim.tbl_keys(v)
  table.sort(keys)
  local parts = {}
  for _, k in ipairs(keys) do
    parts[#parts + 1] = vim.json.encode(tostring(k)) .. ":" .. canon(v[k])
  end
  return "{" .. table.concat(parts, ",") .. "}"
end

--- Concatenates lists, dropping duplicates.
local function concat_unique(lists)
  local seen, out = {}, {}
  for _, list in ipairs(lists) do
    for _, item in ipairs(list) do
      local key = canon(item)
      if not seen[key] then
        seen[key] = true
        out[#out + 1] = item
      end
    end
  end
  return out
end

--- DocumentSymbols as SymbolInformation (flattened, children named by their container), for
--- when servers of one document answered in the two shapes.
local function flatten_symbols(uri, list, container, out)
  for _, s in ipairs(list) do
    if s.location then
      out[#out + 1] = s
    else
      out[#out + 1] = {
        name = s.name,
        kind = s.kind,
        containerName = container,
        location = { uri = uri, range = s.selectionRange or s.range },
      }
      flatten_symbols(uri, s.children or {}, s.name, out)
    end
  end
  return out
end

--- The servers' results of `method`, each already converted, as the one result the daemon
--- takes: arrays concatenated without duplicates, hovers as an array, the first WorkspaceEdit.
---@param method string
---@param uri string? the asked document
---@param results any[]
---@return any
function M.merge(method, uri, results)
  -- (A server's null leaves a hole in `results`.)
  local present = {}
  for i = 1, table.maxn(results) do
    if results[i] ~= nil and results[i] ~= vim.NIL then
      present[#present + 1] = results[i]
    end
  end
  if method == "textDocument/hover" then
    return #present > 0 and present or vim.NIL
  end
  if method == "textDocument/rename" then
    return present[1] or vim.NIL
  end
  results = present
  local lists = vim.tbl_filter(function(r)
    return type(r) == "table" and #r > 0
  end, results)
  if #lists == 0 then
    return vim.NIL
  end
  if method == "textDocument/documentSymbol" and #lists > 1 then
    local infos, trees = false, false
    for _, list in ipairs(lists) do
      infos = infos or list[1].location ~= nil
      trees = trees or list[1].location == nil
    end
    if infos and trees then
      lists = vim.tbl_map(function(list)
        return flatten_symbols(uri or "", list, nil, {})
      end, lists)
    end
  end
  return concat_unique(lists)
end

--- One server's result converted from its encoding (`c`) to agent-lsp's.
---@param method string
---@param c agent_lsp.Conversion
---@param uri string?
---@param result any
---@return any
function M.convert_result(method, c, uri, result)
  if method == "textDocument/hover" then
    return encoding.hover(c, uri or "", result)
  elseif method == "textDocument/rename" then
    return encoding.workspace_edit(c, result)
  elseif method == "textDocument/documentSymbol" or method == "workspace/symbol" then
    return encoding.symbols(c, uri, result)
  end
  return encoding.locations(c, result)
end

--- A reply from the servers' answers: their merged results, or the error when none answered.
---@param method string
---@param uri string?
---@param answers table[]
---@param agent_encoding string
---@return table? result, table? err
function M.reply_from(method, uri, answers, agent_encoding)
  local servers, results, errors = {}, {}, {}
  local line = encoding.line_reader()
  for i, a in ipairs(answers) do
    servers[#servers + 1] = a.client.name
    if a.err then
      errors[#errors + 1] = string.format("%s: %s", a.client.name, tostring(a.err.message or vim.inspect(a.err)))
    else
      local c = { from = a.client.offset_encoding or "utf-16", to = agent_encoding, line = line }
      results[i] = M.convert_result(method, c, uri, a.result)
    end
  end
  if #errors > 0 and #errors == #answers then
    return nil, vim.lsp.rpc_response_error(INTERNAL_ERROR, table.concat(errors, "; "))
  end
  return { servers = servers, result = M.merge(method, uri, results) }
end

--- Answers one `agent/languageRequest` (`{method, params}`); `reply(result, err)` once.
---@param request table
---@param agent vim.lsp.Client? the daemon that asked (its encoding is the params')
---@param reply fun(result: table?, err: table?)
function M.answer(request, agent, reply)
  local method, params = request.method, request.params
  if type(method) ~= "string" or type(params) ~= "table" then
    return reply(nil, vim.lsp.rpc_response_error(-32602, "agent/languageRequest needs method and params"))
  end
  local agent_encoding = agent and agent.offset_encoding or "utf-16"
  if method == "workspace/symbol" then
    local clients = vim.tbl_filter(function(c)
      return not is_agent(c) and not c:is_stopped() and c:supports_method(method)
    end, vim.lsp.get_clients())
    if #clients == 0 then
      return reply({ servers = {}, result = vim.NIL })
    end
    return M.ask(clients, method, function()
      return params
    end, nil, guard(reply, function(answers)
      reply(M.reply_from(method, nil, answers, agent_encoding))
    end))
  end
  local uri = type(params.textDocument) == "table" and params.textDocument.uri
  if type(uri) ~= "string" then
    return reply(nil, vim.lsp.rpc_response_error(-32602, method .. " needs params.textDocument.uri"))
  end
  local bufnr, loaded = M.document(uri)
  if not bufnr then
    return reply(nil, vim.lsp.rpc_response_error(INTERNAL_ERROR, tostring(loaded)))
  end
  local function go()
    local clients = vim.tbl_filter(function(c)
      return c:supports_method(method, bufnr)
    end, others(bufnr))
    if #clients == 0 then
      return reply({ servers = {}, result = vim.NIL })
    end
    local line = encoding.line_reader()
    M.ask(clients, method, function(client)
      local c = { from = agent_encoding, to = client.offset_encoding or "utf-16", line = line }
      return encoding.params(c, params)
    end, bufnr, guard(reply, function(answers)
      reply(M.reply_from(method, uri, answers, agent_encoding))
    end))
  end
  if loaded == true then
    return M.wait_for_servers(bufnr, guard(reply, go))
  end
  go()
end

--- The `agent/languageRequest` handler. Neovim runs server requests in a coroutine: the reply
--- waits (yields) while servers attach and answer.
---@param params table {sessionId, runId, toolCallId, method, params}
---@param ctx table {client_id}
function M.handler(_, params, ctx)
  local co = coroutine.running()
  if not co then
    return nil, vim.lsp.rpc_response_error(INTERNAL_ERROR, "language request handler must run in a coroutine")
  end
  local replied, sync = false, nil
  M.in_flight = M.in_flight + 1
  local function reply(result, err)
    if replied then
      return
    end
    replied = true
    M.in_flight = M.in_flight - 1
    if coroutine.running() == co then
      -- Answered before the first wait (no server, a bad request).
      sync = { result, err }
      return
    end
    vim.schedule(function()
      coroutine.resume(co, result, err)
    end)
  end
  local agent = ctx and vim.lsp.get_client_by_id(ctx.client_id)
  guard(reply, M.answer)(params or {}, agent, reply)
  if sync then
    return sync[1], sync[2]
  end
  return coroutine.yield()
end

return M
