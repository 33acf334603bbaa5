#!/usr/bin/env bash
# End-to-end test of scripts/mcpq-local (README "Two commands"), run by ctest with MCPQ_BIN_DIR set
# to the build dir and the repository root as cwd:
#   --help; a missing and a broken config fail with a message naming the problem; a stack
#   starts and prints exactly `READY http://127.0.0.1:<port>`; every component has its .log
#   and .pid; tools/call echo works through Kafka and Redis; kill -9 of worker-0 gets it
#   restarted under the same name; a call in flight on a killed worker still completes with
#   exactly one result; with --redis-persist --redis-fsync always, kill -9 of redis gets it
#   restarted on the same port with every result written before, and calls work after it;
#   SIGTERM stops everything with exit 0 within 20 s; --redis-port and --redis-via put the
#   ingress (only) behind bench-latency_proxy.
# KEEP=1 keeps the state dirs.
set -euo pipefail

REPO=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
LAUNCHER=$REPO/scripts/mcpq-local
BIN_DIR=${MCPQ_BIN_DIR:-$REPO/build}
case $BIN_DIR in /*) ;; *) BIN_DIR=$REPO/$BIN_DIR ;; esac
KEY=e2e-key-5f0c9a7d31
TMP=$(mktemp -d "${TMPDIR:-/tmp}/mcpq-e2e.XXXXXX")
LPID=
STEP=start
FAILS=0

log() { printf '# %s\n' "$*"; }
ok() { printf 'ok - %s\n' "$*"; }

show_state() {
    local f
    [ -n "${STATE:-}" ] || return 0
    for f in "$TMP"/launcher.err "$STATE"/*.log; do
        [ -f "$f" ] || continue
        echo "# --- tail of $f"
        tail -n 30 "$f" | sed 's/^/#   /'
    done
}

fail() {
    printf 'not ok - %s: %s\n' "$STEP" "$*"
    show_state
    FAILS=$((FAILS + 1))
    exit 1
}

cleanup() {
    local rc=$?
    if [ -n "$LPID" ] && kill -0 "$LPID" 2>/dev/null; then
        kill -KILL -- "-$LPID" 2>/dev/null || true
    fi
    if [ "${KEEP:-0}" = 1 ] || [ "$rc" != 0 ]; then
        echo "# state kept in $TMP"
    else
        rm -rf "$TMP"
    fi
}
trap cleanup EXIT

free_port_base() { # a port P with P and P+1 free
    local p i
    for i in $(seq 1 100); do
        p=$((10000 + RANDOM % 22000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null &&
            ! (exec 3<>"/dev/tcp/127.0.0.1/$((p + 1))") 2>/dev/null; then
            echo "$p"
            return
        fi
    done
    return 1
}

# Fails unless process group $1 is empty: pgrep's status 1 (nothing matched) is the only pass;
# 0 (processes left) and anything else (pgrep failed or is missing) fail.
no_group_left() {
    local left rc=0
    left=$(pgrep -g "$1") || rc=$?
    [ "$rc" = 1 ] || fail "processes left in the launcher's group $1 (pgrep status $rc): $left"
}

# Starts the launcher in its own session (as the acceptance suite does, detached, stdin
# closed); its stdout and stderr go to files.
start_launcher() {
    setsid "$LAUNCHER" --bin-dir "$BIN_DIR" "$@" >"$TMP/launcher.out" 2>"$TMP/launcher.err" </dev/null &
    LPID=$!
}

wait_ready() { # seconds
    local i
    for ((i = 0; i < $1 * 10; i++)); do
        if grep -q '^READY ' "$TMP/launcher.out" 2>/dev/null; then
            return 0
        fi
        kill -0 "$LPID" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

# Waits for the launcher to exit; its exit status in LRC, or fails after $1 seconds.
wait_exit() {
    local i
    for ((i = 0; i < $1 * 10; i++)); do
        if ! kill -0 "$LPID" 2>/dev/null; then
            LRC=0
            wait "$LPID" || LRC=$?
            return 0
        fi
        sleep 0.1
    done
    return 1
}

rpc_call() { # name arguments-json [max-time] → response body on stdout
    local body
    body=$(printf '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"%s","arguments":%s}}' \
        "$RANDOM" "$1" "$2")
    curl -sS --max-time "${3:-30}" -H "Authorization: Bearer $KEY" \
        -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
        -d "$body" "$URL/mcp"
}

# A tools/call that succeeded: a JSON-RPC result without isError.
assert_result() { # response what
    case $1 in
    *'"result"'*) ;;
    *) fail "$2: no result in: $1" ;;
    esac
    case $1 in
    *'"isError":true'* | *'"isError": true'*) fail "$2: isError result: $1" ;;
    esac
}

write_config() { # file
    cat >"$1" <<EOF
{
  "tenants": [{"id": "e2e", "api_keys": [{"id": "k1", "key": "$KEY"}], "default_server": "default"}],
  "servers": [{"tenant": "e2e", "name": "default", "description": "e2e"}],
  "tools": [
    {"tenant": "e2e", "server": "default", "name": "echo", "published": "1",
     "versions": [{"version": "1", "description": "echo",
                   "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
                   "executor": {"type": "builtin", "name": "echo"}, "timeout_ms": 60000, "mode": "sync"}]},
    {"tenant": "e2e", "server": "default", "name": "sleep", "published": "1",
     "versions": [{"version": "1", "description": "sleep",
                   "inputSchema": {"type": "object", "properties": {"ms": {"type": "integer"}, "n": {"type": "integer"}}, "required": ["ms"]},
                   "executor": {"type": "builtin", "name": "sleep"}, "timeout_ms": 120000, "mode": "sync"}]}
  ]
}
EOF
}

# ------------------------------------------------------------------ --help, bad configs

STEP=help
out=$("$LAUNCHER" --help) || fail "--help exited non-zero"
case $out in *usage:*--port*--state-dir*--env*--redis-fsync*) ;; *) fail "--help text lacks the flags: $out" ;; esac
rc=0
"$LAUNCHER" --no-such-flag >/dev/null 2>"$TMP/err" || rc=$?
[ "$rc" = 2 ] || fail "unknown flag: exit $rc, want 2"
grep -q -- "--no-such-flag" "$TMP/err" || fail "unknown flag not named: $(cat "$TMP/err")"
for bad in "--redis-fsync always" "--redis-persist --redis-fsync sometimes"; do
    rc=0
    # shellcheck disable=SC2086 # two words on purpose
    "$LAUNCHER" $bad >/dev/null 2>"$TMP/err" || rc=$?
    [ "$rc" = 2 ] || fail "$bad: exit $rc, want 2"
    grep -q -- "--redis-fsync" "$TMP/err" || fail "$bad: not named: $(cat "$TMP/err")"
done
ok "--help and usage errors"

STEP=missing-config
rc=0
"$LAUNCHER" --bin-dir "$BIN_DIR" --config "$TMP/nope.json" >/dev/null 2>"$TMP/err" || rc=$?
[ "$rc" != 0 ] || fail "a missing config exited 0"
grep -q "nope.json" "$TMP/err" || fail "the message does not name the file: $(cat "$TMP/err")"
ok "a missing config file is refused, naming the file"

STEP=bad-config
PORT=$(free_port_base) || fail "no free port"
STATE=$TMP/bad-state
printf '{"tenants": [{"id": "e2e", "api_keys": "not-a-list"}], "servers": [], "tools": []}\n' >"$TMP/bad.json"
start_launcher --port "$PORT" --workers 1 --config "$TMP/bad.json" --state-dir "$STATE"
wait_exit 90 || fail "the launcher is still running 90 s after start with a bad config"
[ "$LRC" != 0 ] || fail "a bad config exited 0"
grep -q '^READY' "$TMP/launcher.out" && fail "READY printed with a bad config"
grep -q "ingress-0 failed to start" "$TMP/launcher.err" ||
    fail "the message does not name the component: $(cat "$TMP/launcher.err")"
grep -q "api_keys" "$TMP/launcher.err" ||
    fail "the message does not name the problem (tenants[0].api_keys): $(cat "$TMP/launcher.err")"
no_group_left "$LPID"
for f in "$STATE"/*.pid; do
    [ -e "$f" ] && fail "pid file $f left behind"
done
LPID=
ok "a bad config: exit $LRC, message names ingress-0 and the JSON path"

# ------------------------------------------------------------------ a running stack

STEP=start
PORT=$(free_port_base) || fail "no free port"
STATE=$TMP/state
CONFIG=$TMP/config.json
write_config "$CONFIG"
start_launcher --port "$PORT" --workers 2 --config "$CONFIG" --state-dir "$STATE" --env MCPQ_LOG_LEVEL=info \
    --redis-persist --redis-fsync always
wait_ready 120 || fail "no READY line within 120 s"
URL=http://127.0.0.1:$PORT
[ "$(cat "$TMP/launcher.out")" = "READY $URL" ] ||
    fail "stdout is not exactly 'READY $URL': $(cat "$TMP/launcher.out")"
ok "READY line: READY $URL"

STEP=files
declare -A PIDS=()
for c in redis devbroker ingress-0 worker-0 worker-1; do
    [ -f "$STATE/$c.log" ] || fail "$c.log missing"
    [ -f "$STATE/$c.pid" ] || fail "$c.pid missing"
    pid=$(cat "$STATE/$c.pid")
    [[ $pid =~ ^[0-9]+$ ]] || fail "$c.pid holds '$pid'"
    kill -0 "$pid" 2>/dev/null || fail "$c (pid $pid) is not running"
    PIDS[$c]=$pid
done
ok "log and pid files of redis, devbroker, ingress-0, worker-0, worker-1"

STEP=healthz
code=$(curl -s -o /dev/null -w '%{http_code}' "$URL/readyz")
[ "$code" = 200 ] || fail "GET /readyz: $code"
ok "GET /readyz 200"

STEP="echo"
resp=$(rpc_call echo '{"text":"hello-e2e"}') || fail "curl failed"
assert_result "$resp" "echo"
case $resp in *hello-e2e*) ;; *) fail "echo result lacks the text: $resp" ;; esac
CALLS=1
ok "tools/call echo through Kafka and Redis"

REDIS_PORT=$(sed -nE 's/.*redis ready on 127\.0\.0\.1:([0-9]+).*/\1/p' "$TMP/launcher.err" | head -n1)
result_count() {
    redis-cli -p "$REDIS_PORT" --scan --pattern '{mcpq}:result:*' | wc -l
}

