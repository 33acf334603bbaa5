"""Network faults of the campaign (tests/chaos/chaos.py) between one worker and Redis or
Kafka, and between one ingress and Redis, made with nft inside a network namespace the run
creates.

How: when one of these faults is selected, chaos.py's main calls prepare(), which re-executes
the run inside a new namespace (`ip netns add mcpq-chaos-<pid>`, lo up; deleted at the end,
also on failure or Ctrl-C), where the whole stack and the clients talk over that namespace's
own loopback. There, setup() gives worker-0 and ingress-0 their own uids (WORKER_UID,
INGRESS_UID) through a directory of wrapper scripts (ctx.bin_dir): the wrapper runs the real
binary under `setpriv --reuid=U --regid=U --clear-groups` when MCPQ_WORKER_ID or
MCPQ_INSTANCE_ID (set by scripts/mcpq-local) names that replica. A fault is then an nft rule
on the output hook matching `meta skuid U` (loopback traffic included):

  part-worker-redis   worker-0's packets to the Redis port dropped
  part-worker-kafka   worker-0's packets to the broker ports (the devbroker's BOOTSTRAP line)
  part-ingress-redis  ingress-0's packets to the Redis port dropped
  loss-worker         20-30% of worker-0's packets dropped at random (nft numgen random)
  delay-worker        150-400 ms more on worker-0's packets (tc netem)

A partition also marks the connections it cuts (conntrack mark) and drops their packets in
the other direction, so Redis's or the broker's answers on them do not get through either.
Each lasts 15-25 s (CHAOS_NETFAULT_SECONDS=MIN,MAX), then the rules are flushed (healed).

The two worker partitions also say what the consumer group made of them, from the workers'
/metrics (setup() gives the stack --metrics-port): the jobs the other workers finished while
worker-0 was cut off and those worker-0 finished, when worker-0 left the consumer group
(mcpq_worker_redis_lost_left, MCPQ_WORKER_REDIS_LOST_LEAVE_MS; docs/reliability.md) and how
long after the heal it was back in it. report.py puts the first in the per-fault table.

Where the machine does not allow it (not root, no ip, nft or setpriv, or `ip netns add`
failing) prepare() says why and drops these faults from the run, which goes on without them.
delay-worker needs the kernel's sch_netem; without it (tc: "Specified qdisc kind is unknown")
it is skipped the same way: the devbroker's rtt setting covers Kafka latency elsewhere."""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

WORKER_UID = 64101  # worker-0
INGRESS_UID = 64102  # ingress-0
TABLE = "mcpqchaos"
NS_ENV = "CHAOS_NETNS"
NEEDS_NETEM = ("delay-worker",)
ACTIVE = False  # set by prepare() inside the namespace: setup() then shapes the stack
METRICS_BASE = 0  # worker k's /metrics is on 127.0.0.1:METRICS_BASE+k (set by setup())
WORKERS = 3  # stack.WORKERS
_marks = iter(range(0x4d01, 0x4dff))


def say(msg):
    print("chaos: netfault: " + msg, flush=True)


def run(args, inp=None):
    """(returncode, stderr text) of a command; never raises for a missing program."""
    try:
        p = subprocess.run(args, input=inp, capture_output=True, text=True, timeout=20)
        return p.returncode, (p.stderr or p.stdout).strip()
    except (OSError, subprocess.TimeoutExpired) as e:
        return 1, str(e)


def nft(script):
    rc, err = run(["nft", "-f", "-"], script)
    if rc != 0:
        raise RuntimeError(f"nft: {err}")


def why_not():
    """Why this machine cannot run the network faults, or None when it can."""
    if os.geteuid() != 0:
        return "not root (network namespaces and nft need root)"
    for prog in ("ip", "nft", "setpriv"):
        if not shutil.which(prog):
            return f"{prog} is not installed"
    return None


