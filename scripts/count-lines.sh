#!/usr/bin/env bash
# Production lines in src/ as issue 13 counts them.
cd "$(dirname "$0")/.."
total=0
while IFS= read -r f; do
  case "$f" in src/testing/*) continue;; esac
  b=$(basename "$f")
  case "$b" in tests.rs|*_tests.rs) continue;; esac
  n=$(awk '/^#\[cfg\(test\)\]/{exit} {n++} END{print n+0}' "$f")
  total=$((total+n))
  echo "$n $f"
done < <(find src -name '*.rs' | sort)
echo "total $total"