STEP=kill-worker
old=${PIDS[worker-0]}
kill -9 "$old"
new=
for _ in $(seq 1 100); do
    new=$(cat "$STATE/worker-0.pid" 2>/dev/null || true)
    if [ -n "$new" ] && [ "$new" != "$old" ] && kill -0 "$new" 2>/dev/null; then
        break
    fi
    new=
    sleep 0.1
done
[ -n "$new" ] || fail "worker-0.pid did not get a new live pid within 10 s"
grep -q "worker-0 (pid $old) killed by signal 9" "$TMP/launcher.err" || fail "no line about the dead worker"
for _ in $(seq 1 600); do
    [ -e "$STATE/worker-0.ready" ] && break
    sleep 0.1
done
[ -e "$STATE/worker-0.ready" ] || fail "the restarted worker-0 wrote no ready file within 60 s"
for i in 1 2 3; do
    resp=$(rpc_call echo "{\"text\":\"after-kill-$i\"}" 60) || fail "curl failed"
    assert_result "$resp" "echo after kill"
    CALLS=$((CALLS + 1))
done
ok "kill -9 worker-0 ($old): restarted as $new, calls still succeed"

STEP=in-flight
NSLEEP=8
# Rounds of eight 3 s sleeps spread over the partitions of both workers; kill -9 worker-0 once
# its log says it started one of them (a call in flight on it, not a guess from the clock). A
# round none of whose calls lands on worker-0 (1 in 256) ends and another starts.
# Each call must still answer with a result (the job is delivered again, README "Two commands"), and
# Redis must hold exactly one result per call.
victim=$(cat "$STATE/worker-0.pid")
w0_off=$(stat -c %s "$STATE/worker-0.log")
w0_started() { # 0 when worker-0 logged the start of a sleep job since w0_off
    tail -c +$((w0_off + 1)) "$STATE/worker-0.log" | grep '"msg":"job start"' | grep -q '"tool":"sleep"'
}
curls=()
n_inflight=0
killed=
for round in 1 2 3 4; do
    round_curls=()
    for i in $(seq 1 $NSLEEP); do
        n_inflight=$((n_inflight + 1))
        (rpc_call sleep "{\"ms\":3000,\"n\":$n_inflight}" 170 >"$TMP/inflight-$n_inflight.out" 2>&1 ||
            echo "curl-failed" >>"$TMP/inflight-$n_inflight.out") &
        round_curls+=($!)
    done
    curls+=("${round_curls[@]}")
    # Until worker-0 started one (kill it), or every call of the round is answered (none was
    # on worker-0: next round). The calls' own 170 s bound the wait.
    while :; do
        if w0_started; then
            kill -9 "$victim"
            killed=$round
            break 2
        fi
        running=0
        for c in "${round_curls[@]}"; do
            kill -0 "$c" 2>/dev/null && running=1
        done
        [ "$running" = 1 ] || break
        sleep 0.05
    done
    log "round $round: none of its $NSLEEP sleeps ran on worker-0"
