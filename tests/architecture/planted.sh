# shellcheck shell=bash
# Sourced by the tests of the source checks: a copy of the tree to plant violations in, and a run of a
# check that must fail on it.
#   . planted.sh REPO   sets $repo, $work (a temporary directory, removed at exit) and $name
name=$(basename "$0")
repo=${1:?usage: $name REPO}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "$name: FAILED: $*" >&2; exit 1; }
# run_failing CHECK WHAT: runs scripts/CHECK on the copy; it must exit 1. Prints what it said.
run_failing() {
  local status=0 out
  out=$("$repo/scripts/$1" "$work" 2>&1) || status=$?
  [ "$status" = 1 ] || fail "exit $status with $2"
  printf '%s\n' "$out"
}
# require_reported OUT PATTERN LINE...: each LINE is a whole line of OUT, and OUT has no other line with
# PATTERN (what the check says of each violation): every planted one named, nothing else.
require_reported() {
  local out=$1 pattern=$2 line
  shift 2
  for line in "$@"; do
    grep -qxF -- "$line" <<<"$out" || fail "not reported: $line (it said: $out)"
  done
  [ "$(grep -cF -- "$pattern" <<<"$out")" = "$#" ] || fail "more than the $# planted were reported: $out"
}
