#!/usr/bin/env python3
"""check-layers.py - the layer map of mcpq, enforced from the object files of a build.

    scripts/check-layers.py BUILD_DIR [--print]

Reads every object file of common/, ingress/ and worker/ in BUILD_DIR with `nm`, and draws
an edge from file A to file B when A uses a function or variable that B defines. It fails
(exit 1) when:

  1. the edges form a circle between files (any strongly connected component of more than
     one file): a file must be understandable from the files below it;
  2. a file uses a file of a higher layer (LAYERS below: lower layers never call upper ones);
  3. two source files share a name anywhere in the tree;
  4. a file exports a symbol that does not start with its module's prefix (common/NAME.c:
     NAME_, ingress: ing_NAME_, worker: wrk_NAME_; underscores in the file name are ignored,
     so cfgsecret.c may export cfg_secret_*).

--print prints the layer map and each layer's files (docs/architecture.md shows the same).
"""
import collections
import os
import subprocess
import sys

# Bottom to top. A file may use files of its own layer (without a circle) and of lower ones.
LAYERS = [
    ("common", "common/", "shared by every binary: settings, logging, JSON-RPC, Kafka and Redis clients, signatures"),
    ("ingress/core", "ingress/core/", "the process context and the services: registry, waits' storage, idempotency, rate limits, quotas, tasks, webhooks, files, metrics"),
    ("ingress/http", "ingress/http/", "the request abstraction, the front door (authentication), parking and waking requests, batches, notification streams"),
    ("ingress/api", "ingress/api/", "the REST API (/v1) and the admin API (/admin)"),
    ("ingress/mcp", "ingress/mcp/", "the MCP protocol: eras, sessions, tools/list, tools/call, tasks methods, the system server"),
    ("ingress", "ingress/", "the HTTP server and its routes, and main()"),
    ("worker/core", "worker/core/", "the event loop, the Kafka consumer and offsets, the Redis writer, job life cycle, metrics"),
    ("worker/executors", "worker/executors/", "what a worker runs: builtin, http, exec, agent, mcp, and the table of them"),
    ("worker", "worker/", "the worker process: its loop of jobs, and main()"),
]

# Exported symbols that are not a module's own, each with its reason.
PREFIX_EXCEPTIONS = {
    "main": "the program entry point",
    "sch_embedded_files": "generated from schemas/ at build time (CMakeLists.txt)",
    "lua_embedded_files": "generated from lua/ at build time (CMakeLists.txt)",
}


def layer_of(rel):
    best = None
    for i, (_, folder, _) in enumerate(LAYERS):
        if rel.startswith(folder) and "/" not in rel[len(folder):]:
            best = i
    return best


def objects(build, repo):
    """(relative source path, object path) of every object of common/, ingress/, worker/
    whose source still exists (a build directory keeps the objects of renamed files)."""
    out = []
    for target in ("mcpqcommon.dir", "mcpq-ingress.dir", "mcpq-worker.dir"):
        root = os.path.join(build, "CMakeFiles", target)
        for dirpath, _, files in os.walk(root):
            for f in files:
                if not f.endswith(".c.o"):
                    continue
                full = os.path.join(dirpath, f)
                rel = os.path.relpath(full, root)[: -len(".o")]
                # Sources outside the tree (the generated schema file) keep their own path.
                if rel.startswith(("common/", "ingress/", "worker/")) and os.path.exists(
                        os.path.join(repo, rel)):
                    out.append((rel, full))
    return sorted(out)


def symbols(obj):
    defined, used = set(), set()
    text = subprocess.run(["nm", "-g", obj], capture_output=True, text=True, check=True).stdout
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDBRVWCG":
            # Compiler-made symbols (AddressSanitizer's __odr_asan.<name>, ...) are not the
            # module's own names.
            if not parts[2].startswith("__") and "." not in parts[2]:
                defined.add(parts[2])
        elif len(parts) == 2 and parts[0] == "U":
            used.add(parts[1])
    return defined, used