def prepare(names):
    """Called by chaos.py's main with the selected faults. Outside a namespace, with a network
    fault selected: re-executes this run inside a new namespace and exits with its status, or,
    when the machine does not allow it, says why and returns names without those faults.
    Inside: checks nft and netem there and returns the faults that can run."""
    global ACTIVE
    mine = [n for n in names if n in FAULTS]
    if not mine:
        return names
    ns = os.environ.get(NS_ENV)
    if not ns:
        why = why_not()
        if why:
            say(f"skipping {', '.join(mine)}: {why}")
            return [n for n in names if n not in FAULTS]
        why = reexec(f"mcpq-chaos-{os.getpid()}")  # exits unless it could not start
        say(f"skipping {', '.join(mine)}: {why}")
        return [n for n in names if n not in FAULTS]
    rc, err = run(["nft", "-f", "-"], f"add table inet {TABLE}\n"
                  f"add chain inet {TABLE} out {{ type filter hook output priority 0; }}\n")
    if rc != 0:
        say(f"skipping {', '.join(mine)}: nft does not work in namespace {ns}: {err}")
        return [n for n in names if n not in FAULTS]
    skip = []
    if any(n in NEEDS_NETEM for n in mine):
        rc, err = run(["tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"])
        if rc == 0:
            run(["tc", "qdisc", "del", "dev", "lo", "root"])
        else:
            skip = [n for n in mine if n in NEEDS_NETEM]
            say(f"skipping {', '.join(skip)}: tc netem is not available here (tc: {err}); "
                "Kafka latency is covered by the devbroker's rtt instead")
    ACTIVE = True
    # The outer run forwards SIGTERM; both it and Ctrl-C end this run as Ctrl-C does (the
    # stack stopped, the history checked), even where SIGINT came in ignored (a background job).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, interrupt)
    say(f"in namespace {ns}: worker-0 runs as uid {WORKER_UID}, ingress-0 as uid {INGRESS_UID}")
    return [n for n in names if n not in skip]


def interrupt(signum, frame):
    raise KeyboardInterrupt


def reexec(ns):
    """Runs this chaos.py again inside namespace ns and exits with its status; the namespace
    and whatever still runs in it go at the end, also on Ctrl-C or SIGTERM. Returns why not
    when the namespace cannot be made."""
    rc, err = run(["ip", "netns", "add", ns])
    if rc != 0:
        return f"ip netns add {ns} failed: {err}"
    child = None

    def forward(signum, frame):
        if child and child.poll() is None:
            child.send_signal(signal.SIGTERM)  # the run stops its stack and reports

    old = signal.signal(signal.SIGTERM, forward)
    code = 1
    try:
        rc, err = run(["ip", "-n", ns, "link", "set", "lo", "up"])
        if rc != 0:
            raise RuntimeError(f"ip -n {ns} link set lo up: {err}")
        say(f"running inside network namespace {ns}")
        env = dict(os.environ, **{NS_ENV: ns})
        child = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable,
                                  os.path.abspath(sys.argv[0])] + sys.argv[1:], env=env)
        while True:
            try:
                code = child.wait()
                code = 128 - code if code < 0 else code  # killed by a signal: 128 + its number
                break
            except KeyboardInterrupt:
                continue  # the child got the Ctrl-C too: it stops its stack and reports
    finally:
        signal.signal(signal.SIGTERM, old)
        cleanup_ns(ns)
    sys.exit(code)


def cleanup_ns(ns):
    """Kills what still runs in ns (only this run's processes live there), then deletes it."""
    for _ in range(2):
        out = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout
        pids = [int(p) for p in out.split() if p.isdigit()]
        if not pids:
            break
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.5)
    rc, err = run(["ip", "netns", "del", ns])
    if rc != 0:
        say(f"ip netns del {ns} failed: {err}")


WRAPPER = """#!/bin/sh
# chaos netfault wrapper (tests/chaos/netfault.py): {var}={name} runs as uid {uid}
if [ "${var}" = "{name}" ]; then
    exec setpriv --reuid={uid} --regid={uid} --clear-groups --pdeathsig KILL -- "{real}" "$@"
fi
exec "{real}" "$@"
"""


