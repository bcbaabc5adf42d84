--- The editor lends its language servers to the agent (`agent/languageRequest`, the `lsp_*`
--- tools): a real typescript-language-server from npm (run.sh installs it, AGENT_LSP_TSLS) on a
--- small TypeScript project whose `a.ts` has unsaved changes, with non-ASCII text before the
--- symbols so that agent-lsp's utf-8 and tsserver's utf-16 columns differ; `follow = true`.

local TSLS = os.getenv("AGENT_LSP_TSLS")

-- Saved on disk: `greet` is on line 1. The buffer moves it to line 4, after non-ASCII text.
local A_DISK = table.concat({
  "export function greet(name: string): string {",
  '  return "Hello, " + name;',
  "}",
  "",
}, "\n")
local A_BUFFER = {
  "// Greetings, with a coffee",
  'export const sep = "—";',
  "",
  "/* ☕☕☕ */ export function greet(name: string): string {",
  '  return "Hello, " + name + sep;',
  "}",
}
-- Four-byte emoji (two utf-16 units each) before the call: a position sent unconverted lands
-- past the identifier.
local B = table.concat({
  'import { greet } from "./a";',
  "",
  'const msg = "😀😀😀 " + greet("Ada");',
  "console.log(msg);",
  "",
}, "\n")
local C = table.concat({
  "export class Greeter {",
  "  hello(): string {",
  '    return "hi";',
  "  }",
  "}",
  "",
}, "\n")
local TSCONFIG = '{"compilerOptions": {"strict": true, "target": "es2020", "module": "commonjs"}, "include": ["*.ts"]}\n'

-- (1-based) where greet's name starts in the buffer of a.ts, in characters.
local GREET_LINE, GREET_COL = 4, #"/* xxx */ export function " + 1

