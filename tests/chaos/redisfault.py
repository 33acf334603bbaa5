"""Redis faults of the campaign (tests/chaos/chaos.py): kill -9 of Redis, which
scripts/mcpq-local (--redis-persist) restarts on the same port from its append-only file.

CHAOS_REDIS_FSYNC (always, the default as in the launcher and docs/operations.md, or everysec)
is the AOF's appendfsync, given to the launcher as --redis-fsync: with everysec a Redis killed
with kill -9 may lose up to about a second of acknowledged writes when the host crashes, with
always it loses none.

A kill -9 of the Redis process alone loses nothing either way: Redis write(2)s its AOF
buffer before it answers, and the kernel keeps what was written. crash-redis therefore plays
the host crash everysec is about: Redis stopped, its AOF cut back to its length a second
before (what the last fsync kept), then killed and restarted. Under always the last fsync kept
everything acknowledged, so nothing is cut: Redis is killed and restarts from its whole AOF."""
import os
import signal
import socket
import time


def setup(ctx):
    ctx.launcher_args += ["--redis-fsync", fsync()]


def fsync():
    """The AOF's appendfsync of the run: CHAOS_REDIS_FSYNC, else the launcher's default."""
    return os.environ.get("CHAOS_REDIS_FSYNC", "always")


def ping(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.settimeout(0.5)
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def kill_redis(ctx, rnd):
    """kill -9 of Redis; returns how long until it answered PING again (the launcher restarts
    it from its AOF)."""
    port, old = ctx.stack.redis_port(), ctx.stack.pid("redis")
    t = time.time()
    if not port or not ctx.stack.signal("redis", signal.SIGKILL):
        return "no redis to kill"
    while time.time() - t < 30:
        if ctx.stack.pid("redis") not in (0, old) and ping(port):
            return f"PONG again after {time.time() - t:.2f}s"
        time.sleep(0.05)
    return "no PONG within 30s"


def incr_aof(ctx):
    """The AOF file Redis appends to now (its manifest's 'type i' line)."""
    d = os.path.join(ctx.state, "appendonlydir")
    try:
        with open(os.path.join(d, "appendonly.aof.manifest")) as f:
            names = [ln.split()[1] for ln in f if ln.split()[-1:] == ["i"]]
    except OSError:
        return None
    return os.path.join(d, names[-1]) if names else None


def crash_redis(ctx, rnd):
    """A host crash: under appendfsync everysec the last second of acknowledged writes gone;
    under always nothing acknowledged is lost."""
    if fsync() == "always":
        return kill_redis(ctx, rnd) + " (always: nothing to cut)"
    aof = incr_aof(ctx)
    if not aof:
        return "no AOF found"
    size0 = os.path.getsize(aof)
    time.sleep(1.0)
    if not ctx.stack.signal("redis", signal.SIGSTOP):
        return "no redis to stop"
    cut = 0
    if incr_aof(ctx) == aof:  # no rewrite switched files meanwhile
        cut = os.path.getsize(aof) - size0
        os.truncate(aof, size0)
    what = kill_redis(ctx, rnd)
    return f"{cut} bytes of AOF cut; {what}"


FAULTS = {"kill-redis": kill_redis, "crash-redis": crash_redis}
