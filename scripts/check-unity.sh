#!/usr/bin/env bash
# Fails when two files of one unity batch (cmake/UnityBuild.cmake) define the same name of their own: in an
# anonymous namespace or `static` at file scope. Compiled one translation unit a batch, such names meet: the
# compiler refuses most pairs (a redefinition), but two functions of one name and different parameters
# become overloads, and a call in one file may silently take the other file's. Each file keeps its own
# names (refuse_duration, refuse_time), whatever batch it lands in.
#   scripts/check-unity.sh BUILD   BUILD: a CMake build (its batches under */unity/)
set -euo pipefail
build=${1:?usage: scripts/check-unity.sh BUILD}

batches=$(find "$build" -type f -path '*/unity/*/unity_*.cpp' | sort)
if [ -z "$batches" ]; then
  echo "check-unity.sh: no unity batches under $build (PRESCIENT_UNITY_BUILD=OFF?): nothing to check"
  exit 0
fi

# own_names FILE: "NAME<TAB>FILE:LINE" for each name FILE defines at the top level of an anonymous namespace
# (the house style: "namespace {" and "}  // namespace" at column 0) or as a static at file scope. A line
# at column 0 starts a declaration; its name is the one after class, struct, union or enum, else the last
# identifier before the first (, =, { or ;. Aliases (using) are left to the compiler: two that differ clash.
# A name defined twice in one file (overloads) is that file's business.
own_names() {
  awk -v file="$1" '
    /^namespace \{/ { anonymous = 1; next }
    /^\}  \/\/ namespace$/ { anonymous = 0; next }
    /^[A-Za-z_\[]/ && (anonymous || /^static /) && !/^(namespace|using|template|public|private|protected)[ :<]/ {
      line = $0
      sub(/^\[\[[a-z_]+\]\] */, "", line)
      if (match(line, /^(class|struct|union|enum( class)?) [A-Za-z_][A-Za-z0-9_]*/)) {  # a type: the name it gives
        line = substr(line, 1, RLENGTH)
      }
      sub(/[(={;].*/, "", line)
      if (match(line, /[A-Za-z_][A-Za-z0-9_]*[ \t]*$/)) {
        name = substr(line, RSTART, RLENGTH); sub(/[ \t]+$/, "", name)
        if (name !~ /^(const|constexpr|struct|class|enum|final|override|operator)$/) print name "\t" file ":" NR
      }
    }' "$1"
}

found=""
while IFS= read -r batch; do
  files=()
  while IFS= read -r relative; do
    files+=("$(realpath -m "$(dirname "$batch")/$relative")")
  done < <(sed -nE 's/^#include "(.*)"$/\1/p' "$batch")
  clashes=$(for file in "${files[@]}"; do own_names "$file"; done | sort -t$'\t' -k1,1 |
    awk -F '\t' '{ file = $2; sub(/:[0-9]+$/, "", file); where[$1] = where[$1] ? where[$1] ", " $2 : $2
        if (!(($1, file) in seen)) { seen[$1, file] = 1; n[$1] += 1 } }
      END { for (name in n) if (n[name] > 1) print "  " name ": " where[name] }' | sort)
  [ -n "$clashes" ] && found+="${batch#"$build"/}:"$'\n'"$clashes"$'\n'
done <<<"$batches"

if [ -n "$found" ]; then
  echo "check-unity.sh: files compiled together define the same name of their own; give each its own name:" >&2
  printf '%s' "$found" >&2
  exit 1
fi
echo "check-unity.sh: no two files of a unity batch define the same name of their own ($(wc -l <<<"$batches") batches)"
