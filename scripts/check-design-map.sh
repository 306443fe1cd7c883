#!/usr/bin/env bash
# Checks docs/design.md's map of the path of a due check against the code: every row of the table under
# "The path of a due check" names a file that exists and holds the function it names.
#   scripts/check-design-map.sh [REPO]
set -euo pipefail
repo=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
rows=$(awk '/^### The path of a due check/ { inside = 1; next } inside && /^###? / { exit }
            inside && /^\| `engine/ { print }' "$repo/docs/design.md")
count=0 failed=0
while IFS='|' read -r _ file function _; do
  file=$(echo "$file" | tr -d ' `') function=$(echo "$function" | tr -d ' `')
  count=$((count + 1))
  if [ ! -f "$repo/$file" ]; then
    echo "check-design-map.sh: $file does not exist" >&2; failed=1
  elif ! grep -q -- "${function##*::}" "$repo/$file"; then
    echo "check-design-map.sh: $file holds no $function" >&2; failed=1
  fi
done <<<"$rows"
[ "$count" -ge 1 ] && [ "$count" -le 6 ] || { echo "check-design-map.sh: the map has $count files (1 to 6)" >&2; exit 1; }
[ "$failed" = 0 ] && echo "check-design-map.sh: the path of a due check is $count files, each as the map says"
exit "$failed"
