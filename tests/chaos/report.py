"""Figures of the campaign (tests/chaos/chaos.py, docs/reliability.md): the per-fault table
and the soak's samples and graph.

Per fault kind, over the operations in flight during one of its windows (from the fault's
start to 5 s after its end): operations, ok, clear errors, lost, unexpected, duplicate
executions, p99 latency (first request to terminal outcome, retries included) and the time to
recover: from the fault's start until the last of those operations that felt it (retried, or
slower than twice the no-fault p99) ended; the largest over the kind's windows. For the
faults that cut one worker off (netfault.py's Window figures): the jobs the other workers
finished meanwhile, summed over the windows, and the longest time until the cut worker left
the consumer group; blank for the other kinds."""
import os
import socket
import subprocess
import threading
import time

GRACE = 5.0


def pct(values, p):
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))]


def latency(o):
    return (o["end"] - o["start"]) if o["end"] else None


def overlaps(o, w):
    end = o["end"] or float("inf")
    return o["start"] <= w["end"] + GRACE and end >= w["start"]


def ops_of(hist):
    return [o for o in hist.ops.values() if o["kind"] is not None]


def baseline_p99(ops, windows):
    calm = [latency(o) for o in ops
            if o["end"] and o["outcome"] and not any(overlaps(o, w) for w in windows)]
    return pct(calm, 99)


def row(ops, wins, calm99):
    r = {"windows": len(wins), "ops": len(ops), "ok": 0, "errors": 0, "lost": 0,
         "unexpected": 0, "duplicate_executions": 0}
    for o in ops:
        out = o["outcome"]
        if out is None:
            r["lost"] += bool(o["accepted"])
        elif out[0] == "ok":
            r["ok"] += 1
            r["unexpected"] += bool(o.get("wrong"))  # checker.check_op's verdict
        else:
            r["errors"] += 1
        r["unexpected"] += len(o.get("unexpected", []))
        r["duplicate_executions"] += max(0, o.get("executions", 0) - 1)
    lat = [latency(o) for o in ops if latency(o) is not None]
    r["p99_s"] = round(pct(lat, 99), 2) if lat else None
    rec = 0.0
    for w in wins:
        felt = [o["end"] for o in ops if overlaps(o, w) and o["end"] and (
            o["attempts"] > 1 or (calm99 and latency(o) > 2 * calm99))]
        if felt:
            rec = max(rec, max(felt) - w["start"])
    r["recover_s"] = round(rec, 1)
    figures = [w["what"] for w in wins if getattr(w["what"], "elsewhere", None) is not None]
    r["elsewhere"] = sum(f.elsewhere for f in figures) if figures else None
    left = [f.left_s for f in figures if f.left_s is not None]
    r["left_s"] = max(left) if left else None
    return r


def per_fault(hist, windows):
    ops = ops_of(hist)
    calm99 = baseline_p99(ops, windows)
    table = {}
    for kind in sorted({w["fault"] for w in windows}):
        wins = [w for w in windows if w["fault"] == kind]
        table[kind] = row([o for o in ops if any(overlaps(o, w) for w in wins)], wins, calm99)
    table["(no fault)"] = row([o for o in ops if not any(overlaps(o, w) for w in windows)],
                              [], calm99)
    table["(all)"] = row(ops, windows, calm99)
    return table


COLS = ("windows", "ops", "ok", "errors", "lost", "unexpected", "duplicate_executions",
        "p99_s", "recover_s", "elsewhere", "left_s")
HEAD = ("fault", "times", "operations", "succeeded", "clear error", "lost", "unexpected",
        "duplicate executions", "p99 (s)", "time to recover (s)",
        "jobs done by other workers during the cut", "cut worker left the group after (s)")


def table_markdown(table):
    lines = ["| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    for kind, r in table.items():
        lines.append("| " + " | ".join([f"`{kind}`" if kind[0] != "(" else kind]
                                       + ["" if r[c] is None else str(r[c]) for c in COLS]) + " |")
    return "\n".join(lines)


class Sampler:
    """The soak's sampler: every `every` seconds, RSS (kB) and open fds of every component
    (by its pid file; a restarted component starts a new series), and Redis's used_memory and
    key count, appended to <out>/samples.csv."""

    def __init__(self, ctx, out, every=10.0):
        self.ctx, self.out, self.every = ctx, out, every
        os.makedirs(out, exist_ok=True)
        self.csv = open(os.path.join(out, "samples.csv"), "w")
        self.csv.write("t,name,pid,rss_kb,fds\n")
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.loop, name="sampler")
        self.thread.start()

    def proc(self, pid):
        rss = None
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        rss = int(line.split()[1])
            return rss, len(os.listdir(f"/proc/{pid}/fd"))
        except (OSError, ValueError):
            return None, None

    def sample(self):
        t = time.time()
        for name in self.ctx.stack.names():
            pid = self.ctx.stack.pid(name)
            rss, fds = self.proc(pid) if pid else (None, None)
            if rss is not None:
                self.csv.write(f"{t:.1f},{name},{pid},{rss},{fds}\n")
        mem, keys = redis_memory(self.ctx.stack)
        if mem is not None:
            self.csv.write(f"{t:.1f},redis-used-memory,0,{mem // 1024},{keys}\n")
        self.csv.flush()

    def loop(self):
        while not self.done.wait(self.every):
            self.sample()

    def close(self):
        self.done.set()
        self.thread.join()
        self.csv.close()


