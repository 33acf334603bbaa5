#!/usr/bin/env python3
"""check-functions.py - no function of mcpq is longer than about a screen.

    scripts/check-functions.py [--limit N] [--top N] [--all] [REPO_DIR]

Reads every C file of ingress/, worker/, common/ and deploy/devbroker/ under REPO_DIR (default:
the repository holding this script) and measures each function definition from its opening
line (the line of its name) to its closing brace, both counted. A definition whose body is a
data table (an initializer: `static const x_t table[] = { ... };`), a struct, union or enum
is not a function and is not measured.

It prints the longest functions (file:line, length, name) and exits 1 when any function is
longer than the limit (80 lines) and not named in ALLOWED below with its reason.
--all prints every function over the limit instead of the top ones.
"""
import os
import re
import sys

FOLDERS = ("ingress", "worker", "common", "deploy/devbroker")
LIMIT = 80

# "path:function": reason. Keep it short; worker/ and common/ have no entries.
ALLOWED = {
}

KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "do", "else"}


def strip(text):
    """text with comments, string and character literals and preprocessor lines replaced by
    spaces, newlines kept so that line numbers stay right."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c == "#":
            # A preprocessor directive, with its continuation lines.
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        if c == "/" and text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
            continue
        if c == "/" and text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append(" " * (end - i))
            i = end
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j]) + c)
            i = j + 1
            continue
        out.append(c)
        if c == "\n":
            line_start = True
        elif not c.isspace():
            line_start = False
        i += 1
    return "".join(out)


def function_name(head):
    """The name of the function whose definition head (the text before its `{`) is given,
    or None when the head is not a function's (an initializer, a struct, an enum)."""
    head = head.strip()
    if not head.endswith(")") or "=" in head:
        return None
    if re.match(r"^(typedef\s+)?(struct|union|enum)\b[^(]*$", head):
        return None
    # The parameter list: from the last ")" back to its "(".
    depth = 0
    for k in range(len(head) - 1, -1, -1):
        if head[k] == ")":
            depth += 1
        elif head[k] == "(":
            depth -= 1
            if depth == 0:
                m = re.search(r"([A-Za-z_]\w*)\s*$", head[:k])
                if not m or m.group(1) in KEYWORDS:
                    return None
                return m.group(1)
    return None


def functions(path):
    """(name, first line, length in lines) of each function defined in the file at path."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = strip(f.read())
    found = []
    depth = 0
    head_start = 0  # offset where the current top-level declaration begins
    opened = None  # (name, first line) of the function whose body is open
    for i, c in enumerate(text):
        if c == "{":
            if depth == 0:
                head = text[head_start:i]
                name = function_name(head)
                if name:
                    # The name line: the last occurrence of the name before its "(".
                    at = head_start + head.rfind(name, 0, head.rfind("("))
                    opened = (name, text.count("\n", 0, at) + 1)
                else:
                    opened = None
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                if opened:
                    last = text.count("\n", 0, i) + 1
                    found.append((opened[0], opened[1], last - opened[1] + 1))
                    opened = None
                head_start = i + 1
        elif c == ";" and depth == 0:
            head_start = i + 1
    return found


def main(argv):
    limit, top, show_all = LIMIT, 15, False
    args = list(argv[1:])
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    while args:
        a = args.pop(0)
        if a == "--limit":
            limit = int(args.pop(0))
        elif a == "--top":
            top = int(args.pop(0))
        elif a == "--all":
            show_all = True
        elif a.startswith("-"):
            print(__doc__, file=sys.stderr)
            return 2
        else:
            repo = a
    everything = []
    for folder in FOLDERS:
        for dirpath, _, files in os.walk(os.path.join(repo, folder)):
            for f in sorted(files):
                if f.endswith(".c"):
                    full = os.path.join(dirpath, f)
                    rel = os.path.relpath(full, repo)
                    for name, line, length in functions(full):
                        everything.append((length, rel, line, name))
    everything.sort(key=lambda t: (-t[0], t[1], t[2]))
    over = [t for t in everything if t[0] > limit]
    failing = [t for t in over if "%s:%s" % (t[1], t[3]) not in ALLOWED]
    shown = over if show_all else everything[:top]
    print("longest functions (limit %d lines, %d functions in %s):" %
          (limit, len(everything), ", ".join(f + "/" for f in FOLDERS)))
    for length, rel, line, name in shown:
        key = "%s:%s" % (rel, name)
        mark = "allowed: " + ALLOWED[key] if key in ALLOWED else ("OVER" if length > limit else "")
        print("  %4d  %s:%d  %s  %s" % (length, rel, line, name, mark))
    stale = [k for k in ALLOWED if not any("%s:%s" % (t[1], t[3]) == k for t in over)]
    for k in stale:
        print("note: %s is allowed but no longer over the limit; remove it from ALLOWED" % k)
    if failing:
        print("%d function(s) longer than %d lines; split them into named steps, each with one "
              "cleanup path, or say why in ALLOWED" % (len(failing), limit))
        return 1
    print("ok: no function longer than %d lines" % limit)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
