#!/usr/bin/env bash
# Fails when a layer of the engine reaches a layer above it (docs/design.md, "The engine"),
# by what it includes or by what it links to. The layers, from the bottom:
#   core/    times, grids, specs, rules: includes only core/
#   runner/  the slot runner and its runner threads: core/, runner/ (the database only through its interfaces)
#   db/      every statement: core/, runner/ (the interfaces it implements), db/
#   api/     what applications call: core/, runner/, db/, api/
#   ops/     logging, retention, figures: core/, runner/, db/, ops/
# Every layer may include the public headers (prescient/...). The public headers include only each other
# (the public_headers test compiles each alone), and the dashboard (engine/web/) only the public API and
# its own files. The CLI, jobs/ and the tests may use anything.
# Includes alone miss what a public header hides: a db/ file may include prescient/retention.hpp and so
# call retention's policy in ops/. So the object files of BUILD are read too (nm), and each engine/src
# file must
#   use only symbols defined in its own layer and the ones below it (or outside the layers), and
#   define only its own layer's declarations: a name in prescient::LAYER is declared in a header of
#   LAYER/ (scripts/check-namespaces.sh), so db/ defining prescient::runner::x implements a runner/
#   declaration in db/, and runner/ calling it links up.
# Weak definitions (inline functions, templates, vtables of classes without a key function) are left out:
# every object that uses one holds its own copy, so they say nothing about where a thing lives.
#   scripts/check-layers.sh [REPO [BUILD]]   BUILD: the CMake build of REPO (default REPO/build)
set -euo pipefail
repo=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
build=${2:-$repo/build}

# allowed LAYER: the folders (before the first /) a file of LAYER may name in #include "..."
allowed() {
  case "$1" in
    core) echo "core prescient" ;;
    runner) echo "core runner prescient" ;;
    db) echo "core runner db prescient" ;;
    api) echo "core runner db api prescient" ;;
    ops) echo "core runner db ops prescient" ;;
    prescient) echo "prescient" ;;
    web) echo "prescient" ;;  # and its own files, named without a folder
  esac
}

violations=""
check() {  # check LAYER DIR
  local layer=$1 dir=$2 file line target folder
  [ -d "$dir" ] || return 0
  while IFS= read -r hit; do
    file=${hit%%:*}
    line=${hit#*:}
    line=${line%%:*}
    target=$(sed -E 's/^[^"]*"([^"]*)".*/\1/' <<<"${hit#*:*:}")
    case "$target" in */*) folder=${target%%/*} ;; *) continue ;; esac  # a file of its own folder
    if ! grep -qw -- "$folder" <<<"$(allowed "$layer")"; then
      violations+="${file#"$repo"/}:$line: includes \"$target\": a $layer file may include only $(allowed "$layer" | sed 's/ /\/, /g')/"$'\n'
    fi
  done < <(grep -rnE --include='*.cpp' --include='*.hpp' '^[[:space:]]*#[[:space:]]*include[[:space:]]+"' "$dir" || true)
}

for layer in core runner db api ops; do check "$layer" "$repo/engine/src/$layer"; done
check prescient "$repo/engine/include/prescient"
check web "$repo/engine/web"

# The objects of engine/src/LAYER/NAME.cpp, as CMake names them (.../src/LAYER/NAME.cpp.o); one left from
# a source since removed is not read.
objects=()
while IFS= read -r object; do
  source=engine/src/${object##*/src/}
  source=${source%.o}
  [ -f "$repo/$source" ] && objects+=("$object")
done < <(find "$build" -type f -path '*/src/*/*.cpp.o' 2>/dev/null | sort)
if [ "${#objects[@]}" = 0 ]; then
  echo "check-layers.sh: no object files of engine/src under $build: build the engine first" >&2
  exit 2
fi

# nm -A -P: "OBJECT: SYMBOL TYPE [VALUE SIZE]"; U is used here, an upper-case T, D, B, R, G or S defined
# here (strong). Demangled after the split: a demangled name has spaces; in the report it keeps its
# qualified name and loses its parameters.
layered=$(for layer in core runner db api ops; do printf '%s=%s;' "$layer" "$(allowed "$layer" | sed 's/ prescient//')"; done)
symbol_violations=$(nm -A -P -g "${objects[@]}" | awk -v OFS='\t' '
  {
    source = substr($1, 1, length($1) - 1); sub(/.*\/src\//, "engine/src/", source); sub(/\.o$/, "", source)
    layer = source; sub(/^engine\/src\//, "", layer); sub(/\/.*/, "", layer)
    print source, layer, $3, $2
  }' | c++filt | awk -F '\t' -v layered="$layered" '
  BEGIN {
    n = split(layered, pairs, ";")
    for (i = 1; i < n; ++i) { split(pairs[i], kv, "="); allowed[kv[1]] = " " kv[2] " " }
  }
  {
    ++rows; file[rows] = $1; layer_of[rows] = $2; type_of[rows] = $3; name_of[rows] = $4
    if ($3 ~ /^[TDBRGS]$/) { defined_in[$4] = $1; defined_layer[$4] = $2 }
  }
  function short(symbol) { sub(/\(.*/, "", symbol); return symbol }
  function only(layer,   list) {
    list = allowed[layer]; gsub(/^ | $/, "", list); gsub(/ /, "/, ", list); return list "/"
  }
  END {
    for (r = 1; r <= rows; ++r) {
      symbol = name_of[r]; layer = layer_of[r]
      if (type_of[r] == "U" && (symbol in defined_in) && index(allowed[layer], " " defined_layer[symbol] " ") == 0)
        print file[r] ": uses " short(symbol) ", defined in " defined_in[symbol] ": a " layer " file may use only " only(layer)
      if (type_of[r] ~ /^[TDBRGS]$/) {
        declared = symbol; sub(/^[a-z -]+ (for|to) /, "", declared)  # "vtable for X", "non-virtual thunk to X"
        if (match(declared, /^prescient::(core|runner|db|api|ops)::/)) {
          owner = substr(declared, 12, RLENGTH - 13)
          if (owner != layer)
            print file[r] ": defines " short(symbol) ", declared in " owner "/: a " owner " declaration is defined in " owner "/"
        }
      }
    }
  }' | sort -u)
[ -n "$symbol_violations" ] && violations+="$symbol_violations"$'\n'

if [ -n "$violations" ]; then
  echo "check-layers.sh: a layer reaches up (docs/design.md, \"The engine\"):" >&2
  printf '%s' "$violations" >&2
  exit 1
fi
echo "check-layers.sh: every layer includes and links to only its own and the ones below (${#objects[@]} objects)"
