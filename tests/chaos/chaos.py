#!/usr/bin/env python3
"""chaos.py - the fault campaign: a multi-replica mcpq stack on loopback, a client workload for
CHAOS_SECONDS while a nemesis injects faults, and a checker over the recorded history
(docs/reliability.md).

    tests/chaos/chaos.py [--seconds N] [--nemesis LIST] [--order random|each] [--keep]

Files: stack.py (the stack: scripts/mcpq-local, 2 ingresses, 3 workers, Redis with an AOF,
the devbroker), workload.py (client operations and the history), checker.py (lost,
unexpected, duplicate executions), report.py (per-fault table, soak samples and graph), and
one module per family of faults, each with a FAULTS table {name: inject(ctx, rnd)} and
optionally setup(ctx), teardown(ctx), WORKLOAD {kind: (weight, run)}, drain(ctx, hist) (after
the workload, while the stack still runs: e.g. wait for webhook deliveries) and check(ctx,
hist): procfault.py (kill -9, rolling SIGTERM, Redis frozen), redisfault.py (Redis kill -9 and
restart from its AOF; CHAOS_REDIS_FSYNC), netfault.py (partitions and packet loss between
one worker or ingress and Redis or Kafka, in a network namespace of the run's own),
webhooks.py (task-mode calls ending by webhook, cancellations, receiver outages), broker.py
(brokers down, leader moves, request errors, slow brokers through the devbroker's control
channel, docs/kafka.md "Fault injection").

--order random (default) injects a fault of the list every --interval seconds, in a random
order in which every fault comes once before any comes again;
--order each injects every fault of the list once, in turn, spread over the run (the short
form in make test). The last line is
`chaos: N ops, lost L, unexpected U, errors E, duplicate executions D, faults F`; exit 1 when
checker.verdict() finds a failure (lost or unexpected not 0, no operation succeeded, clear
errors above CHAOS_MAX_ERROR_RATE, or under CI a family of faults that did not run), after a
line `chaos: FAILED: <why>`; exit 2 when the stack itself stopped during the run (Redis or
the in-memory broker died for good: the launcher says why).
"""
import argparse
import importlib
import json
import os
import random
import shutil
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checker  # noqa: E402
import netfault  # noqa: E402
import report  # noqa: E402
import stack  # noqa: E402
import workload  # noqa: E402

MODULES = ("procfault", "redisfault", "broker", "netfault", "webhooks")


class Ctx:
    """What the harness, the fault modules and the workload share."""

    def __init__(self, a, state):
        self.state, self.port, self.bin_dir = state, a.port, a.bin_dir
        self.ingresses = stack.INGRESSES
        self.marks = os.path.join(state, "marks")
        os.makedirs(self.marks, exist_ok=True)
        self.launcher_args, self.tools = [], []
        self.stack = None
        self.stop = threading.Event()
        self.pace = a.pace
        self.windows = []  # one per fault: {"fault", "what", "start", "end"}
        self.until = 0.0  # when the workload ends (the nemesis may push it back)
        self.faulting = False
        self.died = None  # why the stack stopped under the run, if it did
        self.tail = 10.0 if a.order == "each" else 0.0  # workload seconds after each fault


def load_modules():
    mods = [importlib.import_module(m) for m in MODULES]
    faults, kinds = {}, dict(workload.WORKLOAD)
    for m in mods:
        faults.update(m.FAULTS)
        kinds.update(getattr(m, "WORKLOAD", {}))
    return mods, faults, kinds


def skipped_families(mods, wanted, ran):
    """{family (module): [faults]} of the families of which faults were selected and none ran:
    dropped before the run (netfault.prepare: no root, no nft...) or, under --order each,
    never injected."""
    out = {}
    for m in mods:
        mine = [f for f in wanted if f in m.FAULTS]
        if mine and not any(f in ran for f in mine):
            out[m.__name__] = mine
    return out


def inject(ctx, faults, name, rnd):
    t = time.time()
    ctx.faulting = True  # the workload goes on while a fault lasts, even past ctx.until
    try:
        what = faults[name](ctx, rnd)
    finally:
        ctx.until = max(ctx.until, time.time() + ctx.tail)
        ctx.faulting = False
    ctx.windows.append({"fault": name, "what": what, "start": t, "end": time.time()})


def nemesis(ctx, faults, names, order, interval, rnd):
    if order == "each":
        # every fault once, spread over the run; the workload goes on until 10 s after the last
        # one ends, however long the faults take
        gap = max(2.0, (ctx.until - time.time() - 10) / (len(names) + 1))
        for name in names:
            if ctx.stop.wait(gap):
                return
            inject(ctx, faults, name, rnd)
        return
    # Random order, but from a shuffled deck: every fault comes once before any comes again.
    deck = []
    while not ctx.stop.wait(rnd.uniform(*interval)) and time.time() < ctx.until - 5:
        if not deck:
            deck = rnd.sample(names, len(names))
        inject(ctx, faults, deck.pop(), rnd)


