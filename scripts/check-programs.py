#!/usr/bin/env python3
"""Every external program the tests, scripts and launcher run comes from a package that
scripts/deps.sh installs (issue 30 item 6).

    check-programs.py ROOT                      the static check (ctest static/programs)
    check-programs.py ROOT --list FILE...       the programs FILE... run, with their packages
    check-programs.py ROOT --run FILE... -- CMD  fail at once when a program FILE... run (or a
                                                 script of the repository they run) is not
                                                 installed; else exec CMD (how ctest runs tests)

The map program -> Debian package is scripts/programs.txt; scripts/deps.sh installs every
package it names. The programs a file runs are found by reading it (no execution):
  - shell (*.sh, scripts/mcpq-local, .ci/run): the word in command position of each command
    (line start, after | || && ; ( $( ` and after then/do/else/!/exec/command/xargs/timeout N/
    setsid/env and VAR=value), heredoc bodies and comments left out, minus shell builtins and
    keywords and the functions the shell files define;
  - Python: subprocess.run/Popen/call/check_output/check_call([...]) with a literal first
    element, shutil.which("..."), and `for prog in ("a", "b")` tuples;
  - C: argv arrays ({"prog", ...}), system("...")/popen("...") literals and snprintf(cmd, ...)
    format strings, each read as shell;
  - JavaScript: spawn/spawnSync/execFile/execFileSync('prog', ...).
A word that is neither a program on this machine nor in the map is left out (it is no
command: a string that only looks like one); a program on this machine, or in the map, is
kept. Fails listing each program not in the map, with the files that run it.
"""
import os
import re
import shutil
import sys

SHELL_WORDS = set("""
    alias bg bind break builtin caller case cd command compgen complete continue declare dirs
    disown do done echo elif else enable esac eval exec exit export false fc fg fi for function
    getopts hash help history if in jobs kill let local logout mapfile popd printf pushd pwd read
    readarray readonly return select set shift shopt source suspend test then time times trap true
    type typeset ulimit umask unalias unset until wait while coproc [ [[ ]] ] { } . : ! exec
""".split())
# Words after which the next word is again in command position.
PREFIXES = {"then", "do", "else", "!", "exec", "command", "xargs", "setsid", "env", "time",
            "nohup", "sudo", "if", "elif", "while", "until"}
OPTIONAL = set()  # programs.txt's third column: no test needs them
WORD = re.compile(r"^[a-z][a-z0-9._+-]*$")


def load_map(root):
    progs = {}
    with open(os.path.join(root, "scripts", "programs.txt")) as f:
        for line in f:
            line = line.split("#", 1)[0].split()
            if len(line) >= 2:
                progs[line[0]] = line[1]
                if line[2:] == ["optional"]:
                    OPTIONAL.add(line[0])
    return progs


def strip_heredocs(text):
    out, end = [], None
    for line in text.splitlines():
        if end is not None:
            if line.strip() == end:
                end = None
            continue
        m = re.search(r"<<-?\s*['\"]?([A-Za-z_][A-Za-z0-9_]*)['\"]?", line)
        if m and "<<<" not in line:
            end = m.group(1)
        out.append(line)
    return out


def strip_comments(text):
    """Shell or Python text without its # comments (quotes kept)."""
    out, quote = [], None
    for line in text.splitlines():
        keep = line
        for i, c in enumerate(line):
            if quote:
                if c == quote:
                    quote = None
            elif c in "'\"":
                quote = c
            elif c == "#" and (i == 0 or line[i - 1] in " \t;"):
                keep = line[:i]
                break
        if quote == "'":  # a single-quoted string runs on; a double-quoted one too
            pass
        out.append(keep)
    return "\n".join(out)


