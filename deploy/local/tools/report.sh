#!/bin/sh
# exec tool `report` (deploy/local/mcpq.json, task mode): a long-running job as an RPA robot
# would run it. It reads the call envelope on stdin, reports one step per second on stderr
# as `progress <done> <total> <message>` (progress notifications and task status messages)
# and `log info <message>` lines, then prints a CallToolResult JSON document on stdout
# (docs/executors.md, "exec"). arguments.steps (1-20, default 5) sets the number of steps. POSIX sh only.
set -eu
envelope=$(cat)
steps=$(printf '%s' "$envelope" | tr -d '\n' |
    sed -n 's/.*"arguments"[[:space:]]*:[[:space:]]*{[^}]*"steps"[[:space:]]*:[[:space:]]*\([0-9][0-9]*\).*/\1/p')
case $steps in '' | *[!0-9]*) steps=5 ;; esac
[ "$steps" -ge 1 ] || steps=1
[ "$steps" -le 20 ] || steps=20

echo "log info report started: $steps steps" >&2
echo "progress 0 $steps starting" >&2
i=1
while [ "$i" -le "$steps" ]; do
    sleep 1
    echo "progress $i $steps step $i of $steps done" >&2
    i=$((i + 1))
done
echo "log info report finished" >&2
finished=$(date -u +%Y-%m-%dT%H:%M:%SZ)
printf '{"content":[{"type":"text","text":"report ready: %s steps"}],"structuredContent":{"status":"ok","steps":%s,"finished_at":"%s"},"isError":false}\n' \
    "$steps" "$steps" "$finished"
