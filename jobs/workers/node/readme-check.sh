#!/usr/bin/env bash
# Follows README.md as a new team would, in an application's folder outside the checkout
# ($PRESCIENT_WORKERS_BUILD_DIR/node/readme/shop): the README's marked blocks (the line
# `<!-- readme-test: NAME -->` before a fenced block) as written: the install (npm init, the package packed
# from the checkout and installed as a tarball, which must leave the checkout's client as it was and install a
# copy beside its own pg), service.js, and its run line against the engine's migrate, each way round
# (../readme-first-service.sh, on fresh databases of the cluster named by PRESCIENT_TEST_DATABASE_URL).
#   readme-check.sh PRESCIENT_BINARY
# npm works from the build's cache (workers_node_build's npm ci filled it), fetching only what is not there.
set -euo pipefail
# shellcheck source=../readme-lib.sh
. "$(dirname "$0")/../readme-lib.sh"
app=${PRESCIENT_WORKERS_BUILD_DIR:?PRESCIENT_WORKERS_BUILD_DIR is not set}/node/readme/shop

unset NODE_PATH # the application's own node_modules, nothing else
export npm_config_cache=$PRESCIENT_WORKERS_BUILD_DIR/node/.npm-cache npm_config_prefer_offline=true \
  npm_config_audit=false npm_config_fund=false npm_config_loglevel=error
readme_run_outside install "$app"
[ ! -L "$app/node_modules/prescient-worker" ] || fail "npm installed a link into the checkout, not a copy"
found=$(cd "$app" && node -p "require.resolve('pg', { paths: [require.resolve('prescient-worker')] })")
[ "$found" = "$(realpath "$app")/node_modules/pg/lib/index.js" ] || fail "the package finds pg at $found"

readme_block service.js >"$app/service.js"
node --check "$app/service.js"
"$repository/jobs/workers/readme-first-service.sh" "$prescient" "$app" "$(readme_block run)"