def prefix_of(rel):
    base = os.path.basename(rel)[:-2].replace("_", "")
    if rel.startswith("common/"):
        return "", base
    if rel.startswith("ingress/"):
        return "ing_", base
    return "wrk_", base


def prefix_ok(sym, rel):
    if sym in PREFIX_EXCEPTIONS:
        return True
    lead, base = prefix_of(rel)
    s = sym.lower()
    if not s.startswith(lead):
        return False
    s = s[len(lead):]
    # The module name may contain underscores in the symbol (cfg_secret_ for cfgsecret.c).
    return any(s[:i].replace("_", "") == base for i, ch in enumerate(s) if ch == "_")


def sccs(nodes, edges):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def print_map(files):
    print("mcpq layer map (bottom to top; a file may use its own layer and the ones below):")
    for i, (name, _, what) in enumerate(LAYERS):
        mine = sorted(os.path.basename(f) for f in files if layer_of(f) == i)
        print(f"  {i}. {name:17} {what}")
        print(f"     {' '.join(mine)}")


def unique_names(repo):
    seen, dup = {}, []
    for top in ("common", "ingress", "worker", "deploy/devbroker"):
        for dirpath, _, fs in os.walk(os.path.join(repo, top)):
            for f in fs:
                if f.endswith((".c", ".h")):
                    rel = os.path.relpath(os.path.join(dirpath, f), repo)
                    if f in seen:
                        dup.append(f"{seen[f]} and {rel}")
                    seen.setdefault(f, rel)
    return dup


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    build = sys.argv[1]
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    objs = objects(build, repo)
    if not objs:
        print(f"check-layers: no object files under {build} (build first)", file=sys.stderr)
        return 2
    defs, uses = {}, {}
    problems = []
    for rel, obj in objs:
        d, u = symbols(obj)
        uses[rel] = u
        for s in d:
            defs[s] = rel
            if not prefix_ok(s, rel):
                lead, base = prefix_of(rel)
                problems.append(f"prefix: {rel} exports {s} (expected {lead}{base}_...)")
    edges = collections.defaultdict(set)
    for rel, u in uses.items():
        for s in u:
            if s in defs and defs[s] != rel:
                edges[rel].add(defs[s])
    for rel in uses:
        if layer_of(rel) is None:
            problems.append(f"layer: {rel} is in no layer (add its folder to LAYERS)")
    for a in sorted(edges):
        for b in sorted(edges[a]):
            la, lb = layer_of(a), layer_of(b)
            if la is None or lb is None:
                continue
            if lb > la:
                what = sorted(s for s in uses[a] if defs.get(s) == b)
                problems.append(f"layer: {a} ({LAYERS[la][0]}) uses {b} ({LAYERS[lb][0]}), "
                                f"a higher layer: {', '.join(what[:4])}")
    for comp in sccs(set(uses), edges):
        if len(comp) > 1:
            detail = "; ".join(f"{a} -> {', '.join(sorted(x for x in edges[a] if x in comp))}"
                               for a in comp)
            problems.append(f"circle of {len(comp)} files: {detail}")
    for d in unique_names(repo):
        problems.append(f"name: two files share a name: {d}")
    if "--print" in sys.argv:
        print_map(uses)
        sys.stdout.flush()
    nedges = sum(len(v) for v in edges.values())
    if problems:
        for p in problems:
            print(f"check-layers: {p}", file=sys.stderr)
        print(f"check-layers: {len(problems)} problem(s) in {len(objs)} files, {nedges} edges",
              file=sys.stderr)
        return 1
    print(f"check-layers: {len(objs)} files, {nedges} edges, {len(LAYERS)} layers: "
          "no circle, no upward use, names unique, prefixes match")
    return 0


if __name__ == "__main__":
    sys.exit(main())
