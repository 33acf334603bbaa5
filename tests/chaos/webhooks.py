"""Task-mode calls that end by webhook, and webhook receiver faults (tests/chaos/chaos.py).

setup(ctx) starts the receiver, a Python http.server on 127.0.0.1 that verifies every
delivery's Standard Webhooks signature (docs/signatures.md, "Standard Webhooks") and records
each one by task id, and gives the stack a task-mode tool (docs/protocol.md, "Task mode"), an
admin token and a short retry schedule (MCPQ_WEBHOOK_RETRY_SCHEDULE; docs/webhooks.md). Once
the stack is up, a thread subscribes the tenant to every task event through the admin API
(docs/api.md "Administration: the admin API"), as an operator would at run time.

WORKLOAD: "task" (a task-mode tools/call with an idempotency_key, retried with the same key on
a random ingress; then tasks/get until terminal, tasks/result for the result) and "cancel" (a
slow task cancelled with tasks/cancel after a short random delay; cancelled or completed are
both right). A second task id for one key, or a terminal state that changes, is unexpected
(running back to waiting is not: a task whose worker died runs again; the 2025-11-25 surface
shows both as "working").

FAULTS, each longer than several retry intervals, then recovery: hook-refuse (the receiver's
socket closed: connection refused), hook-500, hook-slow (answers after the gateway's 15 s
webhook timeout, ING_WH_TIMEOUT_MS) and hook-hang (accepts, never answers until the fault
ends); hook-hang-kill and hook-hang-term are hook-hang with an ingress sent SIGKILL or SIGTERM
in the middle, while it holds hung attempts.

drain(ctx, hist), after the workload and before the stack stops, waits (at most DRAIN_S) until
every task a client saw terminal has its terminal event delivered; check(ctx, hist) reports
webhook_deliveries, webhook_duplicates (the same webhook-id accepted twice), webhook_lost (a
task the client saw terminal whose terminal event never arrived; also counted as lost),
webhook_failed (deliveries the gateway gave up on: failed or disabled; a figure, since the
gateway shows them and they can be redelivered) and bad signatures or events that disagree
with the task's state (unexpected)."""
import base64
import hashlib
import hmac
import http.client
import http.server
import json
import os
import signal
import socket
import threading
import time
import urllib.parse

from stack import TENANT, KEY, mark_tool
from workload import RETRY_FOR, post, tools_call

TOOL = "mark_task"
HOOK_ID = "chaos-hook"
EVENTS = ["task.running", "task.completed", "task.terminated", "task.cancelled"]
# Seconds before each attempt: many short intervals, so an outage of 15-35 s spans several
# of them without using the schedule up (32 entries, the most ING_WH_SCHEDULE_MAX allows).
SCHEDULE = ",".join(["0", "1", "2", "3"] + ["5"] * 28)
GATEWAY_TIMEOUT_S = 15  # ING_WH_TIMEOUT_MS (ingress/core/webhook.h): not a setting
DRAIN_S = 75  # a killed ingress holds its claims 60 s (docs/webhooks.md, "Delivery")
TERMINAL = {"completed": "task.completed", "failed": "task.terminated",
            "cancelled": "task.cancelled"}
STATUS_OF_EVENT = {"task.running": "running", "task.completed": "complete",
                   "task.terminated": "terminated", "task.cancelled": "cancelled"}
TASKS_VERSION = {"MCP-Protocol-Version": "2025-11-25"}


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_port = True


