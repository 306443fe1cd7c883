#!/usr/bin/env bash
# Checks docs/design.md's map of the path of a due check against the code. The table under "The path of a
# due check" lists, in order, the functions one check passes through, from the daemon's loop to the
# settle statement and back, with the files that hold them. Each row must
#   - name a file under engine/, jobs/ or sql/ that exists;
#   - name what that file defines: `Class::function` a member of exactly that class (defined in it, or
#     out of it as Class::function, or declared in it), `name` a free function or a constant, and
#     `prescient.name` an SQL function (CREATE OR REPLACE FUNCTION prescient.name); a call, a use or a
#     name within other text does not count;
#   - be called or used in the body of a row above it: its caller, the row just above on the way down,
#     one further up after a return. So a step left out of the map breaks the path at the row after it,
#     and the check names that row.
# The first row is the daemon's loop (Daemon::Loop::run), a row is the settle statement (kSettle), and the
# last row is called by the first: the path returns to the daemon. At most 12 files.
#   scripts/check-design-map.sh [REPO]
set -euo pipefail
repo=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}

exec python3 - "$repo" <<'EOF'
import os, re, sys

repo = sys.argv[1]
FIRST = ("engine/src/runner/daemon.cpp", "Daemon::Loop::run")
SETTLE = "kSettle"
MAX_FILES = 12


def rows_of_map():
    rows, inside = [], False
    for line in open(os.path.join(repo, "docs/design.md"), encoding="utf-8"):
        if line.startswith("### The path of a due check"):
            inside = True
        elif inside and re.match(r"##+ ", line):
            break
        elif inside and line.startswith("| `"):
            cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
            rows.append((cells[0], cells[1]))
    return rows


def without_comments(text, strings_too):
    """The text with comments (and, when asked, string and character literals) blanked, lines kept."""
    out, i, n = [], 0, len(text)
    blank = lambda s: re.sub(r"[^\n]", " ", s)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(blank(text[i:j])); i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(blank(text[i:j])); i = j
        elif (m := re.compile(r'R"([^(\s]*)\(').match(text, i)) and (i == 0 or not text[i - 1].isalnum()):
            j = text.find(")" + m.group(1) + '"', m.end())
            j = n if j < 0 else j + len(m.group(1)) + 2
            out.append(blank(text[i:j]) if strings_too else text[i:j]); i = j
        elif text[i] in "\"'" and not (text[i] == "'" and i > 0 and text[i - 1].isalnum()):  # 1'000 is a number
            j = i + 1
            while j < n and text[j] != text[i]:
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(text[i] + blank(text[i + 1:j - 1]) + text[i] if strings_too else text[i:j]); i = j
        else:
            out.append(text[i]); i += 1
    return "".join(out)


