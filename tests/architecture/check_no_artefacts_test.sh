#!/usr/bin/env bash
# scripts/check-no-artefacts.sh can fail: a git checkout holding the repository's .gitignore files and a
# source file passes; a committed Python bytecode file, a Node tarball, a Java class under target/, a file
# a client's .gitignore ignores (added with --force), and a root .gitignore without Go's test binaries each
# fail it, named with what to do.
#   tests/architecture/check_no_artefacts_test.sh REPO
set -euo pipefail
# shellcheck source=planted.sh
. "$(dirname "${BASH_SOURCE[0]}")/planted.sh"

git init -q "$work"
(cd "$repo" && git ls-files -z -- .gitignore '*/.gitignore' | xargs -0 cp --parents -t "$work")
mkdir -p "$work/engine/src/core" && echo '// source' >"$work/engine/src/core/clock.cpp"
git -C "$work" add -A
"$repo/scripts/check-no-artefacts.sh" "$work" >/dev/null || fail "the unchanged copy does not pass"

# plant FILE: FILE committed with --force (past every .gitignore)
plant() { mkdir -p "$work/$(dirname "$1")" && echo x >"$work/$1" && git -C "$work" add -f "$1"; }
plant jobs/workers/conformance/__pycache__/run.cpython-311.pyc
plant jobs/workers/node/prescient-worker-0.1.0.tgz
plant jobs/workers/java/target/classes/Worker.class
plant jobs/workers/node/coverage.out
out=$(run_failing check-no-artefacts.sh "four planted artefacts")
require_reported "$out" 'git rm --cached it' \
  "check-no-artefacts.sh: jobs/workers/conformance/__pycache__/run.cpython-311.pyc is a build artefact tracked by git: git rm --cached it" \
  "check-no-artefacts.sh: jobs/workers/node/prescient-worker-0.1.0.tgz is a build artefact tracked by git: git rm --cached it" \
  "check-no-artefacts.sh: jobs/workers/java/target/classes/Worker.class is a build artefact tracked by git: git rm --cached it" \
  "check-no-artefacts.sh: jobs/workers/node/coverage.out is tracked but a .gitignore ignores it: git rm --cached it, or change that .gitignore"

git -C "$work" rm -q --cached -r jobs/workers/conformance jobs/workers/node/prescient-worker-0.1.0.tgz \
  jobs/workers/java/target jobs/workers/node/coverage.out
"$repo/scripts/check-no-artefacts.sh" "$work" >/dev/null || fail "the copy does not pass once the artefacts are gone"
sed -i '/^\*\.test$/d' "$work/.gitignore"
out=$(run_failing check-no-artefacts.sh "a .gitignore without *.test")
grep -qxF "check-no-artefacts.sh: .gitignore does not ignore jobs/workers/go/prescient.test: add its pattern to the root .gitignore" \
  <<<"$out" || fail "the missing pattern was not named (it said: $out)"
echo "check_no_artefacts_test.sh: the copy passes; each planted artefact and the missing pattern fail it, named"
