#!/usr/bin/env bash
# Fails when git tracks a build artefact of any language in the tree, or when the root .gitignore stops
# covering one kind of them. A build artefact: C++ objects and build trees (build/, build-*/), Python
# bytecode and packaging (__pycache__/, *.pyc, *.egg-info/, dist/), Go test binaries (*.test), Java's
# output (target/, *.class, *.jar), Node's dependencies and packed tarballs (node_modules/, *.tgz), and
# any tracked file the .gitignore files ignore. Each one is named with what to do.
#   scripts/check-no-artefacts.sh [REPO]   (REPO a git checkout)
set -euo pipefail
repo=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
git -C "$repo" rev-parse --is-inside-work-tree >/dev/null 2>&1 ||
  { echo "check-no-artefacts.sh: $repo is not a git checkout" >&2; exit 2; }

artefact='(^|/)(build|build-[^/]*|__pycache__|[^/]*\.egg-info|dist|target|node_modules)/|\.(py[cod]|o|class|jar|tgz|test)$'
# One path of each kind, as a build would leave it: the root .gitignore must ignore every one.
samples=(build/engine/prescient build-package/x.deb engine/src/core/clock.o
  jobs/workers/python/src/prescient/__pycache__/worker.cpython-311.pyc jobs/workers/python/dist/prescient.tar.gz
  jobs/workers/python/src/prescient.egg-info/PKG-INFO jobs/workers/go/prescient.test
  jobs/workers/java/target/classes/dev/prescient/Worker.class jobs/workers/java/prescient-worker.jar
  jobs/workers/node/node_modules/pg/package.json jobs/workers/node/prescient-worker-0.1.0.tgz)

failures=()
declare -A named=()
while IFS= read -r -d '' file; do
  [[ $file =~ $artefact ]] || continue
  failures+=("$file is a build artefact tracked by git: git rm --cached it")
  named[$file]=1
done < <(git -C "$repo" ls-files -z)
while IFS= read -r -d '' file; do
  [ -z "${named[$file]:-}" ] || continue
  failures+=("$file is tracked but a .gitignore ignores it: git rm --cached it, or change that .gitignore")
done < <(git -C "$repo" ls-files -z --cached --ignored --exclude-standard)
for sample in "${samples[@]}"; do
  git -C "$repo" check-ignore -q --no-index "$sample" ||
    failures+=(".gitignore does not ignore $sample: add its pattern to the root .gitignore")
done

if [ ${#failures[@]} -gt 0 ]; then
  printf 'check-no-artefacts.sh: %s\n' "${failures[@]}" | sort -u >&2
  exit 1
fi
echo "check-no-artefacts.sh: git tracks no build artefact; .gitignore covers ${#samples[@]} kinds"
