#!/usr/bin/env python3
"""chaos.py - the fault campaign: a multi-replica mcpq stack on loopback, a client workload for
CHAOS_SECONDS while a nemesis kills and freezes its processes, and a checker over the
recorded history (docs/reliability.md).

    tests/chaos/chaos.py [--seconds N] [--nemesis LIST] [--bin-dir DIR] [--keep]

The stack is scripts/mcpq-local with 2 ingresses, 3 workers and Redis with an append-only
file; the launcher restarts a killed ingress or worker under the same name, as Kubernetes
does. The workload: client threads call tests/chaos/mark.sh through a random ingress, short
(0-50 ms) and slow (0.5-3 s) calls, every one with an idempotency_key; a client that gets a
network error or a timeout retries the same key on another ingress, as a real client would,
until its own deadline. Each execution of the tool leaves a marker file, so duplicate
executions are counted, not hidden.

Nemesis faults (--nemesis, comma separated; default all of them, one every few seconds):
  kill-worker     kill -9 of a worker in the middle of its jobs
  kill-ingress    kill -9 of an ingress while calls wait on it
  term-rolling    SIGTERM of every ingress and worker in turn (a rollout)
  freeze-redis    SIGSTOP of Redis for longer than the command timeout, then SIGCONT

Checker, per operation (one idempotency key): its terminal outcome is a result that names
its own op (ok), a clear JSON-RPC error (error; -32603 "try again" and -32003 are retried
with the same key until the client's deadline, and the last one is the outcome: a -32003
that the stored record keeps answering is the op's end, a timeout), or nothing before the
client gave up (lost: accepted at least once, never answered). lost = 0 and unexpected = 0 (a result naming
another op) are required; executions per op (marker files) are reported. Exit 1 otherwise.
"""
import argparse
import http.client
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KEY = "chaos-key"
FAULTS = ("kill-worker", "kill-ingress", "term-rolling", "freeze-redis")


def config(marks):
    tool = os.path.join(REPO, "tests/chaos/mark.sh")
    return {
        "tenants": [{"id": "chaos", "api_keys": [{"id": "k", "key": KEY}],
                     "default_server": "default"}],
        "servers": [{"tenant": "chaos", "name": "default"}],
        "tools": [{
            "tenant": "chaos", "server": "default", "name": "mark", "published": "1",
            "versions": [{
                "version": "1", "timeout_ms": 30000, "mode": "sync",
                "inputSchema": {"type": "object", "required": ["op"],
                                "properties": {"op": {"type": "string"},
                                               "ms": {"type": "integer"}}},
                "executor": {"type": "exec", "argv": ["/bin/sh", tool],
                             "env": {"CHAOS_MARKS": marks}}}]}]}


class Stack:
    """scripts/mcpq-local with its state dir; components found by their pid files."""

    def __init__(self, state, port, bin_dir):
        self.state, self.port = state, port
        cfg = os.path.join(state, "chaos.json")
        self.marks = os.path.join(state, "marks")
        os.makedirs(self.marks, exist_ok=True)
        with open(cfg, "w") as f:
            json.dump(config(self.marks), f)
        self.log = open(os.path.join(state, "launcher.log"), "ab")
        args = [os.path.join(REPO, "scripts/mcpq-local"), "--port", str(port), "--ingresses", "2",
                "--workers", "3", "--redis-persist", "--config", cfg, "--state-dir", state,
                "--env", "MCPQ_REDIS_TIMEOUT_MS=2000", "--env", "MCPQ_LOG_LEVEL=warn"]
        if bin_dir:
            args += ["--bin-dir", bin_dir]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.log, cwd=REPO)
        line = self.proc.stdout.readline().decode().strip()
        if not line.startswith("READY"):
            raise RuntimeError("the stack did not start: " + line)

    def pid(self, name):
        try:
            with open(os.path.join(self.state, name + ".pid")) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            return 0

    def signal(self, name, sig):
        p = self.pid(name)
        if p > 0:
            try:
                os.kill(p, sig)
                return True
            except ProcessLookupError:
                pass
        return False

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


