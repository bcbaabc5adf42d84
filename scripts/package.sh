#!/usr/bin/env bash
#! Builds agent-lsp's release artifacts for one platform:
#!
#!   1. the platform-specific VS Code extension, the daemon inside (rust-analyzer's layout:
#!      `server/agent-lsp` in the extension; the extension uses it unless `agentLsp.serverPath`
#!      is set, and falls back to `agent-lsp` on PATH): dist/agent-lsp-<target>-<version>.vsix;
#!   2. the release archives (build_archives below).
#!
#! Usage: scripts/package.sh [--server PATH] [--target TARGET] [--out DIR] [--vsix-only]
#!   --server PATH    put this daemon binary in the VSIX instead of building one
#!                    (default: `cargo build --release --locked --bin agent-lsp`)
#!   --target TARGET  VS Code target: linux-x64, linux-arm64, darwin-x64, darwin-arm64, win32-x64
#!                    (default: this machine's, from `uname -sm`); without --server, another
#!                    machine's target builds with `cargo build --target <its Rust triple>`
#!   --out DIR        where the VSIX goes (default: dist/ at the repository root, git-ignored)
#!   --vsix-only      skip the archives (the VS Code e2e packages only the VSIX)
#! Env: VSCE (the vsce command; default: vsce on PATH, else the extension's node_modules, else
#! `npx --yes @vscode/vsce@3.9.2`); DIST (cargo-dist's `dist`; default: dist on PATH, else the
#! copy tests/release/dist.sh installs; `pip install astral-dev-toolchain-cargo-dist==0.33.0`
#! provides it).
#!
#! Prints `vsix: <path>` on stdout, then what build_archives made; progress goes to stderr.
#! Idempotent: every run rebuilds and overwrites its outputs. The daemon is copied into
#! editors/vscode/server/ only while vsce packages it, and that folder is removed on exit (even on
#! failure), so the development folder never carries a stale binary; it is also git-ignored.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
EXT="$ROOT/editors/vscode"
VSCE_VERSION=3.9.2 # the version editors/vscode/test/setup.sh installs for the e2e test

log() { echo "[package] $*" >&2; }
die() { log "error: $*"; exit 1; }

SERVER=""
VSIX_ONLY=""
TARGET=""
OUT="$ROOT/dist"
while [ $# -gt 0 ]; do
  case "$1" in
    --server) [ $# -ge 2 ] || die "--server needs a path"; SERVER="$2"; shift 2 ;;
    --target) [ $# -ge 2 ] || die "--target needs a value"; TARGET="$2"; shift 2 ;;
    --out) [ $# -ge 2 ] || die "--out needs a directory"; OUT="$2"; shift 2 ;;
    --vsix-only) VSIX_ONLY=1; shift ;;
    -h|--help) sed -n '1d; s/^#! \{0,1\}//p' "$0"; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done

# ---- the target: VS Code's name and the Rust triple that builds it
host_target() {
  local os arch
  read -r os arch < <(uname -sm)
  case "$arch" in
    x86_64|amd64) arch=x64 ;;
    aarch64|arm64) arch=arm64 ;;
    *) die "no VS Code target for the architecture $arch (give --target)" ;;
  esac
  case "$os" in
    Linux) echo "linux-$arch" ;;
    Darwin) echo "darwin-$arch" ;;
    MINGW*|MSYS*|CYGWIN*|Windows_NT) echo "win32-$arch" ;;
    *) die "no VS Code target for the system $os (give --target)" ;;
  esac
}
rust_triple() {
  case "$1" in
    linux-x64) echo x86_64-unknown-linux-gnu ;;
    linux-arm64) echo aarch64-unknown-linux-gnu ;;
    darwin-x64) echo x86_64-apple-darwin ;;
    darwin-arm64) echo aarch64-apple-darwin ;;
    win32-x64) echo x86_64-pc-windows-msvc ;;
    *) die "unknown target $1 (linux-x64, linux-arm64, darwin-x64, darwin-arm64, win32-x64)" ;;
  esac
}
HOST="$(host_target)"
TARGET="${TARGET:-$HOST}"
TRIPLE="$(rust_triple "$TARGET")"
EXE=""; case "$TARGET" in win32-*) EXE=".exe" ;; esac
VERSION="$(node -p 'require(process.argv[1]).version' "$EXT/package.json")"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
VSIX="$OUT/agent-lsp-$TARGET-$VERSION.vsix"