def cpp_definitions(text):
    """{qualified name: body text} of the functions and constants a C++ file defines or declares."""
    code = re.sub(r"(?m)^\s*#.*$", lambda m: " " * len(m.group(0)), without_comments(text, strings_too=True))
    uses = without_comments(text, strings_too=False)  # the SQL in a statement's string names its functions
    found, scopes, start = {}, [], 0  # scopes: (kind, name, where); start: where the current statement began
    in_function = lambda: any(kind == "function" for kind, _, _ in scopes)
    classes = lambda: [name for kind, name, _ in scopes if kind == "class"]
    for i, ch in enumerate(code):
        if ch == "{":
            head = " ".join(code[start:i].split())
            kind, name = "block", ""
            if not in_function():
                if m := re.search(r"(?:^|[\s>])(?:class|struct)\s+(?:\w+\s+)*?([A-Za-z_][\w:]*)\s*(?:final\s*)?(?::[^;]*)?$", head):
                    if not head.startswith("enum"):
                        kind, name = "class", m.group(1)
                elif m := re.match(r"(?:inline\s+)?namespace\b", head):
                    kind = "namespace"
                elif m := re.match(r"[^(=]*?([A-Za-z_~][\w:~]*)\s*\(", head):
                    kind, name = "function", "::".join(classes() + [m.group(1)])
                    found.setdefault(name, [])
                elif m := re.search(r"([A-Za-z_]\w*)\s*=?\s*$", head):  # a constant's braced initializer
                    kind, name = "constant", "::".join(classes() + [m.group(1)])
                    found.setdefault(name, [])
            scopes.append((kind, name, i))
            start = i + 1
        elif ch == "}":
            if scopes:
                kind, name, opened = scopes.pop()
                if kind in ("function", "constant"):
                    found[name].append(uses[opened:i + 1])
            start = i + 1
        elif ch == ";":
            if not in_function():
                head = " ".join(code[start:i].split())
                # a constant: a type, its name, then = or ( (a declaration of a member: its name, then ()
                if m := re.match(r"(?:[\w:<>,*&\s]+[\s*&>])([A-Za-z_]\w*)\s*(=|\()", head):
                    name = "::".join(classes() + [m.group(1)])
                    found.setdefault(name, []).append(uses[start:i + 1] if m.group(2) == "=" or not classes() else "")
            start = i + 1
    return found


def sql_definitions(text):
    """{prescient.name: body} of the SQL functions a file creates: each body up to the next CREATE."""
    found = {}
    parts = re.split(r"(?im)^(?=\s*CREATE\s)", text)
    for part in parts:
        if m := re.match(r"\s*CREATE\s+OR\s+REPLACE\s+FUNCTION\s+(prescient\.\w+)\s*\(", part, re.I):
            found.setdefault(m.group(1), []).append(part)
    return found


def mentions(body, name):
    """Whether `body` calls or uses `name`: a C++ name by its last part (a member is called on an object,
    `store_.settle(...)`), an SQL function whole (`prescient.name`)."""
    return re.search(r"(?<!\w)" + re.escape(name.split("::")[-1]) + r"(?!\w)", body) is not None


def main():
    failures, bodies = [], []
    rows = rows_of_map()
    definitions_of = {}
    for number, (file, name) in enumerate(rows, 1):
        path = os.path.join(repo, file)
        body = None
        if not re.match(r"(engine|jobs|sql)/", file):
            failures.append(f"{file} is not under engine/, jobs/ or sql/")
        elif not os.path.isfile(path):
            failures.append(f"{file} does not exist")
        else:
            if file not in definitions_of:
                text = open(path, encoding="utf-8").read()
                definitions_of[file] = sql_definitions(text) if file.endswith(".sql") else cpp_definitions(text)
            if name in definitions_of[file]:
                body = "\n".join(definitions_of[file][name])
            else:
                failures.append(f"{file} defines no {name}")
        if number > 1 and body is not None and not any(b is not None and mentions(b, name) for b in bodies):
            failures.append(f"row {number}, {name} ({file}): no row above it calls or uses it; "
                            "the step between is missing from the map")
        bodies.append(body)
    if rows and rows[0] != FIRST:
        failures.append(f"the first row is not {FIRST[1]} ({FIRST[0]}), where the path begins")
    if SETTLE not in [name for _, name in rows]:
        failures.append(f"no row is the settle statement, {SETTLE}")
    if len(rows) > 1 and bodies[0] is not None and not mentions(bodies[0], rows[-1][1]):
        failures.append(f"the last row, {rows[-1][1]}, is not called by the first: the path does not return to the daemon")
    files = len({file for file, _ in rows})
    if not 1 <= files <= MAX_FILES:
        failures.append(f"the map has {files} files (1 to {MAX_FILES})")
    for failure in failures:
        print(f"check-design-map.sh: {failure}", file=sys.stderr)
    if failures:
        sys.exit(1)
    print(f"check-design-map.sh: the path of a due check is {len(rows)} steps in {files} files, each as the map says")


main()
EOF
