#!/usr/bin/env python3
"""Checks what refers to mcpq's metrics against what the binaries really export.

  check-metrics-refs.py --metrics SCRAPE... [--dashboard JSON] [--rules-out FILE]
                        [--refs FILE...]

--metrics: Prometheus text scraped from the running binaries (ingress and worker /metrics).
--dashboard: a Grafana dashboard; it must be valid JSON, every panel must have at least one
  target, and with --rules-out every panel expression is written there as a recording rule
  (Grafana's $__rate_interval, $__interval and $__range replaced by durations) so that
  `promtool check rules FILE` parses each one as PromQL.
--refs: other files (alert rules) whose metric names are checked too.

Every metric name used (mcpq_* and process_*) must be in the scrapes, so
neither the dashboard nor an alert can refer to a series that does not exist. Exit 1 with
one line per problem.
"""
import argparse
import json
import re
import sys

NAME = re.compile(r"\b((?:mcpq|process)_[a-z0-9_]+)\b")
GRAFANA_VARS = {"$__rate_interval": "5m", "$__interval": "1m", "$__range": "1h"}


def scraped_names(paths):
    names = set()
    for p in paths:
        with open(p, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if line and not line.startswith("#"):
                    names.add(re.split(r"[{ ]", line, maxsplit=1)[0])
    return names


def panels_of(dash):
    for p in dash.get("panels", []):
        yield p
        for q in p.get("panels", []):  # collapsed rows keep their panels inside
            yield q


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--metrics", nargs="+", required=True)
    ap.add_argument("--dashboard")
    ap.add_argument("--rules-out")
    ap.add_argument("--refs", nargs="*", default=[])
    a = ap.parse_args()
    have = scraped_names(a.metrics)
    problems = []
    used = {}  # name -> where
    if a.dashboard:
        try:
            with open(a.dashboard, encoding="utf-8") as f:
                dash = json.load(f)
        except ValueError as e:
            print(f"{a.dashboard}: not valid JSON: {e}")
            return 1
        if not any(v.get("name") == "datasource" and v.get("type") == "datasource"
                   for v in dash.get("templating", {}).get("list", [])):
            problems.append(f"{a.dashboard}: no datasource template variable")
        rules = []
        for p in panels_of(dash):
            if p.get("type") == "row":
                continue
            targets = p.get("targets") or []
            if not targets:
                problems.append(f"{a.dashboard}: panel {p.get('title')!r} has no query")
            for t in targets:
                expr = t.get("expr", "")
                if not expr:
                    problems.append(f"{a.dashboard}: panel {p.get('title')!r} has an empty expr")
                    continue
                for name in NAME.findall(expr):
                    used.setdefault(name, f"dashboard panel {p.get('title')!r}")
                for k, v in GRAFANA_VARS.items():
                    expr = expr.replace(k, v)
                rules.append({"record": f"dashboard:panel{p.get('id')}:{t.get('refId', 'A')}",
                              "expr": expr})
        if a.rules_out:
            with open(a.rules_out, "w", encoding="utf-8") as f:
                json.dump({"groups": [{"name": "dashboard", "rules": rules}]}, f, indent=1)
    for path in a.refs:
        with open(path, encoding="utf-8") as f:
            for name in NAME.findall(f.read()):
                used.setdefault(name, path)
    for name, where in sorted(used.items()):
        if name not in have:
            problems.append(f"{where}: {name} is not exported by the binaries")
    for line in problems:
        print(line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
