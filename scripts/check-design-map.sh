#!/usr/bin/env bash
# Checks docs/design.md's map of the path of a due check against the code: every row of the table under
# "The path of a due check" names a file that exists and defines (or, in a header, declares) the function
# it names, matched exactly: `Class::function` is a member of that class, `name` a free function or a
# constant; a call, a use or a name within other text does not count. The map lists 1 to 8 files.
#   scripts/check-design-map.sh [REPO]
set -euo pipefail
repo=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
rows=$(awk '/^### The path of a due check/ { inside = 1; next } inside && /^###? / { exit }
            inside && /^\| `engine/ { print }' "$repo/docs/design.md")

# A line that begins a definition or declaration of `name`: words of a type before it (`virtual`,
# `static`, `inline const`, templates, qualifiers), nothing else (no `=`, no `.`, no `return`), then its
# parameter list, or (a constant) `=`.
defines() {  # defines FILE NAME
  grep -E "^[[:space:]]*([A-Za-z_][A-Za-z0-9_:<>,*&]*[[:space:]]+)+[*&]?$2(\(|[[:space:]]*=[^=])" "$1" |
    grep -qvE "^[[:space:]]*(return|else|case|throw|co_return|delete|new)[[:space:]]"
}
holds() {  # holds FILE Class::function | function
  local file=$1 name=$2 class member
  case "$name" in
    *::*)
      class=${name%::*} member=${name##*::}
      # Defined out of its class (Class::member(...)), or declared or defined within `class Class`.
      grep -qE "(^|[^A-Za-z0-9_:])${class}::${member}\(" "$file" && return 0
      grep -qE "^[[:space:]]*(class|struct)[[:space:]]+([A-Za-z0-9_]+::)*${class##*::}([[:space:]]|$|[:{])" "$file" &&
        defines "$file" "$member"
      ;;
    *) defines "$file" "$name" ;;
  esac
}

count=0 failed=0
while IFS='|' read -r _ file function _; do
  file=$(echo "$file" | tr -d ' `') function=$(echo "$function" | tr -d ' `')
  count=$((count + 1))
  if [ ! -f "$repo/$file" ]; then
    echo "check-design-map.sh: $file does not exist" >&2; failed=1
  elif ! holds "$repo/$file" "$function"; then
    echo "check-design-map.sh: $file defines no $function" >&2; failed=1
  fi
done <<<"$rows"
[ "$count" -ge 1 ] && [ "$count" -le 8 ] || { echo "check-design-map.sh: the map has $count files (1 to 8)" >&2; exit 1; }
[ "$failed" = 0 ] && echo "check-design-map.sh: the path of a due check is $count files, each as the map says"
exit "$failed"
