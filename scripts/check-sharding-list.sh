#!/usr/bin/env bash
# Checks docs/scaling.md's list of the constructs a sharded prescient would have to change against the
# code. The table under "What would change, construct by construct" has a row for each construct and each
# file that uses it: `| construct | `path` | what would change |`. Every use found in sql/functions/ and
# engine/src/db/ (where all of prescient's SQL lives: scripts/check-sql-seam.sh) must have its row, and
# every row must name a use that is still there; each one missing or stale is named, and the check fails.
# So a new advisory lock, claim, transaction-id cursor, notification, sequence or flow-control statement
# fails it until the list says what sharding would do with it.
#   scripts/check-sharding-list.sh [REPO]
set -euo pipefail
repo=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}

exec python3 - "$repo" <<'EOF'
import glob, os, re, sys

repo = sys.argv[1]
# Each construct, as the list names it, and what finds it in a file.
CONSTRUCTS = {
    "advisory lock": re.compile(r"pg_(try_)?advisory_(xact_)?lock"),
    "SKIP LOCKED claim": re.compile(r"SKIP\s+LOCKED"),
    "transaction-id cursor":
        re.compile(r"pg_current_xact_id|pg_snapshot_xmin|pg_current_snapshot|txid_current|\bxid8\b"),
    "notification": re.compile(r"\bpg_notify\b|\bNOTIFY\b|\bLISTEN\b"),
    "sequence": re.compile(r"\bnextval\s*\(|\bIDENTITY\b"),
    "flow-control table": re.compile(r"prescient\.flow_(limit|state|lease|deferral|figure|key)\b"),
}

found = set()
files = sorted(glob.glob(os.path.join(repo, "sql/functions/*.sql")) +
               glob.glob(os.path.join(repo, "engine/src/db/*.hpp")) +
               glob.glob(os.path.join(repo, "engine/src/db/*.cpp")))
for path in files:
    text = open(path, encoding="utf-8").read()
    for name, pattern in CONSTRUCTS.items():
        if pattern.search(text):
            found.add((name, os.path.relpath(path, repo)))

listed, inside = set(), False
row = re.compile(r"^\|\s*([^|]+?)\s*\|\s*`([^`]+)`\s*\|")
for line in open(os.path.join(repo, "docs/scaling.md"), encoding="utf-8"):
    if line.startswith("## "):
        inside = line.strip() == "## What would change, construct by construct"
        continue
    m = row.match(line) if inside else None
    if m:
        if m.group(1) not in CONSTRUCTS:
            print(f"docs/scaling.md: unknown construct '{m.group(1)}' (known: {', '.join(CONSTRUCTS)})")
            sys.exit(1)
        listed.add((m.group(1), m.group(2)))

problems = [f"{path}: uses the construct '{name}', which docs/scaling.md does not list"
            for name, path in sorted(found - listed)]
problems += [f"{path}: listed in docs/scaling.md for the construct '{name}', which it no longer uses"
             for name, path in sorted(listed - found)]
for problem in problems:
    print(problem)
if problems:
    sys.exit(1)
print(f"check-sharding-list.sh: {len(found)} uses of {len(CONSTRUCTS)} constructs, each listed")
EOF
