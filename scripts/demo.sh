#!/usr/bin/env bash
# The first README command: installs what is missing, builds, starts the private PostgreSQL cluster
# under .prescient/, creates the prescient schema (in a demo database of its own, 15-minute grid),
# puts checks into the future and manages them. Firing them arrives with the slot runner.
# It stops the cluster at the end unless the cluster was already running when it began.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
prescient=${PRESCIENT_BUILD_DIR:-$repo/build}/engine/prescient

"$repo/scripts/setup.sh"

already_running=no
"$repo/scripts/pg.sh" status >/dev/null 2>&1 && already_running=yes
base_url=$("$repo/scripts/pg.sh" start)
if [ "$already_running" = no ]; then trap '"$repo/scripts/pg.sh" stop' EXIT; fi
# A fresh demo database each run, so the scenario always starts from nothing.
pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
"$pg_bin/psql" -q "$base_url" -c "DROP DATABASE IF EXISTS prescient_demo WITH (FORCE)" -c "CREATE DATABASE prescient_demo"
PRESCIENT_DATABASE_URL=${base_url%/*}/prescient_demo
export PRESCIENT_DATABASE_URL

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "prescient migrate --slot 15m   (database: $PRESCIENT_DATABASE_URL)"
"$prescient" migrate --slot 15m
step "prescient migrate, again: a no-op"
"$prescient" migrate
step "prescient settings"
"$prescient" settings

step "Three orders were placed: check each for shipment in 3 hours (rounded up to the 15-minute grid)"
for order in 41 42 43; do
  "$prescient" schedule --job noop --entity orders --entity-key "$order" --in 3h \
    --key "order_unshipped:$order" --payload "{\"order\": $order}"
done
step "The same key twice is refused (exit 2), unless --on-conflict says otherwise"
"$prescient" schedule --job noop --entity orders --entity-key 42 --in 3h --key order_unshipped:42 ||
  echo "(exit $?)"
"$prescient" schedule --job noop --entity orders --entity-key 42 --in 5h --key order_unshipped:42 --on-conflict replace
step "A typo in the job class is refused now, not in three hours"
"$prescient" schedule --job order_unshiped --entity orders --entity-key 44 --in 3h || echo "(exit $?)"
step "prescient list"
"$prescient" list
step "Order 43 was shipped: cancel its check"
"$prescient" cancel --key order_unshipped:43 --by warehouse
step "prescient show --key order_unshipped:43   (the trace)"
"$prescient" show --key order_unshipped:43
step "prescient history"
"$prescient" history