done
[ -n "$killed" ] || fail "worker-0 started none of $n_inflight sleep calls in 4 rounds"
log "worker-0 (pid $victim) killed while running a sleep job (round $killed)"
wait "${curls[@]}" # not a bare wait: the launcher is a background job of this shell too
for i in $(seq 1 $n_inflight); do
    resp=$(cat "$TMP/inflight-$i.out")
    assert_result "$resp" "in-flight sleep $i"
    CALLS=$((CALLS + 1))
done
n=$(result_count)
[ "$n" = "$CALLS" ] || fail "Redis holds $n results for $CALLS calls (want exactly one each)"
ok "a call in flight on a killed worker completes; $n results for $CALLS calls"

STEP=kill-redis
# --redis-persist: a redis killed with kill -9 comes back on the same port from its AOF; with
# --redis-fsync always every result acknowledged before the kill is still there.
old=$(cat "$STATE/redis.pid")
before=$(result_count)
kill -9 "$old"
new=
for _ in $(seq 1 150); do
    new=$(cat "$STATE/redis.pid" 2>/dev/null || true)
    if [ -n "$new" ] && [ "$new" != "$old" ] && kill -0 "$new" 2>/dev/null &&
        [ "$(redis-cli -p "$REDIS_PORT" ping 2>/dev/null)" = PONG ]; then
        break
    fi
    new=
    sleep 0.1
