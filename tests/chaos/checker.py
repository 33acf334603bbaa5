"""The checker of the campaign (tests/chaos/chaos.py, docs/reliability.md) over the recorded
history. Per operation, its terminal outcome is a result that must be the op's own (ok; else
unexpected), a clear JSON-RPC error or a terminal task state (error), or nothing although a
server took the request (lost). Executions are counted from the marker files of
tests/chaos/mark.sh ($CHAOS_MARKS/<op>.<job id>), so duplicates are reported, not hidden."""
import os


def executions(marks):
    counts = {}
    for name in os.listdir(marks):
        op = name.rsplit(".", 1)[0]
        counts[op] = counts.get(op, 0) + 1
    return counts


def check_op(op, o, n, summary, problems):
    for u in o.get("unexpected", []):  # seen by the op itself, e.g. a task state going back
        summary["unexpected"] += 1
        problems.append(f"unexpected: {op}: {u}")
    out = o["outcome"]
    if out is None:
        if o["accepted"]:
            summary["lost"] += 1
            problems.append(f"lost: {op} ({o['kind']}, {o['attempts']} attempts, last: "
                            f"{o.get('last_retry')})")
        else:
            summary["never_sent"] += 1
        return
    if out[0] == "ok":
        summary["ok"] += 1
        if out[1] != o.get("expect"):
            summary["unexpected"] += 1
            problems.append(f"unexpected: {op} got {out[1]!r}, wanted {o.get('expect')!r}")
        if n == 0 and o.get("executes", True):
            summary["unexpected"] += 1
            problems.append(f"unexpected: {op} answered but never executed")
        return
    summary["errors"] += 1
    problems.append(f"error (a clear answer, not a failure): {op} ({o['kind']}): {out[1]} "
                    f"after {o['attempts']} attempts, {n} executions")
    if out[1].startswith("-32003"):
        summary["timeouts"] += 1


def check(hist, marks):
    runs = executions(marks)
    summary = {"ops": 0, "ok": 0, "errors": 0, "timeouts": 0, "lost": 0, "unexpected": 0,
               "never_sent": 0, "retried": 0, "executions": sum(runs.values()),
               "duplicate_executions": 0}
    problems = []
    for op, o in sorted(hist.ops.items()):
        if o["kind"] is None:
            continue  # the run ended before the op was chosen
        summary["ops"] += 1
        summary["retried"] += o["attempts"] > 1
        n = runs.get(op, 0)
        summary["duplicate_executions"] += max(0, n - 1)
        o["executions"] = n
        check_op(op, o, n, summary, problems)
    return summary, problems
