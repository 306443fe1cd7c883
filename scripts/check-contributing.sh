#!/usr/bin/env bash
# Keeps CONTRIBUTING.md's recipes true: every file or folder it names (in backticks, or as a link's
# target) exists in the tree, and each recipe under "## Recipes" names at least one. A name with a
# placeholder (NNNN, NAME, LANGUAGE, ...) is a pattern, not a file, and what a build makes (build/, ...) is
# not in the tree. A recipe that says "At most N hand-edited files" names no more files (folders, tests/
# and what follows its "Generated:" not counted; a pattern such as sql/NNNN_name.sql counted). Each failure names
# the line to change.
#   scripts/check-contributing.sh [REPO]
set -euo pipefail
repo=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}

exec python3 - "$repo" <<'PYEOF'
import os, re, sys

repo = sys.argv[1]
DOC = "CONTRIBUTING.md"
PLACEHOLDER = re.compile(r"NNN|NAME|LAYER|CLASS|LANGUAGE|[*<>{}]")
PATH = re.compile(r"[\w.-]+(/[\w.-]*)*")
BUILT = re.compile(r"(build|build-[\w-]+|\.prescient|bench-results)(/|$)")  # made by a build, not in the tree


def is_path(name):
    """A file or folder name: a path with a folder and an extension or a trailing /, or a dotfile or
    a root file with an extension of its own (README.md, .gitignore)."""
    if not PATH.fullmatch(name) or PLACEHOLDER.search(name) or BUILT.match(name):
        return False
    if "/" in name:
        return name.endswith("/") or re.search(r"\.\w+$", name) is not None
    return re.fullmatch(r"\.?[\w-]+\.(md|txt|sh|json|cmake)|\.gitignore", name) is not None


BOUND = re.compile(r"At most (\d+) hand-edited files")
def is_pattern(name):
    """A file named by a pattern: a path with a placeholder and an extension (sql/NNNN_name.sql)."""
    return PATH.fullmatch(name) is not None and PLACEHOLDER.search(name) is not None and "/" in name \
        and re.search(r"\.\w+$", name) is not None


failures, recipe, files_in_recipe, paths = [], None, 0, 0
bound, hand_edited, generated = None, set(), False
lines = open(os.path.join(repo, DOC), encoding="utf-8").read().split("\n")
in_recipes = False


def end_recipe():
    if recipe and files_in_recipe == 0:
        failures.append(f"{DOC}:{recipe[0]}: the recipe \"{recipe[1]}\" names no file")
    if recipe and bound and len(hand_edited) > bound[1]:
        failures.append(f"{DOC}:{bound[0]}: the recipe \"{recipe[1]}\" names {len(hand_edited)} hand-edited files, "
                        f"more than the {bound[1]} it says: make the change touch fewer, or the bound true "
                        f"({', '.join(sorted(hand_edited))})")


for number, line in enumerate(lines, 1):
    if line.startswith("## "):
        end_recipe()
        in_recipes, recipe = line == "## Recipes", None
    elif line.startswith("### ") and in_recipes:
        end_recipe()
        recipe, files_in_recipe = (number, line[4:]), 0
        bound, hand_edited, generated = None, set(), False
    if recipe and BOUND.search(line):
        bound = (number, int(BOUND.search(line).group(1)))
    if line.startswith("```"):
        continue
    generated = generated or line.startswith("Generated:")  # to the recipe's end
    names = re.findall(r"`([^`\n]+)`", line) + re.findall(r"\]\(([^)#\s]+)", line)
    for name in names:
        if is_pattern(name) and recipe and not generated:
            hand_edited.add(name)  # a file still, if not one to look for (`sql/NNNN_name.sql`)
        if not is_path(name):
            continue
        paths += 1
        files_in_recipe += 1
        if recipe and not name.endswith("/") and not name.startswith("tests/") and not generated:
            hand_edited.add(name)
        target = os.path.normpath(os.path.join(repo, name))
        if not os.path.exists(target):
            failures.append(f"{DOC}:{number}: `{name}` is no file or folder of the tree: correct the recipe, "
                            "or the path")
end_recipe()
for failure in failures:
    print(f"check-contributing.sh: {failure}", file=sys.stderr)
if failures:
    sys.exit(1)
print(f"check-contributing.sh: the {paths} files and folders CONTRIBUTING.md names each exist")
PYEOF
