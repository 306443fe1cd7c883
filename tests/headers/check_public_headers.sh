#!/usr/bin/env bash
# Every public header (what a plugin or an embedding application includes) compiles on its own, as the
# first include of an empty file, and pulls in no libpq: the database's client library is the engine's
# business (internal headers under engine/src/).
#   tests/headers/check_public_headers.sh CXX INCLUDE_DIR GENERATED_INCLUDE_DIR
set -euo pipefail
cxx=$1 include=$2 generated=$3
failed=0
count=0
for header in "$include"/prescient/*.hpp "$generated"/prescient/*.hpp; do
  name=prescient/$(basename "$header")
  count=$((count + 1))
  if ! printf '#include "%s"\n' "$name" |
       "$cxx" -std=c++20 -Wall -Wextra -Werror -fsyntax-only -I"$include" -I"$generated" -x c++ - 2>/tmp/header-check.$$; then
    echo "check_public_headers.sh: $name does not compile on its own:" >&2
    cat /tmp/header-check.$$ >&2
    failed=1
  fi
  if printf '#include "%s"\n' "$name" | "$cxx" -std=c++20 -E -I"$include" -I"$generated" -x c++ - 2>/dev/null |
       grep -q 'libpq-fe\.h'; then
    echo "check_public_headers.sh: $name includes libpq" >&2
    failed=1
  fi
done
rm -f /tmp/header-check.$$
[ "$count" -ge 20 ] || { echo "check_public_headers.sh: found only $count public headers" >&2; exit 1; }
[ "$failed" = 0 ] && echo "check_public_headers.sh: $count public headers compile alone, none includes libpq"
exit "$failed"
