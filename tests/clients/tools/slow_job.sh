#!/bin/sh
# exec tool `slow_job`: the cancellation target. Starts `sleep <seconds>` (default 30) in the
# background, writes "<own pid> <sleep pid>" to the file named by the `pidfile` argument
# (atomically: a temp file, then mv), reports progress 0/1, and waits. A cancelled call must
# get both processes killed (docs/executors.md, "exec": SIGTERM, then SIGKILL to the process group).
env=$(cat)
pidfile=$(printf '%s\n' "$env" | sed -n 's/.*"pidfile"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' | head -n 1)
seconds=$(printf '%s\n' "$env" | sed -n 's/.*"seconds"[[:space:]]*:[[:space:]]*\([0-9][0-9]*\).*/\1/p' | head -n 1)
sleep "${seconds:-30}" &
child=$!
if [ -n "$pidfile" ]; then
    printf '%s %s\n' "$$" "$child" >"$pidfile.tmp" && mv "$pidfile.tmp" "$pidfile"
fi
echo "progress 0 1 sleeping ${seconds:-30} s" >&2
wait "$child"
echo "slow job done"