def setup(ctx):
    if not ACTIVE:
        return
    real = ctx.bin_dir or os.environ.get("MCPQ_LOCAL_BIN_DIR") or os.path.join(
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "build")
    real = os.path.abspath(real)
    wrap = os.path.join(ctx.state, "netfault-bin")
    os.makedirs(wrap, exist_ok=True)
    for b, var, name, uid in (("mcpq-worker", "MCPQ_WORKER_ID", "worker-0", WORKER_UID),
                              ("mcpq-ingress", "MCPQ_INSTANCE_ID", "ingress-0", INGRESS_UID),
                              ("mcpq-devbroker", "NONE", "-", 0)):
        path = os.path.join(wrap, b)
        with open(path, "w") as f:
            f.write(WRAPPER.format(var=var, name=name, uid=uid, real=os.path.join(real, b)))
        os.chmod(path, 0o755)
    ctx.bin_dir = wrap
    global METRICS_BASE
    if "--metrics-port" not in ctx.launcher_args:
        METRICS_BASE = free_ports(WORKERS)
        if METRICS_BASE:
            ctx.launcher_args += ["--metrics-port", str(METRICS_BASE)]
    # The replicas under their own uids write their ready file, markers and files here.
    files = os.path.join(ctx.state, "files")
    os.makedirs(files, exist_ok=True)
    for d in (ctx.state, ctx.marks, files):
        os.chmod(d, 0o777)


def teardown(ctx):
    if ACTIVE:
        run(["nft", "flush", "chain", "inet", TABLE, "out"])


def broker_ports(ctx):
    with open(os.path.join(ctx.state, "devbroker.log"), errors="replace") as f:
        m = re.findall(r"^BOOTSTRAP (\S+)", f.read(), re.M)
    return [int(a.rsplit(":", 1)[1]) for a in m[-1].split(",")] if m else []


def dropped():
    """Packets the chain's drop rules counted so far."""
    out = subprocess.run(["nft", "list", "chain", "inet", TABLE, "out"],
                         capture_output=True, text=True).stdout
    return sum(int(n) for n in re.findall(r"counter packets (\d+) bytes \d+ drop", out))


def free_ports(n):
    """The first of n consecutive loopback ports that are free now, or 0."""
    for _ in range(20):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + n > 65535:
            continue
        try:
            socks = []
            for k in range(n):
                socks.append(socket.socket())
                socks[-1].bind(("127.0.0.1", base + k))
            return base
        except OSError:
            continue
        finally:
            for so in socks:
                so.close()
    return 0


_direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never an http_proxy


def metrics(k):
    """{series: value} of worker k's /metrics (summed over labels), or None."""
    if not METRICS_BASE:
        return None
    try:
        with _direct.open(f"http://127.0.0.1:{METRICS_BASE + k}/metrics", timeout=1) as r:
            text = r.read().decode(errors="replace")
    except (OSError, ValueError):
        return None
    out = {}
    for line in text.splitlines():
        if line and line[0] != "#":
            name, _, value = line.rpartition(" ")
            name = name.split("{", 1)[0]
            try:
                out[name] = out.get(name, 0.0) + float(value)
            except ValueError:
                pass
    return out


def jobs_done(k):
    m = metrics(k)
    return None if m is None else int(m.get("mcpq_worker_jobs_total", 0))


class Window(str):
    """What a worker partition did: the text chaos.py prints, carrying the figures report.py
    reads (getattr, so other faults' plain strings have none): elsewhere, jobs the other
    workers finished during the cut; on_cut, those worker-0 finished; left_s, seconds from the
    cut until worker-0 left the consumer group (None: it did not); back_s, seconds from the
    heal until it was in the group again."""
    elsewhere = on_cut = left_s = back_s = None


class Watch:
    """Samples the workers' /metrics while worker-0 is cut off (tick) and after the heal."""

    def __init__(self):
        self.t0 = time.time()
        self.before = [jobs_done(k) for k in range(WORKERS)]
        self.left_at = None

    def left(self):
        m = metrics(0)
        return m is not None and m.get("mcpq_worker_redis_lost_left", 0) > 0

    def tick(self):
        if self.left_at is None and self.left():
            self.left_at = time.time()

    def done(self, ctx, text):
        """The Window of the fault: text and the figures (after the heal, waiting at most 30 s
        for worker-0 to be back in the group when it had left)."""
        after = [jobs_done(k) for k in range(WORKERS)]
        known = [k for k in range(WORKERS) if self.before[k] is not None and after[k] is not None]
        on_cut = after[0] - self.before[0] if 0 in known else None
        elsewhere = sum(after[k] - self.before[k] for k in known if k != 0)
        left_s = back_s = None
        if self.left_at is not None:
            left_s = round(self.left_at - self.t0, 1)
            healed = time.time()
            while self.left() and time.time() - healed < 30 and not ctx.stop.wait(0.25):
                pass
            back_s = round(time.time() - healed, 1)
        w = Window(f"{text}; meanwhile {elsewhere} jobs done by the other workers, {on_cut} by "
                   "worker-0, which " + (f"left the group after {left_s}s and was back {back_s}s "
                                         "after the heal" if left_s is not None
                                         else "stayed in the group"))
        w.elsewhere, w.on_cut, w.left_s, w.back_s = elsewhere, on_cut, left_s, back_s
        return w