--- The text of the tool result the model got for call `id` (from the mock's requests).
local function tool_result(mock, id)
  for _, req in ipairs(mock.requests()) do
    for _, m in ipairs(req.body and req.body.messages or {}) do
      if m.role == "tool" and m.tool_call_id == id then
        if type(m.content) == "string" then
          return m.content
        end
        return table.concat(vim.tbl_map(function(p)
          return p.text or ""
        end, m.content or {}), "\n")
      end
    end
  end
  return nil
end

--- A TypeScript project in a git-marked temp dir, typescript-language-server enabled for it.
local function project(H, extra)
  assert(TSLS and vim.fn.executable(TSLS) == 1, "AGENT_LSP_TSLS (typescript-language-server, installed by run.sh) is not executable: " .. tostring(TSLS))
  local files = {
    ["tsconfig.json"] = TSCONFIG,
    ["a.ts"] = A_DISK,
    ["b.ts"] = B,
    ["c.ts"] = C,
    ["notes.txt"] = "plain notes\nno language server here\n",
  }
  for k, v in pairs(extra or {}) do
    files[k] = v
  end
  local root = H.workspace(files)
  local node_modules = vim.fs.dirname(vim.fs.dirname(TSLS))
  vim.lsp.config("ts_ls", {
    cmd = { TSLS, "--stdio" },
    filetypes = { "typescript" },
    root_dir = root,
    init_options = {
      hostInfo = "agent-lsp-e2e",
      disableAutomaticTypingAcquisition = true,
      tsserver = { path = node_modules .. "/typescript/lib" },
    },
  })
  vim.lsp.enable("ts_ls")
  H.defer(function()
    vim.lsp.enable("ts_ls", false)
  end)
  return root
end

--- Opens `path` and waits until typescript-language-server is attached and answers
--- documentSymbol for it (tsserver loads the project on its first request: slow here).
local function open_ts(H, path)
  vim.cmd.edit(path)
  local buf = vim.api.nvim_get_current_buf()
  local client
  H.wait("typescript-language-server to attach to " .. vim.fs.basename(path), function()
    client = vim.lsp.get_clients({ bufnr = buf, name = "ts_ls" })[1]
    return client
  end, 60000)
  local answered = false
  H.wait("typescript-language-server to answer documentSymbol for " .. vim.fs.basename(path), function()
    if answered == false then
      answered = nil
      client:request("textDocument/documentSymbol", { textDocument = { uri = vim.uri_from_bufnr(buf) } }, function(err, result)
        answered = (not err and type(result) == "table" and #result > 0) or false
      end, buf)
    end
    return answered == true
  end, 90000)
  return buf, client
end

--- Answers `agent/languageRequest` as Neovim runs the handler (in a coroutine), for a daemon
--- whose negotiated encoding is `enc` (the handler reads it from the requesting client, here a
--- stand-in returned by `vim.lsp.get_client_by_id` while the handler starts).
local function language_request(H, method, params, enc)
  local result, err
  local done = false
  local co = coroutine.create(function()
    result, err = require("agent_lsp.language").handler(nil, { method = method, params = params }, { client_id = -1 })
    done = true
  end)
  local get = vim.lsp.get_client_by_id
  vim.lsp.get_client_by_id = function(id)
    if id == -1 then
      return { offset_encoding = enc, name = "agent_lsp" }
    end
    return get(id)
  end
  local ok, e = coroutine.resume(co)
  vim.lsp.get_client_by_id = get
  assert(ok, e)
  H.wait(method .. " answered", function()
    return done
  end, 30000)
  return result, err
end

local function approve_all(asked)
  vim.ui.select = function(items, opts, on_choice)
    local previews = {}
    for _, win in ipairs(vim.api.nvim_list_wins()) do
      if vim.api.nvim_win_get_config(win).relative ~= "" then
        previews[#previews + 1] = table.concat(vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(win), 0, -1, false), "\n")
      end
    end
    asked[#asked + 1] = { prompt = opts.prompt, preview = table.concat(previews, "\n") }
    on_choice(items[1])
  end
end

return {
  {
    name = "client: the language request converts positions between utf-8 and tsserver's utf-16, on the unsaved buffer",
    run = function(H)
      local root = project(H)
      local a = open_ts(H, root .. "/a.ts")
      vim.api.nvim_buf_set_lines(a, 0, -1, false, A_BUFFER)
      local b = open_ts(H, root .. "/b.ts")
      local call_line = vim.api.nvim_buf_get_lines(b, 2, 3, false)[1]
      local greet_byte = assert(call_line:find("greet", 1, true)) - 1
      local uri_a, uri_b = vim.uri_from_fname(root .. "/a.ts"), vim.uri_from_fname(root .. "/b.ts")
      local result, err = language_request(H, "textDocument/definition", {
        textDocument = { uri = uri_b },
        position = { line = 2, character = greet_byte },
      }, "utf-8")
      H.eq(nil, err, "no error")
      H.eq({ "ts_ls" }, result.servers, "the servers asked")
      H.eq(1, #result.result, "one definition: " .. vim.inspect(result.result))
      local loc = result.result[1]
      H.eq(uri_a, loc.uri, "in a.ts")
      local def_line = A_BUFFER[GREET_LINE]
      local greet_at = assert(def_line:find("greet", 1, true)) - 1
      H.eq(GREET_LINE - 1, loc.range.start.line, "on the unsaved line")
      H.eq(greet_at, loc.range.start.character, "the column in utf-8 bytes")
      H.eq(greet_at + 5, loc.range["end"].character, "the end too")
      -- The same asked in utf-16 gives tsserver's own numbers.
      local r16 = language_request(H, "textDocument/definition", {
        textDocument = { uri = uri_b },
        position = { line = 2, character = vim.str_utfindex(call_line, "utf-16", greet_byte) },
      }, "utf-16")
      H.eq(vim.str_utfindex(def_line, "utf-16", greet_at), r16.result[1].range.start.character, "utf-16 column")

      -- A document not loaded: loaded, its filetype set, its server waited for.
      local uri_c = vim.uri_from_fname(root .. "/c.ts")
      local symbols = language_request(H, "textDocument/documentSymbol", { textDocument = { uri = uri_c } }, "utf-8")
      H.eq({ "ts_ls" }, symbols.servers, "c.ts got its server")
      H.eq("Greeter", symbols.result[1].name, "the class")
      H.eq("typescript", vim.bo[vim.fn.bufnr(root .. "/c.ts")].filetype, "the filetype was set")

      -- A file no server takes: no servers, a normal answer.
      local none = language_request(H, "textDocument/hover", {
        textDocument = { uri = vim.uri_from_fname(root .. "/notes.txt") },
        position = { line = 0, character = 0 },
      }, "utf-8")
      H.eq({}, none.servers, "no server for notes.txt")
      H.eq(vim.NIL, none.result, "and no result")

      -- Rename at the declaration (tsserver renames an import's use site with an alias): a
      -- WorkspaceEdit over both files, converted.
      local rename = language_request(H, "textDocument/rename", {
        textDocument = { uri = uri_a },
        position = { line = GREET_LINE - 1, character = greet_at },
        newName = "welcome",
      }, "utf-8")
      local edits = {}
      for uri, list in pairs(rename.result.changes or {}) do
        edits[uri] = list
      end
      for _, dc in ipairs(rename.result.documentChanges or {}) do
        edits[dc.textDocument.uri] = dc.edits
      end
      assert(edits[uri_a] and edits[uri_b], "edits in both files: " .. vim.inspect(rename.result))
      local found = false
      for _, e in ipairs(edits[uri_a]) do
        if e.range.start.line == GREET_LINE - 1 then
          H.eq(greet_at, e.range.start.character, "the rename's column in a.ts, in utf-8")
          found = true
        end
      end
      assert(found, "an edit on greet's unsaved line: " .. vim.inspect(edits[uri_a]))
      local call_edit = vim.tbl_filter(function(e)
        return e.range.start.line == 2
      end, edits[uri_b])[1]
      H.eq(greet_byte, call_edit and call_edit.range.start.character, "the call's edit in b.ts, in utf-8")
    end,
  },
  {
    name = "client: results merge and convert (locations, links, symbols, edits)",
    run = function(H)
      local enc = require("agent_lsp.encoding")
      local lang = require("agent_lsp.language")
      local lines = { ["file:///x.ts"] = { "é = 1; x", "plain" } }
      local c = {
        from = "utf-16",
        to = "utf-8",
        line = function(uri, l)
          return (lines[uri] or {})[l + 1]
        end,
      }
      local function r(l1, c1, l2, c2)
        return { start = { line = l1, character = c1 }, ["end"] = { line = l2, character = c2 } }
      end
      H.eq({ { uri = "file:///x.ts", range = r(0, 3, 0, 4) } }, enc.locations(c, { uri = "file:///x.ts", range = r(0, 2, 0, 3) }), "a Location")
      H.eq(
        { { uri = "file:///x.ts", range = r(0, 8, 0, 9) } },
        enc.locations(c, { { targetUri = "file:///x.ts", targetRange = r(0, 0, 1, 0), targetSelectionRange = r(0, 7, 0, 8) } }),
        "a LocationLink becomes its target's Location"
      )
      H.eq({ { uri = "file:///x.ts", range = r(1, 2, 1, 3) } }, enc.locations(c, { { uri = "file:///x.ts", range = r(1, 2, 1, 3) } }), "ASCII lines keep their numbers")
      local sym = enc.symbols(c, "file:///x.ts", {
        { name = "x", kind = 13, range = r(0, 0, 0, 8), selectionRange = r(0, 7, 0, 8), children = { { name = "y", kind = 13, range = r(0, 1, 0, 2), selectionRange = r(0, 1, 0, 2) } } },
      })
      H.eq(r(0, 8, 0, 9), sym[1].selectionRange, "a DocumentSymbol")
      H.eq(r(0, 2, 0, 3), sym[1].children[1].range, "its children")
      local edit = enc.workspace_edit(c, {
        changes = { ["file:///x.ts"] = { { range = r(0, 7, 0, 8), newText = "z" } } },
        documentChanges = {
          { textDocument = { uri = "file:///x.ts", version = 3 }, edits = { { range = r(0, 7, 0, 8), newText = "z" } } },
          { kind = "rename", oldUri = "file:///x.ts", newUri = "file:///y.ts" },
        },
      })
      H.eq(r(0, 8, 0, 9), edit.changes["file:///x.ts"][1].range, "changes")
      H.eq(r(0, 8, 0, 9), edit.documentChanges[1].edits[1].range, "documentChanges")
      H.eq(3, edit.documentChanges[1].textDocument.version, "the version kept")
      H.eq("rename", edit.documentChanges[2].kind, "a resource operation kept")

      local loc = { uri = "file:///x.ts", range = r(0, 1, 0, 2) }
      local other = { uri = "file:///x.ts", range = r(1, 0, 1, 1) }
      H.eq({ loc, other }, lang.merge("textDocument/references", nil, { { loc }, { vim.deepcopy(loc), other }, {} }), "concatenated, duplicates removed")
      H.eq(vim.NIL, lang.merge("textDocument/definition", nil, { {}, {} }), "nothing found")
      H.eq({ { contents = "a" } }, lang.merge("textDocument/hover", nil, { nil, { contents = "a" } }), "hovers as an array")
      H.eq({ changes = {} }, lang.merge("textDocument/rename", nil, { nil, { changes = {} }, { changes = { x = {} } } }), "the first WorkspaceEdit")
      local mixed = lang.merge("textDocument/documentSymbol", "file:///x.ts", {
        { { name = "A", kind = 5, range = r(0, 0, 2, 0), selectionRange = r(0, 6, 0, 7), children = { { name = "m", kind = 6, range = r(1, 0, 1, 5), selectionRange = r(1, 2, 1, 3) } } } },
        { { name = "B", kind = 12, location = { uri = "file:///x.ts", range = r(3, 0, 3, 1) } } },
      })
      H.eq({ "A", "m", "B" }, vim.tbl_map(function(s)
        return s.name
      end, mixed), "two shapes: flattened to SymbolInformation")
      H.eq("A", mixed[2].containerName, "a child names its container")
    end,
  },
  {
    name = "client: lsp_rename's approval names every file; follow finds the changed lines",
    run = function(H)
      local approval = require("agent_lsp.approval")
      local root = H.tempdir()
      vim.cmd.cd(root)
      local params = {
        sessionId = "s",
        toolName = "lsp_rename",
        kind = "edit",
        title = "Rename greet to welcome in 2 files",
        preview = {
          type = "diff",
          path = root .. "/a.ts",
          paths = { root .. "/a.ts", root .. "/b.ts" },
          diff = "--- a.ts\n+++ a.ts\n@@ -1 +1 @@\n-greet\n+welcome\n--- b.ts\n+++ b.ts\n@@ -1 +1 @@\n-greet\n+welcome",
        },
      }
      local lines, ft = approval.preview_lines(params)
      H.eq("diff", ft, "highlighted as a diff")
      H.contains(table.concat(lines, "\n"), "lsp_rename: Rename greet to welcome in 2 files\n\nChanges 2 files:\n  a.ts\n  b.ts\n\n--- a.ts", "the files before the diff")
      H.eq("agent-lsp wants to edit: Rename greet to welcome in 2 files", approval.prompt(params), "the prompt")
      local one = approval.preview_lines({ toolName = "edit", title = "Edit a.ts", preview = { type = "diff", path = root .. "/a.ts", diff = "-a\n+b" } })
      H.eq({ "edit: Edit a.ts", "", "-a", "+b" }, one, "a one-file diff as before")

      local follow = require("agent_lsp.follow")
      H.eq({ 12, 14 }, { follow.changed_lines("--- a\n+++ a\n@@ -10,6 +10,7 @@\n ctx\n ctx\n-old\n+new\n+new2\n+new3\n ctx\n") }, "the added lines")
      H.eq({ nil, nil }, { follow.changed_lines(nil) }, "no patch")
      H.eq(true, follow.followed("lsp_references"), "lsp_* followed")
      H.eq(false, follow.followed("bash"), "bash not")
    end,
  },
  {
    name = "the model's lsp_* tools answer from the editor's typescript-language-server on unsaved buffers; rename applies after approval",
    run = function(H)
      local mock = H.mock({
        responses = {
          { toolCalls = { { id = "def", name = "lsp_definition", arguments = { path = "b.ts", line = 3, symbol = "greet" } } } },
          { toolCalls = { { id = "refs", name = "lsp_references", arguments = { path = "a.ts", line = GREET_LINE, symbol = "greet" } } } },
          { toolCalls = { { id = "wsym", name = "lsp_workspace_symbols", arguments = { query = "greet" } } } },
          { toolCalls = { { id = "dsym", name = "lsp_document_symbols", arguments = { path = "c.ts" } } } },
          { toolCalls = { { id = "ren", name = "lsp_rename", arguments = { path = "a.ts", line = GREET_LINE, symbol = "greet", newName = "welcome" } } } },
          { toolCalls = { { id = "apply", name = "lsp_rename", arguments = { path = "a.ts", line = GREET_LINE, symbol = "greet", newName = "welcome", apply = true } } } },
          { toolCalls = { { id = "none", name = "lsp_definition", arguments = { path = "notes.txt", line = 2, column = 1 } } } },
          { text = "Renamed greet to welcome." },
        },
      })
      local root = project(H)
      vim.cmd.cd(root)
      H.setup(mock, { approval = { edit = "ask" } })
      local a = open_ts(H, root .. "/a.ts")
      vim.api.nvim_buf_set_lines(a, 0, -1, false, A_BUFFER)
      local b = open_ts(H, root .. "/b.ts")
      H.wait("the daemon attached to a.ts and b.ts", function()
        return vim.lsp.get_clients({ bufnr = a, name = "agent_lsp" })[1] and vim.lsp.get_clients({ bufnr = b, name = "agent_lsp" })[1]
      end)
      local asked = {}
      approve_all(asked)
      vim.cmd("AgentPrompt rename greet to welcome")
      H.eq(false, H.settled(1, 120000).aborted, "aborted")

      local def = assert(tool_result(mock, "def"), "lsp_definition's result reached the model")
      H.contains(def, string.format("a.ts:%d:%d: %s", GREET_LINE, GREET_COL, A_BUFFER[GREET_LINE]), "the definition on the unsaved line, the column in characters")

      local refs = assert(tool_result(mock, "refs"), "lsp_references's result")
      H.contains(refs, string.format("a.ts:%d:%d:", GREET_LINE, GREET_COL), "the declaration")
      H.contains(refs, "b.ts:1:10: import { greet }", "the import")
      local call = vim.split(B, "\n")[3]
      local call_col = vim.str_utfindex(call, "utf-32", assert(call:find("greet", 1, true)) - 1) + 1
      H.contains(refs, string.format("b.ts:3:%d: %s", call_col, call), "the call, its column in characters")
      H.contains(refs, "in 2 files", "both files")

      local wsym = assert(tool_result(mock, "wsym"), "lsp_workspace_symbols's result")
      -- (tsserver's navto names the declaration, which starts at `export`, after the comment.)
      H.contains(wsym, string.format("a.ts:%d:%d: function greet", GREET_LINE, #"/* xxx */ " + 1), "the function found")

      local dsym = assert(tool_result(mock, "dsym"), "lsp_document_symbols's result")
      H.contains(dsym, "Symbols in c.ts:", "c.ts, not open, was loaded for its server")
      H.contains(dsym, "class Greeter 1:14", "the class")
      H.contains(dsym, "  method hello 2:3", "its method, nested")

      local ren = assert(tool_result(mock, "ren"), "lsp_rename's proposal")
      H.contains(ren, "Renaming greet to welcome would change", "proposed")
      H.contains(ren, "not applied", "not applied")
      H.contains(ren, string.format("a.ts:%d:%d: %s", GREET_LINE, GREET_COL, (A_BUFFER[GREET_LINE]:gsub("greet", "welcome"))), "the line as it would read")
      H.eq(1, #asked, "only the apply was asked: " .. vim.inspect(asked))
      H.contains(asked[1].prompt, "Rename greet to welcome in 2 files", "the approval's title")
      H.contains(asked[1].preview, "Changes 2 files:\n  a.ts\n  b.ts", "the preview names both files")
      H.contains(asked[1].preview, "+/* ☕☕☕ */ export function welcome(name: string): string {", "and diffs the unsaved buffer")

      local applied = assert(tool_result(mock, "apply"), "lsp_rename's apply")
      H.contains(applied, "Renamed greet to welcome:", "applied")
      H.eq("/* ☕☕☕ */ export function welcome(name: string): string {", vim.api.nvim_buf_get_lines(a, GREET_LINE - 1, GREET_LINE, false)[1], "a.ts's buffer renamed (its other unsaved lines kept)")
      H.eq(A_BUFFER[1], vim.api.nvim_buf_get_lines(a, 0, 1, false)[1], "a.ts keeps the user's unsaved text")
      H.contains(table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), "\n"), 'import { welcome } from "./a";', "b.ts's buffer")
      H.contains(table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), "\n"), '+ welcome("Ada");', "b.ts's call")
      H.wait("b.ts saved (it had no unsaved changes)", function()
        return H.read(root .. "/b.ts"):find('welcome("Ada")', 1, true)
      end)

      local none = assert(tool_result(mock, "none"), "the notes.txt result")
      H.contains(none, "No language server in the editor answers", "no server for notes.txt")
      H.contains(none, "notes.txt", "named")
    end,
  },
  {
    name = "follow = true shows the file the agent reads, edits and asks about in the last non-chat window",
    run = function(H)
      local mock = H.mock({
        responses = {
          { toolCalls = { { id = "r1", name = "read", arguments = { path = "src/long.txt", offset = 30 } } } },
          { toolCalls = { { id = "e1", name = "edit", arguments = { path = "src/long.txt", edits = { { oldText = "line 42\n", newText = "line 42\nnew A\nnew B\n" } } } } } },
          { toolCalls = { { id = "l1", name = "lsp_hover", arguments = { path = "notes.txt", line = 2, column = 1 } } } },
          { text = "Looked around." },
        },
      })
      local long = {}
      for i = 1, 80 do
        long[#long + 1] = "line " .. i
      end
      local root = H.workspace({ ["src/long.txt"] = table.concat(long, "\n") .. "\n", ["notes.txt"] = "one\ntwo\nthree\n", ["main.txt"] = "main\n" })
      vim.cmd.cd(root)
      H.setup(mock, { follow = true, approval = { edit = "allow" } })
      vim.cmd.edit(root .. "/main.txt")
      local code_win = vim.api.nvim_get_current_win()
      H.client()
      require("agent_lsp").open_chat()
      local chat_win = assert(require("agent_lsp.chat").win(), "the chat is open")
      vim.api.nvim_set_current_win(chat_win)
      local moves = {}
      local listeners = require("agent_lsp.events").listeners
      H.defer(function()
        table.remove(listeners)
      end)
      table.insert(listeners, function(params)
        local ev = params.event
        if ev.type == "tool_execution_start" or ev.type == "tool_execution_end" then
          -- (after follow's own listener, registered first)
          moves[#moves + 1] = {
            ev.type .. " " .. ev.toolCallId,
            vim.fs.basename(vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(code_win))),
            vim.api.nvim_win_get_cursor(code_win)[1],
          }
        end
      end)
      vim.cmd("AgentPrompt look around")
      H.settled(1)
      H.eq({ "tool_execution_start r1", "long.txt", 30 }, moves[1], "read: the file at its offset")
      H.eq({ "tool_execution_end e1", "long.txt", 43 }, moves[4], "edit: the changed lines once it landed")
      H.eq({ "tool_execution_start l1", "notes.txt", 2 }, moves[5], "lsp_*: the file at its line")
      H.eq(chat_win, vim.api.nvim_get_current_win(), "the cursor stayed in the chat")
      H.eq(require("agent_lsp.chat").buf, vim.api.nvim_win_get_buf(chat_win), "the chat window still shows the chat")
    end,
  },
}
