"""The client workload (tests/chaos/chaos.py): client threads that each run one operation after
another until the run ends, every operation recorded in a History with its times and outcome.

An operation kind is a function run(ctx, hist, op, rnd) that drives one operation to its end
(retrying as a real client would) and records it: hist.record(op, ...) with accepted=True
once a request reached a server, outcome=("ok", text) | ("error", message) at the end, and
expect=text, the result it must have. Kinds are weighted; fault modules add theirs through a
WORKLOAD table {name: (weight, run)}. The built-in kind, "sync", is a synchronous tools/call
of tests/chaos/mark.sh with an idempotency_key, short (0-50 ms) or slow (0.5-3 s)."""
import http.client
import json
import threading
import time

import checker
from stack import KEY

RETRY_FOR = 90  # seconds a client keeps trying one operation


class History:
    def __init__(self):
        self.lock = threading.Lock()
        self.ops = {}

    def record(self, op, **kw):
        with self.lock:
            o = self.ops.setdefault(op, {"attempts": 0, "accepted": False, "outcome": None,
                                         "start": time.time(), "end": None, "kind": None})
            for k, v in kw.items():
                if k == "attempts":
                    o["attempts"] += v
                else:
                    o[k] = v
            if "outcome" in kw and o["end"] is None:
                o["end"] = time.time()

    def get(self, op, key, default=None):
        with self.lock:
            return self.ops.get(op, {}).get(key, default)


