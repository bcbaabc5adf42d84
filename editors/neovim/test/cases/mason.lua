--- The Mason registry definition (editors/neovim/mason/package.yaml) agrees with the release:
--- one asset per target dist builds (dist-workspace.toml), each named and laid out as the archive
--- (Cargo.toml's binstall metadata, which tests/suite/cli/release.rs checks against `dist build`),
--- the version Cargo.toml has, the GitHub home the plugin's install hints name; and an archive
--- with that layout, unpacked as Mason does, gives a working `agent-lsp` at the `bin` path.

--- Rust target triples as Mason names its targets.
local MASON_TARGET = {
  ["x86_64-unknown-linux-gnu"] = "linux_x64_gnu",
  ["aarch64-unknown-linux-gnu"] = "linux_arm64_gnu",
  ["x86_64-unknown-linux-musl"] = "linux_x64_musl",
  ["aarch64-unknown-linux-musl"] = "linux_arm64_musl",
  ["x86_64-apple-darwin"] = "darwin_x64",
  ["aarch64-apple-darwin"] = "darwin_arm64",
  ["x86_64-pc-windows-msvc"] = "win_x64",
}

--- The package definition's fields, read line by line (the registry's layout: top-level keys,
--- `source.id`, `source.asset` entries of target/file/bin, the `bin` map, string lists).
--- Any line it does not know fails the test.
local function parse_package(text)
  local pkg = { assets = {}, bin = {}, lists = {} }
  local section, asset
  for line in text:gmatch("[^\n]+") do
    if line == "---" or line:match("^#") then
      -- the document marker and comments
    elseif line:match("^%S") then
      local key, value = line:match("^([%w_]+):%s*(.-)%s*$")
      assert(key, "package.yaml: unparsed line: " .. line)
      section = key
      if value ~= "" and value ~= "|" then
        pkg[key] = value
      end
    elseif section == "description" then
      assert(line:match("^  %S"), "package.yaml: description line: " .. line)
    elseif section == "source" then
      local id = line:match("^  id: (%S+)$")
      local target = line:match("^    %- target: (%S+)$")
      local k, v = line:match("^      (%a+): (%S+)$")
      if id then
        pkg.id = id
      elseif target then
        asset = { target = target }
        pkg.assets[#pkg.assets + 1] = asset
      elseif k and asset and not asset[k] then
        asset[k] = v
      else
        assert(line == "  asset:", "package.yaml: unparsed source line: " .. line)
      end
    elseif section == "bin" then
      local name, value = line:match('^  (%S+): "(.*)"$')
      assert(name, "package.yaml: unparsed bin line: " .. line)
      pkg.bin[name] = value
    else
      local item = line:match("^  %- (%S+)$")
      assert(item, "package.yaml: unparsed line in " .. tostring(section) .. ": " .. line)
      pkg.lists[section] = pkg.lists[section] or {}
      table.insert(pkg.lists[section], item)
    end
  end
  return pkg
end

--- `key = "value"` in a TOML section (the first match).
local function toml_string(text, section, key)
  text = "\n" .. text
  local body = text:match("\n%[" .. vim.pesc(section) .. "%]\n(.-)\n%[") or text:match("\n%[" .. vim.pesc(section) .. "%]\n(.*)$")
  assert(body, "no [" .. section .. "] section")
  local value = body:match("\n" .. vim.pesc(key) .. '%s*=%s*"([^"\n]*)"') or body:match("^" .. vim.pesc(key) .. '%s*=%s*"([^"\n]*)"')
  assert(value, "no " .. key .. " in [" .. section .. "]")
  return value
end

local function read_root(H, path)
  assert(vim.uv.fs_stat(H.root .. "/" .. path), path .. " is missing: the package definition is checked against it")
  return H.read(H.root .. "/" .. path)
end

--- binstall's `{ name }`-style template filled in.
local function fill(template, vars)
  return (template:gsub("{ ([%w-]+) }", function(k)
    return assert(vars[k], "unknown template variable " .. k)
  end))
end

return {
  {
    name = "package.yaml names the release archives dist builds, as binstall finds them",
    run = function(H)
      local pkg = parse_package(read_root(H, "editors/neovim/mason/package.yaml"))
      local cargo = read_root(H, "Cargo.toml")
      local dist = read_root(H, "dist-workspace.toml")

      H.eq("agent-lsp", pkg.name, "name")
      H.eq({ "LSP" }, pkg.lists.categories, "categories")
      H.eq({ toml_string(cargo, "package", "license") }, pkg.lists.licenses, "licenses")
      -- The GitHub home: the same as the installer URL the plugin's hints give.
      local hint = require("agent_lsp.install").ways[1]
      local owner_repo = assert(hint:match("https://github%.com/([%w-]+/[%w-]+)/releases/"), hint)
      H.eq("https://github.com/" .. owner_repo, pkg.homepage, "homepage")
      H.eq("pkg:github/" .. owner_repo .. "@v" .. toml_string(cargo, "package", "version"), pkg.id, "source.id")
      H.eq({ ["agent-lsp"] = "{{source.asset.bin}}" }, pkg.bin, "bin")

      -- The targets dist builds.
      local list = assert(dist:match("\ntargets%s*=%s*(%b[])"), "no targets in dist-workspace.toml")
      local triples = {}
      for t in list:gmatch('"([^"]+)"') do
        triples[#triples + 1] = t
      end
      assert(#triples > 0, "dist-workspace.toml lists no target")

      -- Where the archive and the binary are, as binstall has them.
      local url = toml_string(cargo, "package.metadata.binstall", "pkg-url")
      local bin_dir = toml_string(cargo, "package.metadata.binstall", "bin-dir")
      H.eq("tgz", toml_string(cargo, "package.metadata.binstall", "pkg-fmt"), "binstall pkg-fmt")
      local file_template = assert(url:match("/([^/]+)$"), url)

      local want = {}
      for _, triple in ipairs(triples) do
        local mason = assert(MASON_TARGET[triple], "no Mason target for " .. triple)
        local vars = { name = "agent-lsp", target = triple, bin = "agent-lsp", ["binary-ext"] = "", ["archive-suffix"] = ".tar.gz" }
        want[mason] = { target = mason, file = fill(file_template, vars), bin = fill(bin_dir, vars) }
      end
      local got = {}
      for _, a in ipairs(pkg.assets) do
        assert(not got[a.target], "two assets for " .. a.target)
        got[a.target] = a
      end
      H.eq(want, got, "source.asset")
    end,
  },
  {
    name = "an archive laid out as the release's, unpacked as Mason does, runs at the bin path",
    run = function(H)
      local pkg = parse_package(read_root(H, "editors/neovim/mason/package.yaml"))
      local arch = vim.trim(vim.system({ "uname", "-m" }, { text = true }):wait().stdout)
      local host = ({ x86_64 = "linux_x64_gnu", aarch64 = "linux_arm64_gnu" })[arch]
      local asset
      for _, a in ipairs(pkg.assets) do
        if a.target == host then
          asset = a
        end
      end
      assert(asset, "package.yaml has no asset for this machine (" .. arch .. ")")
      -- The archive: <file> holding agent-lsp-<target>/agent-lsp (cargo-dist's layout).
      local build = H.tempdir()
      local top = asset.file:gsub("%.tar%.gz$", "")
      vim.fn.mkdir(build .. "/" .. top, "p")
      local copy = vim.system({ "cp", H.bin, build .. "/" .. top .. "/agent-lsp" }):wait()
      H.eq(0, copy.code, "cp")
      -- gzip's fastest level: the same format, a 95 MB debug binary packed in a fraction of the time.
      local tar = vim.system({ "tar", "-I", "gzip -1", "-cf", build .. "/" .. asset.file, "-C", build, top }, { text = true }):wait()
      H.eq(0, tar.code, "tar -czf: " .. (tar.stderr or ""))
      -- Mason downloads the asset into the package folder and unpacks it there; `bin` is
      -- relative to that folder ({{source.asset.bin}}).
      local pkg_dir = H.tempdir()
      local untar = vim.system({ "tar", "-xzf", build .. "/" .. asset.file, "-C", pkg_dir }, { text = true }):wait()
      H.eq(0, untar.code, "tar -xzf: " .. (untar.stderr or ""))
      local exe = pkg_dir .. "/" .. pkg.bin["agent-lsp"]:gsub("{{source%.asset%.bin}}", asset.bin)
      H.eq(1, vim.fn.executable(exe), exe .. " is executable")
      local version = vim.system({ exe, "--version" }, { text = true }):wait()
      H.eq(0, version.code, "agent-lsp --version")
      H.contains(version.stdout, "agent-lsp ", "agent-lsp --version")
    end,
  },
}
