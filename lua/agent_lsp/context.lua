--- agent_lsp.context: what goes along with the next message besides its text.
---
--- Attachments wait here until a message takes them: files (`:AgentAddFile`, or an `@path`
--- mention in the text), selections (`:'<,'>AgentAddSelection`) and images (`:AgentAddImage`).
--- Files and selections become text blocks naming the path (and lines), images become the
--- protocol's image blocks `{type="image", data=base64, mimeType}` (protocol.md §3 `Message`).

local M = {}

--- A file larger than this is not attached (the model would get a truncated or huge context).
M.max_file_bytes = 256 * 1024
--- An image larger than this is not attached (providers refuse big inline images).
M.max_image_bytes = 5 * 1024 * 1024

local image_types = {
  png = "image/png",
  jpg = "image/jpeg",
  jpeg = "image/jpeg",
  gif = "image/gif",
  webp = "image/webp",
}

---@class agent_lsp.Attachment
---@field kind "file"|"selection"|"image"
---@field label string what the input window's winbar shows
---@field key string identifies the attachment (the same file is attached once)
---@field block table the content block sent

---@type agent_lsp.Attachment[]
M.pending = {}

local function notify(msg, level)
  vim.notify("agent-lsp: " .. msg, level or vim.log.levels.WARN)
end

local function changed()
  pcall(vim.cmd.redrawstatus, { bang = true })
  vim.api.nvim_exec_autocmds("User", { pattern = "AgentLspContext", modeline = false })
end

--- A path as shown to the model: relative to the current directory when inside it.
---@param path string
---@return string
local function display(path)
  return vim.fn.fnamemodify(path, ":.")
end

local function add(item)
  for _, p in ipairs(M.pending) do
    if p.key == item.key then
      return p
    end
  end
  M.pending[#M.pending + 1] = item
  changed()
  return item
end

--- A fenced text block for a file's text.
---@param name string
---@param ft string
---@param text string
---@return table
local function file_block(name, ft, text)
  return { type = "text", text = string.format("%s:\n```%s\n%s\n```", name, ft, text) }
end

--- Reads a file for attaching, or returns nil and why not.
---@param path string
---@return string?, string?
local function read_text(path)
  local stat = vim.uv.fs_stat(path)
  if not stat or stat.type ~= "file" then
    return nil, "no such file: " .. path
  end
  if stat.size > M.max_file_bytes then
    return nil, string.format("%s is %d bytes, more than the %d attached at most", path, stat.size, M.max_file_bytes)
  end
  local f = io.open(path, "rb")
  if not f then
    return nil, "cannot read " .. path
  end
  local text = f:read("*a")
  f:close()
  if text:find("\0", 1, true) then
    return nil, path .. " is a binary file (attach images with :AgentAddImage)"
  end
  return (text:gsub("\n$", "")), nil
end

--- Attaches a file: the text of its loaded buffer (unsaved changes included), else the file.
---@param path string
---@return agent_lsp.Attachment?
function M.add_file(path)
  local abs = vim.fs.normalize(vim.fn.fnamemodify(path, ":p"))
  local name = display(abs)
  local bufnr = vim.fn.bufnr(abs)
  local text, err
  if bufnr > 0 and vim.api.nvim_buf_is_loaded(bufnr) then
    text = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n")
  else
    text, err = read_text(abs)
  end
  if not text then
    notify(err --[[@as string]])
    return nil
  end
  local ft = vim.filetype.match({ filename = abs }) or ""
  return add({ kind = "file", label = name, key = "file:" .. abs, block = file_block(name, ft, text) })
end

--- Attaches lines `l1..l2` (1-based) of a buffer.
---@param bufnr integer
---@param l1 integer
---@param l2 integer
---@return agent_lsp.Attachment
function M.add_selection(bufnr, l1, l2)
  local text = require("agent_lsp.commands").selection_context(bufnr, l1, l2)
  local name = vim.api.nvim_buf_get_name(bufnr)
  local label = string.format("%s:%d-%d", name ~= "" and display(name) or "[No Name]", l1, l2)
  return add({ kind = "selection", label = label, key = "sel:" .. bufnr .. ":" .. label, block = { type = "text", text = text } })
end

--- Attaches an image file (png, jpeg, gif, webp) as an image block.
---@param path string
---@return agent_lsp.Attachment?
function M.add_image(path)
  local abs = vim.fs.normalize(vim.fn.fnamemodify(path, ":p"))
  local ext = (abs:match("%.(%w+)$") or ""):lower()
  local mime = image_types[ext]
  if not mime then
    notify("not an image this can attach (png, jpg, gif, webp): " .. path)
    return nil
  end
  local stat = vim.uv.fs_stat(abs)
  if not stat or stat.type ~= "file" then
    notify("no such file: " .. path)
    return nil
  end
  if stat.size > M.max_image_bytes then
    notify(string.format("%s is %d bytes, more than the %d attached at most", path, stat.size, M.max_image_bytes))
    return nil
  end
  local f = assert(io.open(abs, "rb"))
  local data = f:read("*a")
  f:close()
  local item = add({
    kind = "image",
    label = "image " .. display(abs),
    key = "image:" .. abs,
    block = { type = "image", data = vim.base64.encode(data), mimeType = mime },
  })
  require("agent_lsp.controls").check_images()
  return item
end

--- Forgets every pending attachment.
function M.clear()
  M.pending = {}
  changed()
end

--- `@path` mentions in `text` that name existing files (relative to the current directory).
---@param text string
---@return string[]
function M.mentions(text)
  local out = {}
  for path in (" " .. text):gmatch("%s@([^%s]+)") do
    path = path:gsub("[,.;:!?)]+$", "")
    local stat = vim.uv.fs_stat(path)
    if stat and stat.type == "file" then
      out[#out + 1] = path
    end
  end
  return out
end

--- Takes the pending attachments and the files `text` mentions: the blocks to send with it.
--- The pending list is empty afterwards; `taken` is what was pending before the mentions were
--- read, for [`restore`] when the daemon refuses the message (the text keeps its mentions).
---@param text string
---@return table[] blocks
---@return agent_lsp.Attachment[] taken
function M.take(text)
  local taken = M.pending
  M.pending = vim.list_slice(taken)
  for _, path in ipairs(M.mentions(text)) do
    M.add_file(path)
  end
  local blocks = vim.tbl_map(function(p)
    return p.block
  end, M.pending)
  if #M.pending > 0 then
    M.clear()
  end
  return blocks, taken
end

--- Puts attachments a refused message took back in front of those attached since.
---@param taken agent_lsp.Attachment[]
function M.restore(taken)
  if #taken == 0 then
    return
  end
  local since = M.pending
  M.pending = vim.list_slice(taken)
  for _, item in ipairs(since) do
    add(item)
  end
  changed()
end

--- One line naming the pending attachments, or "" (for the input window's winbar).
---@return string
function M.summary()
  if #M.pending == 0 then
    return ""
  end
  return "attached: " .. table.concat(vim.tbl_map(function(p)
    return p.label
  end, M.pending), ", ")
end

return M
