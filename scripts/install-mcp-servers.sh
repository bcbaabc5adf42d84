#!/usr/bin/env bash
# Installs the MCP servers the tests use, pinned, from npm, into $MCP_E2E_CACHE (default
# /var/tmp/agent-lsp-e2e/mcp); idempotent. Prints the node_modules directory on stdout.
set -euo pipefail
CACHE="${MCP_E2E_CACHE:-/var/tmp/agent-lsp-e2e/mcp}"
PACKAGES=(
    "@modelcontextprotocol/server-everything@2026.8.31"
    "@modelcontextprotocol/server-filesystem@2026.8.31"
)
mkdir -p "$CACHE"
[[ -f "$CACHE/package.json" ]] || echo '{"name":"agent-lsp-mcp-e2e","private":true}' >"$CACHE/package.json"
missing=()
for spec in "${PACKAGES[@]}"; do
    name="${spec%@*}"
    version="${spec##*@}"
    manifest="$CACHE/node_modules/$name/package.json"
    if [[ ! -f "$manifest" ]] || [[ "$(node -p "require('$manifest').version")" != "$version" ]]; then
        missing+=("$spec")
    fi
done
if ((${#missing[@]})); then
    (cd "$CACHE" && npm install --no-audit --no-fund --cache "$CACHE/npm-cache" "${missing[@]}" >&2)
fi
echo "$CACHE/node_modules"