def hold(ctx, rnd, rules, what, watch=None):
    """Adds rules to the output chain for CHAOS_NETFAULT_SECONDS, then flushes the chain
    (healed); says how many packets were dropped. With a Watch, ticks it twice a second and
    ends with its figures."""
    lo, hi = (float(x) for x in os.environ.get("CHAOS_NETFAULT_SECONDS", "15,25").split(","))
    t = time.time()
    nft("".join(f"add rule inet {TABLE} out {r}\n" for r in rules))
    try:
        until = t + rnd.uniform(lo, hi)
        while not ctx.stop.wait(max(0.0, min(0.5, until - time.time()))) and time.time() < until:
            if watch:
                watch.tick()
        n = dropped()
    finally:
        nft(f"flush chain inet {TABLE} out\n")
    text = f"{what} for {time.time() - t:.1f}s ({n} packets dropped)"
    return watch.done(ctx, text) if watch else text


def partition(ctx, rnd, uid, ports, who, to, watch=None):
    if not ports:
        return f"no {to} port found: nothing done"
    mark = next(_marks)
    dports = "{ " + ", ".join(str(p) for p in ports) + " }"
    return hold(ctx, rnd, [f"meta skuid {uid} tcp dport {dports} ct mark set {mark} counter drop",
                           f"ct mark {mark} counter drop"],
                f"{who} (uid {uid}) cut from {to} :{','.join(map(str, ports))}", watch)


def part_worker_redis(ctx, rnd):
    return partition(ctx, rnd, WORKER_UID, [ctx.stack.redis_port()], "worker-0", "redis",
                     Watch())


def part_worker_kafka(ctx, rnd):
    return partition(ctx, rnd, WORKER_UID, broker_ports(ctx), "worker-0", "kafka", Watch())


def part_ingress_redis(ctx, rnd):
    return partition(ctx, rnd, INGRESS_UID, [ctx.stack.redis_port()], "ingress-0", "redis")


def loss_worker(ctx, rnd):
    pct = rnd.randint(20, 30)
    return hold(ctx, rnd, [f"meta skuid {WORKER_UID} numgen random mod 100 lt {pct} counter drop"],
                f"{pct}% of worker-0's packets dropped")


def delay_worker(ctx, rnd):
    """netem delay on lo for the packets nft marks as worker-0's (a prio qdisc, a fw filter)."""
    ms = rnd.randint(150, 400)
    cmds = [["tc", "qdisc", "add", "dev", "lo", "root", "handle", "1:", "prio"],
            ["tc", "qdisc", "add", "dev", "lo", "parent", "1:3", "handle", "30:", "netem",
             "delay", f"{ms}ms"],
            ["tc", "filter", "add", "dev", "lo", "parent", "1:0", "protocol", "ip", "handle",
             "0x4d", "fw", "flowid", "1:3"]]
    try:
        for c in cmds:
            rc, err = run(c)
            if rc != 0:
                return f"not made: {' '.join(c)}: {err}"
        return hold(ctx, rnd, [f"meta skuid {WORKER_UID} meta mark set 0x4d"],
                    f"worker-0's packets delayed {ms} ms")
    finally:
        run(["tc", "qdisc", "del", "dev", "lo", "root"])


FAULTS = {"part-worker-redis": part_worker_redis, "part-worker-kafka": part_worker_kafka,
          "part-ingress-redis": part_ingress_redis, "loss-worker": loss_worker,
          "delay-worker": delay_worker}
