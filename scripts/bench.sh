#!/usr/bin/env bash
# Runs the benchmarks of BENCH.md with release builds and prints each scenario's numbers and
# ratios against the floor (the mock's stream read by a plain client, in the same run).
#
#   scripts/bench.sh                 every scenario (1-7) and the provider streaming benchmark
#   scripts/bench.sh 2 5 --reps 3    some scenarios, fewer repetitions
#   scripts/bench.sh --quick         every scenario at smoke sizes (seconds, numbers meaningless)
#   scripts/bench.sh --markdown out.md   also write the scenario tables to a file
#
# Exits non-zero when a bar is missed. Not part of the test run (scripts/test.sh runs the
# smoke versions, tests/suite/bench_smoke.rs).
set -euo pipefail
cd "$(dirname "$0")/.."

status=0
echo "== scenarios (cargo bench --bench agent -- $*)"
cargo bench --locked --bench agent -- "$@" || status=$?
if [ "$#" -eq 0 ]; then
    echo
    echo "== provider streaming (cargo bench --bench stream_throughput)"
    cargo bench --locked --bench stream_throughput || status=$?
fi
exit "$status"
