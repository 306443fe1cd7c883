# shellcheck shell=bash
# Sourced by the scripts that build from a clean copy of the tree (package.sh, tests/package).
# copy_source_tree REPO DEST: the files git knows in REPO (committed or not, but not ignored ones such as
# build/), or, outside a git checkout, everything but build output, copied into DEST (which exists).
copy_source_tree() {
  local repo=$1 dest=$2
  if git -C "$repo" rev-parse --git-dir >/dev/null 2>&1; then
    (cd "$repo" && git ls-files -z --cached --others --exclude-standard |
      while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
      tar --null -T - -cf -) | tar -C "$dest" -xf -
  else
    tar -C "$repo" --exclude='./build' --exclude='./build-*' --exclude='./.prescient' -cf - . | tar -C "$dest" -xf -
  fi
}
