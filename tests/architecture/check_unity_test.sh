#!/usr/bin/env bash
# scripts/check-unity.sh can fail: on batches whose files keep their own names apart it passes; two files
# of one batch defining the same name in an anonymous namespace (as overloads, which compile) and as a
# file-scope static fail it, named by file and line; the same name in files of different batches does not.
#   tests/architecture/check_unity_test.sh REPO
set -euo pipefail
# shellcheck source=planted.sh
. "$(dirname "${BASH_SOURCE[0]}")/planted.sh"

mkdir -p "$work/src" "$work/build/unity/target"
cat >"$work/src/first.cpp" <<'CPP'
namespace {
struct Row {};
int parse(int text) { return text; }
}  // namespace
CPP
cat >"$work/src/second.cpp" <<'CPP'
namespace {
struct Column {};
}  // namespace
static int counted = 0;
CPP
cat >"$work/src/elsewhere.cpp" <<'CPP'
namespace {
long parse(long text) { return text; }
}  // namespace
CPP
printf '#include "../../../src/first.cpp"\n#include "../../../src/second.cpp"\n' >"$work/build/unity/target/unity_0.cpp"
printf '#include "../../../src/elsewhere.cpp"\n' >"$work/build/unity/target/unity_1.cpp"
"$repo/scripts/check-unity.sh" "$work" >/dev/null || fail "batches without a shared name do not pass"

cat >>"$work/src/second.cpp" <<'CPP'
namespace {
long parse(long text) { return text; }
}  // namespace
CPP
echo 'static int counted(int) { return 0; }' >>"$work/src/first.cpp"
out=$(run_failing check-unity.sh "two names planted")
require_reported "$out" ": $work/" \
  "  parse: $work/src/first.cpp:3, $work/src/second.cpp:6" \
  "  counted: $work/src/first.cpp:5, $work/src/second.cpp:4"
require_reported "$out" "unity_" "build/unity/target/unity_0.cpp:"
echo "check_unity_test.sh: batches apart pass; each name planted twice in a batch fails it, named"
