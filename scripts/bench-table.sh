#!/usr/bin/env bash
# Prints the figures of one scripts/bench.sh run (bench-results/<time>.json) as the Markdown table
# docs/performance.md keeps: each measure's median with its slowest and fastest run, a drain against the
# bare-SQL floor and the floor on prescient's own tables, and each measure against graphile-worker and
# pg-boss (the same comparisons bench.sh prints: a drain against their processing, bulk enqueue against
# their best batch, single enqueue against theirs with 1 or 16 in flight). A peer or a floor not run
# leaves its column empty.
#   scripts/bench-table.sh [RESULTS.json]   (default: the newest bench-results/*.json)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
file=${1:-$(ls -t "$repo"/bench-results/[0-9]*.json 2>/dev/null | head -n 1)}
[ -n "$file" ] && [ -f "$file" ] || { echo "bench-table.sh: no results file (run scripts/bench.sh first, or name one)" >&2; exit 2; }

exec python3 - "$file" <<'PYEOF'
import json, sys

path = sys.argv[1]
try:
    run = json.load(open(path, encoding="utf-8"))
    floor = run["floor_checks_per_second"]["median"]
    tables = run["floor_on_prescient_tables_checks_per_second"]["median"]
    peers = run["peers"]
    measures = run["prescient"]
except (OSError, ValueError, KeyError, TypeError) as e:
    sys.exit(f"bench-table.sh: {path} is not a results file of scripts/bench.sh ({e})")


def k(rate):
    return f"{rate / 1000:.1f}"


def share(rate, base):
    return f"{100 * rate / base:.0f} %" if base else ""


def times(rate, base):
    return f"{rate / base:.2f}×" if base else ""


def peer_phase(measure):
    """The peers' phase a measure compares with, as bench.sh compares them; None: none."""
    if measure.startswith(("slot drain", "PgBouncer ", "worker drain")):
        return "process"
    if measure.startswith("enqueue bulk"):
        return "bulk"
    if measure.startswith("enqueue single, 1 "):
        return "single"
    if measure.startswith("enqueue single, 16 "):
        return "single16"
    return None


print(f"{run['n']} checks a measure, medians of {run['reps']} runs; {run['machine']}; {run['server']}.\n")
print("| measure | k checks/s [slowest–fastest] | of the floor | of the floor on prescient's tables "
      "| × graphile-worker | × pg-boss |")
print("|---|---|---|---|---|---|")
for m in measures:
    name, rate = m["measure"], m.get("checks_per_second", 0)
    if "milliseconds" in m and not rate:
        print(f"| {name} | {m['milliseconds']:.1f} ms | | | | |")
        continue
    if not rate:
        print(f"| {name} | {m.get('note', '')} | | | | |")
        continue
    spread = f" [{k(m['min_checks_per_second'])}–{k(m['max_checks_per_second'])}]" if "min_checks_per_second" in m else ""
    phase = peer_phase(name)
    drain = phase == "process"
    graphile = peers["graphile_worker"].get(phase, 0) if phase else 0
    pgboss = peers["pg_boss"].get(phase, 0) if phase else 0
    print(f"| {name} | {k(rate)}{spread} | {share(rate, floor) if drain else ''} | "
          f"{share(rate, tables) if drain else ''} | {times(rate, graphile)} | {times(rate, pgboss)} |")
if floor:
    print(f"| SQL floor (lock_settle, 2 clients) | {k(floor)} | 100 % | | | |")
if tables:
    print(f"| SQL floor on prescient's tables (no engine) | {k(tables)} | {share(tables, floor)} | 100 % | | |")
five_slots = run.get("floor_five_slots_fifth_over_first") or []
if five_slots:
    runs = ", ".join(f"{r:.2f}" for r in five_slots)
    print(f"| SQL floor: five slots of schedules on prescient's tables | the fifth slot's rate over the first's: {runs} | | | | |")
for key, label in (("graphile_worker", "graphile-worker"), ("pg_boss", "pg-boss")):
    p = peers[key]
    if p.get("process"):
        print(f"| {label}: processing, best setting | {k(p['process'])} | | | | |")
    if p.get("bulk"):
        print(f"| {label}: bulk enqueue, best batch | {k(p['bulk'])} | | | | |")
PYEOF
