#!/usr/bin/env bash
# bench/redis_memory.sh: how much Redis memory mcpq uses per call and per task, measured on a
# real local stack (scripts/mcpq-local: redis-server, mcpq-devbroker, 1 ingress, 1 worker).
# docs/operations.md sizes Redis from these numbers.
#
#   bash bench/redis_memory.sh            (BUILD dir: $MCPQ_BIN_DIR, else build/)
#
# Four phases, each read as the growth of Redis's used_memory (INFO memory) divided by N,
# after the previous phase has settled:
#   1. N sync calls in flight at once (a 20 s builtin sleep, held open by bench-inflight), read
#      while they wait: the reply-stream and request-map entries of a waiting call;
#   2. the same N calls after they completed: the result records (kept MCPQ_RESULT_TTL_S);
#   3. N task-mode calls for a robot nobody runs: waiting tasks (hash, queue entry, index);
#   4. N task-mode calls that ran (builtin echo): finished tasks with their results (kept
#      MCPQ_TASK_RETENTION_S).
# The arguments of each call are ~100 bytes; bigger arguments and results add their size.
# Prints one "key=value" line per phase plus the key counts. Knobs: BENCH_N (2000),
# BENCH_PORT (18280). Everything runs on 127.0.0.1.
set -euo pipefail

REPO=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
BIN=${MCPQ_BIN_DIR:-$REPO/build}
case $BIN in /*) ;; *) BIN=$REPO/$BIN ;; esac
N=${BENCH_N:-2000}
PORT=${BENCH_PORT:-18280}
KEY=bench-key
WORK=$(mktemp -d "${TMPDIR:-/tmp}/mcpq-redismem.XXXXXX")
LPID=

cleanup() {
    if [ -n "$LPID" ] && kill -0 "$LPID" 2>/dev/null; then
        kill -TERM "$LPID" 2>/dev/null || true
        wait "$LPID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

for b in mcpq-ingress mcpq-worker mcpq-devbroker bench-inflight; do
    [ -x "$BIN/$b" ] || { echo "redis_memory: $BIN/$b missing (make build)" >&2; exit 2; }
done

cat >"$WORK/mcpq.json" <<'EOF'
{
  "tenants": [{"id": "bench", "api_keys": [{"id": "bench-k1", "key": "bench-key"}],
               "rate_limits": {"api_key": {"per_second": 1000000000}}, "default_server": "default"}],
  "servers": [{"tenant": "bench", "name": "default", "description": "Redis memory benchmark"}],
  "tools": [
    {"tenant": "bench", "server": "default", "name": "sleep", "published": "1",
     "versions": [{"version": "1", "description": "Wait ms milliseconds",
       "inputSchema": {"type": "object", "properties": {"ms": {"type": "integer"}}, "required": ["ms"]},
       "executor": {"type": "builtin", "name": "sleep"}, "timeout_ms": 60000, "mode": "sync"}]},
    {"tenant": "bench", "server": "default", "name": "job", "published": "1",
     "versions": [{"version": "1", "description": "A task-mode echo",
       "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
       "executor": {"type": "builtin", "name": "echo"}, "timeout_ms": 60000, "mode": "task"}]}
  ]
}
EOF

"$REPO/scripts/mcpq-local" --port "$PORT" --workers 1 --config "$WORK/mcpq.json" \
    --state-dir "$WORK/state" --bin-dir "$BIN" >"$WORK/ready" 2>"$WORK/launcher.err" &
LPID=$!
for _ in $(seq 1 600); do
    grep -q '^READY' "$WORK/ready" 2>/dev/null && break
    kill -0 "$LPID" 2>/dev/null || { cat "$WORK/launcher.err" >&2; exit 1; }
    sleep 0.1
done
grep -q '^READY' "$WORK/ready" || { echo "redis_memory: stack not ready" >&2; exit 1; }
URL=http://127.0.0.1:$PORT/mcp
# The launcher says "redis ready on 127.0.0.1:<port>" on stderr.
RPORT=$(sed -n 's/.*redis ready on 127.0.0.1:\([0-9]*\).*/\1/p' "$WORK/launcher.err" | tail -1)
rcli() { redis-cli -p "$RPORT" "$@"; }
rcli PING >/dev/null || { echo "redis_memory: cannot reach redis on port $RPORT" >&2; exit 1; }

used() { rcli INFO memory | tr -d '\r' | sed -n 's/^used_memory:\([0-9]*\)$/\1/p'; }
keys() { rcli --scan --pattern "$1" | wc -l; }
settle() { sleep 1; }
per() { echo $((($2 - $1) / N)); }

call() { # $1 = JSON-RPC body; prints the answer
    curl -sS -X POST "$URL" -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
        -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2025-06-18' \
        --data "$1"
}
tasks() { # $1 = how many, $2 = extra arguments JSON
    local i
    for i in $(seq 1 "$1"); do
        printf '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"job","arguments":{"text":"benchmark task %06d with about a hundred bytes of arguments ......"%s}}}\n' \
            "$i" "$i" "$2"
    done | xargs -P 16 -d '\n' -I{} curl -sS -o /dev/null -X POST "$URL" \
        -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
        -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2025-06-18' \
        --data {}
}

call '{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":1}}}' >/dev/null
settle
base=$(used)

# 1 + 2: N calls in flight, then done.
"$BIN/bench-inflight" --url "$URL" --key "$KEY" -n "$N" --tool sleep --ms 20000 \
    --timeout-s 120 >"$WORK/inflight.out" 2>&1 &
IPID=$!
inflight=0
for _ in $(seq 1 150); do
    inflight=$(keys '{mcpq}:reqmap:*')
    [ "$inflight" -ge "$N" ] && break
    sleep 0.1
done
sleep 2
during=$(used)
wait "$IPID" || { cat "$WORK/inflight.out" >&2; echo "redis_memory: in-flight calls failed" >&2; exit 1; }
settle
after=$(used)
results=$(keys '{mcpq}:result:*')

# 3: waiting tasks (a robot nobody runs).
tasks "$N" ',"RobotId":"nobody"'
settle
waiting=$(used)
nwaiting=$(rcli ZCARD {mcpq}:tq:nobody)

# 4: tasks that ran.
tasks "$N" ''
for _ in $(seq 1 600); do
    [ "$(rcli ZCARD {mcpq}:tq:_any)" = 0 ] && [ "$(rcli ZCARD {mcpq}:task:leases)" = 0 ] && break
    sleep 0.2
done
settle
finished=$(used)

echo "redis_version=$(rcli INFO server | tr -d '\r' | sed -n 's/^redis_version://p')"
echo "n=$N"
echo "used_memory_baseline_bytes=$base"
echo "inflight_call_bytes=$(per "$base" "$during") (request-map keys seen: $inflight)"
echo "completed_call_result_bytes=$(per "$base" "$after") (result records: $results)"
echo "waiting_task_bytes=$(per "$after" "$waiting") (queued for robot nobody: $nwaiting)"
echo "finished_task_bytes=$(per "$waiting" "$finished") (task hash + result record)"
