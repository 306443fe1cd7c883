#!/usr/bin/env bash
# Fails when a header declares its names outside the namespace its folder gives (docs/design.md, "The
# engine"):
#   engine/include/prescient/   the public API: prescient
#   engine/src/LAYER/           prescient::LAYER (core, runner, db, api, ops)
#   engine/cli/, engine/web/    prescient::cli, prescient::web
#   jobs/                       prescient::jobs
# A namespace within the folder's (prescient::db::pq) is the folder's too. Any header may also open a
# namespace only to forward-declare classes (namespace soci { class session; }). The .cpp files define
# what their headers declare; one that implements a public header defines in prescient.
#   scripts/check-namespaces.sh [REPO]
set -euo pipefail
repo=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}

# expected FILE (relative to the repository): the namespace its folder gives
expected() {
  case "$1" in
    engine/include/prescient/*) echo "prescient" ;;
    engine/src/*/*) local layer=${1#engine/src/}; echo "prescient::${layer%%/*}" ;;
    engine/cli/*) echo "prescient::cli" ;;
    engine/web/*) echo "prescient::web" ;;
    jobs/*) echo "prescient::jobs" ;;
  esac
}

violations=""
while IFS= read -r file; do
  want=$(expected "$file")
  [ -n "$want" ] || continue
  # Each namespace a header opens at the top level, with its line, and whether its block holds
  # anything besides forward declarations of classes.
  found=$(awk -v want="$want" '
    function report() {
      if (name == "") return
      ok = (name == want || index(name, want "::") == 1)
      if (!ok && substantive) printf "%d: declares in namespace %s: a header here declares in %s\n", start, name, want
    }
    depth == 0 && /^namespace [A-Za-z_:]+ \{/ { name = $2; start = NR; substantive = 0; depth = 1; next }
    depth >= 1 {
      line = $0
      opens = gsub(/\{/, "{", line); closes = gsub(/\}/, "}", line)
      if (depth == 1 && closes > opens && $0 ~ /^\}/) { report(); name = ""; depth = 0; next }
      depth += opens - closes
      if ($0 !~ /^[[:space:]]*((class|struct) [A-Za-z_]+;|namespace [A-Za-z_:]+ \{|\}.*|\/\/.*)?[[:space:]]*$/) substantive = 1
    }' "$repo/$file")
  [ -z "$found" ] || violations+=$(sed "s|^|$file:|" <<<"$found")$'\n'
done < <(cd "$repo" && find engine/include/prescient engine/src engine/cli engine/web jobs -name '*.hpp' | sort)

if [ -n "$violations" ]; then
  printf '%s' "$violations" >&2
  echo "check-namespaces.sh: a header declares outside its folder's namespace (docs/design.md, \"The engine\")" >&2
  exit 1
fi
echo "check-namespaces.sh: every header declares in its folder's namespace"
