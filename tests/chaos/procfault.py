"""Process faults of the campaign (tests/chaos/chaos.py): each function injects one fault on
ctx.stack and returns what it did; it blocks for the fault's length."""
import signal
import time

from stack import INGRESSES, WORKERS


def kill_worker(ctx, rnd):
    w = f"worker-{rnd.randint(0, WORKERS - 1)}"
    ctx.stack.signal(w, signal.SIGKILL)
    return w


def kill_ingress(ctx, rnd):
    i = f"ingress-{rnd.randint(0, INGRESSES - 1)}"
    ctx.stack.signal(i, signal.SIGKILL)
    return i


def term_rolling(ctx, rnd):
    """SIGTERM of every ingress and worker in turn, 2 s apart, as a Kubernetes rollout does."""
    names = [f"ingress-{i}" for i in range(INGRESSES)] + [f"worker-{i}" for i in range(WORKERS)]
    for name in names:
        ctx.stack.signal(name, signal.SIGTERM)
        time.sleep(2)
    return "all"


def freeze_redis(ctx, rnd):
    """SIGSTOP of Redis for longer than the 2 s command timeout, then SIGCONT."""
    secs = rnd.uniform(2.5, 5)
    if ctx.stack.signal("redis", signal.SIGSTOP):
        time.sleep(secs)
        ctx.stack.signal("redis", signal.SIGCONT)
    return f"{secs:.1f}s"


FAULTS = {"kill-worker": kill_worker, "kill-ingress": kill_ingress,
          "term-rolling": term_rolling, "freeze-redis": freeze_redis}
