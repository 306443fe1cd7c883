#!/usr/bin/env bash
# scripts/check-enqueue-options.py can fail: on a copy of the tree it passes; an argument of
# prescient.schedule the list leaves out, a client that stops offering an option, and a table in
# docs/workers.md that differs from the list each fail it, naming the file to change.
#   tests/architecture/check_enqueue_options_test.sh REPO
set -euo pipefail
# shellcheck source=planted.sh
. "$(dirname "${BASH_SOURCE[0]}")/planted.sh"

for path in sql/schema.sql docs/workers.md jobs/workers/conformance/enqueue-options.json \
            engine/include/prescient/client.hpp engine/include/prescient/schedules.hpp \
            jobs/workers/python/src/prescient/enqueue.py jobs/workers/go/prescient/client.go \
            jobs/workers/java/src/main/java/dev/prescient/PrescientClient.java jobs/workers/node/lib/enqueue.js; do
  mkdir -p "$work/$(dirname "$path")"
  cp "$repo/$path" "$work/$path"
done
check() { python3 "$repo/scripts/check-enqueue-options.py" "$work"; }
check >/dev/null || fail "the unchanged copy does not pass"
# run_check WHAT: the check on the copy must exit 1; prints what it said.
run_check() {
  local status=0 out
  out=$(check 2>&1) || status=$?
  [ "$status" = 1 ] || fail "exit $status with $1"
  printf '%s\n' "$out"
}
list=jobs/workers/conformance/enqueue-options.json

# The list leaves out an argument the function takes.
python3 - "$work/$list" <<'PY'
import json, sys
path = sys.argv[1]
options = json.load(open(path))
del options["functions"]["schedule"]["p_priority"]
json.dump(options, open(path, "w"))
PY
out=$(run_check "an argument the list leaves out")
grep -qxF "check-enqueue-options: $list: prescient.schedule takes p_priority, which the list does not name: add it, with how each client offers it" <<<"$out" ||
  fail "the argument left out was not named (it said: $out)"
cp "$repo/$list" "$work/$list"

# A client stops offering an option.
sed -i 's/p_priority/p_prio/g' "$work/jobs/workers/node/lib/enqueue.js"
out=$(run_check "a client without an option")
grep -qxF "check-enqueue-options: jobs/workers/node/lib/enqueue.js: the node client does not offer schedule's p_priority (\`p_priority\`): offer it there, or list it as absent with the reason in $list" <<<"$out" ||
  fail "the client without the option was not named (it said: $out)"
[ "$(grep -c 'does not offer' <<<"$out")" = 1 ] || fail "more than the planted one were reported: $out"
cp "$repo/jobs/workers/node/lib/enqueue.js" "$work/jobs/workers/node/lib/enqueue.js"

# The docs' table differs from the list.
sed -i 's/| `schedule` | `p_priority` | 0 (first)/| `schedule` | `p_priority` | zero (first)/' "$work/docs/workers.md"
out=$(run_check "a table that differs")
grep -qF "check-enqueue-options: docs/workers.md: the enqueue options table differs from the list" <<<"$out" ||
  fail "the table that differs was not named (it said: $out)"
echo "check_enqueue_options_test.sh: the copy passes; a left-out argument, a missing option and a changed table each fail it, named"
