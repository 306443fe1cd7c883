# Sourced by setup.sh and package.sh: one compiler cache for the development build and the Debian
# package's, so that the package build of sources the development build compiled is a cache hit.
#   use_compiler_cache BASE  sets the launcher (CMake reads it from the environment) and the cache, with
#                            paths under BASE hashed relative to the build folder
#   debian_maint_options     the DEB_BUILD_MAINT_OPTIONS of debian/rules, read from it
use_compiler_cache() {
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
  export CCACHE_DIR=${CCACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/prescient/ccache}
  export CCACHE_BASEDIR=$1 CCACHE_NOHASHDIR=true
}

debian_maint_options() {
  sed -nE 's/^export DEB_BUILD_MAINT_OPTIONS *= *//p' "$repo/debian/rules"
}
