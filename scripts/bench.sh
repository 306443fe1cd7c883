#!/usr/bin/env bash
# Figures for prescient, side by side with the bare-SQL floor and (with --peers) graphile-worker and
# pg-boss, all measured in the same run on the same server (the drain also through PgBouncer in both
# modes): a Release build, a fresh private cluster
# (the settings of scripts/pg.sh, which are those of ../shared/peers/pg.sh; fsync and
# synchronous_commit on), then one table, and the raw figures in bench-results/<time>.json.
# Figures, not pass/fail. Every throughput figure is the median of --reps runs, printed with the
# slowest and fastest run; a peer's figure is its best setting's median.
#   scripts/bench.sh [--n N] [--reps R] [--quick] [--peers] [--only LIST]
#     --n N     checks per throughput measure (default 100000)
#     --reps R  runs per throughput measure, for prescient, the floor and the peers alike (default 3)
#     --quick   skip the slow measures: scale stops at 1M, 10 000 schedules instead of 100 000
#     --only L  only these measures, a comma-separated list of enqueue, drain, scale, lateness, schedules,
#               dashboard, http (prescient's own), pgbouncer (the drain through it), floor (bare, and on
#               prescient's tables, with five slots of schedules' firings there), workers (the Go, Python,
#               Java and Node workers); default all. With --peers, the peers' phases that compare: enqueue,
#               process
#     --peers   also run ../shared/peers/run-all.sh: single enqueue (5 000 jobs, as prescient's), bulk
#               enqueue and processing (installs its pinned Node packages from npm on first use)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
n=100000
reps=3
scale_sizes=1000000,10000000
schedule_count=100000
dashboard_rows=10000000
peers=false
usage="usage: scripts/bench.sh [--n N] [--reps R] [--quick] [--peers] [--only LIST]"
only=enqueue,drain,scale,lateness,schedules,dashboard,http,pgbouncer,floor,workers
while [ $# -gt 0 ]; do
  case "$1" in
    --n) [ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }; n=$2; shift 2 ;;
    --reps) [ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }; reps=$2; shift 2 ;;
    --quick) scale_sizes=100000,1000000; schedule_count=10000; dashboard_rows=1000000; shift ;;
    --peers) peers=true; shift ;;
    --only) [ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }; only=$2; shift 2 ;;
    -h|--help) echo "$usage"; exit 0 ;;
    *) echo "bench.sh: unknown option '$1'" >&2; echo "$usage" >&2; exit 2 ;;
  esac
done
case "$n" in ''|*[!0-9]*|0) echo "bench.sh: --n must be a positive number, not '$n'" >&2; exit 2 ;; esac
case "$reps" in ''|*[!0-9]*|0) echo "bench.sh: --reps must be a positive number, not '$reps'" >&2; exit 2 ;; esac
for part in ${only//,/ }; do
  case "$part" in
    enqueue|drain|scale|lateness|schedules|dashboard|http|pgbouncer|floor|workers) ;;
    *) echo "bench.sh: --only: unknown measure '$part' (enqueue, drain, scale, lateness, schedules, dashboard, http, pgbouncer, floor, workers)" >&2; exit 2 ;;
  esac
