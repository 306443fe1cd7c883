#!/usr/bin/env bash
# Follows README.md as a new team would, in a service's folder outside the checkout
# ($PRESCIENT_WORKERS_BUILD_DIR/java/readme/orders): the README's marked blocks (the line
# `<!-- readme-test: NAME -->` before a fenced block) as written: the packages, the jar built from the checkout
# into that folder (which must leave the checkout's client as it was), Main.java (compiled with -Xlint:all
# -Werror, as the client is), and its run line against the engine's migrate, each way round
# (../readme-first-service.sh, on fresh databases of the cluster named by PRESCIENT_TEST_DATABASE_URL).
#   readme-check.sh PRESCIENT_BINARY
set -euo pipefail
# shellcheck source=../readme-lib.sh
. "$(dirname "$0")/../readme-lib.sh"
service=${PRESCIENT_WORKERS_BUILD_DIR:?PRESCIENT_WORKERS_BUILD_DIR is not set}/java/readme/orders

readme_packages packages
readme_run_outside build "$service"
readme_block Main.java >"$service/Main.java"
run_line=$(readme_block run)
[ "$(wc -l <<<"$run_line")" = 1 ] || fail "the README's run block is not one line"
class_path=$(grep -o -- '-cp [^ ]*' <<<"$run_line" | cut -c5-)
(cd "$service" && javac -Xlint:all -Werror -cp "$class_path" -d "$(mktemp -d "$service/lint.XXXX")" Main.java)

# A JVM ended by SIGTERM exits 143 after its clean stop (the README says so).
"$repository/jobs/workers/readme-first-service.sh" "$prescient" "$service" "$run_line" 143
