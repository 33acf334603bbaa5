#!/usr/bin/env python3
"""The devbroker's control channel (MCPQ_DEVBROKER_CONTROL, deploy/devbroker/control.h,
docs/kafka.md "Fault injection"), run by tests/e2e/test_devbroker_control.sh.

A stack from scripts/mcpq-local (1 ingress, 1 worker, 3 brokers) and, for each command kind,
what a caller of tools/call sees:
  - the socket is there with mode 0600; help, brokers and topics answer;
  - down all: a call gets a clear JSON-RPC error (-32603, "try again") within seconds, it does
    not hang; up all: calls succeed again;
  - errors Produce <few> NOT_LEADER_FOR_PARTITION: the call still succeeds (the producer
    retries); errors Produce 1000 ...: a clear error once the message timeout passes; clear
    Produce: calls succeed again;
  - rtt all 700: calls take at least that long and succeed (a slow Kafka is not a down one:
    none is refused as unavailable); rtt all 0: back to normal;
  - leader: the jobs topic's leaders moved to broker X, X down: a call gets a clear error;
    the leaders moved to Y: calls succeed while X is still down;
  - bad input (unknown command, bad numbers, a line too long, a NUL byte, one connection too
    many) gets `error ...` and the channel keeps working;
  - the socket is removed when the stack stops.
Every HTTP request has a deadline, so a hang fails the test instead of blocking it.
"""
import http.client
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("MCPQ_BIN_DIR", os.path.join(REPO, "build"))
KEY = "e2e-control-key-41d8"
BROKERS = 3
PARTITIONS = 6
TOPIC = "mcpq.jobs"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Stack:
    def __init__(self, tmp):
        self.tmp, self.port = tmp, free_port()
        self.sock = os.path.join(tmp, "state", "control.sock")
        cfg = os.path.join(tmp, "config.json")
        with open(cfg, "w") as f:
            json.dump({
                "tenants": [{"id": "t", "api_keys": [{"id": "k", "key": KEY}],
                             "default_server": "default"}],
                "servers": [{"tenant": "t", "name": "default"}],
                "tools": [{"tenant": "t", "server": "default", "name": "echo", "published": "1",
                           "versions": [{"version": "1", "inputSchema": {"type": "object"},
                                         "executor": {"type": "builtin", "name": "echo"},
                                         "timeout_ms": 30000, "mode": "sync"}]}]}, f)
        self.err = open(os.path.join(tmp, "launcher.err"), "wb")
        self.proc = subprocess.Popen(
            [os.path.join(REPO, "scripts/mcpq-local"), "--port", str(self.port),
             "--ingresses", "1", "--workers", "1", "--config", cfg,
             "--state-dir", os.path.join(tmp, "state"), "--bin-dir", BIN,
             "--env", f"MCPQ_BROKERS={BROKERS}", "--env", f"MCPQ_PARTITIONS={PARTITIONS}",
             "--env", f"MCPQ_DEVBROKER_CONTROL={self.sock}"],
            stdout=subprocess.PIPE, stderr=self.err, stdin=subprocess.DEVNULL, cwd=REPO,
            start_new_session=True)
        line = self.proc.stdout.readline().decode().strip()
        if not line.startswith("READY"):
            raise RuntimeError("the stack did not start: " + line)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.err.close()


class Channel:
    """One connection to the control socket."""

    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(10)
        self.s.connect(path)
        self.f = self.s.makefile("rb")

    def raw(self, data):
        self.s.sendall(data)
        return self.f.readline().decode().rstrip("\n")

    def cmd(self, line):
        return self.raw(line.encode() + b"\n")

    def close(self):
        self.f.close()
        self.s.close()


N = [0]