def parse():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    env = os.environ.get
    ap.add_argument("--seconds", type=int, default=int(env("CHAOS_SECONDS", "180")))
    ap.add_argument("--nemesis", default=env("CHAOS_NEMESIS", "all"))
    ap.add_argument("--order", choices=("random", "each"), default=env("CHAOS_ORDER", "random"))
    ap.add_argument("--interval", default=env("CHAOS_INTERVAL", "3,6"),
                    help="seconds between faults: MIN,MAX (--order random)")
    ap.add_argument("--clients", type=int, default=int(env("CHAOS_CLIENTS", "12")))
    ap.add_argument("--pace", type=float, default=float(env("CHAOS_PACE", "0")),
                    help="mean pause in seconds between a client's operations")
    ap.add_argument("--bin-dir", default=env("MCPQ_BIN_DIR", ""))
    ap.add_argument("--port", type=int, default=int(env("CHAOS_PORT", "19180")))
    ap.add_argument("--soak", default=env("CHAOS_SOAK", ""),
                    help="directory for the soak samples and graph (report.py)")
    ap.add_argument("--env", action="append", default=[],
                    help="K=V for every component (scripts/mcpq-local --env), repeatable")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--seed", type=int, default=int(env("CHAOS_SEED", "0")) or None)
    return ap.parse_args()


def run(ctx, a, faults, names, kinds, seed):
    hist = workload.History()
    t0 = time.time()
    ctx.until = t0 + a.seconds
    threads = [threading.Thread(target=workload.client, name=f"c{i}",
                                args=(ctx, hist, kinds, random.Random(seed + i)))
               for i in range(a.clients)]
    if names:
        lo, hi = (float(x) for x in a.interval.split(","))
        threads.append(threading.Thread(target=nemesis, name="nemesis", args=(
            ctx, faults, names, a.order, (lo, hi), random.Random(seed))))
    sampler = report.Sampler(ctx, a.soak) if a.soak else None
    try:
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads):
            if not ctx.stack.alive():  # Redis or the broker died for good: no verdict
                ctx.died = ctx.stack.death()
                ctx.stop.set()
            threads[0].join(1)
        for t in threads:
            t.join()
    except KeyboardInterrupt:
        ctx.stop.set()
        for t in threads:
            t.join()
    if sampler:
        sampler.close()
    return hist, t0


def main():
    a = parse()
    mods, faults, kinds = load_modules()
    names = list(faults) if a.nemesis == "all" else [f for f in a.nemesis.split(",") if f]
    for f in names:
        if f not in faults and f != "none":
            sys.exit(f"chaos: unknown fault {f} (known: {', '.join(faults)}, none, all)")
    wanted = [f for f in names if f != "none"]
    names = netfault.prepare(wanted)  # may re-run in a netns
    seed = a.seed or random.randrange(1, 1 << 30)
    state = tempfile.mkdtemp(prefix="mcpq-chaos-")
    print(f"chaos: {a.seconds} s, {a.clients} clients, nemesis {names or 'none'} ({a.order}), "
          f"seed {seed}, state {state}", flush=True)
    ctx = Ctx(a, state)
    for kv in a.env:
        ctx.launcher_args += ["--env", kv]
    for m in mods:
        if hasattr(m, "setup"):
            m.setup(ctx)
    ctx.stack = stack.Stack(ctx)
    try:
        hist, t0 = run(ctx, a, faults, names, kinds, seed)
        repeats = 0
        if not ctx.died:
            for m in mods:
                if hasattr(m, "drain"):
                    m.drain(ctx, hist)
            repeats = workload.verify_repeats(ctx, hist)
    finally:
        ctx.stack.stop()
        for m in reversed(mods):
            if hasattr(m, "teardown"):
                m.teardown(ctx)
    if ctx.died:
        print("chaos: VOID: the stack stopped during the run, so there is no verdict:\n"
              + ctx.died + f"\nchaos: state kept in {state}", flush=True)
        return 2
    summary, problems = checker.check(hist, ctx.marks)
    for m in mods:
        if hasattr(m, "check"):
            extra, more = m.check(ctx, hist)
            for k, v in extra.items():
                summary[k] = summary.get(k, 0) + v
            problems += more
    summary["repeats_checked"] = repeats
    summary["faults"] = len(ctx.windows)
    summary["seed"] = seed
    ran = names if a.order == "random" else {w["fault"] for w in ctx.windows}
    skipped = skipped_families(mods, wanted, ran)
    ci = os.environ.get("CI", "").lower() not in ("", "0", "false", "no")
    failed = checker.verdict(summary, skipped, ci)
    for fam, faults in sorted(skipped.items()):
        problems.append(f"fault family {fam} did not run ({', '.join(faults)})"
                        + ("" if ci else "; fails the run under CI"))
    for w in ctx.windows:
        print(f"chaos: fault at +{w['start'] - t0:.1f}s ({w['end'] - w['start']:.1f}s): "
              f"{w['fault']} {w['what']}")
    problems.sort(key=lambda p: not p.startswith(("lost", "unexpected", "fault family")))
    for p in problems[:50]:
        print("chaos: " + p)
    if len(problems) > 50:
        print(f"chaos: ... {len(problems) - 50} more")
    table = report.per_fault(hist, ctx.windows)
    print(report.table_markdown(table))
    print("chaos: " + json.dumps(summary), flush=True)
    with open(os.path.join(state, "summary.json"), "w") as f:
        json.dump({"summary": summary, "per_fault": table}, f, indent=1)
    if a.soak:
        report.soak_report(a.soak, hist, t0)
    if not failed and not a.keep:
        shutil.rmtree(state, ignore_errors=True)
    else:
        print(f"chaos: state kept in {state}")
    if failed:
        print("chaos: FAILED: " + "; ".join(failed), flush=True)
    print(f"chaos: {summary['ops']} ops, lost {summary['lost']}, unexpected "
          f"{summary['unexpected']}, errors {summary['errors']}, duplicate executions "
          f"{summary['duplicate_executions']}, faults {summary['faults']}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
