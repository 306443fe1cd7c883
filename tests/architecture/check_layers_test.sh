#!/usr/bin/env bash
# scripts/check-layers.sh can fail: on a copy of the engine and of its build's objects it passes, and with
# a layer reaching up planted it fails, naming each: by its includes (db/ including api/, runner/
# including db/, as slot_runner.cpp once did, the dashboard including an internal header) and by what it
# links to, which no include shows: db/ calling retention's policy in ops/ through a public header (as
# pg_runner_store.cpp once did), and db/ defining a function a runner/ header declares (as
# postgres_store_opener once was). Only the files planted in are compiled again, with their flags from
# BUILD's compile_commands.json.
#   tests/architecture/check_layers_test.sh REPO [BUILD]   BUILD: default REPO/build
set -euo pipefail
# shellcheck source=planted.sh
. "$(dirname "${BASH_SOURCE[0]}")/planted.sh"
build=${2:-$repo/build}
[ -f "$build/compile_commands.json" ] || fail "no $build/compile_commands.json: configure and build the engine first"

mkdir -p "$work/engine" "$work/build"
cp -r "$repo/engine/src" "$repo/engine/include" "$repo/engine/web" "$work/engine/"
# The copy's objects where the check looks by default ($work/build), at the paths CMake gave them.
(cd "$build" && find . -type f -path '*/src/*/*.cpp.o' -exec cp --parents {} "$work/build/" \;)
"$repo/scripts/check-layers.sh" "$work" >/dev/null || fail "the unchanged copy does not pass"

# recompile FILE: compiles the copy's FILE (engine/src/...) into the copy's object of it, as BUILD would,
# but reading the copy's internal headers.
recompile() {
  local object
  object=$(find "$work/build" -type f -path "*/src/${1#engine/src/}.o")
  [ -n "$object" ] || fail "no object of $1 in $build"
  python3 - "$build/compile_commands.json" "$repo" "$work" "$1" "$object" <<'EOF' || fail "cannot compile the planted $1"
import json, shlex, subprocess, sys
commands, repo, work, source, object = sys.argv[1:]
entry = next(e for e in json.load(open(commands)) if e["file"] == f"{repo}/{source}")
args = shlex.split(entry["command"])
args[args.index("-o") + 1] = object
args = [a.replace(f"{repo}/engine/src", f"{work}/engine/src") for a in args]
# Unoptimised (the last -O wins): the symbols that say where a thing is defined and used are the same.
subprocess.run(args + ["-O0"], cwd=entry["directory"], check=True)
EOF
}

echo '#include "api/client_rules.hpp"' >>"$work/engine/src/db/settings.cpp"
sed -i '1a #include "db/pg_runner_store.hpp"' "$work/engine/src/runner/slot_runner.cpp"
echo '#include "core/text_rules.hpp"' >>"$work/engine/web/host_port.cpp"
cat >>"$work/engine/src/db/runners_seen.cpp" <<'EOF'
#include "prescient/retention.hpp"
namespace prescient::db {
std::int64_t planted_purge(soci::session& db, TimePoint now) { return purge_events(db, now, 1); }
}  // namespace prescient::db
EOF
recompile engine/src/db/runners_seen.cpp
echo 'namespace prescient::runner { int planted_opener(); }' >>"$work/engine/src/runner/upkeep_store.hpp"
cat >>"$work/engine/src/db/server_clock_offset.cpp" <<'EOF'
#include "runner/upkeep_store.hpp"
int prescient::runner::planted_opener() { return 0; }
EOF
recompile engine/src/db/server_clock_offset.cpp

out=$(run_failing check-layers.sh "five planted violations")
settings_line=$(wc -l <"$work/engine/src/db/settings.cpp")
web_line=$(wc -l <"$work/engine/web/host_port.cpp")
require_reported "$out" ': includes ' \
  "engine/src/db/settings.cpp:$settings_line: includes \"api/client_rules.hpp\": a db file may include only core/, runner/, db/, prescient/" \
  "engine/src/runner/slot_runner.cpp:2: includes \"db/pg_runner_store.hpp\": a runner file may include only core/, runner/, prescient/" \
  "engine/web/host_port.cpp:$web_line: includes \"core/text_rules.hpp\": a web file may include only prescient/"
require_reported "$out" ': uses ' \
  "engine/src/db/runners_seen.cpp: uses prescient::purge_events, defined in engine/src/ops/retention.cpp: a db file may use only core/, runner/, db/"
require_reported "$out" ': defines ' \
  "engine/src/db/server_clock_offset.cpp: defines prescient::runner::planted_opener, declared in runner/: a runner declaration is defined in runner/"
echo "check_layers_test.sh: the copy passes; each planted violation fails it, named"
