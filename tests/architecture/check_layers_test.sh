#!/usr/bin/env bash
# scripts/check-layers.sh can fail: on a copy of the engine it passes, and with a layer reaching up planted
# (db/ including api/, runner/ including db/, as slot_runner.cpp once did, the dashboard including an
# internal header) it fails, naming each file and line.
#   tests/architecture/check_layers_test.sh REPO
set -euo pipefail
# shellcheck source=planted.sh
. "$(dirname "${BASH_SOURCE[0]}")/planted.sh"

mkdir -p "$work/engine"
cp -r "$repo/engine/src" "$repo/engine/include" "$repo/engine/web" "$work/engine/"
"$repo/scripts/check-layers.sh" "$work" >/dev/null || fail "the unchanged copy does not pass"

echo '#include "api/client_rules.hpp"' >>"$work/engine/src/db/settings.cpp"
sed -i '1a #include "db/pg_runner_store.hpp"' "$work/engine/src/runner/slot_runner.cpp"
echo '#include "core/text_rules.hpp"' >>"$work/engine/web/host_port.cpp"
out=$(run_failing check-layers.sh "three planted violations")
settings_line=$(wc -l <"$work/engine/src/db/settings.cpp")
web_line=$(wc -l <"$work/engine/web/host_port.cpp")
require_reported "$out" ': includes ' \
  "engine/src/db/settings.cpp:$settings_line: includes \"api/client_rules.hpp\": a db file may include only core/, runner/, db/, prescient/" \
  "engine/src/runner/slot_runner.cpp:2: includes \"db/pg_runner_store.hpp\": a runner file may include only core/, runner/, prescient/" \
  "engine/web/host_port.cpp:$web_line: includes \"core/text_rules.hpp\": a web file may include only prescient/"
echo "check_layers_test.sh: the copy passes; each planted violation fails it, named"
