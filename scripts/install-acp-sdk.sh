#!/usr/bin/env bash
# Installs the official ACP TypeScript SDK the ACP tests drive the agent with, pinned, from npm,
# into $ACP_E2E_CACHE (default /var/tmp/agent-lsp-e2e/acp); idempotent. Prints the node_modules
# directory on stdout.
set -euo pipefail
CACHE="${ACP_E2E_CACHE:-/var/tmp/agent-lsp-e2e/acp}"
SPEC="@agentclientprotocol/sdk@2.4.0"
name="${SPEC%@*}"
version="${SPEC##*@}"
command -v node >/dev/null || { echo "install-acp-sdk: node is not installed" >&2; exit 1; }
mkdir -p "$CACHE"
[[ -f "$CACHE/package.json" ]] || echo '{"name":"agent-lsp-acp-e2e","private":true}' >"$CACHE/package.json"
manifest="$CACHE/node_modules/$name/package.json"
if [[ ! -f "$manifest" ]] || [[ "$(node -p "require('$manifest').version")" != "$version" ]]; then
    (cd "$CACHE" && npm install --no-audit --no-fund --cache "$CACHE/npm-cache" "$SPEC" >&2)
fi
[[ -f "$manifest" ]] || { echo "install-acp-sdk: $SPEC did not install" >&2; exit 1; }
echo "$CACHE/node_modules"
