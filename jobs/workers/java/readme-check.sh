#!/usr/bin/env bash
# Follows README.md as a new team would, in a service's folder outside the checkout
# ($PRESCIENT_WORKERS_BUILD_DIR/java/readme/orders): the README's marked blocks (the line
# `<!-- readme-test: NAME -->` before a fenced block) as written: the packages, the jar built from the checkout
# into that folder (which must leave the checkout's client as it was), Main.java (compiled with -Xlint:all
# -Werror, as the client is), and its run line against the engine's migrate, each way round
# (../readme-first-service.sh, on fresh databases of the cluster named by PRESCIENT_TEST_DATABASE_URL).
#   readme-check.sh PRESCIENT_BINARY
set -euo pipefail
prescient=$(realpath "${1:?usage: readme-check.sh PRESCIENT_BINARY}")
here=$(cd "$(dirname "$0")" && pwd)
repository=$(cd "$here/../../.." && pwd)
readme=$here/README.md
service=${PRESCIENT_WORKERS_BUILD_DIR:?PRESCIENT_WORKERS_BUILD_DIR is not set}/java/readme/orders
say() { echo "readme-check.sh: $*"; }
fail() { echo "readme-check.sh: $*" >&2; exit 1; }
# shellcheck source=../readme-lib.sh
. "$here/../readme-lib.sh"

readme_packages packages
rm -rf "$service"
mkdir -p "$service"
say "the README's build, in the service's folder"
before=$(readme_files "$here")
(cd "$service" && PRESCIENT=$repository bash -euo pipefail -c "$(readme_block build)")
[ "$before" = "$(readme_files "$here")" ] ||
  fail "the README's build wrote into the checkout: $(diff <(echo "$before") <(readme_files "$here"))"

readme_block Main.java >"$service/Main.java"
run_line=$(readme_block run)
[ "$(wc -l <<<"$run_line")" = 1 ] || fail "the README's run block is not one line"
class_path=$(grep -o -- '-cp [^ ]*' <<<"$run_line" | cut -c5-)
(cd "$service" && javac -Xlint:all -Werror -cp "$class_path" -d "$(mktemp -d "$service/lint.XXXX")" Main.java)

# A JVM ended by SIGTERM exits 143 after its clean stop (the README says so).
"$repository/jobs/workers/readme-first-service.sh" "$prescient" "$service" "$run_line" 143