done
wanted() { [[ ",$only," == *",$1,"* ]]; }
own=""  # prescient_bench's measures among them
for part in enqueue drain scale lateness schedules dashboard http; do wanted "$part" && own="$own,$part"; done
own=${own#,}

export PRESCIENT_BUILD_DIR=$repo/build-release
BUILD_TYPE=Release "$repo/scripts/setup.sh"
# shellcheck source=lib/packages.sh
. "$repo/scripts/lib/packages.sh"
ensure_packages bench.sh pgbouncer
cmake --build "$PRESCIENT_BUILD_DIR" --target prescient_bench -j "$(nproc)" >/dev/null

PRESCIENT_PGDATA=$(mktemp -d /tmp/prescient-bench.XXXXXX)/pg
export PRESCIENT_PGDATA
export PRESCIENT_PGBOUNCER_DIR
PRESCIENT_PGBOUNCER_DIR=$(dirname "$PRESCIENT_PGDATA")/pgbouncer
cleanup() {
  "$repo/scripts/pgbouncer.sh" stop || true
  "$repo/scripts/pg.sh" stop || true
  rm -rf "$(dirname "$PRESCIENT_PGDATA")"
}
trap cleanup EXIT
url=$("$repo/scripts/pg.sh" start)
server=${url%/*}
pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
# Quiet: the server's notices (DROP ... CASCADE) are not figures.
psql() { PGOPTIONS="-c client_min_messages=warning" "$pg_bin/psql" -q -X "$@"; }
prescient=$PRESCIENT_BUILD_DIR/engine/prescient
"$prescient" migrate --db "$url" --slot 1m >/dev/null 2>&1
psql "$server/postgres" -c "CREATE DATABASE prescient_1s"
"$prescient" migrate --db "$server/prescient_1s" --slot 1s >/dev/null 2>&1

results=""
if [ -n "$own" ]; then
  echo "bench.sh: prescient ($own), N = $n, $reps runs each (scale: $scale_sizes pending; $schedule_count schedules)"
  results=$("$PRESCIENT_BUILD_DIR/tests/prescient_bench" --db "$url" --db-1s "$server/prescient_1s" --n "$n" \
    --reps "$reps" --only "$own" --scale "$scale_sizes" --schedules "$schedule_count" --dashboard "$dashboard_rows")
fi

# The drain again through PgBouncer (Debian's, scripts/pgbouncer.sh) in front of the same server: in
# transaction mode with unnamed statements, in session mode with prepared ones.
for mode in transaction session; do
  wanted pgbouncer || break
  echo "bench.sh: the slot drain through PgBouncer in $mode mode, N = $n, $reps runs each"
  bouncer_port=$("$repo/scripts/pgbouncer.sh" start "$mode" "${server##*:}")
  preparing=off
  [ "$mode" = session ] && preparing=on
  pooled=$("$PRESCIENT_BUILD_DIR/tests/prescient_bench" --db "postgresql://prescient@127.0.0.1:$bouncer_port/prescient" \
    --n "$n" --reps "$reps" --only drain --prepared-statements "$preparing")
  results=$results$'\n'$(echo "$pooled" | sed "s/\"measure\":\"/\"measure\":\"PgBouncer $mode: /")
  "$repo/scripts/pgbouncer.sh" stop
done

field() {  # a field of one JSON line: a string's text, or a number
  echo "$1" | sed -nE -e "s/.*\"$2\":\"([^\"]*)\".*/\\1/p;t" -e "s/.*\"$2\":([^,}]*).*/\\1/p"
}
# The median, min and max of the numbers on standard input, as "median min max".
median_min_max() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)], v[1], v[NR]; else print 0, 0, 0 }'; }

# Workers in other languages (docs/workers.md): N no-op checks of a worker class drained by each client
# (its conformance driver, `drain`: no-op handlers, taking and settling in batches), on a fresh database
# each run; and the CPU a worker waiting for its next slot uses in an idle minute.
workers_build=$PRESCIENT_BUILD_DIR/workers
if wanted workers; then
  ensure_packages bench.sh golang-go golang-github-jackc-pgx-v4-dev python3-psycopg openjdk-17-jdk-headless \
    libpostgresql-jdbc-java nodejs
  command -v npm >/dev/null || ensure_packages bench.sh npm  # Debian's nodejs comes without it; NodeSource's with
  PRESCIENT_WORKERS_BUILD_DIR=$workers_build "$repo/jobs/workers/go/build.sh" >/dev/null
  PRESCIENT_WORKERS_BUILD_DIR=$workers_build "$repo/jobs/workers/java/build.sh" >/dev/null
  "$repo/jobs/workers/node/build.sh" "$workers_build/node" >/dev/null
