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
# And every code name the map writes in backticks names something the tree holds, so the map names only
# what exists (docs/decisions/ may name what has since gone, and is not read):
#   - a path (`engine/src/runner/runner_thread.cpp`, `db/enqueue.cpp`, `core/`): a file or folder at the root, or
#     under engine/src/, engine/include/, engine/ or jobs/;
#   - an SQL object (`prescient.judge`): a function, table, view or type the files of sql/ (not the
#     generated schema.sql) create;
#   - a C++ or SQL identifier (`RunnerThread::Impl::drain`, `runner_settle`, `kSettle`, `RunnerStore`): each part
#     a word of the sources under engine/, jobs/, sql/ (not schema.sql), tests/ (not tests/architecture/,
#     which plants names that do not exist), scripts/, cmake/ or debian/.
# A name with a placeholder (NNNN, NAME, CLASS, LAYER, *, <...>) is a pattern, not a name. Each failure
# names the map's line: that line changes, or the code does.
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

PATH_ROOTS = ("", "engine/src/", "engine/include/", "engine/", "jobs/")
WORD_ROOTS = ("engine", "jobs", "sql", "tests", "scripts", "cmake", "debian")
PLACEHOLDER = re.compile(r"NNN|NAME|LAYER|CLASS|[*<>{}]")


def names_of_map():
    """[(line, name)]: the code names in backticks of docs/design.md, outside its fenced blocks."""
    found, fenced = [], False
    for number, line in enumerate(open(os.path.join(repo, "docs/design.md"), encoding="utf-8"), 1):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            found += [(number, name) for name in re.findall(r"`([^`\n]+)`", line)]
    return found


def kind_of(name):
    """'path', 'sql', 'identifier', or None: not a code name (a command line, a flag, a value, SQL text)."""
    name = re.sub(r"\(\)$", "", name)
    if PLACEHOLDER.search(name):
        return None
    if re.fullmatch(r"[\w.-]+(/[\w.-]*)+", name) and (name.endswith("/") or re.search(r"\.\w+$", name)):
        return "path"
    if re.fullmatch(r"prescient\.\w+", name):
        return "sql"
    if re.fullmatch(r"[A-Za-z_]\w*(::~?[A-Za-z_]\w*)+", name):  # Class::member, a qualified name
        return "identifier"
    if re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)+|k[A-Z]\w*|[A-Z][a-z0-9]+([A-Z][a-z0-9]*)+", name):
        return "identifier"  # snake_case, kConstant, CamelCase
    return None


def texts_under(roots):
    for root in roots:
        for folder, _, names in os.walk(os.path.join(repo, root)):
            for name in names:
                path = os.path.join(folder, name)
                relative = os.path.relpath(path, repo)
                if relative == "sql/schema.sql" or relative.startswith("tests/architecture/"):
                    continue  # generated; the planted names of this check's own test
                try:
                    yield path, open(path, encoding="utf-8").read()
                except (UnicodeDecodeError, OSError):
                    continue  # a binary file names nothing


def missing_names(names):
    words, sql_objects = set(), set()
    for path, text in texts_under(WORD_ROOTS):
        words.update(re.findall(r"\w+", text))
        if path.endswith(".sql"):
            sql_objects.update(m.lower() for m in re.findall(
                r"(?i)\b(?:FUNCTION|TABLE|VIEW|TYPE)\s+(?:IF\s+NOT\s+EXISTS\s+)?prescient\.(\w+)", text))
            sql_objects.update(m.lower() for m in re.findall(r"(?i)\bRENAME\s+TO\s+(\w+)", text))
    failures = []
    for line, name in names:
        kind, bare = kind_of(name), re.sub(r"\(\)$", "", name)
        where = f"docs/design.md:{line}: `{name}`"
        if kind == "path" and not any(os.path.exists(os.path.join(repo, root + bare)) for root in PATH_ROOTS):
            failures.append(f"{where} is no file or folder of the tree (at the root, or under "
                            f"{', '.join(r for r in PATH_ROOTS if r)}): correct the map's line, or the path")
        elif kind == "sql" and bare.split(".")[1].lower() not in sql_objects:
            failures.append(f"{where} is no function, table, view or type that sql/ creates: correct the map's "
                            "line, or the SQL")
        elif kind == "identifier" and (missing := [p for p in bare.split("::") if p.lstrip("~") not in words]):
            failures.append(f"{where}: {', '.join(missing)} is in no source under {', '.join(WORD_ROOTS)}: "
                            "correct the map's line, or the code")
    return failures


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
    names = names_of_map()
    failures += missing_names(names)
    for failure in failures:
        print(f"check-design-map.sh: {failure}", file=sys.stderr)
    if failures:
        sys.exit(1)
    print(f"check-design-map.sh: the path of a due check is {len(rows)} steps in {files} files, each as the map says;"
          f" the map's {len(names)} code names each exist")


main()
EOF
