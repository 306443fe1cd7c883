#!/usr/bin/env bash
# Fails when a layer of the engine includes a header of a layer above it (docs/design.md, "How the code is
# laid out"). The layers, from the bottom:
#   core/    times, grids, specs, rules: includes only core/
#   runner/  the slot runner and its workers: core/, runner/ (the database only through its interfaces)
#   db/      every statement: core/, runner/ (the interfaces it implements), db/
#   api/     what applications call: core/, runner/, db/, api/
#   ops/     logging, retention, figures: core/, runner/, db/, ops/
# Every layer may include the public headers (prescient/...). The public headers include only each other
# (the public_headers test compiles each alone), and the dashboard (engine/web/) only the public API and
# its own files. The CLI, jobs/ and the tests may use anything.
#   scripts/check-layers.sh [REPO]
set -euo pipefail
repo=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}

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

if [ -n "$violations" ]; then
  echo "check-layers.sh: a layer reaches up (docs/design.md, \"How the code is laid out\"):" >&2
  printf '%s' "$violations" >&2
  exit 1
fi
echo "check-layers.sh: every layer includes only its own and the ones below"