fi
worker_db() {  # a fresh 1-second-grid database with the worker class `bench`; prints its URL
  psql "$server/postgres" -c "DROP DATABASE IF EXISTS workers_bench" -c "CREATE DATABASE workers_bench"
  "$prescient" migrate --db "$server/workers_bench" --slot 1s >/dev/null 2>&1
  "$prescient" jobs add bench --worker --db "$server/workers_bench" >/dev/null
  echo "$server/workers_bench"
}
worker_drain() {  # worker_drain LABEL NOTE DRIVER [FLAG...]: the driver's checks/s, median of the runs, as a JSON line
  local label=$1 note=$2 driver=$3 runs="" db
  shift 3
  for _ in $(seq "$reps"); do
    db=$(worker_db)
    psql "$db" -c "SELECT count(*) FROM prescient.schedule_arrays(p_job => array_fill('bench'::text, ARRAY[$n]),
      p_entity_name => array_fill('bench'::text, ARRAY[$n]), p_entity_key => array_fill('1'::text, ARRAY[$n]),
      p_at => array_fill(now(), ARRAY[$n]))" -c "VACUUM ANALYZE prescient.future_job" -c "CHECKPOINT" >/dev/null
    sleep 1.1  # their slot, the next second's boundary, has begun
    runs="$runs $(PRESCIENT_DATABASE_URL=$db PRESCIENT_WORKERS_BUILD_DIR=$workers_build "$driver" drain \
      --classes bench "$@" 2>/dev/null | sed -nE 's/.*: ([0-9.]+) checks\/s.*/\1/p')"
  done
  read -r rate low high < <(echo "$runs" | tr ' ' '\n' | grep . | median_min_max)
  echo "{\"measure\":\"worker drain, $label\",\"checks_per_second\":$rate,\"min_checks_per_second\":$low,\"max_checks_per_second\":$high,\"note\":\"$note\"}"
}
worker_idle_cpu() {  # worker_idle_cpu LABEL DRIVER: CPU milliseconds a waiting worker uses in a minute
  local label=$1 driver=$2 db pid before after
  db=$(worker_db)
  PRESCIENT_DATABASE_URL=$db PRESCIENT_WORKERS_BUILD_DIR=$workers_build "$driver" work --name idle --classes bench \
    2>/dev/null &
  pid=$!
  sleep 5  # past its start
  # Nanoseconds on CPU, summed over the process's threads (/proc/PID/stat counts in 10 ms ticks).
  cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'; }
  before=$(cpu_ns "$pid")
  sleep 60
  after=$(cpu_ns "$pid")
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  echo "{\"measure\":\"worker idle, $label: CPU in a minute waiting for its slot\",\"checks_per_second\":0,\"note\":\"$(awk -v a="$before" -v b="$after" 'BEGIN { printf "%.1f", (b - a) / 1e6 }') ms (target: at most 5 ms)\"}"
}
if wanted workers; then
  echo "bench.sh: workers in Go, Python, Java and Node drain N = $n worker checks, $reps runs each, at the"
  echo "bench.sh: client's default options, tuned (1 000 at once, batches of 1 000) and with a batch handler;"
  echo "bench.sh: then a minute idle each"
  for language in Go Python Java Node; do
    driver=$repo/jobs/workers/${language,,}/conformance-driver
    # The targets of issue 58: tuned first, so that the default's note can say what fraction of it it is.
    tuned=$(worker_drain "$language, tuned (1 000 at once, batches of 1 000)" "" "$driver" \
      --concurrency 1000 --batch 1000)
    default=$(worker_drain "$language, default options" "" "$driver")
    of_tuned=$(awk -v d="$(field "$default" checks_per_second)" -v t="$(field "$tuned" checks_per_second)" \
      'BEGIN { if (t > 0) printf "%.2f", d / t; else printf "-" }')
    results=$results$'\n'${default/\"note\":\"\"/\"note\":\"$of_tuned of tuned (target: at least 0.7)\"}
    results=$results$'\n'$tuned
    [ "$language" = Go ] && batch_target=1.0 || batch_target=0.5
    results=$results$'\n'$(worker_drain "$language, batch handler" \
      "target: at least ${batch_target}x graphile-worker's processing" "$driver" --batch-handler)
    results=$results$'\n'$(worker_idle_cpu "$language" "$driver")
  done
fi

# The floors: the floor's transaction (../shared/floor/lock_settle.sql: claim 1 000 due rows under their row
# locks, move them to the history in one statement) with 2 clients, on its own bare tables and on prescient's
# (tests/bench/floor_on_prescient_tables, in a fresh database): what the schema costs, apart from the engine.
# floor_runs LOAD SETTLE LEFT_QUERY SETUP DB: checks/s of each run on DB, each after SETUP (a psql file, or "").
floor_runs() {
  local load=$1 settle=$2 left_query=$3 setup=${4:-} db=$5 runs="" start seconds left
  for _ in $(seq "$reps"); do
    [ -n "$setup" ] && psql "$db" -f "$setup" >/dev/null 2>&1
    psql "$db" -v n="$n" -f "$load" >/dev/null
    psql "$db" -c "CHECKPOINT"
    start=$(date +%s.%N)
    "$pg_bin/pgbench" -n -f "$settle" -c 2 -j 2 -t $(( (n + 1999) / 2000 )) "$db" >/dev/null
    seconds=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
    left=$(psql -At "$db" -c "$left_query")
    runs="$runs $(awk -v n="$n" -v left="$left" -v s="$seconds" 'BEGIN { print (n - left) / s }')"
  done
  echo "$runs"
}
floor_dir=$repo/../shared/floor
tables_dir=$repo/tests/bench/floor_on_prescient_tables
floor_runs="" tables_runs="" five_slots_runs=""
if wanted floor; then
  echo "bench.sh: the SQL floor (../shared/floor/lock_settle.sql, 2 clients), N = $n, $reps runs"
  floor_runs=$(floor_runs "$floor_dir/load.sql" "$floor_dir/lock_settle.sql" "SELECT count(*) FROM floor.future_job" \
    "$floor_dir/schema.sql" "$url")
  psql "$url" -c "DROP SCHEMA floor CASCADE"
  echo "bench.sh: the same on prescient's tables (tests/bench/floor_on_prescient_tables), N = $n, $reps runs"
  psql "$server/postgres" -c "CREATE DATABASE floor_tables"
  "$prescient" migrate --db "$server/floor_tables" --slot 1m >/dev/null 2>&1
  tables_runs=$(floor_runs "$tables_dir/load.sql" "$tables_dir/lock_settle.sql" \
    "SELECT count(*) FROM prescient.future_job" "" "$server/floor_tables")
  echo "bench.sh: five slots of $schedule_count schedules' firings on prescient's tables (five_slots.sql), $reps runs"
  for _ in $(seq "$reps"); do
    five_slots_runs="$five_slots_runs $(psql -At "$server/floor_tables" -v n="$schedule_count" \
      -f "$tables_dir/five_slots.sql" | awk 'NR == 1 { first = $1 } END { printf "%.2f", first / $1 }')"
  done
  psql "$server/postgres" -c "DROP DATABASE floor_tables"
fi
read -r floor_rate floor_min floor_max < <(echo "$floor_runs" | tr ' ' '\n' | grep . | median_min_max)
read -r tables_rate tables_min tables_max < <(echo "$tables_runs" | tr ' ' '\n' | grep . | median_min_max)

# The peers' figures of this run, by phase: the best setting's median (0 when not run).
graphile_process=0 graphile_bulk=0 graphile_single=0 graphile_single16=0
pgboss_process=0 pgboss_bulk=0 pgboss_single=0 pgboss_single16=0
if $peers; then
  echo "bench.sh: the peers (../shared/peers/run-all.sh), $reps runs per setting"
  psql "$server/postgres" -c "CREATE DATABASE peers"
  peer_results=$(mktemp /tmp/prescient-peers.XXXXXX.jsonl)
  # run-all.sh checks its server with pg_ctl on PGDATA_BENCH: point it at this run's cluster.
  run_peers() {
    (cd "$repo/../shared/peers" &&
      DATABASE_URL="$server/peers" PGDATA_BENCH=$PRESCIENT_PGDATA RESULTS_FILE=$peer_results "$@" ./run-all.sh >/dev/null)
  }
  # Single enqueue with as many jobs as prescient's (one call per job is slow for everyone).
  wanted enqueue && run_peers env N=5000 SEQ_N=5000 REPS="$reps" ONLY=enqueue-single
  phases=""
  wanted enqueue && phases="enqueue-bulk"
  { wanted drain || wanted workers || wanted http; } && phases="$phases process"
  [ -n "$phases" ] && run_peers env N="$n" REPS="$reps" ONLY="${phases# }"
  best() {  # the best median jobs_per_sec over the settings (labels) of a peer's phase; $3 filters labels
    { grep "\"peer\":\"$1\"" "$peer_results" | grep "\"phase\":\"$2\"" | grep -E "${3:-.}" || true; } |
      sed -E 's/.*"label":"([^"]*)".*"jobs_per_sec":([0-9.]+).*/\1 \2/' | sort -k1,1 -k2,2g |
      awk 'function settle() { if (n) { m = v[int((n + 1) / 2)]; if (m > best) best = m } }
           $1 != label { settle(); label = $1; n = 0 }
           { v[++n] = $2 }
           END { settle(); print best + 0 }'
  }
  graphile_process=$(best graphile-worker process) graphile_bulk=$(best graphile-worker enqueue-bulk)
  pgboss_process=$(best pg-boss process) pgboss_bulk=$(best pg-boss enqueue-bulk)
  graphile_single=$(best graphile-worker enqueue-single ':seq"') pgboss_single=$(best pg-boss enqueue-single ':seq"')
  graphile_single16=$(best graphile-worker enqueue-single ':conc16"')
  pgboss_single16=$(best pg-boss enqueue-single ':conc16"')
  mkdir -p "$repo/bench-results"
  mv "$peer_results" "$repo/bench-results/peers-$(date -u +%Y%m%dT%H%M%SZ).jsonl"
fi

mkdir -p "$repo/bench-results"
out=$repo/bench-results/$(date -u +%Y%m%dT%H%M%SZ).json
{
  echo "{\"n\": $n, \"reps\": $reps, \"machine\": \"$(nproc) cores, $(uname -r)\","
  echo " \"server\": \"$("$pg_bin/postgres" --version)\","
  echo " \"floor_checks_per_second\": {\"median\": $floor_rate, \"min\": $floor_min, \"max\": $floor_max},"
  echo " \"floor_on_prescient_tables_checks_per_second\": {\"median\": $tables_rate, \"min\": $tables_min, \"max\": $tables_max},"
  echo " \"floor_five_slots_fifth_over_first\": [$(echo "$five_slots_runs" | xargs | tr ' ' ',')],"
  echo " \"peers\": {\"graphile_worker\": {\"process\": $graphile_process, \"bulk\": $graphile_bulk,"
  echo "                                \"single\": $graphile_single, \"single16\": $graphile_single16},"
  echo "           \"pg_boss\": {\"process\": $pgboss_process, \"bulk\": $pgboss_bulk,"
  echo "                       \"single\": $pgboss_single, \"single16\": $pgboss_single16}},"
  echo " \"prescient\": ["
  echo "$results" | grep . | paste -sd, -
  echo "]}"
} >"$out"

ratio() { awk -v r="$1" -v base="$2" 'BEGIN { if (base > 0) printf "%.2fx", r / base; else printf "-" }'; }
printf '\n%-58s %9s %17s %8s %9s %9s  %s\n' "measure (median of $reps)" "checks/s" "[min-max]" "floor" "graphile" \
  "pg-boss" "note"
echo "$results" | grep . | while read -r line; do
  measure=$(field "$line" measure) rate=$(field "$line" checks_per_second) note=$(field "$line" note)
  low=$(field "$line" min_checks_per_second) high=$(field "$line" max_checks_per_second)
  vs_floor=- vs_graphile=- vs_pgboss=-
  case "$measure" in
    "slot drain"*|"PgBouncer "*|"worker drain"*|"slow path"*)
      case "$measure" in "slow path"*) note="target: at least 1.0x graphile-worker's processing" ;; esac
      vs_floor=$(awk -v r="$rate" -v f="$floor_rate" 'BEGIN { if (f > 0) printf "%.0f%%", 100 * r / f; else printf "-" }')
      vs_graphile=$(ratio "$rate" "$graphile_process") vs_pgboss=$(ratio "$rate" "$pgboss_process") ;;
    "enqueue bulk, 10000 per call, 4h of a calendar")
      plain=$(echo "$results" | grep '"enqueue bulk, 10000 per call"' | head -1)
      note="target: at least 0.7x the same without a calendar ($(ratio "$rate" "$(field "$plain" checks_per_second)"))" ;;
    "enqueue bulk"*)
      vs_graphile=$(ratio "$rate" "$graphile_bulk") vs_pgboss=$(ratio "$rate" "$pgboss_bulk") ;;
    "schedules, "*" @every 1m, slot 5 of 5")
      first=$(echo "$results" | grep "\"${measure/slot 5 of 5/slot 1 of 5}\"" | head -1)
      note="target: at least 0.9x slot 1 ($(ratio "$rate" "$(field "$first" checks_per_second)"))" ;;
    "schedules, "*" bound to a calendar, slot "*)
      unbound=$(echo "$results" | grep "\"${measure/ bound to a calendar/}\"" | head -1)
      note="target: at least 0.8x the same slot unbound ($(ratio "$rate" "$(field "$unbound" checks_per_second)"))" ;;
    "enqueue single, 1 "*)
      vs_graphile=$(ratio "$rate" "$graphile_single") vs_pgboss=$(ratio "$rate" "$pgboss_single") ;;
    "enqueue single, 16 "*)
      vs_graphile=$(ratio "$rate" "$graphile_single16") vs_pgboss=$(ratio "$rate" "$pgboss_single16") ;;
    dashboard*)  # a time per call, not a rate: checks/s is the table size over it
      note=$(awk -v ms="$(field "$line" milliseconds)" 'BEGIN { printf "%.1f ms", ms }') ;;
  esac
  spread=-
  [ -n "$low" ] && spread=$(awk -v a="$low" -v b="$high" 'BEGIN { printf "[%.0f-%.0f]", a, b }')
  printf '%-58s %9.0f %17s %8s %9s %9s  %s\n' "$measure" "$rate" "$spread" "$vs_floor" "$vs_graphile" "$vs_pgboss" "$note"
