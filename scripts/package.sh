#!/usr/bin/env bash
# Builds prescient's Debian packages (prescient, libprescient<soversion>, prescient-dev) from a clean copy
# of the tree with dpkg-buildpackage (debian/), checks them with lintian, and with --test installs them on
# this machine and tests them there.
#   scripts/package.sh [--out DIR] [--test] [--no-lintian]
#     --out DIR  where the packages go (default: build-package/ in the repository)
#     --no-lintian  skip lintian: for the upgrade test's build of an older version, not a package that ships
#     --test     then tests/package/check_package.sh: install as an operator would, run the installed
#                binary as the user prescient against a PostgreSQL of its own, remove, purge, and an
#                upgrade from a lower version. It needs root (it adds the user prescient and files under
#                /etc, /usr and /var/lib, and purges them at the end): for CI and throwaway machines.
# Installs what is missing first (apt-get; root, or sudo), like the other scripts.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$repo/build-package
run_tests=no
lintian=yes
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$(realpath -m "${2:?--out needs a directory}"); shift 2 ;;
    --test) run_tests=yes; shift ;;
    --no-lintian) lintian=no; shift ;;
    *) echo "usage: scripts/package.sh [--out DIR] [--test] [--no-lintian]" >&2; exit 2 ;;
  esac
done

say() { echo "package.sh: $*"; }
die() { echo "package.sh: $*" >&2; exit 1; }

# shellcheck source=lib/packages.sh
. "$repo/scripts/lib/packages.sh"
# shellcheck source=lib/source_tree.sh
. "$repo/scripts/lib/source_tree.sh"
ensure_packages package.sh dpkg-dev debhelper fakeroot lintian ccache
# The build dependencies, as debian/control names them (dpkg-checkbuilddeps says which are missing).
missing=$(cd "$repo" && dpkg-checkbuilddeps 2>&1 | sed -n 's/.*Unmet build dependencies: //p' | sed -E 's/\([^)]*\)//g')
# shellcheck disable=SC2086
[ -z "$missing" ] || ensure_packages package.sh $missing

# One version: the project's (CMakeLists.txt), which debian/changelog's newest entry must carry, and
# the library package named after the soname it implies (major.minor while the major version is 0).
version=$(sed -nE 's/^project\(prescient VERSION ([0-9]+\.[0-9]+\.[0-9]+).*/\1/p' "$repo/CMakeLists.txt")
[ -n "$version" ] || die "no project(prescient VERSION x.y.z) in CMakeLists.txt"
changelog_version=$(dpkg-parsechangelog -l "$repo/debian/changelog" -S Version)
[ "$changelog_version" = "$version" ] ||
  die "debian/changelog's newest entry is $changelog_version, the project's version (CMakeLists.txt) is $version: add an entry for $version"
major=${version%%.*}
minor=${version#*.}
minor=${minor%%.*}
soversion=$([ "$major" = 0 ] && echo "$major.$minor" || echo "$major")
grep -qx "Package: libprescient$soversion" "$repo/debian/control" ||
  die "debian/control has no package libprescient$soversion (the soname of version $version): rename the library package"
[ -f "$repo/debian/libprescient$soversion.install" ] || die "no debian/libprescient$soversion.install"

# A clean copy: the files git knows (committed or not, but not ignored ones such as build/).
work=$(mktemp -d /tmp/prescient-package.XXXXXX)
trap 'rm -rf "$work"' EXIT
tree=$work/prescient-$version
mkdir -p "$tree"
copy_source_tree "$repo" "$tree"

# Through the compiler cache scripts/setup.sh fills (CMake takes the launcher from the environment), with
# paths under $work hashed relative to the build folder: the development build compiled the same sources
# with these flags, so this build takes its objects from the cache, and so does the package test's
# upgrade build of the same code at another version. The packages are the same with the cache or without.
# shellcheck source=lib/compiler_cache.sh
. "$repo/scripts/lib/compiler_cache.sh"
use_compiler_cache "$work"
say "building $version in $tree"
started=$(date +%s)
ccache --zero-stats >/dev/null
(cd "$tree" && dpkg-buildpackage -b -us -uc -j"$(nproc)") >"$work/build.log" 2>&1 || {
  tail -n 60 "$work/build.log" >&2
  die "dpkg-buildpackage failed (the last lines are above)"
}
cache_stat() { ccache --print-stats | sed -nE "s/^$1\t//p"; }
say "built in $(($(date +%s) - started)) s; compiler calls: $(($(cache_stat direct_cache_hit) + $(cache_stat preprocessed_cache_hit))) from the cache, $(cache_stat cache_miss) compiled"
mkdir -p "$out"
for f in "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo; do
  [ -e "$f" ] && mv "$f" "$out/"
done
changes=$out/prescient_${version}_$(dpkg-architecture -qDEB_HOST_ARCH).changes

# lintian: no error, and no warning that docs/operations.md ("lintian") does not explain.
if [ "$lintian" = yes ]; then
  say "lintian"
  lintian_out=$work/lintian.txt
  lintian --fail-on none --display-level '>=warning' "$changes" >"$lintian_out" 2>&1 || true
  cat "$lintian_out"
  if grep -q '^E: ' "$lintian_out"; then
    die "lintian reports errors"
  fi
  unexplained=""
  for tag in $(sed -nE 's/^W: [^:]+: ([a-z0-9-]+).*/\1/p' "$lintian_out" | sort -u); do
    grep -q "\`$tag\`" "$repo/docs/operations.md" || unexplained="$unexplained $tag"
  done
  [ -z "$unexplained" ] || die "lintian warnings not explained in docs/operations.md:$unexplained"
fi
say "packages in $out:"
ls -1 "$out"/*_"$version"_*.deb

if [ "$run_tests" = yes ]; then
  "$repo/tests/package/check_package.sh" "$out" "$version"
fi
