#!/usr/bin/env bash
# The first service of a client's README (Go, Java, Node: "Your first service"), run by its README line in its
# folder, against the engine's own migrate, each way round on a fresh database of the cluster named by
# PRESCIENT_TEST_DATABASE_URL (with-database.sh):
#   client first: the service creates the schema, declares its class with its policy and runs its first check;
#     then `prescient migrate` upgrades the same database, and nothing of the first changes;
#   binary first: `prescient migrate` makes the schema; the service's migrate accepts it, changing none of its
#     bookkeeping, and runs its first check.
#   readme-first-service.sh PRESCIENT_BINARY SERVICE_FOLDER RUN_LINE [CLEAN_EXIT]
# What every README's service does: its DATABASE_URL (the owner's) and PRESCIENT_SLOT_SECONDS (a new database's
# slot, 1 here); the class order_unshipped with max_checks 30, max_attempts 3 and a backoff of a minute; a check
# of order 42 with job key order_unshipped:42 (kept if pending), whose handler logs `order 42 not shipped yet
# (check ID, run 1)` and looks again a day after it was due; it runs until SIGTERM and then exits CLEAN_EXIT
# (0; a JVM's 143 after its clean stop).
set -euo pipefail
prescient=$(realpath "${1:?usage: readme-first-service.sh PRESCIENT_BINARY SERVICE_FOLDER RUN_LINE [CLEAN_EXIT]}")
service=$(realpath "${2:?no service folder}")
run_line=${3:?no run line}
clean_exit=${4:-0}
here=$(cd "$(dirname "$0")" && pwd)
say() { echo "readme-first-service.sh: $*"; }
fail() { echo "readme-first-service.sh: $*" >&2; exit 1; }

# sql QUERY: the query's rows on the test's database, unaligned.
sql() { psql -X -q -tA -v ON_ERROR_STOP=1 -d "$PRESCIENT_DATABASE_URL" -c "$1"; }

# bookkeeping: what either migrate records (the migrations and function files with their checksums, the slot).
bookkeeping() {
  sql "SELECT version, name, checksum FROM prescient.schema_migrations ORDER BY version"
  sql "SELECT name, checksum FROM prescient.schema_functions ORDER BY name"
  sql "SELECT slot_seconds FROM prescient.settings"
}

# first_check LOG: the run line in the service's folder, in the background until its check of order 42 ran
# once, then SIGTERM; it must stop cleanly. Then its class's policy, as every README's service declares it.
first_check() {
  local log=$1 pid ran="" status=0
  (cd "$service" && export DATABASE_URL=$PRESCIENT_DATABASE_URL PRESCIENT_SLOT_SECONDS=1 &&
    eval "exec $run_line") >"$log" 2>&1 &
  pid=$!
  for _ in $(seq 300); do
    ran=$(sql "SELECT check_count FROM prescient.future_job WHERE job_key = 'order_unshipped:42'" 2>/dev/null || true)
    [ "$ran" = 1 ] && break
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; fail "the service ended before its first check"; }
    sleep 0.1
  done
  [ "$ran" = 1 ] || { kill -TERM "$pid"; cat "$log" >&2; fail "the first check did not run within 30 s"; }
  kill -TERM "$pid"
  wait "$pid" || status=$?
  [ "$status" = "$clean_exit" ] ||
    { cat "$log" >&2; fail "the service did not stop cleanly on SIGTERM (exit $status, not $clean_exit)"; }
  grep -q "order 42 not shipped yet (check [0-9]*, run 1)" "$log" || { cat "$log" >&2; fail "the handler did not log"; }
  [ "$(sql "SELECT runs_in, max_checks, max_attempts, backoff_seconds FROM prescient.job_class
            WHERE job = 'order_unshipped'")" = "worker|30|3|60" ] || fail "the class's policy is not the README's"
  [ "$(sql "SELECT next_check_at - first_check_at FROM prescient.future_job
            WHERE job_key = 'order_unshipped:42'")" = "1 day" ] || fail "the check does not look again tomorrow"
  say "the service ran its first check and stopped: $(grep -c . "$log") lines of log"
}

case ${5:-} in
  --client-first)
    [ "$(sql "SELECT count(*) FROM pg_namespace WHERE nspname = 'prescient'")" = 0 ] || fail "not an empty database"
    first_check "$service/client-first.log"
    [ "$(sql "SELECT slot_seconds FROM prescient.settings")" = 1 ] || fail "the service did not make a 1 s slot"
    state="SELECT id, job, entity_key, next_check_at, check_count, attempts FROM prescient.future_job ORDER BY id"
    before=$(bookkeeping; sql "$state")
    "$prescient" migrate --log-level warn
    after=$(bookkeeping; sql "$state")
    [ "$before" = "$after" ] || fail "prescient migrate changed the service's database: $(diff <(echo "$before") <(echo "$after"))"
    say "client first, then prescient migrate: accepted, nothing changed"
    exit 0 ;;
  --binary-first)
    before=$(bookkeeping)
    first_check "$service/binary-first.log"
    [ "$before" = "$(bookkeeping)" ] || fail "the service's migrate changed the binary's bookkeeping"
    say "prescient migrate first, then the service: accepted, nothing changed"
    exit 0 ;;
  "") ;;
  *) fail "unknown step '$5'" ;;
esac

with_database=$here/with-database.sh
"$with_database" "$prescient" --empty -- "$0" "$prescient" "$service" "$run_line" "$clean_exit" --client-first
"$with_database" "$prescient" --slot 1s -- "$0" "$prescient" "$service" "$run_line" "$clean_exit" --binary-first