def strip_shell(text):
    """The text with comments, single-quoted strings and double-quoted text left out (across
    lines), except the command substitutions inside double quotes ("$(cmd ...)"), which run
    commands; and the bodies of multi-line arrays (NAME=( ... )), which hold words, not
    commands."""
    out, i, quote, n = [], 0, None, len(text)
    while i < n:
        c = text[i]
        if quote == "'":
            if c == "'":
                quote = None
            elif c == "\n":
                out.append(c)
        elif quote == '"':
            if c == "\\":
                i += 1
            elif c == '"':
                quote = None
            elif text.startswith("$(", i):
                out.append(" $(")
                i += 1
            elif c in ")\n":
                out.append(c)
        elif c in "'\"":
            quote = c
        elif c == "\\" and i + 1 < n:
            out.append(" " if text[i + 1] == "\n" else text[i + 1])
            i += 1
        elif c == "#" and (i == 0 or text[i - 1] in " \t\n;"):
            while i < n and text[i] != "\n":
                i += 1
            continue
        else:
            out.append(c)
        i += 1
    return re.sub(r"\b[A-Za-z_][A-Za-z0-9_]*=\([^)]*\)", "", "".join(out))


def shell_commands(text):
    """The words in command position."""
    words = set()
    for line in strip_shell(text).splitlines():
        if re.match(r"^\s*[A-Za-z0-9_.*|\s-]+\)", line):  # a case pattern: "a | b)"
            line = line[line.index(")") + 1:]
        # split into commands at the separators; each part starts in command position
        for part in re.split(r"\|\||&&|[|;&`]|\$\(|\(|\bthen\b|\bdo\b|\belse\b", line):
            toks = part.split()
            while toks and (re.match(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=", toks[0])
                            or toks[0] in PREFIXES):
                toks.pop(0)
            if toks and toks[0] == "timeout":  # timeout [-k N] N cmd
                words.add("timeout")
                toks = [t for t in toks[1:] if not re.match(r"^-|^[0-9.]+[smhd]?$", t)]
            if toks:
                w = toks[0].strip("\"'")
                if WORD.match(w):
                    words.add(w)
    return words


def shell_functions(text):
    return set(re.findall(r"^\s*(?:function\s+)?([A-Za-z_][A-Za-z0-9_-]*)\s*\(\)", text, re.M))


def c_commands(text):
    words = set(re.findall(r"\{\s*\"([a-z][a-z0-9._+-]*)\"\s*,", text))
    shell = re.findall(r"\b(?:system|popen)\(\s*\"((?:[^\"\\]|\\.)*)\"", text)
    for m in re.finditer(r"\bsnprintf\(\s*cmd\b[^,]*,[^,]*,((?:\s*\"(?:[^\"\\]|\\.)*\")+)", text):
        shell.append("".join(re.findall(r"\"((?:[^\"\\]|\\.)*)\"", m.group(1))))
    for s in shell:
        words |= shell_commands(s.replace("\\n", "\n"))
    return words


def py_commands(text):
    words = set(re.findall(
        r"\b(?:run|Popen|call|check_output|check_call)\(\s*\[\s*[\"']([a-z][a-z0-9._+-]*)[\"']",
        text))
    words |= set(re.findall(r"\bwhich\(\s*[\"']([a-z][a-z0-9._+-]*)[\"']", text))
    for tup in re.findall(r"\bfor \w+ in \(([^)]*)\)", text):
        words |= set(re.findall(r"[\"']([a-z][a-z0-9._+-]*)[\"']", tup))
    return words


def js_commands(text):
    return set(re.findall(
        r"\b(?:spawn|spawnSync|execFile|execFileSync)\(\s*['\"]([a-z][a-z0-9._+-]*)['\"]", text))


def kind(path):
    if path.endswith(".c"):
        return "c"
    if path.endswith(".py"):
        return "py"
    if path.endswith((".mjs", ".js")):
        return "js"
    return "sh"


def sources(root):
    """Every file the static check reads."""
    pats = [("tests", (".sh", ".py", ".c", ".mjs")), ("scripts", (".sh",)), ("deploy", (".sh",)),
            ("bench", (".sh",))]
    files = []
    for top, exts in pats:
        for d, dirs, names in os.walk(os.path.join(root, top)):
            dirs[:] = [x for x in dirs if x not in ("node_modules", "corpus")]
            files += [os.path.join(d, n) for n in names if n.endswith(exts)]
    files += [os.path.join(root, p) for p in ("scripts/mcpq-local", ".ci/run")]
    return sorted(f for f in files if os.path.isfile(f))


def all_functions(root):
    names = set()
    for f in sources(root):
        if kind(f) == "sh":
            with open(f, errors="replace") as fh:
                names |= shell_functions(fh.read())
    return names


def programs_of(path, known, functions):
    with open(path, errors="replace") as f:
        text = f.read()
    k = kind(path)
    if k == "c":
        words = c_commands(text)
    elif k == "py":
        words = py_commands(text)
    elif k == "js":
        words = js_commands(text)
    else:
        words = shell_commands("\n".join(strip_heredocs(text))) - functions
    words -= SHELL_WORDS
    return {w for w in words if w in known or shutil.which(w)}


def referenced(root, path, seen):
    """path and the repository's scripts it runs or sources (scripts/..., tests/...), and
    tests/fixture.c for a C test, transitively."""
    if path in seen:
        return
    seen.add(path)
    with open(path, errors="replace") as f:
        text = f.read()
    if path.endswith(".c") and os.sep + "tests" + os.sep in path:
        refs = ["tests/fixture.c"]
    elif path.endswith((".c", ".mjs", ".js")):
        refs = []
    else:
        text = strip_comments(text)
        if path.endswith(".py"):  # the modules of its own folder it imports
            refs_py = re.findall(r"^\s*(?:from|import)\s+([A-Za-z_][A-Za-z0-9_]*)", text, re.M)
            text += "".join(f" /{m}.py" for m in refs_py)
        refs = re.findall(r"\b((?:scripts|tests)/[A-Za-z0-9_./-]+\.(?:sh|py|mjs)|scripts/mcpq-local)\b",
                          text)
        # a sourced or run file next to this one ("$(dirname ...)/readme_lib.sh")
        refs += [os.path.relpath(os.path.join(os.path.dirname(path), m), root)
                 for m in re.findall(r"/([A-Za-z0-9_.-]+\.(?:sh|py))\b", text)
                 if os.path.isfile(os.path.join(os.path.dirname(path), m))]
    for r in refs:
        p = os.path.join(root, r)
        if os.path.isfile(p):
            referenced(root, p, seen)


def message(prog, pkg):
    return f"needs {prog} (Debian package {pkg}, installed by scripts/deps.sh)"


def static_check(root, known, functions):
    missing = {}
    for f in sources(root):
        for p in programs_of(f, known, functions):
            if p not in known:
                missing.setdefault(p, []).append(os.path.relpath(f, root))
    for p in sorted(missing):
        print(f"{p}: run by {', '.join(missing[p])}, but not in scripts/programs.txt "
              "(add `<program> <Debian package>` there; scripts/deps.sh installs it)")
    if missing:
        return 1
    print(f"ok - every program the tests, scripts and launcher run is in scripts/programs.txt "
          f"({len(known)} programs)")
    return 0


def needed(root, files, known, functions):
    seen = set()
    for f in files:
        referenced(root, os.path.abspath(f), seen)
    progs = set()
    for f in seen:
        progs |= programs_of(f, known, functions)
    return progs


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = os.path.abspath(argv[1])
    known = load_map(root)
    functions = all_functions(root)
    if len(argv) == 2:
        return static_check(root, known, functions)
    if argv[2] == "--list":
        for p in sorted(needed(root, argv[3:], known, functions)):
            print(p, known.get(p, "?"))
        return 0
    if argv[2] == "--run" and "--" in argv:
        i = argv.index("--")
        files, cmd = argv[3:i], argv[i + 1:]
        absent = sorted(p for p in needed(root, files, known, functions)
                        if p not in OPTIONAL and not shutil.which(p))
        for p in absent:
            print(f"{os.path.relpath(files[0], root) if files else 'test'}: "
                  f"{message(p, known.get(p, '?'))}", file=sys.stderr)
        if absent:
            return 1
        os.execvp(cmd[0], cmd)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