def post(port, body, timeout, headers=None, path="/mcp"):
    """One HTTP POST of a JSON-RPC message: (status, parsed body or None, sent). sent tells
    whether the whole request went out before a failure (then the server may have taken it).
    Raises nothing: a network error is status 0."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    sent = False
    h = {"Authorization": "Bearer " + KEY, "Content-Type": "application/json",
         "Accept": "application/json", "MCP-Protocol-Version": "2025-06-18"}
    h.update(headers or {})
    try:
        conn.request("POST", path, json.dumps(body), h)
        sent = True
        r = conn.getresponse()
        data = r.read()
        try:
            return r.status, json.loads(data), sent
        except ValueError:
            return r.status, None, sent
    except (OSError, http.client.HTTPException) as e:
        return 0, type(e).__name__ + ": " + str(e)[:80], sent
    finally:
        conn.close()


def classify(status, msg):
    """('ok', text) | ('error', what) final | ('rpc-retry', what) | ('retry', why)."""
    if status == 0:
        return "retry", msg
    if status in (429, 502, 503, 504) or not isinstance(msg, dict):
        return "retry", f"HTTP {status}"
    if "result" in msg:
        res = msg["result"]
        text = "".join(b.get("text", "") for b in res.get("content", []))
        if res.get("isError"):
            return "retry", "tool error: " + text[:120]
        return "ok", text.strip()
    err = msg.get("error", {})
    # A clear JSON-RPC error; -32603 "try again" and -32003 (the wait or the job timed out)
    # are tried again with the same key, the others are final.
    code = err.get("code")
    what = f"{code} {err.get('message', '')[:120]}"
    return ("rpc-retry" if code in (-32603, -32003) else "error"), what


def tools_call(name, args, rid=1):
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": name, "arguments": args}}


def run_sync(ctx, hist, op, rnd):
    ms = rnd.randint(500, 3000) if rnd.random() < 0.3 else rnd.randint(0, 50)
    args = {"op": op, "ms": ms, "idempotency_key": op}
    hist.record(op, kind="sync" if ms <= 50 else "sync-slow", expect=f"done {op}", ms=ms,
                call={"tool": "mark", "args": args})
    deadline = time.time() + RETRY_FOR
    while time.time() < deadline and not ctx.stop.is_set():
        port = ctx.port + rnd.randint(0, ctx.ingresses - 1)
        status, msg, sent = post(port, tools_call("mark", args), 40)
        kind, what = classify(status, msg)
        hist.record(op, attempts=1)
        if sent:
            hist.record(op, accepted=True)
        if kind in ("ok", "error"):
            hist.record(op, outcome=(kind, what))
            return
        if kind == "rpc-retry":
            hist.record(op, last_error=what)
        hist.record(op, last_retry=what)
        time.sleep(0.2 + rnd.random() * 0.5)
    # Out of time: the last clear JSON-RPC error the client saw is its outcome; with none, an
    # accepted op is lost (the checker decides).
    last = hist.get(op, "last_error")
    if last:
        hist.record(op, outcome=("error", last))


def repeat_one(ctx, hist, op, o):
    """Sends op's call once more with its key: 1 when the answer could be judged, 0 when the
    stack could not answer now (no verdict). A synchronous op must get its first answer back,
    `done <op> <run>` of the same run; an op that became a task must get the same TaskId."""
    c = o["call"]
    status, msg, _ = post(ctx.port, tools_call(c["tool"], c["args"]), 40,
                          headers=c.get("headers"))
    kind, what = classify(status, msg)
    if kind in ("retry", "rpc-retry") and not (isinstance(msg, dict) and "result" in msg):
        print(f"chaos: repeat of {op}: no verdict ({what})", flush=True)
        return 0
    if o.get("task_id"):
        sc = (msg.get("result") or {}).get("structuredContent") or {}
        if sc.get("TaskId") != o["task_id"]:
            wrong = f"task {sc.get('TaskId')} ({kind} {what!r})"
        else:
            return 1
    elif (kind, what) != tuple(o["outcome"]):
        wrong = f"{kind} {what!r}"
    else:
        return 1
    hist.record(op, unexpected=o.get("unexpected", []) + [
        f"a repeat with the same idempotency_key got {wrong}, the first answer was "
        f"{o.get('task_id') or o['outcome'][1]!r}"])
    return 1


def verify_repeats(ctx, hist, limit=400):
    """After the run: each op that succeeded is called once more with its key (at most limit
    synchronous ops and limit ops whose task a client saw ended). The answer must be the first
    one (the same run of the tool, or the same task), and the tool must not run again: an
    execution added while the repeats ran is unexpected. Returns how many were checked."""
    sync = [(op, o) for op, o in hist.ops.items()
            if o["kind"] in ("sync", "sync-slow") and o.get("call") and o["outcome"]
            and o["outcome"][0] == "ok"]
    # tasks seen ended: a task still running would add its execution during the pass
    tasks = [(op, o) for op, o in hist.ops.items() if o.get("task_id") and o.get("call")
             and o.get("task_state") in ("completed", "failed", "cancelled")]
    ops = sync[:limit] + tasks[:limit]
    checked = [0] * 4
    before = {op: len(runs) for op, runs in checker.executions(ctx.marks).items()}

    def worker(i):
        for op, o in ops[i::4]:
            checked[i] += repeat_one(ctx, hist, op, o)
    ts = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    after = checker.executions(ctx.marks)
    for op, _ in ops:
        n, was = len(after.get(op, [])), before.get(op, 0)
        if n > was:
            hist.record(op, unexpected=hist.get(op, "unexpected", []) + [
                f"the repeat pass ran the tool again ({was} executions before it, {n} after)"])
    return sum(checked)


def client(ctx, hist, kinds, rnd):
    names = sorted(kinds)
    weights = [kinds[k][0] for k in names]
    n = 0
    while (time.time() < ctx.until or ctx.faulting) and not ctx.stop.is_set():
        n += 1
        op = f"{threading.current_thread().name}-{n}"
        kind = rnd.choices(names, weights)[0]
        hist.record(op)
        kinds[kind][1](ctx, hist, op, rnd)
        if ctx.pace:
            time.sleep(rnd.uniform(0, 2 * ctx.pace))


WORKLOAD = {"sync": (6, run_sync)}