class History:
    def __init__(self):
        self.lock = threading.Lock()
        self.ops = {}

    def record(self, op, **kw):
        with self.lock:
            self.ops.setdefault(op, {"attempts": 0, "accepted": False, "outcome": None})
            o = self.ops[op]
            for k, v in kw.items():
                if k == "attempts":
                    o["attempts"] += v
                else:
                    o[k] = v


def call_once(port, op, ms, timeout):
    """One attempt: ('ok', text) | ('error', message) | ('retry', why). A connection that
    sent the whole request counts as accepted when it fails later."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": "mark",
                                  "arguments": {"op": op, "ms": ms, "idempotency_key": op}}})
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    sent = False
    try:
        conn.request("POST", "/mcp", body, {
            "Authorization": "Bearer " + KEY, "Content-Type": "application/json",
            "Accept": "application/json", "MCP-Protocol-Version": "2025-06-18"})
        sent = True
        r = conn.getresponse()
        data = r.read()
        if r.status in (429, 502, 503, 504):
            return "retry", f"HTTP {r.status}", sent
        msg = json.loads(data)
        if "result" in msg:
            res = msg["result"]
            text = "".join(b.get("text", "") for b in res.get("content", []))
            if res.get("isError"):
                return "retry", "tool error: " + text[:120], sent
            return "ok", text.strip(), sent
        err = msg.get("error", {})
        # A clear JSON-RPC error the client saw; -32603 "try again" and -32003 (the wait or the
        # job timed out) are tried again with the same key, the others are final.
        code = err.get("code")
        what = f"{code} {err.get('message', '')[:120]}"
        return ("rpc-retry" if code in (-32603, -32003) else "error"), what, sent
    except (OSError, http.client.HTTPException, ValueError) as e:
        return "retry", type(e).__name__ + ": " + str(e)[:80], sent
    finally:
        conn.close()


def client(stack, hist, until, rnd, stop):
    n = 0
    while time.time() < until and not stop.is_set():
        n += 1
        op = f"{threading.current_thread().name}-{n}"
        ms = rnd.randint(500, 3000) if rnd.random() < 0.3 else rnd.randint(0, 50)
        deadline = time.time() + 90  # how long this client keeps trying one op
        hist.record(op)
        while time.time() < deadline:
            port = stack.port + rnd.randint(0, 1)
            kind, what, sent = call_once(port, op, ms, timeout=40)
            hist.record(op, attempts=1)
            if sent:
                hist.record(op, accepted=True)
            if kind == "ok":
                hist.record(op, outcome=("ok", what))
                break
            if kind == "error":
                hist.record(op, outcome=("error", what))
                break
            if kind == "rpc-retry":
                hist.record(op, last_error=what)
            hist.record(op, last_retry=what)
            time.sleep(0.2 + rnd.random() * 0.5)
        else:
            # Out of time: the last clear JSON-RPC error the client saw is its outcome; with
            # none, an accepted op is lost (the checker decides).
            last = hist.ops[op].get("last_error")
            if last:
                hist.record(op, outcome=("error", last))


def nemesis(stack, faults, until, rnd, log, stop):
    while time.time() < until - 5 and not stop.is_set():
        time.sleep(rnd.uniform(3, 6))
        f = rnd.choice(faults)
        t = time.time()
        if f == "kill-worker":
            w = f"worker-{rnd.randint(0, 2)}"
            stack.signal(w, signal.SIGKILL)
            log.append((t, f, w))
        elif f == "kill-ingress":
            i = f"ingress-{rnd.randint(0, 1)}"
            stack.signal(i, signal.SIGKILL)
            log.append((t, f, i))
        elif f == "term-rolling":
            for name in ("ingress-0", "worker-0", "ingress-1", "worker-1", "worker-2"):
                stack.signal(name, signal.SIGTERM)
                time.sleep(2)
            log.append((t, f, "all"))
        elif f == "freeze-redis":
            secs = rnd.uniform(2.5, 5)
            if stack.signal("redis", signal.SIGSTOP):
                time.sleep(secs)
                stack.signal("redis", signal.SIGCONT)
            log.append((t, f, f"{secs:.1f}s"))


def executions(marks):
    counts = {}
    for name in os.listdir(marks):
        op = name.rsplit(".", 1)[0]
        counts[op] = counts.get(op, 0) + 1
    return counts


def check(hist, marks):
    runs = executions(marks)
    summary = {"ops": 0, "ok": 0, "errors": 0, "timeouts": 0, "lost": 0, "unexpected": 0, "never_sent": 0,
               "retried": 0, "executions": sum(runs.values()), "duplicate_executions": 0,
               "not_executed_ok": 0}
    problems = []
    for op, o in sorted(hist.ops.items()):
        summary["ops"] += 1
        summary["retried"] += o["attempts"] > 1
        n = runs.get(op, 0)
        summary["duplicate_executions"] += max(0, n - 1)
        out = o["outcome"]
        if out is None:
            if o["accepted"]:
                summary["lost"] += 1
                problems.append(f"lost: {op} ({o['attempts']} attempts, last: "
                                f"{o.get('last_retry')})")
            else:
                summary["never_sent"] += 1
        elif out[0] == "ok":
            summary["ok"] += 1
            if out[1] != f"done {op}":
                summary["unexpected"] += 1
                problems.append(f"unexpected: {op} got {out[1]!r}")
            if n == 0:
                summary["not_executed_ok"] += 1
                problems.append(f"unexpected: {op} answered but never executed")
        else:
            summary["errors"] += 1
            problems.append(f"error (a clear answer, not a failure): {op}: {out[1]} after "
                            f"{o['attempts']} attempts, {n} executions")
            if out[1].startswith("-32003"):
                summary["timeouts"] += 1
    return summary, problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=int, default=int(os.environ.get("CHAOS_SECONDS", "180")))
    ap.add_argument("--nemesis", default=os.environ.get("CHAOS_NEMESIS", ",".join(FAULTS)))
    ap.add_argument("--clients", type=int, default=int(os.environ.get("CHAOS_CLIENTS", "12")))
    ap.add_argument("--bin-dir", default=os.environ.get("MCPQ_BIN_DIR", ""))
    ap.add_argument("--port", type=int, default=int(os.environ.get("CHAOS_PORT", "19180")))
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--seed", type=int, default=int(os.environ.get("CHAOS_SEED", "0")) or None)
    a = ap.parse_args()
    faults = [f for f in a.nemesis.split(",") if f]
    for f in faults:
        if f not in FAULTS and f != "none":
            sys.exit(f"chaos: unknown fault {f} (known: {', '.join(FAULTS)}, none)")
    faults = [f for f in faults if f != "none"]
    seed = a.seed or random.randrange(1, 1 << 30)
    state = tempfile.mkdtemp(prefix="mcpq-chaos-")
    print(f"chaos: {a.seconds} s, {a.clients} clients, nemesis {faults or 'none'}, seed {seed}, "
          f"state {state}", flush=True)
    stack = Stack(state, a.port, a.bin_dir)
    hist, log, stop = History(), [], threading.Event()
    until = time.time() + a.seconds
    threads = [threading.Thread(target=client, name=f"c{i}",
                                args=(stack, hist, until, random.Random(seed + i), stop))
               for i in range(a.clients)]
    if faults:
        threads.append(threading.Thread(target=nemesis, name="nemesis",
                                        args=(stack, faults, until, random.Random(seed), log,
                                              stop)))
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    except KeyboardInterrupt:
        stop.set()
        for t in threads:
            t.join()
    stack.stop()
    summary, problems = check(hist, stack.marks)
    summary["faults"] = len(log)
    summary["seed"] = seed
    for t, f, what in log:
        print(f"chaos: fault at +{t - (until - a.seconds):.1f}s: {f} {what}")
    for p in problems[:50]:
        print("chaos: " + p)
    if len(problems) > 50:
        print(f"chaos: ... {len(problems) - 50} more")
    print("chaos: " + json.dumps(summary), flush=True)
    with open(os.path.join(state, "summary.json"), "w") as f:
        json.dump(summary, f)
    ok = summary["lost"] == 0 and summary["unexpected"] == 0 and summary["ok"] > 0
    if ok and not a.keep:
        shutil.rmtree(state, ignore_errors=True)
    else:
        print(f"chaos: state kept in {state}")
    print(f"chaos: {'ok' if ok else 'FAILED'}: {summary['ops']} operations, lost "
          f"{summary['lost']}, unexpected {summary['unexpected']}, duplicate executions "
          f"{summary['duplicate_executions']}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
