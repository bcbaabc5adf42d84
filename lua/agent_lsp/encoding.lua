--- agent_lsp.encoding: LSP positions from one position encoding to another.
---
--- agent-lsp negotiates utf-8 with Neovim while most language servers count utf-16 code units:
--- a `character` only means something with the text of its line, so every position is converted
--- against that line, taken from the document's buffer when it is loaded (the user's unsaved
--- text, which is what the servers see) and else from the file on disk.

local M = {}

--- The loaded buffer of a `file://` URI, without creating one.
---@param uri string
---@return integer?
function M.loaded_buf(uri)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and vim.uri_from_bufnr(buf) == uri then
      return buf
    end
  end
  return nil
end

--- A reader of document lines (0-based), caching each document it opens. A line that does not
--- exist is nil.
---@return fun(uri: string, line: integer): string?
function M.line_reader()
  local docs = {} ---@type table<string, {buf: integer?, lines: string[]?}>
  return function(uri, line)
    local doc = docs[uri]
    if not doc then
      doc = {}
      doc.buf = M.loaded_buf(uri)
      if not doc.buf then
        local ok, fname = pcall(vim.uri_to_fname, uri)
        if ok and vim.fn.filereadable(fname) == 1 then
          doc.lines = vim.fn.readfile(fname)
        else
          doc.lines = {}
        end
      end
      docs[uri] = doc
    end
    if doc.buf then
      if not vim.api.nvim_buf_is_valid(doc.buf) then
        return nil
      end
      return vim.api.nvim_buf_get_lines(doc.buf, line, line + 1, false)[1]
    end
    return doc.lines[line + 1]
  end
end

---@class agent_lsp.Conversion
---@field from string the encoding positions are in ("utf-8", "utf-16", "utf-32")
---@field to string the encoding they are converted to
---@field line fun(uri: string, line: integer): string? the documents' lines

--- A position converted (a new table; the original is untouched). Positions on a line that is
--- not known, or on an ASCII line, keep their numbers.
---@param c agent_lsp.Conversion
---@param uri string
---@param pos table {line, character}
---@return table
function M.position(c, uri, pos)
  if c.from == c.to or type(pos) ~= "table" or type(pos.line) ~= "number" or type(pos.character) ~= "number" then
    return pos
  end
  local text = c.line(uri, pos.line)
  if not text or not text:find("[\128-\255]") then
    return { line = pos.line, character = pos.character }
  end
  local byte = vim.str_byteindex(text, c.from, pos.character, false)
  return { line = pos.line, character = vim.str_utfindex(text, c.to, byte, false) }
end

--- A range converted.
---@param c agent_lsp.Conversion
---@param uri string
---@param range table {start, end}
---@return table
function M.range(c, uri, range)
  if type(range) ~= "table" then
    return range
  end
  return { start = M.position(c, uri, range.start), ["end"] = M.position(c, uri, range["end"]) }
end

--- A copy of `t` with `key` (a range in document `uri`) converted, when it has one.
local function with_range(c, uri, t, key)
  local out = vim.deepcopy(t)
  if type(t[key]) == "table" then
    out[key] = M.range(c, uri, t[key])
  end
  return out
end

--- A `LocationLink` as the `Location` it points at (its target's selection range), so that
--- the results of several servers merge into one list whatever shape each answered in.
---@param item table
---@return table
function M.as_location(item)
  if type(item) == "table" and item.targetUri then
    return { uri = item.targetUri, range = item.targetSelectionRange or item.targetRange }
  end
  return item
end

--- Locations (`Location | Location[] | LocationLink[] | null`) as a converted `Location[]`.
---@param c agent_lsp.Conversion
---@param result any
---@return table[]
function M.locations(c, result)
  if type(result) ~= "table" then
    return {}
  end
  local list = vim.islist(result) and result or { result }
  local out = {}
  for _, item in ipairs(list) do
    local loc = M.as_location(item)
    if type(loc) == "table" and type(loc.uri) == "string" then
      out[#out + 1] = with_range(c, loc.uri, loc, "range")
    end
  end
  return out
end

--- A `DocumentSymbol` (with its children) converted; SymbolInformation has a `location`.
local function symbol(c, uri, s)
  if type(s) ~= "table" then
    return s
  end
  if type(s.location) == "table" and type(s.location.uri) == "string" then
    local out = vim.deepcopy(s)
    out.location = with_range(c, s.location.uri, s.location, "range")
    return out
  end
  local out = with_range(c, uri, s, "range")
  if type(s.selectionRange) == "table" then
    out.selectionRange = M.range(c, uri, s.selectionRange)
  end
  if type(s.children) == "table" then
    out.children = vim.tbl_map(function(child)
      return symbol(c, uri, child)
    end, s.children)
  end
  return out
end

--- Symbols (`DocumentSymbol[] | SymbolInformation[] | WorkspaceSymbol[] | null`) converted;
--- `uri` is the document a DocumentSymbol belongs to. A WorkspaceSymbol whose location has only
--- a `uri` is kept as it is.
---@param c agent_lsp.Conversion
---@param uri string?
---@param result any
---@return table[]
function M.symbols(c, uri, result)
  if type(result) ~= "table" then
    return {}
  end
  return vim.tbl_map(function(s)
    return symbol(c, uri or "", s)
  end, result)
end

--- A `Hover` converted (its range is in the asked document), or nil.
---@param c agent_lsp.Conversion
---@param uri string
---@param result any
---@return table?
function M.hover(c, uri, result)
  if type(result) ~= "table" then
    return nil
  end
  return with_range(c, uri, result, "range")
end

--- A `WorkspaceEdit` converted: every TextEdit of `changes` and of the `documentChanges`'
--- TextDocumentEdits, each against its own document; resource operations stay as they are.
---@param c agent_lsp.Conversion
---@param result any
---@return table?
function M.workspace_edit(c, result)
  if type(result) ~= "table" then
    return nil
  end
  local out = vim.deepcopy(result)
  local function edits(uri, list)
    return vim.tbl_map(function(e)
      return type(e) == "table" and with_range(c, uri, e, "range") or e
    end, list)
  end
  if type(result.changes) == "table" then
    out.changes = {}
    for uri, list in pairs(result.changes) do
      out.changes[uri] = edits(uri, list)
    end
    if next(out.changes) == nil then
      out.changes = vim.empty_dict()
    end
  end
  if type(result.documentChanges) == "table" then
    out.documentChanges = vim.tbl_map(function(dc)
      if type(dc) == "table" and type(dc.textDocument) == "table" and type(dc.edits) == "table" then
        local copy = vim.deepcopy(dc)
        copy.edits = edits(dc.textDocument.uri, dc.edits)
        return copy
      end
      return dc
    end, result.documentChanges)
  end
  return out
end

--- The request's params for a server: the position (if any) converted.
---@param c agent_lsp.Conversion
---@param params table
---@return table
function M.params(c, params)
  local out = vim.deepcopy(params)
  if type(params.position) == "table" and type(params.textDocument) == "table" then
    out.position = M.position(c, params.textDocument.uri, params.position)
  end
  return out
end

return M