done
if wanted floor; then
  printf '%-58s %9.0f %17s %8s\n' "SQL floor (lock_settle, 2 clients)" "$floor_rate" \
    "$(awk -v a="$floor_min" -v b="$floor_max" 'BEGIN { printf "[%.0f-%.0f]", a, b }')" "100%"
  printf '%-58s %9.0f %17s %8s\n' "SQL floor on prescient's tables (no engine)" "$tables_rate" \
    "$(awk -v a="$tables_min" -v b="$tables_max" 'BEGIN { printf "[%.0f-%.0f]", a, b }')" \
    "$(awk -v r="$tables_rate" -v f="$floor_rate" 'BEGIN { if (f > 0) printf "%.0f%%", 100 * r / f; else printf "-" }')"
  printf '%-58s %9s %17s %8s %9s %9s  %s\n' "SQL floor: five slots of schedules on prescient's tables" - - - - - \
    "the fifth slot's rate over the first's, each run:$five_slots_runs"
fi
if $peers; then
  printf '%-58s %9.0f\n' "graphile-worker: processing, best setting" "$graphile_process" \
    "graphile-worker: bulk enqueue, best batch" "$graphile_bulk" \
    "graphile-worker: single enqueue, 1 in flight" "$graphile_single" \
    "graphile-worker: single enqueue, 16 in flight" "$graphile_single16" \
    "pg-boss: processing, best setting" "$pgboss_process" "pg-boss: bulk enqueue, best batch" "$pgboss_bulk" \
    "pg-boss: single enqueue, 1 in flight" "$pgboss_single" "pg-boss: single enqueue, 16 in flight" "$pgboss_single16"
fi
echo "bench.sh: raw figures in $out"