class Receiver:
    """The tenant's webhook endpoint. mode: ok | 500 | slow | hang | refuse (socket closed)."""

    def __init__(self, secret):
        self.key = base64.b64decode(secret[len("whsec_"):])
        self.lock = threading.Lock()
        self.mode = "ok"
        self.release = threading.Event()  # ends the hung requests
        self.by_task = {}  # task id -> [{"id", "type", "status", "at"}] of accepted deliveries
        self.seen_ids = {}  # webhook-id -> times accepted
        self.bad = []  # what was wrong with each delivery that did not verify
        self.attempts = {}  # mode -> attempts that reached the receiver
        self.srv = self.reserve = None
        self.port = 0
        self.listen()

    def listen(self):
        rcv = self

        class Hook(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                rcv.handle(self)

        srv = Server(("127.0.0.1", self.port), Hook)
        self.port = srv.server_address[1]
        self.srv = srv
        if not self.reserve:
            # Bound, never listening: keeps the port ours while the listener is closed
            # (hook-refuse), so the kernel refuses connections and no one else takes it.
            self.reserve = socket.socket()
            self.reserve.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.reserve.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            self.reserve.bind(("127.0.0.1", self.port))
        threading.Thread(target=srv.serve_forever, name="hook", daemon=True).start()

    def close(self):
        srv, self.srv = self.srv, None
        if srv:
            srv.shutdown()
            srv.server_close()

    def shutdown(self):
        self.release.set()
        self.close()
        if self.reserve:
            self.reserve.close()

    def set_mode(self, mode):
        with self.lock:
            if mode == "refuse" and self.srv:
                self.close()
            elif mode != "refuse" and not self.srv:
                self.listen()
            if mode == "hang":
                self.release.clear()
            self.mode = mode
        if mode != "hang":
            self.release.set()

    def verify(self, h, body):
        """None when the delivery is signed right, else what is wrong."""
        msg_id, ts, sig = (h.headers.get(k) for k in ("webhook-id", "webhook-timestamp",
                                                        "webhook-signature"))
        if not msg_id or not ts or not sig:
            return "missing Standard Webhooks headers"
        try:
            if abs(time.time() - int(ts)) > 300:
                return f"webhook-timestamp {ts} more than 5 minutes off"
        except ValueError:
            return f"webhook-timestamp {ts!r} is not a number"
        mac = hmac.new(self.key, f"{msg_id}.{ts}.".encode() + body, hashlib.sha256).digest()
        want = base64.b64encode(mac).decode()
        if not any(s.startswith("v1,") and hmac.compare_digest(want, s[3:])
                   for s in sig.split()):
            return f"webhook-signature does not verify ({msg_id})"
        return None

    def handle(self, h):
        body = h.rfile.read(int(h.headers.get("Content-Length") or 0))
        with self.lock:
            mode = self.mode
            self.attempts[mode] = self.attempts.get(mode, 0) + 1
        wrong = self.verify(h, body)
        if wrong:
            with self.lock:
                self.bad.append(wrong)
            h.send_response(401)
            h.end_headers()
            return
        if mode == "500":
            h.send_response(500)
            h.end_headers()
            return
        if mode == "hang":
            self.release.wait()
            return  # closes the connection without an answer
        if mode == "slow":
            time.sleep(GATEWAY_TIMEOUT_S + 2)
        try:
            ev = json.loads(body)
            task, status = ev["data"]["TaskId"], ev["data"]["TaskStatus"]
            kind = ev["type"]
        except (ValueError, KeyError, TypeError):
            with self.lock:
                self.bad.append("body is not a task event: " + body[:80].decode("utf-8", "replace"))
            h.send_response(400)
            h.end_headers()
            return
        # The receiver takes it (a slow answer too: the gateway gave up, so it sends it again,
        # which is a duplicate the receiver must drop by webhook-id).
        with self.lock:
            msg_id = h.headers["webhook-id"]
            self.seen_ids[msg_id] = self.seen_ids.get(msg_id, 0) + 1
            if self.seen_ids[msg_id] == 1:
                self.by_task.setdefault(task, []).append(
                    {"id": msg_id, "type": kind, "status": status, "at": time.time()})
            if STATUS_OF_EVENT.get(kind) != status:
                self.bad.append(f"{msg_id}: event {kind} with TaskStatus {status}")
        try:
            h.send_response(204)
            h.end_headers()
        except OSError:
            pass

    def first(self, task, kind):
        """When the receiver first accepted task's event kind, or None."""
        with self.lock:
            return next((d["at"] for d in self.by_task.get(task, []) if d["type"] == kind), None)

    def events(self, task):
        with self.lock:
            return [d["type"] for d in self.by_task.get(task, [])]


# ---------------------------------------------------------------- setup

def setup(ctx):
    secret = "whsec_" + base64.b64encode(os.urandom(32)).decode()
    ctx.hooks = Receiver(secret)
    ctx.hooks_secret = secret
    ctx.hooks_ready = threading.Event()
    ctx.hooks_error = None
    ctx.hooks_missing = {}
    if not any(a.startswith("MCPQ_ADMIN_TOKEN=") for a in ctx.launcher_args):
        ctx.launcher_args += ["--env", "MCPQ_ADMIN_TOKEN=chaos-admin-" + os.urandom(8).hex()]
    ctx.launcher_args += ["--env", "MCPQ_WEBHOOK_RETRY_SCHEDULE=" + SCHEDULE]
    # A task's job id is its task id on every run; mark.sh's marker carries the run's own id,
    # so a second run of one task is a second marker, counted as a duplicate.
    ctx.tools.append(mark_tool(ctx.marks, name=TOOL, mode="task"))
    threading.Thread(target=subscribe, args=(ctx,), name="hook-subscribe", daemon=True).start()


def admin_token(ctx):
    tok = None
    for a in ctx.launcher_args:
        if a.startswith("MCPQ_ADMIN_TOKEN="):
            tok = a.split("=", 1)[1]
    return tok


def subscribe(ctx):
    """POST the webhook through the admin API once the stack is up (retried for 2 minutes)."""
    deadline = time.time() + 120
    while ctx.stack is None and time.time() < deadline and not ctx.stop.is_set():
        time.sleep(0.1)
    body = {"id": HOOK_ID, "url": f"http://127.0.0.1:{ctx.hooks.port}/hook",
            "secret": ctx.hooks_secret, "events": EVENTS}
    h = {"Authorization": "Bearer " + admin_token(ctx)}
    last = "the stack did not start"
    while time.time() < deadline and not ctx.stop.is_set():
        status, msg, _ = post(ctx.port, body, 10, headers=h,
                              path=f"/admin/v1/tenants/{TENANT}/webhooks")
        if status in (201, 409):
            # Each replica sends with its registry snapshot, which follows within 1 s.
            time.sleep(1.5)
            ctx.hooks_ready.set()
            return
        last = f"HTTP {status}: {msg}"
        time.sleep(0.5)
    ctx.hooks_error = "webhook subscription failed: " + last
    ctx.hooks_ready.set()


def teardown(ctx):
    ctx.hooks.shutdown()


# ---------------------------------------------------------------- workload

def rpc(ctx, rnd, method, params, timeout=10):
    """One JSON-RPC request to a random ingress: ('ok', result) | ('error', error) |
    ('retry', why) and whether the request went out."""
    port = ctx.port + rnd.randint(0, ctx.ingresses - 1)
    status, msg, sent = post(port, {"jsonrpc": "2.0", "id": 1, "method": method,
                                    "params": params}, timeout, headers=TASKS_VERSION)
    if status == 0:
        return "retry", msg, sent
    if not isinstance(msg, dict) or status in (429, 502, 503, 504):
        return "retry", f"HTTP {status}", sent
    if "result" in msg:
        return "ok", msg["result"], sent
    err = msg.get("error") or {}
    if err.get("code") in (-32603, -32003):
        return "retry", f"{err.get('code')} {err.get('message', '')[:100]}", sent
    return "error", err, sent


def create(ctx, hist, op, rnd, ms, deadline):
    """The task id of op's task-mode call, retrying the same idempotency key, or None."""
    args = {"op": op, "ms": ms, "idempotency_key": op}
    hist.record(op, call={"tool": TOOL, "args": args, "headers": TASKS_VERSION})
    task = None
    while time.time() < deadline and not ctx.stop.is_set():
        kind, res, sent = rpc(ctx, rnd, "tools/call", tools_call(TOOL, args)["params"])
        hist.record(op, attempts=1)
        if sent:
            hist.record(op, accepted=True)
        if kind == "ok":
            sc = res.get("structuredContent") or {}
            got = sc.get("TaskId")
            if res.get("isError") or not got:
                # A call of a task-mode tool that passed its schema always becomes a task: an
                # answer without one is another answer, not a clear error.
                text = "".join(b.get("text", "") for b in res.get("content", []))
                hist.record(op, outcome=("error", "task call answered " + text[:120]),
                            unexpected=hist.get(op, "unexpected", []) + [
                                f"a task-mode call answered without its task: {text[:120]!r}"])
                return None
            task = got
            break
        if kind == "error":
            hist.record(op, outcome=("error", f"{res.get('code')} {res.get('message', '')[:120]}"))
            return None
        hist.record(op, last_retry=res)
        time.sleep(0.2 + rnd.random() * 0.5)
    if task is None:
        return None
    hist.record(op, task_id=task)
    # A client that lost the answer would send the key again: one more time, on any ingress,
    # must name the same task.
    if rnd.random() < 0.3:
        kind, res, _ = rpc(ctx, rnd, "tools/call", tools_call(TOOL, args)["params"])
        # -32603 / -32003 "try again" is a right answer too; anything else must be the task
        again = (res.get("structuredContent") or {}).get("TaskId") if kind == "ok" else None
        if kind != "retry" and again != task:
            hist.record(op, unexpected=hist.get(op, "unexpected", []) + [
                f"idempotency_key {op} answered task {again} ({kind} {str(res)[:120]}), "
                f"first {task}"])
    return task


def poll(ctx, hist, op, rnd, task, deadline, unexpected):
    """tasks/get until terminal: the terminal status, or None at the deadline."""
    terminal = None
    while time.time() < deadline and not ctx.stop.is_set():
        kind, res, _ = rpc(ctx, rnd, "tasks/get", {"taskId": task})
        if kind == "ok":
            st = res.get("status")
            if terminal and st != terminal:
                unexpected.append(f"task {task} went from {terminal} to {st}")
                return terminal
            if st in TERMINAL:
                if terminal:
                    return terminal  # seen twice (another replica too): settled
                terminal = st
                hist.record(op, task_state=st, task_msg=res.get("statusMessage", ""),
                            task_end_at=time.time())
                continue  # confirm it once more, on a random ingress
            hist.record(op, last_retry=f"task {st}")
        elif kind == "error":
            hist.record(op, last_retry=f"tasks/get: {res.get('code')} {res.get('message')}")
        else:
            hist.record(op, last_retry="tasks/get: " + res)
        time.sleep(0.3 + rnd.random() * 0.3)
    return terminal


def result_text(ctx, rnd, task, deadline):
    """The completed task's result text via tasks/result, or None."""
    while time.time() < deadline and not ctx.stop.is_set():
        kind, res, _ = rpc(ctx, rnd, "tasks/result", {"taskId": task}, timeout=20)
        if kind == "ok":
            return "".join(b.get("text", "") for b in res.get("content", [])).strip()
        if kind == "error":
            return f"tasks/result error {res.get('code')} {res.get('message')}"
        time.sleep(0.3)
    return None


def finish(ctx, hist, op, rnd, task, state, deadline, unexpected):
    if state == "completed":
        text = result_text(ctx, rnd, task, deadline)
        if text is not None:
            hist.record(op, outcome=("ok", text))
    elif state == "failed":
        hist.record(op, outcome=("error", "task terminated: " + hist.get(op, "task_msg", "")))
    elif state == "cancelled":
        hist.record(op, outcome=("error", "task cancelled: " + hist.get(op, "task_msg", "")))
    if unexpected:
        hist.record(op, unexpected=hist.get(op, "unexpected", []) + unexpected)


def wait_subscribed(ctx):
    ctx.hooks_ready.wait(130)


def run_task(ctx, hist, op, rnd):
    wait_subscribed(ctx)
    hist.record(op, kind="task", expect=f"done {op}")
    deadline = time.time() + RETRY_FOR
    task = create(ctx, hist, op, rnd, rnd.randint(0, 1500), deadline)
    if task is None:
        return
    unexpected = []
    # A task may wait in the queue, run 30 s and be run again after a worker dies.
    state = poll(ctx, hist, op, rnd, task, time.time() + 2 * RETRY_FOR, unexpected)
    finish(ctx, hist, op, rnd, task, state, time.time() + RETRY_FOR, unexpected)


def run_cancel(ctx, hist, op, rnd):
    wait_subscribed(ctx)
    # cancelled is the expected end; completed (the task won the race) is right too, and
    # then its result must be the op's own. Whether it ran is not known: executes=False.
    hist.record(op, kind="cancel", expect="cancelled", executes=False)
    deadline = time.time() + RETRY_FOR
    task = create(ctx, hist, op, rnd, rnd.randint(300, 5000), deadline)
    if task is None:
        return
    time.sleep(rnd.uniform(0.05, 2.5))
    while time.time() < deadline and not ctx.stop.is_set():
        kind, res, _ = rpc(ctx, rnd, "tasks/cancel", {"taskId": task})
        if kind == "ok" or kind == "error":  # -32602: already terminal (raced, or retried)
            break
        time.sleep(0.2 + rnd.random() * 0.3)
    unexpected = []
    state = poll(ctx, hist, op, rnd, task, time.time() + 2 * RETRY_FOR, unexpected)
    if state == "cancelled":
        hist.record(op, outcome=("ok", "cancelled"))
        if unexpected:
            hist.record(op, unexpected=hist.get(op, "unexpected", []) + unexpected)
        return
    if state == "completed":
        hist.record(op, expect=f"done {op}")
    finish(ctx, hist, op, rnd, task, state, time.time() + RETRY_FOR, unexpected)


WORKLOAD = {"task": (2, run_task), "cancel": (1, run_cancel)}


# ---------------------------------------------------------------- faults

def outage(mode, lo, hi):
    def inject(ctx, rnd):
        secs = rnd.uniform(lo, hi)
        ctx.hooks.set_mode(mode)
        ctx.stop.wait(secs)
        ctx.hooks.set_mode("ok")
        return f"{secs:.1f}s"
    return inject


def hang_and(sig):
    """The receiver hangs; after 5 s every ingress in turn (2 s apart) gets sig while it holds
    hung attempts (whichever replica claimed them): after SIGTERM it hands them back at once,
    after SIGKILL they come back after the 60 s visibility timeout (docs/webhooks.md,
    "Delivery")."""
    def inject(ctx, rnd):
        secs = rnd.uniform(17, 25)
        ctx.hooks.set_mode("hang")
        ctx.stop.wait(5)
        for i in range(ctx.ingresses):
            ctx.stack.signal(f"ingress-{i}", sig)
            ctx.stop.wait(2)
        ctx.stop.wait(max(0, secs - 5 - 2 * ctx.ingresses))
        ctx.hooks.set_mode("ok")
        return f"{secs:.1f}s, every ingress {sig.name} from 5s"
    return inject


# Several retry intervals (the schedule's 5 s) long; a slow or hung receiver also longer than
# the gateway's 15 s timeout, so every delivery in flight fails at least once.
FAULTS = {"hook-refuse": outage("refuse", 12, 20), "hook-500": outage("500", 12, 20),
          "hook-slow": outage("slow", 17, 25), "hook-hang": outage("hang", 17, 25),
          "hook-hang-kill": hang_and(signal.SIGKILL), "hook-hang-term": hang_and(signal.SIGTERM)}


# ---------------------------------------------------------------- check

def awaited(hist):
    """{task id: (op, event)} of every task a client saw terminal."""
    out = {}
    for op, o in hist.ops.items():
        if o.get("task_id") and o.get("task_state") in TERMINAL:
            out[o["task_id"]] = (op, TERMINAL[o["task_state"]])
    return out


def missing(ctx, hist):
    return {t: (op, ev) for t, (op, ev) in awaited(hist).items()
            if ev not in ctx.hooks.events(t)}


def drain(ctx, hist):
    """Wait until every awaited terminal event arrived (at most DRAIN_S), then ask the gateway
    about those that did not, while the stack still runs."""
    ctx.hooks.set_mode("ok")
    t0 = time.time()
    while missing(ctx, hist) and time.time() - t0 < DRAIN_S:
        time.sleep(0.5)
    ctx.hooks_drain_s = time.time() - t0
    gone = missing(ctx, hist)
    for t in list(gone)[:20]:
        ctx.hooks_missing[t] = deliveries_of(ctx, t)
    ctx.hooks_given_up = given_up(ctx)


def api_get(ctx, query):
    """GET /v1/webhooks/deliveries?<query> as the tenant: the parsed answer, or what failed."""
    conn = http.client.HTTPConnection("127.0.0.1", ctx.port, timeout=10)
    try:
        conn.request("GET", "/v1/webhooks/deliveries?" + urllib.parse.urlencode(query),
                     headers={"Authorization": "Bearer " + KEY})
        r = conn.getresponse()
        return json.loads(r.read())
    except (OSError, ValueError, http.client.HTTPException) as e:
        return f"deliveries not readable: {e}"
    finally:
        conn.close()


def brief(d):
    return {k: d.get(k) for k in ("id", "event", "task", "status", "attempts", "last_error")}


def deliveries_of(ctx, task):
    """The gateway's record of a task's deliveries."""
    data = api_get(ctx, {"task": task})
    return [brief(d) for d in data.get("deliveries", [])] if isinstance(data, dict) else data


def given_up(ctx):
    """Deliveries the gateway gave up on (failed: the schedule used up; disabled), which
    this campaign's schedule and outages should never cause."""
    out = []
    for status in ("failed", "disabled"):
        q = {"status": status, "limit": 200}
        for _ in range(50):
            data = api_get(ctx, q)
            if not isinstance(data, dict):
                out.append({"status": status, "last_error": data})
                break
            out += [brief(d) for d in data.get("deliveries", [])]
            if not data.get("next_cursor"):
                break
            q["cursor"] = data["next_cursor"]
    return out


def check(ctx, hist):
    rcv = ctx.hooks
    problems = []
    if ctx.hooks_error:
        problems.append(ctx.hooks_error)
    want = awaited(hist)
    lost = missing(ctx, hist)
    for t, (op, ev) in sorted(lost.items(), key=lambda kv: kv[1][0]):
        problems.append(f"lost: webhook {ev} of task {t} ({op}) never arrived; gateway: "
                        f"{ctx.hooks_missing.get(t, 'not asked')}")
    wrong = 0
    for t, (op, ev) in want.items():
        others = {e for e in rcv.events(t) if e != "task.running"} - {ev}
        if others:
            wrong += 1
            problems.append(f"unexpected: task {t} ({op}) ended {ev} for the client but the "
                            f"receiver got {sorted(others)}")
    delays = sorted(max(0.0, rcv.first(t, ev) - hist.ops[op]["task_end_at"])
                    for t, (op, ev) in want.items() if rcv.first(t, ev))
    failed = getattr(ctx, "hooks_given_up", [])
    for d in failed[:20]:
        problems.append(f"webhook delivery given up by the gateway: {d}")
    for b in rcv.bad[:20]:
        problems.append("unexpected: webhook " + b)
    dups = sum(n - 1 for n in rcv.seen_ids.values())
    ends = {}
    for o in hist.ops.values():
        if o["kind"] in ("task", "cancel") and o.get("task_state"):
            k = f"{o['kind']}_{o['task_state']}"
            ends[k] = ends.get(k, 0) + 1
    summary = {
        "webhook_deliveries": sum(rcv.seen_ids.values()),
        "webhook_duplicates": dups,
        "webhook_awaited": len(want),
        "webhook_lost": len(lost),
        "lost": len(lost),
        "webhook_bad": len(rcv.bad),
        "webhook_failed": len(failed),
        "unexpected": len(rcv.bad) + wrong,
        "webhook_delay_p99_s": round(delays[int(0.99 * (len(delays) - 1))], 1) if delays else 0,
        "webhook_delay_max_s": round(delays[-1], 1) if delays else 0,
        "webhook_attempts_refused_or_failed": sum(v for k, v in rcv.attempts.items() if k != "ok"),
    }
    problems.append(f"webhooks: {len(want)} terminal tasks awaited, drained in "
                    f"{getattr(ctx, 'hooks_drain_s', 0):.1f}s; receiver attempts by mode "
                    f"{rcv.attempts}; task ends {ends}")
    return summary, problems
