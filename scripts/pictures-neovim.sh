#!/usr/bin/env bash
# Regenerates the Neovim plugin's README pictures (editors/neovim/media/*.png) from the real
# editor: the e2e case editors/neovim/test/cases/pictures.lua drives Neovim in tmux against the
# daemon and the mock model, captures the screen with its colours and screenshots it with
# headless Chromium. Without UPDATE_PICTURES=1 (a normal test run) the same pictures go to
# test-artifacts/neovim/pictures/ instead.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
UPDATE_PICTURES=1 AGENT_LSP_NVIM_CASES=pictures bash "$ROOT/editors/neovim/test/run.sh"
ls -l "$ROOT"/editors/neovim/media/*.png
