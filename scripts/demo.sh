#!/usr/bin/env bash
# The first README command: installs what is missing, builds, starts the private PostgreSQL cluster
# under .prescient/, creates the prescient schema and shows what prescient is made of.
# It stops the cluster at the end unless the cluster was already running when it began.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
prescient=${PRESCIENT_BUILD_DIR:-$repo/build}/engine/prescient

"$repo/scripts/setup.sh"

already_running=no
"$repo/scripts/pg.sh" status >/dev/null 2>&1 && already_running=yes
PRESCIENT_DATABASE_URL=$("$repo/scripts/pg.sh" start)
export PRESCIENT_DATABASE_URL
if [ "$already_running" = no ]; then trap '"$repo/scripts/pg.sh" stop' EXIT; fi

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "prescient migrate   (database: $PRESCIENT_DATABASE_URL)"
"$prescient" migrate
step "prescient migrate, again: a no-op"
"$prescient" migrate
step "prescient settings"
"$prescient" settings
step "prescient --help"
"$prescient" --help
