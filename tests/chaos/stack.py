"""The stack under test (tests/chaos/chaos.py): scripts/mcpq-local with 2 ingresses, 3 workers,
Redis with an append-only file and the devbroker, its components found by their pid files.

Fault modules (tests/chaos/*.py with a FAULTS table) shape the stack before it starts through
their optional setup(ctx): ctx.launcher_args (more scripts/mcpq-local flags, e.g. --env K=V),
ctx.tools (more tool definitions for the config), ctx.bin_dir (a directory of wrappers)."""
import json
import os
import re
import signal
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KEY = "chaos-key"
TENANT = "chaos"
INGRESSES = 2
WORKERS = 3


def mark_tool(marks, name="mark", mode="sync", timeout_ms=30000):
    """The campaign's tool, tests/chaos/mark.sh: a marker file per execution, then 'done <op>'."""
    return {
        "tenant": TENANT, "server": "default", "name": name, "published": "1",
        "versions": [{
            "version": "1", "timeout_ms": timeout_ms, "mode": mode,
            "inputSchema": {"type": "object", "required": ["op"],
                            "properties": {"op": {"type": "string"},
                                           "ms": {"type": "integer"}}},
            "executor": {"type": "exec", "argv": ["/bin/sh", os.path.join(REPO, "tests/chaos/mark.sh")],
                         "env": {"CHAOS_MARKS": marks}}}]}


def config(ctx):
    return {
        "tenants": [{"id": TENANT, "api_keys": [{"id": "k", "key": KEY}],
                     "default_server": "default"}],
        "servers": [{"tenant": TENANT, "name": "default"}],
        "tools": [mark_tool(ctx.marks)] + ctx.tools}


class Stack:
    def __init__(self, ctx):
        self.state, self.port = ctx.state, ctx.port
        cfg = os.path.join(ctx.state, "chaos.json")
        with open(cfg, "w") as f:
            json.dump(config(ctx), f)
        self.log = open(os.path.join(ctx.state, "launcher.log"), "ab")
        args = [os.path.join(REPO, "scripts/mcpq-local"), "--port", str(ctx.port),
                "--ingresses", str(INGRESSES), "--workers", str(WORKERS), "--redis-persist",
                "--config", cfg, "--state-dir", ctx.state,
                "--env", "MCPQ_REDIS_TIMEOUT_MS=2000", "--env", "MCPQ_LOG_LEVEL=warn"]
        args += ctx.launcher_args
        if ctx.bin_dir:
            args += ["--bin-dir", ctx.bin_dir]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.log, cwd=REPO)
        line = self.proc.stdout.readline().decode().strip()
        if not line.startswith("READY"):
            raise RuntimeError("the stack did not start: " + line + " (see "
                               + os.path.join(ctx.state, "launcher.log") + ")")

    def names(self):
        return ([f"ingress-{i}" for i in range(INGRESSES)]
                + [f"worker-{i}" for i in range(WORKERS)] + ["redis", "devbroker"])

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

    def redis_port(self):
        """The port the launcher gave Redis (its last 'redis ready on 127.0.0.1:<port>' line;
        a restarted Redis keeps it)."""
        try:
            with open(os.path.join(self.state, "launcher.log"), errors="replace") as f:
                m = re.findall(r"redis ready on 127\.0\.0\.1:(\d+)", f.read())
        except OSError:
            return 0
        return int(m[-1]) if m else 0

    def alive(self):
        return self.proc.poll() is None

    def death(self):
        """Why the launcher stopped the stack: its FATAL line and the last lines of the log it
        quotes (e.g. the devbroker aborting inside librdkafka's mock cluster)."""
        try:
            with open(os.path.join(self.state, "launcher.log"), errors="replace") as f:
                lines = f.read().splitlines()
        except OSError:
            return "the launcher exited"
        for i, line in enumerate(lines):
            if "FATAL" in line:
                return "\n".join(lines[i:i + 4])
        return "the launcher exited: " + "\n".join(lines[-3:])

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
