#!/usr/bin/env bash
# Regenerates the README pictures from the real editors: runs the editors' end-to-end tests with
# UPDATE_PICTURES=1, which makes them write their pictures into editors/*/media/ (committed)
# instead of test-artifacts/. Review the PNGs (git diff --stat) and commit them.
#
#   ./scripts/pictures.sh
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== VS Code (editors/vscode/media/)"
UPDATE_PICTURES=1 bash editors/vscode/test/e2e.sh

echo "== Neovim (editors/neovim/media/)"
UPDATE_PICTURES=1 AGENT_LSP_NVIM_CASES=pictures bash editors/neovim/test/run.sh
git status --short editors/*/media/
