# shellcheck shell=bash
# Sourced by the clients' README tests (go/, java/ and node/readme-check.sh PRESCIENT_BINARY): a client's
# README.md marks the blocks a new team runs with a line `<!-- readme-test: NAME -->` right before the fenced
# block, and the test runs them as written. Sourcing sets prescient (the binary, absolute), client_dir (the
# script's folder), readme (its README.md), repository (the checkout's root), and say and fail (its messages).
# shellcheck disable=SC2034 # the callers' (above)
prescient=$(realpath "${1:?usage: $(basename "$0") PRESCIENT_BINARY}")
client_dir=$(cd "$(dirname "$0")" && pwd)
readme=$client_dir/README.md
repository=$(cd "$client_dir/../../.." && pwd)
say() { echo "$(basename "$0"): $*"; }
fail() { echo "$(basename "$0"): $*" >&2; exit 1; }

# readme_block NAME: the text of the fenced block after the README's line `<!-- readme-test: NAME -->`.
readme_block() {
  local text
  text=$(awk -v marker="<!-- readme-test: $1 -->" '
    $0 == marker { found = 1; next }
    found == 1 && /^```/ { found = 2; next }
    found == 2 && /^```/ { exit }
    found == 2 { print }' "$readme")
  [ -n "$text" ] || fail "$(basename "$(dirname "$readme")")/README.md has no block marked <!-- readme-test: $1 -->"
  printf '%s\n' "$text"
}

# readme_packages NAME: installs the Debian packages the block's `apt-get install` names, where missing (a test
# runs as root, or with a sudo of its own, not the block's `sudo` as written).
readme_packages() {
  local packages
  packages=$(readme_block "$1" | tr -d '\\' |
    awk '{ for (i = 1; i <= NF; i++) if (seen && $i !~ /^-/) print $i; else if ($i == "install") seen = 1 }')
  [ -n "$packages" ] || fail "the block $1 installs no packages"
  # shellcheck source=../../scripts/lib/packages.sh
  . "$repository/scripts/lib/packages.sh"
  # shellcheck disable=SC2086 # one package a word
  ensure_packages "$(basename "$0")" $packages
}

# readme_files: the client's files with their sizes and times of change, sorted: what a README's commands must
# not change.
readme_files() {
  find "$client_dir" -printf '%P %s %T@\n' | sort
}

# readme_run_outside NAME FOLDER: runs the block in FOLDER, a new team's (made afresh), outside the checkout,
# with PRESCIENT naming the checkout as the README says; it must leave the checkout's client as it was.
readme_run_outside() {
  local before
  rm -rf "$2"
  mkdir -p "$2"
  say "the README's $1, in $2"
  before=$(readme_files)
  (cd "$2" && PRESCIENT=$repository bash -euo pipefail -c "$(readme_block "$1")")
  [ "$before" = "$(readme_files)" ] || fail "the README's $1 wrote into the checkout: $(diff <(echo "$before") <(readme_files))"
}
