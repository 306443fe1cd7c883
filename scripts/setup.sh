#!/usr/bin/env bash
# Installs the Debian packages prescient needs (only the missing ones), then configures and builds
# in build/. Idempotent: a second run installs nothing and rebuilds only what changed.
#   BUILD_TYPE=Release scripts/setup.sh   (default RelWithDebInfo)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${PRESCIENT_BUILD_DIR:-$repo/build}
build_type=${BUILD_TYPE:-RelWithDebInfo}

# shellcheck source=lib/packages.sh
. "$repo/scripts/lib/packages.sh"
ensure_packages setup.sh \
  g++ cmake make pkg-config \
  libsoci-dev libpq-dev libboost-program-options-dev libspdlog-dev catch2 \
  nlohmann-json3-dev libhowardhinnant-date-dev tzdata prometheus-cpp-dev libcpp-httplib-dev libssl-dev libcurl4-openssl-dev \
  postgresql-15 postgresql-client-15

say() { echo "setup.sh: $*"; }

say "configuring ($build_type) in $build_dir"
cmake -S "$repo" -B "$build_dir" -DCMAKE_BUILD_TYPE="$build_type" \
  -DPRESCIENT_SANITIZE="${PRESCIENT_SANITIZE:-OFF}" >/dev/null
say "building"
cmake --build "$build_dir" -j "$(nproc)" -- --no-print-directory | grep -vE '^\[ *[0-9]+%\]' || true
test -x "$build_dir/engine/prescient" || { say "build failed: no $build_dir/engine/prescient"; exit 1; }
say "built $build_dir/engine/prescient"
