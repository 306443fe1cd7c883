#!/usr/bin/env bash
# Installs the Debian packages prescient needs (only the missing ones), then configures and builds
# in build/. Idempotent: a second run installs nothing and rebuilds only what changed.
#   BUILD_TYPE=Release scripts/setup.sh   (a CMake build type; default: the Debian package's flags)
# By default the build takes the flags the Debian package is built with (dpkg-buildflags, with
# debian/rules' hardening), through ccache, in the cache scripts/package.sh uses: the package's build of
# the same sources then comes from the cache instead of compiling everything again (docs/design.md,
# "Packages"). The sanitizers' build (PRESCIENT_SANITIZE=ON) defaults to RelWithDebInfo.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${PRESCIENT_BUILD_DIR:-$repo/build}
sanitize=${PRESCIENT_SANITIZE:-OFF}
build_type=${BUILD_TYPE:-$([ "$sanitize" = ON ] && echo RelWithDebInfo || echo Debian)}

# shellcheck source=lib/packages.sh
. "$repo/scripts/lib/packages.sh"
ensure_packages setup.sh \
  g++ cmake make pkg-config ccache dpkg-dev \
  libsoci-dev libpq-dev libboost-program-options-dev libspdlog-dev catch2 \
  nlohmann-json3-dev libhowardhinnant-date-dev tzdata prometheus-cpp-dev libcpp-httplib-dev libssl-dev libcurl4-openssl-dev \
  postgresql-15 postgresql-client-15
# shellcheck source=lib/compiler_cache.sh
. "$repo/scripts/lib/compiler_cache.sh"
use_compiler_cache "$repo"

say() { echo "setup.sh: $*"; }

flags=()
if [ "$build_type" = Debian ]; then
  # As dh_auto_configure passes them: the build type None, CPPFLAGS appended to the compiler's flags.
  # dpkg-buildflags maps the source folder to "." in debug paths, so it runs from the repository.
  buildflags() { (cd "$repo" && DEB_BUILD_MAINT_OPTIONS=$(debian_maint_options) dpkg-buildflags --get "$1"); }
  flags=(-DCMAKE_BUILD_TYPE=None
    "-DCMAKE_CXX_FLAGS=$(buildflags CXXFLAGS) $(buildflags CPPFLAGS)"
    "-DCMAKE_SHARED_LINKER_FLAGS=$(buildflags LDFLAGS)" "-DCMAKE_EXE_LINKER_FLAGS=$(buildflags LDFLAGS)"
    "-DCMAKE_MODULE_LINKER_FLAGS=$(buildflags LDFLAGS)")
else
  flags=(-DCMAKE_BUILD_TYPE="$build_type")
fi

say "configuring ($build_type) in $build_dir"
cmake -S "$repo" -B "$build_dir" "${flags[@]}" -DPRESCIENT_SANITIZE="$sanitize" >/dev/null
say "building"
cmake --build "$build_dir" -j "$(nproc)" -- --no-print-directory | grep -vE '^\[ *[0-9]+%\]' || true
test -x "$build_dir/engine/prescient" || { say "build failed: no $build_dir/engine/prescient"; exit 1; }
say "built $build_dir/engine/prescient"