def call(port, timeout=30):
    """One tools/call of echo with a fresh text: (seconds, 'ok' | 'error', detail)."""
    N[0] += 1
    text = f"control-{N[0]}"
    body = {"jsonrpc": "2.0", "id": N[0], "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": text}}}
    t = time.time()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("POST", "/mcp", json.dumps(body), {
            "Authorization": "Bearer " + KEY, "Content-Type": "application/json",
            "Accept": "application/json", "MCP-Protocol-Version": "2025-06-18"})
        r = conn.getresponse()
        msg = json.loads(r.read())
    except (OSError, http.client.HTTPException, ValueError) as e:
        raise AssertionError(f"tools/call got no answer within {timeout} s: {e!r}")
    finally:
        conn.close()
    took = time.time() - t
    if "result" in msg and not msg["result"].get("isError"):
        got = msg["result"].get("structuredContent", {}).get("text")
        assert got == text, f"a result that is not the call's own: {msg}"
        return took, "ok", ""
    err = msg.get("error", {})
    return took, "error", f"{err.get('code')} {err.get('message')}"


def until_ok(port, within):
    """Calls until one succeeds (then two more must too); the seconds it took."""
    t = time.time()
    last = None
    while time.time() - t < within:
        _, kind, last = call(port)
        if kind == "ok":
            for _ in range(2):
                _, kind, detail = call(port)
                assert kind == "ok", f"a call failed after calls were back: {detail}"
            return time.time() - t
        time.sleep(0.5)
    raise AssertionError(f"no call succeeded within {within} s (last: {last})")


def clear_error(port, what):
    took, kind, detail = call(port)
    assert kind == "error" and detail.startswith("-32603"), f"{what}: wanted -32603, got " \
        f"{kind} {detail}"
    print(f"ok - {what}: {detail!r} after {took:.2f} s")
    return took


def check_channel(st):
    mode = os.stat(st.sock).st_mode
    assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600, oct(mode)
    ch = Channel(st.sock)
    assert ch.cmd("help").startswith("ok brokers;"), "help"
    assert ch.cmd("brokers") == "ok 1:up 2:up 3:up", "brokers"
    assert ch.cmd("topics") == f"ok {TOPIC}:{PARTITIONS} {TOPIC}.dlq:{PARTITIONS}", "topics"
    print("ok - the socket is 0600; help, brokers, topics")
    return ch


def check_down_up(st, ch):
    assert call(st.port)[1] == "ok", "a call before any fault"
    assert ch.cmd("down all") == "ok broker all down"
    assert ch.cmd("brokers") == "ok 1:down 2:down 3:down"
    took = clear_error(st.port, "every broker down")
    assert took < 15, took
    assert ch.cmd("up all") == "ok broker all up"
    assert ch.cmd("brokers") == "ok 1:up 2:up 3:up"
    print(f"ok - up all: calls succeed again after {until_ok(st.port, 30):.1f} s")


def check_errors(st, ch):
    assert ch.cmd("errors Produce 3 NOT_LEADER_FOR_PARTITION") == \
        "ok 3 NOT_LEADER_FOR_PARTITION queued for Produce"
    took, kind, detail = call(st.port)
    assert kind == "ok", f"3 retriable Produce errors: the call failed: {detail}"
    print(f"ok - 3 NOT_LEADER_FOR_PARTITION on Produce: the call succeeded in {took:.2f} s")
    assert ch.cmd("errors produce 1000 not_leader_for_partition").startswith("ok 1000")
    took = clear_error(st.port, "1000 Produce errors")
    assert took < 15, took
    assert ch.cmd("clear Produce") == "ok cleared Produce"
    print(f"ok - clear Produce: calls succeed again after {until_ok(st.port, 30):.1f} s")


