# shellcheck shell=bash
# Sourced by the clients' README tests (go/, java/ and node/readme-check.sh): a client's README.md marks the
# blocks a new team runs with a line `<!-- readme-test: NAME -->` right before the fenced block, and the test
# runs them as written. The caller sets `readme` (the README's path) and defines say and fail (its messages).

# readme_block NAME: the text of the fenced block after the README's line `<!-- readme-test: NAME -->`.
readme_block() {
  local text
  # shellcheck disable=SC2154 # readme: set by the caller (above)
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
  . "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/packages.sh"
  # shellcheck disable=SC2086 # one package a word
  ensure_packages "$(basename "$0")" $packages
}

# readme_files FOLDER: the folder's files and their sizes, sorted: what a README's commands must not change when
# FOLDER is the checkout's client.
readme_files() {
  find "$1" -printf '%P %s\n' | sort
}