# ---- 1. the daemon
if [ -z "$SERVER" ]; then
  TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
  case "$TARGET_DIR" in /*) ;; *) TARGET_DIR="$ROOT/$TARGET_DIR" ;; esac
  if [ "$TARGET" = "$HOST" ]; then
    log "cargo build --release --locked --bin agent-lsp"
    ( cd "$ROOT" && cargo build --release --locked --bin agent-lsp )
    SERVER="$TARGET_DIR/release/agent-lsp$EXE"
  else
    log "cargo build --release --locked --bin agent-lsp --target $TRIPLE"
    ( cd "$ROOT" && cargo build --release --locked --bin agent-lsp --target "$TRIPLE" )
    SERVER="$TARGET_DIR/$TRIPLE/release/agent-lsp$EXE"
  fi
fi
[ -f "$SERVER" ] || die "no daemon binary at $SERVER"
[ -x "$SERVER" ] || [ -n "$EXE" ] || die "$SERVER is not executable"

# ---- 2. the extension, the daemon inside
vsce_cmd() {
  if [ -n "${VSCE:-}" ]; then "$VSCE" "$@"
  elif command -v vsce >/dev/null 2>&1; then vsce "$@"
  elif [ -x "$EXT/node_modules/.bin/vsce" ]; then "$EXT/node_modules/.bin/vsce" "$@"
  else npx --yes "@vscode/vsce@$VSCE_VERSION" "$@"
  fi
}
cleanup_server() { rm -rf "$EXT/server"; }
trap cleanup_server EXIT

build_vsix() {
  cd "$EXT"
  if [ ! -d node_modules/vscode-languageclient ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    log "npm ci (editors/vscode)"
    npm ci --no-audit --no-fund >&2
  fi
  node build.mjs
  cleanup_server # whatever an interrupted run left there
  mkdir -p server
  cp "$SERVER" "server/agent-lsp$EXE"
  chmod 755 "server/agent-lsp$EXE"
  log "vsce package --target $TARGET (server: $SERVER, $(du -k "$SERVER" | cut -f1) KiB)"
  vsce_cmd package --target "$TARGET" --no-dependencies --allow-missing-repository --no-rewrite-relative-links \
    --skip-license -o "$VSIX" >&2
  cleanup_server
  log "wrote $VSIX ($(du -k "$VSIX" | cut -f1) KiB)"
  echo "vsix: $VSIX"
}

# ---- 3. the release archives
# ================================================================================================
# build_archives: the release archives of the target, their checksums and the shell installer,
# made by cargo-dist with the dist profile (release + thin LTO) as dist-workspace.toml says; dist
# writes them under target/distrib/ and they are copied next to the VSIX.
# ================================================================================================
build_archives() {
  local dist="${DIST:-}"
  if [ -z "$dist" ]; then
    if command -v dist >/dev/null 2>&1; then dist=dist
    elif [ -x /var/tmp/agent-lsp-e2e/dist/bin/dist ]; then dist=/var/tmp/agent-lsp-e2e/dist/bin/dist
    else die "no dist (cargo-dist): pip install astral-dev-toolchain-cargo-dist==0.33.0, or set DIST"
    fi
  fi
  log "dist build --target $TRIPLE"
  local manifest
  manifest="$(cd "$ROOT" && "$dist" build --artifacts=all --target "$TRIPLE" --output-format=json)" \
    || die "dist build failed"
  python3 -c 'import json,sys
for a in json.loads(sys.argv[1])["artifacts"].values():
    if a.get("path"): print(a["path"])' "$manifest" | while read -r path; do
    cp "$path" "$OUT/"
    echo "archive: $OUT/$(basename "$path")"
  done
}

build_vsix
[ -n "$VSIX_ONLY" ] || build_archives
