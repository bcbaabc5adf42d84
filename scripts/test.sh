#!/usr/bin/env bash
# Runs every test of agent-lsp. Installs what the tests need first, idempotently, so that a fresh
# machine passes with this one command (CI runs exactly this, via .ci/run).
#
#   ./scripts/test.sh            everything: lints, Rust tests, the editors' end-to-end tests
#   SKIP_EDITORS=1 ./scripts/test.sh   only the Rust side (a quicker loop while developing)
set -euo pipefail
cd "$(dirname "$0")/.."

section() { printf '\n== %s\n' "$*"; }

section "system packages"
# Before the first build: `ring` and tree-sitter's bash grammar compile C, so clippy already
# needs a C compiler. The HTTP client's TLS tests make their certificates with the openssl
# command; the sandbox's escape tests attack it with real tools (tmux, curl, a C compiler,
# util-linux's ipcmk/setpriv, procps' pkill). Each Debian package is installed only when its command is missing.
missing=()
for pair in openssl:openssl tmux:tmux curl:curl cc:gcc ipcmk:util-linux setpriv:util-linux \
            pkill:procps git:git python3:python3; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
done
if [ "${#missing[@]}" -gt 0 ]; then
  apt-get update -qq && apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null
fi

section "rustfmt"
rustup component add rustfmt clippy >/dev/null 2>&1 || true
cargo fmt --all -- --check

section "clippy"
cargo clippy --locked --all-targets -- -D warnings

section "MCP test servers"
# The MCP tests run the reference servers from npm (pinned; cached under /var/tmp/agent-lsp-e2e).
bash scripts/install-mcp-servers.sh >/dev/null

section "ACP test client"
# The ACP tests drive `agent-lsp acp` with the official TypeScript SDK (pinned; cached there too).
bash scripts/install-acp-sdk.sh >/dev/null

section "cargo test"
cargo test --locked -- --test-threads="${AGENT_LSP_TEST_THREADS:-4}"

if [ -n "${SKIP_EDITORS:-}" ]; then
  echo "SKIP_EDITORS is set: the editors' end-to-end tests were NOT run."
  exit 0
fi

# The release test builds the archive and installer with cargo-dist and installs from them, the
# editors' end-to-end tests drive the real editors against the real daemon, and the interop
# tests run pi 1.6.0 itself against our session files and event stream. Each script
# installs what it needs (cached under /var/tmp/agent-lsp-e2e), ends with `N passed, M failed`
# and exits non-zero on any failure; every one runs even when an earlier one failed.
status=0
run_suite() {
  section "$1"
  bash "$1" || status=1
}
# The release test builds on one core at the lowest priority beside the editors' and pi's suites,
# which spend much of their time waiting on an editor, a browser or node: it takes the time they
# leave, and its report follows theirs.
release_log="$(mktemp)"
AGENT_LSP_DIST_JOBS=1 nice -n 19 bash tests/release/dist.sh >"$release_log" 2>&1 &
release_pid=$!
run_suite editors/vscode/test/e2e.sh
run_suite editors/neovim/test/run.sh
run_suite tests/interop/pi.sh
section "tests/release/dist.sh (ran beside the suites above)"
wait "$release_pid" || status=1
cat "$release_log"
rm -f "$release_log"
exit "$status"
