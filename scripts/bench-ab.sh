#!/usr/bin/env bash
# Compares two commits' figures the way a change to the hot path is judged here: both built (Release,
# through the compiler cache) in worktrees of their own, each on a database it migrated itself, on one
# fresh durable cluster, alternating for ROUNDS rounds with the order swapped every round, so that a
# drift of the machine falls on both. Prints a Markdown table: every run, the medians and how often the
# second commit was lower (docs/performance.md keeps such tables); then, for the drains, the machine's CPU
# time per check (runner and server together), median before and after.
#   scripts/bench-ab.sh BEFORE AFTER [--rounds 16] [--n 100000] [--only drain,enqueue]
# BEFORE and AFTER are commits (a name, a hash, HEAD~3); "." is the working tree as it is.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
usage="usage: scripts/bench-ab.sh BEFORE AFTER [--rounds N] [--n N] [--only MEASURES]"
[ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }
before=$1 after=$2
shift 2
rounds=16 n=100000 only=drain,enqueue
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=${2:-}; shift 2 ;;
    --n) n=${2:-}; shift 2 ;;
    --only) only=${2:-}; shift 2 ;;
    *) echo "bench-ab.sh: unknown option '$1'" >&2; echo "$usage" >&2; exit 2 ;;
  esac
done
for value in "$rounds" "$n"; do
  case "$value" in ''|*[!0-9]*|0) echo "bench-ab.sh: '$value' is not a positive number" >&2; exit 2 ;; esac
done
[[ "$only" =~ ^[a-z,]+$ ]] || { echo "bench-ab.sh: --only '$only' is not a list of measures" >&2; exit 2; }

say() { echo "bench-ab.sh: $*" >&2; }
# shellcheck source=lib/packages.sh
. "$repo/scripts/lib/packages.sh"
ensure_packages bench-ab.sh g++ cmake make ccache postgresql-15 >&2
# shellcheck source=lib/compiler_cache.sh
. "$repo/scripts/lib/compiler_cache.sh"
work=$(mktemp -d /tmp/prescient-ab.XXXXXX)
export PRESCIENT_PGDATA=$work/pg
cleanup() {
  "$repo/scripts/pg.sh" stop >/dev/null 2>&1 || true
  for side in before after; do
    [ -d "$work/$side" ] && [ "$(git -C "$repo" worktree list | grep -c "$work/$side")" -gt 0 ] &&
      git -C "$repo" worktree remove --force "$work/$side" >/dev/null 2>&1
  done
  rm -rf "$work"
}
trap cleanup EXIT

# The tree of a side: a worktree of the commit, or this checkout for ".".
tree_of() {  # tree_of SIDE COMMIT
  if [ "$2" = . ]; then echo "$repo"; return; fi
  git -C "$repo" rev-parse --verify -q "$2^{commit}" >/dev/null || { say "no commit '$2'"; exit 2; }
  git -C "$repo" worktree add --detach "$work/$1" "$2" >/dev/null 2>&1
  echo "$work/$1"
}
declare -A bench
for side in before after; do
  commit=$([ "$side" = before ] && echo "$before" || echo "$after")
  tree=$(tree_of "$side" "$commit")
  say "building $side ($commit) in $work/build-$side"
  # Configured here, not by the tree's own setup.sh, so that an older commit builds the same way: Release,
  # through the compiler cache, with paths relative to its tree.
  use_compiler_cache "$tree"
  { cmake -S "$tree" -B "$work/build-$side" -DCMAKE_BUILD_TYPE=Release &&
    cmake --build "$work/build-$side" --target prescient_cli prescient_bench -j "$(nproc)"; } \
    >"$work/build-$side.log" 2>&1 || { tail -n 20 "$work/build-$side.log" >&2; exit 1; }
  bench[$side]=$work/build-$side/tests/prescient_bench
done

url=$("$repo/scripts/pg.sh" start)
server=${url%/*}
pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
for side in before after; do
  "$pg_bin/psql" -q -X "$server/postgres" -c "CREATE DATABASE ab_$side"
  "$work/build-$side/engine/prescient" migrate --db "$server/ab_$side" --slot 1m >/dev/null 2>&1
done

results=$work/results.txt
for round in $(seq "$rounds"); do
  order=$([ $((round % 2)) = 1 ] && echo "before after" || echo "after before")
  for side in $order; do
    say "round $round of $rounds: $side"
    "${bench[$side]}" --db "$server/ab_$side" --n "$n" --reps 1 --only "$only" |
      sed "s/^/$side $round /" >>"$results"
  done
done

# One row per measure: the runs in round order (k/s), the medians, the rounds in which AFTER was lower.
echo "| measure | before | after | median before → after | after lower |"
echo "|---|---|---|---|---|"
awk '
  function median(list,   n, v, i, j, t) {
    n = split(list, v, /[ ,]+/)
    if (v[1] == "") { for (i = 1; i < n; i++) v[i] = v[i + 1]; n-- }
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
  }
  {
    side = $1; round = $2
    match($0, /"measure":"[^"]*"/); measure = substr($0, RSTART + 11, RLENGTH - 12)
    match($0, /"checks_per_second":[0-9.]+/); rate = substr($0, RSTART + 20, RLENGTH - 20) / 1000
    if (!(measure in seen)) { seen[measure] = 1; order[++count] = measure }
    runs[measure, side] = runs[measure, side] (runs[measure, side] == "" ? " " : ", ") sprintf("%.1f", rate)
    # The drains also give the CPU time of the whole machine per check (the runner and the server together).
    if (match($0, /"machine_cpu_us_per_check":[0-9.]+/)) {
      cpu[measure, side] = cpu[measure, side] " " substr($0, RSTART + 27, RLENGTH - 27)
    }
    at[measure, side, round] = rate
    rounds = round > rounds ? round : rounds
  }
  END {
    for (i = 1; i <= count; i++) {
      m = order[i]; lower = 0; total = 0
      for (r = 1; r <= rounds; r++) {
        b_key = m SUBSEP "before" SUBSEP r; a_key = m SUBSEP "after" SUBSEP r
        if (!(b_key in at) || !(a_key in at)) continue
        total++; if (at[a_key] < at[b_key]) lower++
      }
      if (runs[m, "before"] == "" || runs[m, "after"] == "") {  # a measure one commit does not have
        printf "| %s |%s |%s | only %s | – |\n", m, runs[m, "before"], runs[m, "after"],
               (runs[m, "before"] == "" ? "after" : "before")
        continue
      }
      b = median(runs[m, "before"]); a = median(runs[m, "after"])
      printf "| %s |%s |%s | %.1f → %.1f (%+.0f %%) | %d of %d |\n", m, runs[m, "before"], runs[m, "after"], b, a,
             (b > 0 ? (a - b) * 100 / b : 0), lower, total
    }
    header = 0
    for (i = 1; i <= count; i++) {
      m = order[i]
      if (cpu[m, "before"] == "" || cpu[m, "after"] == "") continue
      if (!header) {
        print ""
        print "| measure | machine CPU per check, median before → after (µs) |"
        print "|---|---|"
        header = 1
      }
      b = median(cpu[m, "before"]); a = median(cpu[m, "after"])
      printf "| %s | %.1f → %.1f (%+.0f %%) |\n", m, b, a, (b > 0 ? (a - b) * 100 / b : 0)
    }
  }' "$results"
