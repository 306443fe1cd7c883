#!/bin/sh
# Installs the client's dependencies (pg and @types/pg; for the tests TypeScript and @types/node), as pinned in
# package-lock.json, into OUT_DIR/node_modules, never into the source tree: the CTest fixture workers_node_build runs
#   build.sh ${PROJECT_BINARY_DIR}/workers/node
# and the tests and the conformance driver find them there (NODE_PATH=OUT_DIR/node_modules).
# For development: jobs/workers/node/build.sh "$PRESCIENT_WORKERS_BUILD_DIR/node".
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build.sh OUT_DIR}
mkdir -p "$out"
out=$(cd "$out" && pwd) # absolute: npm's cache below is named from inside it
# Installed from this very lock file already: nothing to do (and no registry needed).
if cmp -s "$here/package-lock.json" "$out/package-lock.json" && cmp -s "$here/package.json" "$out/package.json" \
   && [ -f "$out/node_modules/.package-lock.json" ]; then
  echo "build.sh: $out/node_modules is up to date with package-lock.json"
  exit 0
fi
cp "$here/package.json" "$here/package-lock.json" "$out/"
cd "$out"
# npm's cache in the build directory too: a build writes nowhere else.
npm_config_cache="$out/.npm-cache" npm ci --no-audit --no-fund
