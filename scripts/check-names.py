#!/usr/bin/env python3
"""Checks that the names crossing a process boundary have one spelling (ctest static/names).

common/names.h defines every Redis key (NAMES_KEY_*, prefixes end in ':'), key suffix
(NAMES_SUFFIX_*), Pub/Sub channel (NAMES_CHAN_*) and Kafka record header (NAMES_HDR_*).
This fails when:
  - docs/internals.md names a key, channel or header the header does not define, or the header
    defines one the doc does not name (keys and channels: any `{mcpq}:...` or `mcpq:...` in
    backticks; a <placeholder> or "..." ends the fixed part; headers: the table rows of the
    "## Kafka" section);
  - a C file of common/, ingress/, worker/ or tests/ spells a key or channel in a string
    literal instead of using names.h;
  - a C file of common/, ingress/ or worker/ spells an MCP protocol version (NAMES_PROTO_*),
    or holds Lua (redis.call): scripts live in common/lua/ (common/rscript.h);
  - a common/lua/*.lua file does not begin with its header comment ("-- <file name>", then
    what it takes in KEYS and ARGV and what it returns).
Usage: check-names.py [repo root] (default: the parent of this script's directory).
"""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
errors = []


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


# --- names.h ---
defs = {}
for m in re.finditer(r'^#define (NAMES_(?:KEY|SUFFIX|CHAN|HDR)_\w+)\s+"([^"]*)"', read("common/names.h"), re.M):
    defs[m.group(1)] = m.group(2)
tag = defs.pop("NAMES_KEY_TAG", None)
if tag != "{mcpq}":
    errors.append("common/names.h: NAMES_KEY_TAG is not \"{mcpq}\"")
keys = {n: v for n, v in defs.items() if n.startswith("NAMES_KEY_")}
suffixes = {n: v for n, v in defs.items() if n.startswith("NAMES_SUFFIX_")}
chans = {n: v for n, v in defs.items() if n.startswith("NAMES_CHAN_")}
hdrs = {n: v for n, v in defs.items() if n.startswith("NAMES_HDR_")}
versions = set(re.findall(r'^#define NAMES_(?:PROTO_\w+|META_PROTOCOL_VERSION)\s+"([^"]*)"', read("common/names.h"), re.M))

# --- docs/internals.md ---
doc = read("docs/internals.md")
doc_keys, doc_chans = set(), set()
for tok in re.findall(r"`([^`]*)`", doc):
    for m in re.finditer(r"\{mcpq\}:(?:<[^>]*>|[^\s`<])*", tok):
        doc_keys.add(m.group(0))
    for m in re.finditer(r"(?<![\w{}:.])mcpq:[a-z:]+[a-z]", tok):
        doc_chans.add(m.group(0))


def fixed_parts(key):
    """The literal parts of a documented key: "{mcpq}:task:<id>:waiters" -> ["{mcpq}:task:", ":waiters"]."""
    key = key.replace("...", "<>")
    return re.split(r"<[^>]*>", key)


used = set()
for k in sorted(doc_keys):
    parts = fixed_parts(k)
    head, tail = parts[0], parts[-1] if len(parts) > 1 else ""
    whole = [n for n, v in keys.items() if not v.endswith(":") and v == head and len(parts) == 1]
    prefix = [n for n, v in keys.items() if v.endswith(":") and head.startswith(v)]
    # The longest prefix is the one the key is built from.
    prefix.sort(key=lambda n: -len(keys[n]))
    if whole:
        used.add(whole[0])
    elif prefix:
        used.add(prefix[0])
    else:
        errors.append("docs/internals.md names key `%s`: no NAMES_KEY_* in common/names.h defines it" % k)
    if len(parts) > 1 and tail:
        match = [n for n, v in suffixes.items() if v == tail]
        if match:
            used.add(match[0])
        else:
            errors.append("docs/internals.md names key `%s`: suffix %r is no NAMES_SUFFIX_*" % (k, tail))
for n, v in sorted(list(keys.items()) + list(suffixes.items())):
    if n not in used:
        errors.append("common/names.h defines %s %r, which docs/internals.md does not name" % (n, v))
for c in sorted(doc_chans - set(chans.values())):
    errors.append("docs/internals.md names channel `%s`: no NAMES_CHAN_* defines it" % c)
for n, v in sorted(chans.items()):
    if v not in doc_chans:
        errors.append("common/names.h defines %s %r, which docs/internals.md does not name" % (n, v))

kafka = re.search(r"^## Kafka\n(.*?)^## ", doc, re.S | re.M)
doc_hdrs = set(re.findall(r"^\s*\| `([^`]+)` \|", kafka.group(1), re.M)) if kafka else set()
for h in sorted(doc_hdrs - set(hdrs.values())):
    errors.append("docs/internals.md lists Kafka header `%s`: no NAMES_HDR_* defines it" % h)
for n, v in sorted(hdrs.items()):
    if v not in doc_hdrs:
        errors.append("common/names.h defines %s %r, which the Kafka header table of docs/internals.md does not list" % (n, v))


# --- C sources ---
def c_files(dirs):
    for d in dirs:
        for base, _, files in os.walk(os.path.join(ROOT, d)):
            for f in files:
                if f.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(base, f), ROOT)


def code_lines(text):
    """(line number, line) outside /* */ and // comments."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    for i, line in enumerate(text.split("\n"), 1):
        yield i, re.sub(r"//.*", "", line)


literal = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
for path in c_files(["common", "ingress", "worker", "tests"]):
    if path == os.path.join("common", "names.h"):
        continue
    text = read(path)
    for i, line in code_lines(text):
        for lit in literal.findall(line):
            if "{mcpq}:" in lit or re.search(r"(^|[\s'])mcpq:[a-z]", lit):
                errors.append("%s:%d: spells a Redis key or channel (%s); use common/names.h" % (path, i, lit[:60]))
            if not path.startswith("tests") and any(v in lit for v in versions):
                errors.append("%s:%d: spells an MCP protocol version (%s); use common/names.h" % (path, i, lit[:60]))
        if "redis.call" in line and not path.startswith("tests"):
            errors.append("%s:%d: Lua in C (redis.call); put the script in common/lua/" % (path, i))

# --- common/lua/*.lua ---
lua_dir = os.path.join(ROOT, "common", "lua")
for f in sorted(os.listdir(lua_dir)):
    if not f.endswith(".lua"):
        continue
    text = read(os.path.join("common", "lua", f))
    head = []
    for line in text.split("\n"):
        if not line.startswith("--"):
            break
        head.append(line)
    head = "\n".join(head)
    if not head.startswith("-- " + f):
        errors.append("common/lua/%s: does not begin with \"-- %s\"" % (f, f))
    for word in ("KEYS", "ARGV", "Returns"):
        if word not in head:
            errors.append("common/lua/%s: its header comment does not say %s" % (f, word))

for e in errors:
    print(e)
if errors:
    print("check-names: %d problem(s)" % len(errors))
    sys.exit(1)
print("check-names: %d keys, %d suffixes, %d channels, %d Kafka headers agree with docs/internals.md"
      % (len(keys), len(suffixes), len(chans), len(hdrs)))