done
[ -n "$new" ] || fail "redis did not answer PING on port $REDIS_PORT with a new pid within 15 s"
kill -0 "$LPID" 2>/dev/null || fail "the launcher exited when redis died"
grep -q "redis restarted on 127.0.0.1:$REDIS_PORT" "$TMP/launcher.err" ||
    fail "no line about the restarted redis"
# The ingress reconnects on its own; a load balancer sends calls once /readyz says 200 again.
for _ in $(seq 1 100); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$URL/readyz")" = 200 ] && break
    sleep 0.1
done
after=$(result_count)
if [ "$after" != "$before" ] || [ "$after" != "$CALLS" ]; then
    fail "redis holds $after results after the restart, $before before, for $CALLS calls"
fi
resp=$(rpc_call echo '{"text":"after-redis-kill"}' 60) || fail "curl failed"
assert_result "$resp" "echo after the redis restart"
case $resp in *after-redis-kill*) ;; *) fail "echo result lacks the text: $resp" ;; esac
CALLS=$((CALLS + 1))
ok "kill -9 redis ($old): restarted as $new on port $REDIS_PORT, $after results kept, calls work"

STEP=no-secrets
if grep -rl -- "$KEY" "$STATE"/*.log "$TMP/launcher.err" "$TMP/launcher.out" >/dev/null 2>&1; then
    fail "the API key appears in $(grep -rl -- "$KEY" "$STATE"/*.log "$TMP/launcher.err")"
fi
ok "the API key is in no log"

STEP=sigterm
all_pids=()
for f in "$STATE"/*.pid; do
    all_pids+=("$(cat "$f")")
done
start_s=$SECONDS
kill -TERM "$LPID"
wait_exit 20 || fail "the launcher did not exit within 20 s of SIGTERM"
[ "$LRC" = 0 ] || fail "exit status $LRC after SIGTERM, want 0"
for pid in "${all_pids[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then
        fail "pid $pid ($(ps -o comm= -p "$pid" || true)) still running after the launcher exited"
    fi
done
no_group_left "$LPID"
LPID=
ok "SIGTERM: exit 0 in $((SECONDS - start_s)) s, no process left"

STEP=redis-via
# --redis-port N --redis-via P: redis on N, the ingress through a proxy on P (bench/sec_redislat.sh
# puts bench-latency_proxy there), the workers direct.
PORT=$(free_port_base) || fail "no free port"
RPORT=$(free_port_base) || fail "no free port"
VIA=$((RPORT + 1))
"$BIN_DIR/bench-latency_proxy" --listen "127.0.0.1:$VIA" --to "127.0.0.1:$RPORT" --delay-ms 1 \
    >"$TMP/proxy.out" 2>&1 &
PROXY=$!
STATE=$TMP/state-via
start_launcher --port "$PORT" --workers 1 --config "$CONFIG" --state-dir "$STATE" \
    --redis-port "$RPORT" --redis-via "$VIA"
wait_ready 120 || fail "no READY line within 120 s"
URL=http://127.0.0.1:$PORT
grep -q "redis ready on 127.0.0.1:$RPORT" "$TMP/launcher.err" || fail "redis is not on --redis-port $RPORT"
env_of() { tr '\0' '\n' <"/proc/$(cat "$STATE/$1.pid")/environ" | sed -n 's/^MCPQ_REDIS_URL=//p'; }
[ "$(env_of ingress-0)" = "redis://127.0.0.1:$VIA/0" ] || fail "ingress-0's MCPQ_REDIS_URL: $(env_of ingress-0)"
[ "$(env_of worker-0)" = "redis://127.0.0.1:$RPORT/0" ] || fail "worker-0's MCPQ_REDIS_URL: $(env_of worker-0)"
resp=$(rpc_call echo '{"text":"through-the-proxy"}') || fail "curl failed"
assert_result "$resp" "echo with the ingress behind the proxy"
case $resp in *through-the-proxy*) ;; *) fail "echo result lacks the text: $resp" ;; esac
kill -TERM "$LPID"
wait_exit 20 || fail "the launcher did not exit within 20 s of SIGTERM"
LPID=
kill -TERM "$PROXY"
wait "$PROXY" || fail "bench-latency_proxy exited with $? on SIGTERM"
ok "--redis-port $RPORT --redis-via $VIA: the ingress reaches redis through the proxy, the worker directly; echo answered"

echo "# all launcher tests passed"