def check_rtt(st, ch):
    """Slow brokers (every answer 700 ms late, longer than the ingress's 500 ms Kafka probe)
    are not down brokers: calls take longer and succeed, none is refused as unavailable."""
    assert ch.cmd("rtt all 700") == "ok rtt all 700ms"
    assert ch.cmd("brokers") == "ok 1:up:700ms 2:up:700ms 3:up:700ms"
    t, n = time.time(), 0
    while time.time() - t < 4 or n < 3:  # past several probes
        took, kind, detail = call(st.port)
        assert kind == "ok", f"rtt 700 ms: a call failed after {took:.2f} s: {detail}"
        assert took >= 0.7, f"rtt 700 ms: a call took {took:.2f} s"
        n += 1
    print(f"ok - rtt all 700: {n} calls succeeded in {time.time() - t:.1f} s, each >= 0.7 s")
    assert ch.cmd("rtt all 0") == "ok rtt all 0ms"
    assert ch.cmd("brokers") == "ok 1:up 2:up 3:up"
    until_ok(st.port, 30)


def leaders_to(ch, broker):
    for p in range(PARTITIONS):
        assert ch.cmd(f"leader {TOPIC} {p} {broker}") == f"ok leader {TOPIC} {p} {broker}"


def check_leader(st, ch):
    leaders_to(ch, 3)
    until_ok(st.port, 30)
    assert ch.cmd("down 3") == "ok broker 3 down"
    clear_error(st.port, "the leaders on broker 3, broker 3 down")
    leaders_to(ch, 2)
    print(f"ok - the leaders moved to broker 2: calls succeed after "
          f"{until_ok(st.port, 40):.1f} s, broker 3 still down")
    assert ch.cmd("up 3") == "ok broker 3 up"


def check_bad_input(st, ch):
    bad = [b"bogus", b"down 0", b"down 4", b"down -1", b"down 1x", b"up", b"rtt 1 -5",
           b"rtt all 99999999999999999999", b"errors Produce 0 NOT_COORDINATOR",
           b"errors NoSuchApi 1 NOT_COORDINATOR", b"errors Fetch 1 NO_SUCH_ERROR",
           b"leader nope 0 1", b"leader mcpq.jobs 6 1", b"leader mcpq.jobs 0 9",
           b"clear Nope", b"brokers extra", b"down 1 2 3 4 5 6", b"", b"\xff\xfe",
           b"down\x001", b"x" * 5000]
    for line in bad:
        got = ch.raw(line + b"\n")
        assert got.startswith("error "), f"{line[:40]!r} -> {got!r}"
    assert ch.cmd("brokers") == "ok 1:up 2:up 3:up", "the channel after bad input"
    extra = [Channel(st.sock) for _ in range(7)]  # 8 with ch: the most it serves
    try:
        one_more = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        one_more.settimeout(10)
        one_more.connect(st.sock)
        got = one_more.makefile("rb").readline().decode()
        one_more.close()
        assert got.startswith("error too many connections"), got
    finally:
        for c in extra:
            c.close()
    assert Channel(st.sock).cmd("brokers").startswith("ok "), "a new connection after"
    print(f"ok - {len(bad)} bad lines and one connection too many answered with error; "
          "the channel still works")


def main():
    tmp = tempfile.mkdtemp(prefix="mcpq-e2e-control.")
    st = None
    ok = False
    t0 = time.time()
    try:
        st = Stack(tmp)
        ch = check_channel(st)
        check_down_up(st, ch)
        check_errors(st, ch)
        check_rtt(st, ch)
        check_leader(st, ch)
        check_bad_input(st, ch)
        ch.close()
        st.stop()
        assert not os.path.exists(st.sock), "the socket is still there after the stop"
        print("ok - the socket is removed at exit")
        ok = True
    finally:
        if st:
            st.stop()
        print(f"# {time.time() - t0:.1f} s")
        if ok and os.environ.get("KEEP") != "1":
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print(f"# state kept in {tmp}")
            for name in ("launcher.err", "state/devbroker.log", "state/ingress-0.log"):
                p = os.path.join(tmp, name)
                if os.path.exists(p):
                    with open(p, errors="replace") as f:
                        tail = f.readlines()[-15:]
                    print(f"# --- tail of {name}\n" + "".join("#   " + x for x in tail))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
