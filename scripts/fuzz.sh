#!/usr/bin/env bash
# Fuzzes prescient's parsers of outside input (durations, times, cron specs with zones, shard specs,
# JSON payloads) with libFuzzer under ASan + UBSan, for a fixed number of runs per target, starting
# from tests/fuzz/corpus/<target>/ (seeds and every crash ever found, kept as regression cases).
# Exits non-zero on any finding; the crashing input is written to fuzz-findings/: add it to the
# target's corpus with the fix.
#   scripts/fuzz.sh [--runs N]     (default 20000 runs per target)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
runs=20000
case "${1:-}" in
  '') ;;
  --runs) runs=${2:-}; case "$runs" in ''|*[!0-9]*) echo "fuzz.sh: --runs needs a number" >&2; exit 2 ;; esac ;;
  *) echo "usage: scripts/fuzz.sh [--runs N]" >&2; exit 2 ;;
esac

# shellcheck source=lib/packages.sh
. "$repo/scripts/lib/packages.sh"
ensure_packages fuzz.sh clang libclang-rt-14-dev cmake make nlohmann-json3-dev libhowardhinnant-date-dev tzdata >/dev/null

build=$repo/build-fuzz
# shellcheck source=lib/compiler_cache.sh
. "$repo/scripts/lib/compiler_cache.sh"
use_compiler_cache "$repo"
CXX=clang++ cmake -S "$repo" -B "$build" -DPRESCIENT_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)" >/dev/null

findings=$repo/fuzz-findings
mkdir -p "$findings"
status=0
for target in duration time shard cron payload; do
  work=$(mktemp -d /tmp/prescient-fuzz.XXXXXX)  # new inputs go here: the committed corpus stays as it is
  if "$build/tests/fuzz/${target}_fuzz" -runs="$runs" -max_len=512 -artifact_prefix="$findings/$target-" \
      "$work" "$repo/tests/fuzz/corpus/$target" >"$work.log" 2>&1; then
    echo "fuzz.sh: $target: $runs runs, no finding"
  else
    echo "fuzz.sh: $target: FINDING (input in $findings/):" >&2
    grep -E "ERROR|runtime error|SUMMARY|Test unit written" "$work.log" | head -n 5 >&2
    status=1
  fi
  rm -rf "$work" "$work.log"
done
exit $status
