"""The checker of the campaign (tests/chaos/chaos.py, docs/reliability.md) over the recorded
history. Per operation, its terminal outcome is a result that must be the op's own and come
from one of its executions (ok; else unexpected), a clear JSON-RPC error or a terminal task
state (error), or nothing although a server took the request (lost). Executions are counted
from the marker files of tests/chaos/mark.sh ($CHAOS_MARKS/<op>.<job id>.<run>, one per
execution), so duplicates are reported, not hidden, and an answer names the run that gave it
(`done <op> <run>`).

verdict() turns the summary into the run's failures: lost, unexpected, no operation that
succeeded, clear errors above the bound (MAX_ERROR_RATE), and, under CI, a family of faults
that could not run."""
import os

# Clear errors (a terminal JSON-RPC error, a task that ended failed) allowed per operation.
# Healthy runs on this machine (2 cores, shared) stay at or under 0.7% (the short form: tasks
# created while a broker is down, calls timed out through a rebalance; docs/reliability.md,
# "The checker"); 5% keeps a margin for a slower build (ASan) making fewer operations through
# the same faults. An oracle that let any
# number through would pass a gateway that refuses calls.
MAX_ERROR_RATE = float(os.environ.get("CHAOS_MAX_ERROR_RATE", "0.05"))


def executions(marks):
    """{op: [run, ...]}: one entry per marker file, i.e. per execution of the tool."""
    runs = {}
    for name in os.listdir(marks):
        parts = name.split(".")
        runs.setdefault(parts[0], []).append(parts[-1] if len(parts) >= 3 else "")
    return runs


def own_answer(o, text, runs):
    """None when text is op's own answer, else what is wrong with it. `done <op> <run>` must
    name one of op's executions; other expected answers ("cancelled") are compared as they
    are."""
    want = o.get("expect")
    if text == want:
        return None if not want.startswith("done ") else "an answer without its run"
    if want and text.startswith(want + " "):
        run = text[len(want) + 1:]
        return None if run in runs else f"run {run} left no marker (executions: {runs})"
    return f"got {text!r}, wanted {want!r}"


def check_op(op, o, runs, summary, problems):
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
        wrong = o["wrong"] = own_answer(o, out[1], runs)  # report.py counts it per fault
        if wrong:
            summary["unexpected"] += 1
            problems.append(f"unexpected: {op}: {wrong}")
        if not runs and o.get("executes", True):
            summary["unexpected"] += 1
            problems.append(f"unexpected: {op} answered but never executed")
        return
    summary["errors"] += 1
    problems.append(f"error (a clear answer, not a failure): {op} ({o['kind']}): {out[1]} "
                    f"after {o['attempts']} attempts, {len(runs)} executions")
    if out[1].startswith("-32003"):
        summary["timeouts"] += 1


def check(hist, marks):
    runs = executions(marks)
    summary = {"ops": 0, "ok": 0, "errors": 0, "timeouts": 0, "lost": 0, "unexpected": 0,
               "never_sent": 0, "retried": 0, "executions": sum(map(len, runs.values())),
               "duplicate_executions": 0}
    problems = []
    for op, o in sorted(hist.ops.items()):
        if o["kind"] is None:
            continue  # the run ended before the op was chosen
        summary["ops"] += 1
        summary["retried"] += o["attempts"] > 1
        mine = runs.get(op, [])
        summary["duplicate_executions"] += max(0, len(mine) - 1)
        o["executions"] = len(mine)
        check_op(op, o, mine, summary, problems)
    return summary, problems


def verdict(summary, skipped, ci):
    """The reasons the run fails (empty: it passes). skipped: {family: [faults]} of the
    families none of whose selected faults ran; they fail the run under CI only (a developer's
    machine may lack root for the network faults, CI must not)."""
    why = []
    if summary["lost"]:
        why.append(f"{summary['lost']} lost")
    if summary["unexpected"]:
        why.append(f"{summary['unexpected']} unexpected")
    if summary["ok"] == 0:
        why.append("no operation succeeded")
    rate = summary["errors"] / summary["ops"] if summary["ops"] else 0.0
    summary["error_rate"] = round(rate, 4)
    if rate > MAX_ERROR_RATE:
        why.append(f"clear errors {summary['errors']} of {summary['ops']} operations "
                   f"({100 * rate:.1f}%) above the bound of {100 * MAX_ERROR_RATE:g}% "
                   "(CHAOS_MAX_ERROR_RATE)")
    for fam, faults in sorted(skipped.items()):
        if ci:
            why.append(f"fault family {fam} skipped under CI ({', '.join(faults)})")
    return why