def redis_memory(stack):
    """(used_memory bytes, number of keys) of the stack's Redis, or (None, None)."""
    port = stack.redis_port()
    if not port:
        return None, None
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(b"INFO memory\r\nDBSIZE\r\n")
            data = b""
            while data.count(b"\r\n:") < 1:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        text = data.decode(errors="replace")
        mem = int(text.split("used_memory:", 1)[1].split("\r\n", 1)[0])
        keys = int(text.rsplit("\r\n:", 1)[1].split("\r\n", 1)[0])
        return mem, keys
    except (OSError, ValueError, IndexError):
        return None, None


def per_minute(hist, t0):
    """{minute: (ops, p50 s, p99 s, not ok)} by the minute each operation ended in."""
    buckets = {}
    for o in ops_of(hist):
        if o["end"]:
            buckets.setdefault(int((o["end"] - t0) // 60), []).append(o)
    out = {}
    for m, ops in sorted(buckets.items()):
        lat = [latency(o) for o in ops]
        bad = sum(1 for o in ops if not o["outcome"] or o["outcome"][0] != "ok")
        out[m] = (len(ops), pct(lat, 50), pct(lat, 99), bad)
    return out


def growth(out):
    """Per (component, pid) series of at least 10 minutes: RSS and fds of the last fifth
    against the second fifth (after warm-up). Lines of text."""
    series = {}
    with open(os.path.join(out, "samples.csv")) as f:
        next(f)
        for line in f:
            t, name, pid, rss, fds = line.strip().split(",")
            series.setdefault((name, pid), []).append((float(t), int(rss), int(fds)))
    lines = []
    for (name, pid), pts in sorted(series.items()):
        if pts[-1][0] - pts[0][0] < 600:
            continue
        n = len(pts)
        early, late = pts[n // 5: 2 * n // 5], pts[4 * n // 5:]
        e_rss = sum(p[1] for p in early) / len(early)
        l_rss = sum(p[1] for p in late) / len(late)
        e_fd = sum(p[2] for p in early) / len(early)
        l_fd = sum(p[2] for p in late) / len(late)
        what = "keys" if pid == "0" else "fds"
        lines.append(f"{name} (pid {pid}, {(pts[-1][0] - pts[0][0]) / 60:.0f} min): "
                     f"{'memory' if pid == '0' else 'RSS'} {e_rss / 1024:.1f} -> "
                     f"{l_rss / 1024:.1f} MB ({100 * (l_rss - e_rss) / max(e_rss, 1):+.1f}%), "
                     f"{what} {e_fd:.0f} -> {l_fd:.0f}")
    return lines


GNUPLOT = """set terminal pngcairo size 1200,1100 font ",10"
set output '{png}'
set datafile separator ','
set multiplot layout 3,1 title 'mcpq soak: {title}'
set xlabel 'minutes'
set key outside right
set ylabel 'RSS (MB)'
set yrange [0:*]
plot for [f in '{names}'] '{dir}/'.f.'.dat' using 1:2 with lines title f
set ylabel 'open fds'
plot for [f in '{procs}'] '{dir}/'.f.'.dat' using 1:3 with lines title f
set ylabel 'latency (s)'
set y2range [0:*]
set y2label 'Redis used memory (MB)'
set y2tics
plot '{dir}/latency.dat' using 1:2 with linespoints title 'p50', \
     '{dir}/latency.dat' using 1:3 with linespoints title 'p99', \
     '{dir}/redis-used-memory.dat' using 1:2 axes x1y2 with lines title 'Redis memory'
unset multiplot
"""


def plot(out, t0, minutes, title):
    """soak.png from samples.csv and the per-minute latency, with gnuplot."""
    rows = {}
    with open(os.path.join(out, "samples.csv")) as f:
        next(f)
        for line in f:
            t, name, pid, rss, fds = line.strip().split(",")
            rows.setdefault(name, []).append(f"{(float(t) - t0) / 60:.2f},"
                                             f"{int(rss) / 1024:.2f},{fds}")
    for name, lines in rows.items():
        with open(os.path.join(out, name + ".dat"), "w") as f:
            f.write("\n".join(lines) + "\n")
    with open(os.path.join(out, "latency.dat"), "w") as f:
        for m, (n, p50, p99, bad) in minutes.items():
            f.write(f"{m + 0.5},{p50:.3f},{p99:.3f},{n},{bad}\n")
    procs = " ".join(n for n in sorted(rows) if n != "redis-used-memory")
    script = GNUPLOT.format(png=os.path.join(out, "soak.png"), title=title, dir=out,
                            names=procs, procs=procs)
    with open(os.path.join(out, "soak.gp"), "w") as f:
        f.write(script)
    r = subprocess.run(["gnuplot", os.path.join(out, "soak.gp")], capture_output=True, text=True)
    return r.returncode == 0, r.stderr.strip()


def soak_report(out, hist, t0, title="soak"):
    minutes = per_minute(hist, t0)
    lines = ["| minute | operations | p50 (s) | p99 (s) | not ok |", "|---|---|---|---|---|"]
    for m, (n, p50, p99, bad) in minutes.items():
        lines.append(f"| {m + 1} | {n} | {p50:.2f} | {p99:.2f} | {bad} |")
    text = "\n".join(lines) + "\n\n" + "\n".join("- " + g for g in growth(out)) + "\n"
    with open(os.path.join(out, "soak.md"), "w") as f:
        f.write(text)
    print(text)
    ok, err = plot(out, t0, minutes, title)
    print(f"soak: graph {os.path.join(out, 'soak.png')}" if ok else f"soak: no graph: {err}")
