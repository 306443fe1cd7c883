#!/usr/bin/env bash
# Every public header (what a plugin or an embedding application includes) compiles on its own, as the
# first include of an empty file, and pulls in no libpq: the database's client library is the engine's
# business (internal headers under engine/src/). The files are the object library public_headers_alone
# (tests/CMakeLists.txt), one per header, built here through the build's compiler cache: headers unchanged
# since the last run cost nothing. The compiler's dependency files name every header each one read.
#   tests/headers/check_public_headers.sh BUILD COUNT   COUNT: how many public headers CMake found
set -euo pipefail
build=$1 count=$2
objects=$build/tests/CMakeFiles/public_headers_alone.dir
say() { echo "check_public_headers.sh: $*"; }

# Compiled each time (from the cache when nothing changed): the dependency files are this run's, none left over.
rm -f "$objects"/public_headers/*.o "$objects"/public_headers/*.o.d
if ! cmake --build "$build" --target public_headers_alone >"$build/public_headers.log" 2>&1; then
  cat "$build/public_headers.log" >&2
  say "a public header does not compile on its own (the compiler's words are above)" >&2
  exit 1
fi
found=$(find "$objects/public_headers" -name '*.cpp.o.d' | wc -l)
[ "$found" = "$count" ] || { say "$found dependency files for $count public headers" >&2; exit 1; }
[ "$count" -ge 20 ] || { say "found only $count public headers" >&2; exit 1; }
with_libpq=$( (grep -l 'libpq-fe\.h' "$objects"/public_headers/*.cpp.o.d || true) | sed -E 's|.*/([^/]*)\.cpp\.o\.d$|prescient/\1.hpp|')
if [ -n "$with_libpq" ]; then
  say "these public headers include libpq:" $with_libpq >&2
  exit 1
fi
say "$count public headers compile alone, none includes libpq"
