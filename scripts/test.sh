#!/usr/bin/env bash
# Runs every test of agent-lsp. Installs what the tests need first, idempotently, so that a fresh
# machine passes with this one command (CI runs exactly this).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo test"
cargo test --locked --all-targets -- --test-threads="${AGENT_LSP_TEST_THREADS:-4}"
