#!/usr/bin/env bash
# docs/architecture.md walks one tools/call through the code naming files and functions; this
# keeps the walk true: every file it names (`name.c`, `dir/name.h`, `dir/`) exists in the
# tree, and every function it names (`name`, lower case with an underscore or a known
# handler name) is defined in a C file of the tree. Fails naming what is gone.
set -euo pipefail
REPO=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
exec python3 - "$REPO" <<'PY'
import os, re, subprocess, sys
repo = sys.argv[1]
doc = open(os.path.join(repo, "docs/architecture.md")).read()
files = subprocess.run(["git", "-C", repo, "ls-files"], capture_output=True, text=True).stdout.split()
by_base = {}
for f in files:
    by_base.setdefault(os.path.basename(f), []).append(f)
sources = [f for f in files if f.endswith(".c") and f.split("/")[0] in ("common", "ingress", "worker")]
text = {f: open(os.path.join(repo, f), errors="replace").read() for f in sources}
fails = 0
checked_files = checked_funcs = 0
for tok in sorted(set(re.findall(r"`([^`\s]+)`", doc))):
    if re.fullmatch(r"[\w./-]+\.(c|h|py|md|json|acl|lua)|[\w./-]+/", tok):
        checked_files += 1
        path = tok.rstrip("/")
        if tok.endswith("/"):
            ok = os.path.isdir(os.path.join(repo, path))
        elif "/" in path:
            ok = os.path.exists(os.path.join(repo, path))
        else:
            ok = path in by_base
        if not ok:
            print(f"not ok - architecture.md names {tok}, which is not in the tree")
            fails += 1
    elif re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)+", tok):
        checked_funcs += 1
        # a function defined (its name at the start of a definition line) or a type declared
        pat = re.compile(r"^[A-Za-z].*[\s*]" + re.escape(tok) + r"\(|^} " + re.escape(tok) + ";",
                         re.M)
        headers = [h for h in files if h.endswith(".h") and h.split("/")[0] in
                   ("common", "ingress", "worker")]
        if not any(pat.search(t) for t in text.values()) and not any(
                pat.search(open(os.path.join(repo, h), errors="replace").read()) for h in headers):
            print(f"not ok - architecture.md names {tok}, which no C file defines")
            fails += 1
print(f"{'ok' if not fails else 'not ok'} - architecture.md: {checked_files} files and "
      f"{checked_funcs} functions or types named, {fails} gone")
sys.exit(1 if fails else 0)
PY
