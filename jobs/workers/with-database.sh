#!/usr/bin/env bash
# Runs a command against a fresh, migrated prescient database on the cluster named by
# PRESCIENT_TEST_DATABASE_URL (scripts/test.sh sets it), dropped when the command ends.
#   with-database.sh PRESCIENT_BINARY [--slot 1s] [--worker-class CLASS]... [--empty] [--server-clock]
#                    -- COMMAND [ARG]...
# The command finds the database's URL in PRESCIENT_DATABASE_URL. Each --worker-class is declared a worker
# class (prescient jobs add CLASS --worker) before the command starts. It is a test database: workers may
# pin the clock there (prescient.settings.workers_may_pin_clock, docs/workers.md "What a worker may do"),
# unless --server-clock leaves it as production has it: workers on the server's clock only.
# With --empty the database is left without the schema, for a client's own migrate to make.
set -euo pipefail
if [[ $# -lt 3 ]]; then
  echo "usage: with-database.sh PRESCIENT_BINARY [--slot D] [--worker-class CLASS]... [--empty] [--server-clock]" \
    "-- COMMAND..." >&2
  exit 2
fi
prescient=$1
shift
slot=1s
classes=()
empty=false
may_pin=true
while [[ $# -gt 0 && $1 != -- ]]; do
  case $1 in
    --slot) slot=$2; shift 2 ;;
    --worker-class) classes+=("$2"); shift 2 ;;
    --empty) empty=true; shift ;;
    --server-clock) may_pin=false; shift ;;
    *) echo "with-database.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
[[ ${1:-} == -- ]] || { echo "with-database.sh: no command after --" >&2; exit 2; }
shift
: "${PRESCIENT_TEST_DATABASE_URL:?PRESCIENT_TEST_DATABASE_URL is not set (scripts/test.sh sets it)}"

name="prescient_worker_$$_$RANDOM"
admin=$PRESCIENT_TEST_DATABASE_URL
psql -X -q -v ON_ERROR_STOP=1 -d "$admin" -c "CREATE DATABASE $name ENCODING 'UTF8' TEMPLATE template0" >/dev/null
cleanup() {
  psql -X -q -d "$admin" -c "DROP DATABASE IF EXISTS $name WITH (FORCE)" >/dev/null 2>&1 || true
}
trap cleanup EXIT
# The cluster's URL with the database swapped: a libpq URI (postgresql://host:port/db?...) or key=value.
if [[ $admin == postgres://* || $admin == postgresql://* ]]; then
  url=$(sed -E "s#^(postgres(ql)?://[^/?]*)(/[^?]*)?#\1/$name#" <<<"$admin")
else
  url="$admin dbname=$name"
fi
export PRESCIENT_DATABASE_URL=$url
if ! $empty; then
  "$prescient" migrate --slot "$slot" --log-level warn >/dev/null
  if $may_pin; then
    psql -X -q -v ON_ERROR_STOP=1 -d "$url" -c "UPDATE prescient.settings SET workers_may_pin_clock = true" >/dev/null
  fi
fi
for class in "${classes[@]}"; do
  "$prescient" jobs add "$class" --worker >/dev/null
done
"$@"
