"""Broker faults of the campaign (tests/chaos/chaos.py) through the devbroker's control channel
(MCPQ_DEVBROKER_CONTROL, docs/kafka.md "Fault injection"): librdkafka's mock cluster with
three brokers, whose brokers go down and up, whose partition leaders move, whose requests
fail or answer slowly. Each function injects one fault, blocks for its length, undoes it and
returns what it did."""
import os
import socket

BROKERS = 3
SOCK = "devbroker-control.sock"
# A fitting retriable error per API (what a real broker answers during a leader election, a
# coordinator move or a rebalance); _TRANSPORT drops the client's connection.
ERRORS = {
    "Produce": ("NOT_LEADER_FOR_PARTITION", "REQUEST_TIMED_OUT", "_TRANSPORT"),
    "Fetch": ("NOT_LEADER_FOR_PARTITION", "_TRANSPORT"),
    "OffsetCommit": ("COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR", "REQUEST_TIMED_OUT"),
    "JoinGroup": ("COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR",
                  "COORDINATOR_LOAD_IN_PROGRESS"),
    "Heartbeat": ("REBALANCE_IN_PROGRESS", "NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE"),
}
ERRORS_HOLD = 5  # seconds the burst may take to be used up before what is left is cleared


def setup(ctx):
    ctx.launcher_args += ["--env", f"MCPQ_BROKERS={BROKERS}",
                          "--env", "MCPQ_DEVBROKER_CONTROL=" + os.path.join(ctx.state, SOCK)]
    ctx.leaders = {}  # partition -> the broker leader-move made its leader


def control(ctx, line):
    """One command on the control channel: its answer ('ok ...'); raises on 'error ...'."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(os.path.join(ctx.state, SOCK))
        s.sendall(line.encode() + b"\n")
        answer = s.makefile("rb").readline().decode().strip()
    if not answer.startswith("ok"):
        raise RuntimeError(f"devbroker control: {line!r} -> {answer!r}")
    return answer


def broker_down(ctx, rnd):
    b, secs = rnd.randint(1, BROKERS), rnd.uniform(5, 15)
    control(ctx, f"down {b}")
    try:
        ctx.stop.wait(secs)
    finally:
        control(ctx, f"up {b}")
    return f"broker {b} down {secs:.1f}s"


def broker_outage(ctx, rnd):
    secs = rnd.uniform(3, 8)
    control(ctx, "down all")
    try:
        ctx.stop.wait(secs)
    finally:
        control(ctx, "up all")
    return f"all {BROKERS} brokers down {secs:.1f}s"


def leader_move(ctx, rnd):
    """Every partition of the jobs topic (the first the devbroker names) to another broker."""
    topic, parts = control(ctx, "topics").split()[1].rsplit(":", 1)
    moved = []
    for p in range(int(parts)):
        was = ctx.leaders.get(p)
        b = rnd.choice([x for x in range(1, BROKERS + 1) if x != was])
        control(ctx, f"leader {topic} {p} {b}")
        ctx.leaders[p] = b
        moved.append(str(b))
    return f"{topic} leaders {','.join(moved)}"


def broker_errors(ctx, rnd):
    api = rnd.choice(sorted(ERRORS))
    err, n = rnd.choice(ERRORS[api]), rnd.randint(3, 10)
    control(ctx, f"errors {api} {n} {err}")
    ctx.stop.wait(ERRORS_HOLD)
    control(ctx, f"clear {api}")
    return f"{api} {n}x {err}"


def broker_slow(ctx, rnd):
    ms, secs = rnd.randint(300, 1000), rnd.uniform(5, 10)
    control(ctx, f"rtt all {ms}")
    try:
        ctx.stop.wait(secs)
    finally:
        control(ctx, "rtt all 0")
    return f"rtt {ms}ms {secs:.1f}s"


FAULTS = {"broker-down": broker_down, "broker-outage": broker_outage,
          "leader-move": leader_move, "broker-errors": broker_errors,
          "broker-slow": broker_slow}
