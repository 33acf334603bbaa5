"""Figures of the campaign (tests/chaos/chaos.py, docs/reliability.md): the per-fault table
and the soak's samples and graph.

Per fault kind, over the operations in flight during one of its windows (from the fault's
start to 5 s after its end): operations, ok, clear errors, lost, unexpected, duplicate
executions, p99 latency (first request to terminal outcome, retries included) and the time to
recover: from the fault's start until the last of those operations that felt it (retried, or
slower than twice the no-fault p99) ended; the largest over the kind's windows."""
import os
import time

GRACE = 5.0


def pct(values, p):
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))]


def latency(o):
    return (o["end"] - o["start"]) if o["end"] else None


def overlaps(o, w):
    end = o["end"] or float("inf")
    return o["start"] <= w["end"] + GRACE and end >= w["start"]


def ops_of(hist):
    return [o for o in hist.ops.values() if o["kind"] is not None]


def baseline_p99(ops, windows):
    calm = [latency(o) for o in ops
            if o["end"] and o["outcome"] and not any(overlaps(o, w) for w in windows)]
    return pct(calm, 99)


def row(ops, wins, calm99):
    r = {"windows": len(wins), "ops": len(ops), "ok": 0, "errors": 0, "lost": 0,
         "unexpected": 0, "duplicate_executions": 0}
    for o in ops:
        out = o["outcome"]
        if out is None:
            r["lost"] += bool(o["accepted"])
        elif out[0] == "ok":
            r["ok"] += 1
            r["unexpected"] += out[1] != o.get("expect")
        else:
            r["errors"] += 1
        r["unexpected"] += len(o.get("unexpected", []))
        r["duplicate_executions"] += max(0, o.get("executions", 0) - 1)
    lat = [latency(o) for o in ops if latency(o) is not None]
    r["p99_s"] = round(pct(lat, 99), 2) if lat else None
    rec = 0.0
    for w in wins:
        felt = [o["end"] for o in ops if overlaps(o, w) and o["end"] and (
            o["attempts"] > 1 or (calm99 and latency(o) > 2 * calm99))]
        if felt:
            rec = max(rec, max(felt) - w["start"])
    r["recover_s"] = round(rec, 1)
    return r


def per_fault(hist, windows):
    ops = ops_of(hist)
    calm99 = baseline_p99(ops, windows)
    table = {}
    for kind in sorted({w["fault"] for w in windows}):
        wins = [w for w in windows if w["fault"] == kind]
        table[kind] = row([o for o in ops if any(overlaps(o, w) for w in wins)], wins, calm99)
    table["(no fault)"] = row([o for o in ops if not any(overlaps(o, w) for w in windows)],
                              [], calm99)
    table["(all)"] = row(ops, windows, calm99)
    return table


COLS = ("windows", "ops", "ok", "errors", "lost", "unexpected", "duplicate_executions",
        "p99_s", "recover_s")
HEAD = ("fault", "times", "operations", "succeeded", "clear error", "lost", "unexpected",
        "duplicate executions", "p99 (s)", "time to recover (s)")


def table_markdown(table):
    lines = ["| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    for kind, r in table.items():
        lines.append("| " + " | ".join([f"`{kind}`" if kind[0] != "(" else kind]
                                       + ["" if r[c] is None else str(r[c]) for c in COLS]) + " |")
    return "\n".join(lines)


class Sampler:
    """The soak's sampler; see soak_report."""

    def __init__(self, ctx, out):
        self.ctx, self.out = ctx, out

    def close(self):
        pass


def soak_report(out, hist, t0):
    pass
