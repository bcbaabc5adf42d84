#!/usr/bin/env bash
#! Idempotent installer for everything the VS Code e2e test needs on a fresh Debian machine:
#! Debian packages (chromium, ripgrep, native build deps), code-server 4.100.3 installed offline
#! (ripgrep download cache seeded from Debian's rg), and the test tooling (playwright-core, vsce).
#! Everything is cached under $E2E_CACHE (default /var/tmp/agent-lsp-e2e), never under $HOME.
#! Based on /work/shared/recipes/vscode-e2e-code-server.sh (the project's working recipe).
set -euo pipefail

E2E_CACHE=${E2E_CACHE:-/var/tmp/agent-lsp-e2e}
CS_VERSION=4.100.3          # last code-server line that runs on Node 20
RG_PKG_VERSION=1.15.11      # @vscode/ripgrep version pinned in code-server 4.100.3's lib/vscode
RG_ASSET=ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz
PLAYWRIGHT_VERSION=1.65.1
VSCE_VERSION=3.9.2
mkdir -p "$E2E_CACHE"
# npm's cache lives with ours, not in $HOME.
export npm_config_cache="$E2E_CACHE/npm-cache" npm_config_update_notifier=false npm_config_devdir="$E2E_CACHE/node-gyp"

log() { echo "[setup] $*"; }

# ---- 1. Debian packages
need=""
for p in ripgrep chromium build-essential python3 pkg-config libkrb5-dev libsecret-1-dev libx11-dev libxkbfile-dev curl fonts-dejavu-core; do
  dpkg -s "$p" >/dev/null 2>&1 || need="$need $p"
done
if [ -n "$need" ]; then
  log "apt install:$need"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  # shellcheck disable=SC2086
  apt-get install -y -q --no-install-recommends $need >"$E2E_CACHE/apt.log" 2>&1 \
    || { tail -30 "$E2E_CACHE/apt.log"; log "apt install FAILED"; exit 1; }
fi
command -v node >/dev/null || { log "node is required (Node 20)"; exit 1; }

# ---- 2. code-server (offline: seed @vscode/ripgrep's download cache with Debian's rg)
export TMPDIR="$E2E_CACHE/tmp"
mkdir -p "$TMPDIR/vscode-ripgrep-cache-$RG_PKG_VERSION" "$E2E_CACHE/rgpkg"
if [ ! -f "$TMPDIR/vscode-ripgrep-cache-$RG_PKG_VERSION/$RG_ASSET" ]; then
  cp /usr/bin/rg "$E2E_CACHE/rgpkg/rg"
  tar czf "$TMPDIR/vscode-ripgrep-cache-$RG_PKG_VERSION/$RG_ASSET" -C "$E2E_CACHE/rgpkg" rg
fi
CS_DIR="$E2E_CACHE/cs-$CS_VERSION"
CS="$CS_DIR/node_modules/.bin/code-server"
if [ ! -x "$CS" ] || [ ! -x "$CS_DIR/node_modules/code-server/lib/vscode/node_modules/@vscode/ripgrep/bin/rg" ]; then
  log "installing code-server $CS_VERSION (several minutes: native modules are compiled)"
  rm -rf "$CS_DIR"; mkdir -p "$CS_DIR"; echo '{"private":true}' > "$CS_DIR/package.json"
  headers=(); [ -f /usr/include/node/node_version.h ] && headers=(npm_config_nodedir=/usr)
  ( cd "$CS_DIR" && env "${headers[@]}" npm_config_unsafe_perm=true npm_config_yes=true \
      npm install --no-audit --no-fund "code-server@$CS_VERSION" ) >"$E2E_CACHE/cs-install.log" 2>&1 \
    || { tail -50 "$E2E_CACHE/cs-install.log"; log "code-server install FAILED"; exit 1; }
fi

# ---- 3. test tooling
TOOLS="$E2E_CACHE/tools"
if [ ! -d "$TOOLS/node_modules/playwright-core" ] || [ ! -x "$TOOLS/node_modules/.bin/vsce" ]; then
  log "installing playwright-core and vsce"
  mkdir -p "$TOOLS"; echo '{"private":true}' > "$TOOLS/package.json"
  ( cd "$TOOLS" && npm install --no-audit --no-fund "playwright-core@$PLAYWRIGHT_VERSION" "@vscode/vsce@$VSCE_VERSION" ) \
    >"$E2E_CACHE/tools-install.log" 2>&1 || { tail -30 "$E2E_CACHE/tools-install.log"; log "tools install FAILED"; exit 1; }
fi
log "ready: code-server=$CS tools=$TOOLS"
