#!/usr/bin/env bash
# bench/run.sh: the benchmarks of docs/benchmarks.md "Targets", side by side, in one run (`make bench`).
#
# 1. Builds Release binaries of the ingress, worker, devbroker and bench tools into
#    build/bench/cmake, and installs the official MCP TypeScript SDK pinned by
#    bench/package-lock.json into build/bench/npm (npm ci; reused while the lock is unchanged).
# 2. Starts three servers on loopback: the bare libmicrohttpd responder (bench-bare_responder),
#    the TypeScript SDK server (bench/ts_sdk_server.mjs, echo and sleep in-process) and an
#    mcpq stack (scripts/mcpq-local --workers 2, bench/mcpq-bench.json, state in
#    build/bench/state). The bench key's rate limit is 10^9/s: every request still goes
#    through the limiter (a local lease spent per request, Redis once per 5*10^7), but no
#    request is refused.
# 3. Measures:
#    - N (10,000) concurrent in-flight tools/call of `sleep` (5 s) against one ingress
#      (bench-inflight: completed, latency, max RSS and thread count of the ingress);
#    - tools/list throughput with wrk: bare responder and mcpq alternating for 5 rounds (the
#      verdict takes the median ratio of the rounds the rest of the machine left alone), then
#      the TS SDK;
#    - tools/call `echo` throughput with wrk at 64 and 256 connections: mcpq (through Kafka and
#      Redis, with the CPU time of each stack process), TS SDK;
#    - tools/call `echo` latency at half of each one's peak rate (bench-loadgen, open loop),
#      the bare responder at mcpq's rate as the loopback HTTP floor, and mcpq at 100 req/s;
#    - the same N in-flight calls against the TS SDK server, last;
#    - when the ingress missed 128 MiB: the in-flight run again on a fresh stack with
#      MCPQ_CONN_MEMORY_LIMIT=8192, to show how much of the RSS is libmicrohttpd's
#      per-connection pools.
#    - what durable Redis costs: tools/call echo peak and latency on two fresh stacks whose
#      Redis keeps an append-only file, appendfsync everysec and always.
# 4. Stops everything it started, checks that nothing is left, and writes docs/benchmarks.md
#    (raw outputs stay in build/bench/results).
#
# Knobs (environment): BENCH_INFLIGHT (10000), BENCH_SLEEP_MS (5000), BENCH_DURATION (10 s per
# run), BENCH_WARMUP (3 s, discarded), BENCH_CONNECTIONS (64), BENCH_ECHO_CONNECTIONS ("64 256":
# the echo runs use each and take the best as the peak), BENCH_LIST_ROUNDS (5) and
# BENCH_LIST_DURATION (5 s: alternating tools/list rounds), BENCH_QUIET_PCT (10: a tools/list
# round counts as quiet when other processes used less of the CPU), BENCH_WRK_THREADS (2),
# BENCH_PORT (18080: mcpq; +10 bare responder, +12 TS SDK), BENCH_WORK (build/bench),
# BENCH_DOC (docs/benchmarks.md), BENCH_NO_BUILD=1 (use the existing build/bench/cmake),
# BENCH_PROFILE=1 (system-wide perf record during mcpq's echo runs; adds a profile section),
# BENCH_SKIP_TS_INFLIGHT=1, BENCH_NO_VARIANT=1 (no diagnosis run after an RSS miss),
# BENCH_FSYNC_CONNECTIONS (64: wrk connections of the appendfsync comparison), BENCH_ONLY=fsync
# (only the appendfsync comparison, about a minute: its section of BENCH_DOC is rewritten).
# The whole run takes about 3.5 minutes on 2 cores once the build and npm ci are done.
# Everything runs on 127.0.0.1; the only network use is npm ci on the first run.
set -euo pipefail

ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
WORK=${BENCH_WORK:-$ROOT/build/bench}
N=${BENCH_INFLIGHT:-10000}
SLEEP_MS=${BENCH_SLEEP_MS:-5000}
DURATION=${BENCH_DURATION:-10}
WARMUP=${BENCH_WARMUP:-3}
CONNS=${BENCH_CONNECTIONS:-64}
ECHO_LEVELS=${BENCH_ECHO_CONNECTIONS:-64 256} # tools/call echo: wrk at each; the best is the peak
LIST_ROUNDS=${BENCH_LIST_ROUNDS:-5}             # tools/list: alternating bare/mcpq rounds
LIST_DURATION=${BENCH_LIST_DURATION:-5}         # seconds per tools/list round
QUIET_PCT=${BENCH_QUIET_PCT:-10}                # a round is quiet below this much other CPU
WRK_THREADS=${BENCH_WRK_THREADS:-2}
PORT=${BENCH_PORT:-18080}
DOC=${BENCH_DOC:-$ROOT/docs/benchmarks.md}
KEY=bench-key
BARE_PORT=$((PORT + 10))
TS_PORT=$((PORT + 12))
BIN=$WORK/cmake
RES=$WORK/results
STATE=$WORK/state
CONFIG=$ROOT/bench/mcpq-bench.json

LIST_BODY='{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
ECHO_BODY='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}'
ACCEPT_JSON='application/json'
ACCEPT_BOTH='application/json, text/event-stream' # the TS SDK answers 406 without both

T_START=$SECONDS
say() { printf '[bench %3ds] %s\n' $((SECONDS - T_START)) "$*" >&2; }
die() {
    say "FAILED: $*"
    exit 1
}
# val FILE KEY: the value of the first "KEY=value" line of FILE (empty when absent).
val() { [ -f "$1" ] && awk -v k="$2=" 'index($0, k) == 1 { print substr($0, length(k) + 1); exit }' "$1" || true; }
calc() { awk "BEGIN { printf \"%.${2:-2}f\", $1 }"; }  # calc EXPR [DECIMALS]
ge() { awk "BEGIN { exit !(($1) >= ($2)) }"; }         # ge A B: A >= B

COMMANDS=() # every measurement command, for the doc
rel() { case $1 in "$ROOT"/*) printf '%s' "${1#"$ROOT"/}" ;; *) printf '%s' "$1" ;; esac; }
note_cmd() { COMMANDS+=("$*"); }

# ------------------------------------------------------------------ processes we start

PIDS=()     # bare responder, TS server, launcher
NAMES_OF=() # their names
LAUNCHER_PID=
COMPONENT_PIDS=() # the stack's components (from its pid files), checked after the stop
CLEAN_STOP=unknown

stop_pid() { # pid name seconds
    local pid=$1 name=$2 limit=$3 t=0
    kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null && [ "$t" -lt $((limit * 10)) ]; do
        sleep 0.1
        t=$((t + 1))
    done
    if kill -0 "$pid" 2>/dev/null; then
        say "$name (pid $pid) still running after SIGTERM: SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
}

stop_all() {
    local i left=()
    for i in "${!PIDS[@]}"; do
        if [ "${PIDS[$i]}" = "$LAUNCHER_PID" ]; then
            stop_pid "${PIDS[$i]}" "${NAMES_OF[$i]}" 25
        else
            stop_pid "${PIDS[$i]}" "${NAMES_OF[$i]}" 10
        fi
    done
    for i in "${PIDS[@]+"${PIDS[@]}"}" "${COMPONENT_PIDS[@]+"${COMPONENT_PIDS[@]}"}"; do
        if kill -0 "$i" 2>/dev/null; then
            left+=("$i")
        fi
    done
    if [ ${#left[@]} -eq 0 ]; then
        CLEAN_STOP="none (every pid checked after the stop)"
    else
        CLEAN_STOP="no: pids ${left[*]} were still running"
        say "left behind: ${left[*]}; killing them"
        kill -KILL "${left[@]}" 2>/dev/null || true
    fi
    PIDS=()
    NAMES_OF=()
}
trap 'stop_all' EXIT
trap 'exit 130' INT TERM
trap 'say "FAILED: line $LINENO: $BASH_COMMAND"' ERR

# start_server name outfile cmd...: runs cmd in the background, waits for its READY line.
start_server() {
    local name=$1 out=$2 t=0
    shift 2
    : >"$out" # emptied before the wait below reads it: never a READY of an earlier run
    "$@" >"$out" 2>&1 &
    local pid=$!
    PIDS+=("$pid")
    NAMES_OF+=("$name")
    while ! grep -q '^READY http' "$out" 2>/dev/null; do
        kill -0 "$pid" 2>/dev/null || {
            tail -n 20 "$out" >&2
            die "$name exited before it was ready (see $out)"
        }
        [ "$t" -lt 1200 ] || die "$name not ready within 120 s (see $out)"
        sleep 0.1
        t=$((t + 1))
    done
    LAST_PID=$pid
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# ------------------------------------------------------------------ preparation

mkdir -p "$WORK" "$RES"
rm -f "$RES"/*.txt

command -v node >/dev/null || die "node is missing (Node.js >= 20; scripts/deps.sh installs it)"
command -v npm >/dev/null || die "npm is missing (scripts/deps.sh installs it)"
if ! command -v wrk >/dev/null; then
    say "installing wrk (Debian package)"
    SUDO=
    [ "$(id -u)" = 0 ] || SUDO=sudo
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq wrk >/dev/null ||
        die "wrk is missing: apt-get install -y wrk"
fi

# Every bench/<name>.c is the tool bench-<name> (CMakeLists.txt).
BENCH_TARGETS=$(for f in "$ROOT"/bench/*.c; do printf 'bench-%s ' "$(basename "$f" .c)"; done)
if [ "${BENCH_NO_BUILD:-}" != 1 ]; then
    say "building Release binaries in $BIN"
    cmake -S "$ROOT" -B "$BIN" -DCMAKE_BUILD_TYPE=Release >"$WORK/cmake.log" 2>&1 ||
        { tail -n 30 "$WORK/cmake.log" >&2; die "cmake configure failed (see $WORK/cmake.log)"; }
    # shellcheck disable=SC2086 # BENCH_TARGETS is a list
    cmake --build "$BIN" -j "$(nproc)" --target mcpq-ingress mcpq-worker mcpq-devbroker \
        $BENCH_TARGETS >>"$WORK/cmake.log" 2>&1 ||
        { tail -n 30 "$WORK/cmake.log" >&2; die "build failed (see $WORK/cmake.log)"; }
fi
for b in mcpq-ingress mcpq-worker mcpq-devbroker $BENCH_TARGETS; do
    [ -x "$BIN/$b" ] || die "$BIN/$b is missing"
done

NPM=$WORK/npm
mkdir -p "$NPM"
if ! cmp -s "$ROOT/bench/package-lock.json" "$NPM/package-lock.json" ||
    [ ! -f "$NPM/node_modules/@modelcontextprotocol/sdk/package.json" ]; then
    say "installing the TypeScript SDK (npm ci) into $NPM"
    cp "$ROOT/bench/package.json" "$ROOT/bench/package-lock.json" "$NPM/"
    (cd "$NPM" && npm ci --no-audit --no-fund --loglevel=error >"$WORK/npm.log" 2>&1) ||
        { tail -n 20 "$WORK/npm.log" >&2; die "npm ci failed (see $WORK/npm.log)"; }
fi
cp "$ROOT/bench/ts_sdk_server.mjs" "$NPM/"
SDK_VERSION=$(node -p "require('$NPM/node_modules/@modelcontextprotocol/sdk/package.json').version")

# One fd per in-flight connection for the client and the servers, plus what they use besides.
NEED_FDS=$((N + 4096))
HARD=$(ulimit -Hn)
if [ "$HARD" != unlimited ] && [ "$HARD" -lt "$NEED_FDS" ]; then
    ulimit -Hn "$NEED_FDS" 2>/dev/null || true
fi
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
NOFILE=$(ulimit -n)
if [ "$NOFILE" != unlimited ] && [ "$NOFILE" -lt $((N + 200)) ]; then
    say "ulimit -n is $NOFILE: lowering the in-flight count from $N to $((NOFILE - 200))"
    N=$((NOFILE - 200))
fi

for p in "$PORT" "$BARE_PORT" "$TS_PORT"; do
    port_in_use "$p" && die "port $p on 127.0.0.1 is in use: set BENCH_PORT to another base"
done

# ------------------------------------------------------------------ servers

# start_stack statedir outfile [--env K=V ...]: an mcpq stack on $PORT; sets INGRESS_PID.
start_stack() {
    local state=$1 out=$2
    shift 2
    rm -rf "$state"
    start_server mcpq-local "$out" "$ROOT/scripts/mcpq-local" --port "$PORT" \
        --config "$CONFIG" --state-dir "$state" --workers "${STACK_WORKERS:-2}" \
        --bin-dir "${SBIN:-$BIN}" "$@"
    LAUNCHER_PID=$LAST_PID
    INGRESS_PID=$(cat "$state/ingress-0.pid")
    local f
    for f in "$state"/*.pid; do
        COMPONENT_PIDS+=("$(cat "$f")")
    done
    note_cmd "scripts/mcpq-local --port $PORT --config bench/mcpq-bench.json --state-dir $(rel "$state") --workers ${STACK_WORKERS:-2} --bin-dir $(rel "${SBIN:-$BIN}") $*"
}

# stop_stack: SIGTERM to the launcher, which stops its components (scripts/mcpq-local --help).
stop_stack() {
    local i
    for i in "${!PIDS[@]}"; do
        if [ "${PIDS[$i]}" = "$LAUNCHER_PID" ]; then
            stop_pid "$LAUNCHER_PID" mcpq-local 25
            unset "PIDS[$i]" "NAMES_OF[$i]"
        fi
    done
    PIDS=("${PIDS[@]+"${PIDS[@]}"}")
    NAMES_OF=("${NAMES_OF[@]+"${NAMES_OF[@]}"}")
    LAUNCHER_PID=
}

# ------------------------------------------------------------------ measurements

MCPQ_URL=http://127.0.0.1:$PORT/mcp
BARE_URL=http://127.0.0.1:$BARE_PORT/mcp
TS_URL=http://127.0.0.1:$TS_PORT/mcp

# check_answer name url accept body: one request must come back 200 with a JSON-RPC result.
check_answer() {
    local out
    out=$(curl -s -m 10 -w '\n%{http_code}' -X POST "$2" -H "Authorization: Bearer $KEY" \
        -H 'Content-Type: application/json' -H "Accept: $3" --data-binary "$4") || true
    if [ "${out##*$'\n'}" != 200 ] || [[ $out != *'"result"'* ]] || [[ $out == *'"isError":true'* ]]; then
        die "$1 answered: $out"
    fi
}
# metric NAME_WITH_LABELS: a counter of the ingress's /metrics (0 when absent).
metric() {
    curl -s -m 5 "http://127.0.0.1:$PORT/metrics" | awk -v k="$1" '$1 == k { v = $2 } END { print v + 0 }'
}

# cpu_ticks pid: user + system clock ticks the process has used so far.
cpu_ticks() { { sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null || true; } | awk '{ t = $12 + $13 } END { print t + 0 }'; }
# proc_ticks: "pid ticks" for every user-space process (kernel threads left out), ticks being
# its own CPU time plus that of the children it reaped, so a short-lived test process that
# ran and exited meanwhile still counts, in its parent.
proc_ticks() {
    { cat /proc/[0-9]*/stat 2>/dev/null || true; } | awk '{
        p = 0
        for (i = length($0); i > 0; i--) if (substr($0, i, 1) == ")") { p = i; break }
        split(substr($0, p + 2), f, " ")
        if ($1 != 2 && f[2] != 2) print $1, f[12] + f[13] + f[14] + f[15] }'
}
# others_start / others_end OUTFILE: around a measurement, appends other_cpu_pct (the share of
# the machine's CPU that processes this run did not start used meanwhile) to OUTFILE and
# prints it.
others_start() {
    proc_ticks >"$WORK/ticks.before"
    OTHERS_T0=$(date +%s.%N)
}
others_end() {
    local t1 pct
    t1=$(date +%s.%N)
    proc_ticks >"$WORK/ticks.after"
    pct=$(calc "$(other_ticks "$WORK/ticks.before" "$WORK/ticks.after") / $CLK_TCK / ($NPROC * ($t1 - $OTHERS_T0)) * 100" 0)
    printf 'other_cpu_pct=%s\n' "$pct" >>"$1"
    printf '%s' "$pct"
}
# other_ticks BEFORE_FILE AFTER_FILE: CPU ticks used meanwhile by processes this run did not
# start (other engineers' builds and tests on the shared machine).
other_ticks() {
    local ours=" $$ ${PIDS[*]-} ${COMPONENT_PIDS[*]-} "
    awk -v ours="$ours" 'FNR == NR { before[$1] = $2; next }
        index(ours, " " $1 " ") == 0 { d = $2 - before[$1]; if (d > 0) s += d }
        END { print s + 0 }' "$1" "$2"
}
CLK_TCK=$(getconf CLK_TCK)
NPROC=$(nproc)

# rss_map pid outfile: the largest mappings by RSS (where the memory is).
rss_map() {
    awk '/^[0-9a-f]+-[0-9a-f]+ / { name = ($6 == "" ? "anonymous (malloc arena or mmap)" : $6) }
         /^Rss:/ { if ($2 > 0) print $2, name }' "/proc/$1/smaps" 2>/dev/null |
        sort -rn | head -n 6 >"$2" || true
    awk '/^(Rss|Anonymous):/ { print $1, $2 }' "/proc/$1/smaps_rollup" >>"$2" 2>/dev/null || true
}

# run_inflight name url accept pid outfile
run_inflight() {
    local cmd=("$BIN/bench-inflight" --url "$2" --key "$KEY" -n "$N" --tool sleep --ms "$SLEEP_MS"
        --accept "$3" --pid "$4")
    note_cmd "$(rel "$BIN")/bench-inflight --url $2 --key $KEY -n $N --tool sleep --ms $SLEEP_MS --accept '$3' --pid <$1 pid>"
    say "$1: $N concurrent tools/call sleep(${SLEEP_MS} ms)"
    "${cmd[@]}" >"$5" 2>&1 || true
    say "  completed $(val "$5" completed)/$N, max RSS $(val "$5" rss_max_mib) MiB, threads $(val "$5" threads_min)-$(val "$5" threads_max)"
}

# run_wrk name url accept body connections outfile
run_wrk() {
    local name=$1 url=$2 accept=$3 body=$4 conns=$5 out=$6
    local args=(-t "$WRK_THREADS" -c "$conns" --timeout 10s -s "$ROOT/bench/wrk_post.lua" "$url")
    export BENCH_BODY=$body BENCH_ACCEPT=$accept BENCH_AUTH="Bearer $KEY"
    local warm=${WRK_WARMUP:-$WARMUP} dur=${WRK_DURATION:-$DURATION}
    say "$name, $conns connections: wrk warm-up ${warm} s, then ${dur} s"
    if [ "$warm" -gt 0 ]; then
        wrk -d "${warm}s" "${args[@]}" >/dev/null 2>&1 || true
    fi
    note_cmd "BENCH_BODY='$body' BENCH_ACCEPT='$accept' BENCH_AUTH='Bearer $KEY' wrk -d ${dur}s -t $WRK_THREADS -c $conns --timeout 10s -s bench/wrk_post.lua $url   # after a ${warm} s warm-up run"
    # Who else used the CPU meanwhile: the server's processes (WRK_PIDS, optional) and the
    # processes this run did not start (other_ticks).
    local srv0=0 srv1=0 pid srv_s other
    others_start
    for pid in ${WRK_PIDS:-}; do srv0=$((srv0 + $(cpu_ticks "$pid"))); done
    wrk -d "${dur}s" "${args[@]}" >"$out" 2>&1 || true
    for pid in ${WRK_PIDS:-}; do srv1=$((srv1 + $(cpu_ticks "$pid"))); done
    other=$(others_end "$out")
    srv_s=$(calc "($srv1 - $srv0) / $CLK_TCK" 2)
    {
        if [ -n "${WRK_PIDS:-}" ]; then
            printf 'server_cpu_s=%s\n' "$srv_s"
            printf 'server_us_per_req=%s\n' "$(calc "$srv_s * 1e6 / ($(val "$out" requests)+1e-9)" 1)"
        fi
    } >>"$out"
    say "  $(val "$out" rps) req/s, p50 $(val "$out" latency_p50_ms) ms, p99 $(val "$out" latency_p99_ms) ms, errors $(val "$out" errors), other processes ${other}% of the CPU"
}

# run_loadgen name url accept rate outfile
run_loadgen() {
    local name=$1 url=$2 accept=$3 rate=$4 out=$5
    say "$name: open loop at $rate req/s for ${DURATION} s (+2 s warm-up)"
    note_cmd "$(rel "$BIN")/bench-loadgen --url $url --rate $rate --duration $DURATION --warmup 2 --connections 256 --body '$ECHO_BODY' -H 'Authorization: Bearer $KEY' -H 'Content-Type: application/json' -H 'Accept: $accept' --check-result"
    local other
    others_start
    "$BIN/bench-loadgen" --url "$url" --rate "$rate" --duration "$DURATION" --warmup 2 \
        --connections 256 --body "$ECHO_BODY" -H "Authorization: Bearer $KEY" \
        -H 'Content-Type: application/json' -H "Accept: $accept" --check-result >"$out" 2>&1 || true
    other=$(others_end "$out")
    say "  achieved $(val "$out" achieved_rps) req/s, p50 $(val "$out" latency_p50_ms) ms, p99 $(val "$out" latency_p99_ms) ms, errors $(val "$out" errors), other processes ${other}% of the CPU"
}

# ------------------------------------------------------------------ Redis durability (appendfsync)

FSYNC_MODES="everysec always"
FSYNC_CONNS=${BENCH_FSYNC_CONNECTIONS:-64}
FSYNC_RATE=

# fsync_stack MODE NAME: a fresh stack whose Redis keeps an append-only file with that
# appendfsync (scripts/mcpq-local --redis-persist --redis-fsync MODE), checked with one call.
fsync_stack() {
    say "mcpq stack with Redis appendfsync $1 (2 workers)"
    start_stack "$WORK/state-fsync-$1" "$WORK/launcher-fsync-$2.out" --redis-persist --redis-fsync "$1"
    check_answer "mcpq tools/call echo (appendfsync $1)" "$MCPQ_URL" "$ACCEPT_JSON" "$ECHO_BODY"
}

# fsync_compare: for each appendfsync mode on a fresh stack, the tools/call echo peak with wrk
# at FSYNC_CONNS connections; then, again on fresh stacks, the latency with bench-loadgen at
# one rate for both modes: half of the lower peak, so that both can keep it. Results in
# $RES/fsync-<mode>-{wrk,half}.txt.
fsync_compare() {
    local m r low=
    for m in $FSYNC_MODES; do
        fsync_stack "$m" "$m-peak"
        run_wrk "mcpq tools/call echo, appendfsync $m" "$MCPQ_URL" "$ACCEPT_JSON" "$ECHO_BODY" \
            "$FSYNC_CONNS" "$RES/fsync-$m-wrk.txt"
        stop_stack
        r=$(val "$RES/fsync-$m-wrk.txt" rps)
        if [ -z "$low" ] || ! ge "${r:-0}" "$low"; then
            low=${r:-0}
        fi
    done
    FSYNC_RATE=$(calc "$low / 2" 0)
    [ "$FSYNC_RATE" -ge 1 ] || FSYNC_RATE=1
    for m in $FSYNC_MODES; do
        fsync_stack "$m" "$m-latency"
        run_loadgen "mcpq tools/call echo, appendfsync $m" "$MCPQ_URL" "$ACCEPT_JSON" "$FSYNC_RATE" \
            "$RES/fsync-$m-half.txt"
        stop_stack
    done
}

# fsync_cost: one line, always against everysec: peak, p50 and p99 at the same rate.
fsync_cost() {
    local e=$RES/fsync-everysec a=$RES/fsync-always
    printf 'appendfsync always vs everysec: peak %s vs %s req/s (%s%%), at %s req/s p50 %s vs %s ms, p99 %s vs %s ms\n' \
        "$(val "$a-wrk.txt" rps)" "$(val "$e-wrk.txt" rps)" \
        "$(calc "($(val "$a-wrk.txt" rps)+0) / ($(val "$e-wrk.txt" rps)+1e-9) * 100" 0)" \
        "$FSYNC_RATE" "$(val "$a-half.txt" latency_p50_ms)" "$(val "$e-half.txt" latency_p50_ms)" \
        "$(val "$a-half.txt" latency_p99_ms)" "$(val "$e-half.txt" latency_p99_ms)"
}

# fsync_section: the doc's section of the comparison, between markers BENCH_ONLY=fsync replaces.
fsync_section() {
    local m fs
    fs=$(df -T "$WORK" 2>/dev/null | awk 'NR == 2 { print $2 }')
    cat <<DOC_END
<!-- bench fsync begin: bench/run.sh writes this section; BENCH_ONLY=fsync runs only it -->
## 4. What durable Redis costs: \`appendfsync always\` against \`everysec\`

Measured on $(date -u '+%Y-%m-%d %H:%M UTC') (git $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)). Each mode on a fresh stack (1 ingress, 2 workers) whose Redis keeps an
append-only file in $(rel "$WORK")/state-fsync-<mode> (\`scripts/mcpq-local --redis-persist --redis-fsync
<mode>\`; file system ${fs:-unknown}): \`tools/call\` echo with wrk at $FSYNC_CONNS connections (${DURATION} s after a
${WARMUP} s warm-up), then, on fresh stacks again, \`bench-loadgen\` at $FSYNC_RATE req/s for both, half
of the lower peak (${DURATION} s after 2 s). Under \`always\` Redis fsyncs its AOF before it answers a write (one
fsync per event-loop round, shared by the writes of that round), so no acknowledged result,
task or claim is lost in a host crash; under \`everysec\` up to a second of them may be
([reliability.md](reliability.md), [operations.md](operations.md) "Redis"). Latencies in ms.

| appendfsync | peak req/s | wrk p50 | wrk p99 | errors | rate (req/s) | achieved | p50 | p99 | max | errors | others' CPU (wrk / loadgen) |
|---|---|---|---|---|---|---|---|---|---|---|---|
DOC_END
    for m in $FSYNC_MODES; do
        printf '| `%s` | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s%% / %s%% |\n' "$m" \
            "$(val "$RES/fsync-$m-wrk.txt" rps)" "$(val "$RES/fsync-$m-wrk.txt" latency_p50_ms)" \
            "$(val "$RES/fsync-$m-wrk.txt" latency_p99_ms)" "$(val "$RES/fsync-$m-wrk.txt" errors)" \
            "$FSYNC_RATE" "$(val "$RES/fsync-$m-half.txt" achieved_rps)" \
            "$(val "$RES/fsync-$m-half.txt" latency_p50_ms)" \
            "$(val "$RES/fsync-$m-half.txt" latency_p99_ms)" \
            "$(val "$RES/fsync-$m-half.txt" latency_max_ms)" "$(val "$RES/fsync-$m-half.txt" errors)" \
            "$(val "$RES/fsync-$m-wrk.txt" other_cpu_pct)" "$(val "$RES/fsync-$m-half.txt" other_cpu_pct)"
    done
    printf '\n%s.\n<!-- bench fsync end -->\n' "$(fsync_cost)"
}

# fsync_doc: puts fsync_section into an existing $DOC in place of the previous one (or before
# "How the run works" when it has none).
fsync_doc() {
    fsync_section | sed '1d;$d' >"$RES/sec-fsync.md" # section_doc adds the markers
    section_doc fsync
}

# ------------------------------------------------------------------ before and after

# The build every "before" figure is measured on: BENCH_BASE (a git revision; default the
# commit before performance round two) is exported with `git archive` into
# $WORK/base/src and built like $BIN into $WORK/base/cmake. base_build sets BASE_BIN; a
# section runs the base stack with SBIN=$BASE_BIN (start_stack), the bench tools stay
# $BIN's. BENCH_BASE=none skips every "before" run.
BENCH_BASE=${BENCH_BASE:-55f213e}
BASE_BIN=
base_build() {
    [ -n "$BASE_BIN" ] && return 0
    [ "$BENCH_BASE" != none ] || return 1
    local src=$WORK/base/src rev
    rev=$(git -C "$ROOT" rev-parse --short "$BENCH_BASE^{commit}" 2>/dev/null) ||
        die "BENCH_BASE=$BENCH_BASE is not a commit of this repository"
    if [ "$(cat "$WORK/base/rev" 2>/dev/null)" != "$rev" ] || [ ! -x "$WORK/base/cmake/mcpq-ingress" ]; then
        say "building the base ($rev) in $WORK/base/cmake"
        rm -rf "$WORK/base"
        mkdir -p "$src"
        git -C "$ROOT" archive "$rev" | tar -x -C "$src"
        cmake -S "$src" -B "$WORK/base/cmake" -DCMAKE_BUILD_TYPE=Release >"$WORK/base.log" 2>&1 &&
            cmake --build "$WORK/base/cmake" -j "$(nproc)" --target mcpq-ingress mcpq-worker \
                mcpq-devbroker >>"$WORK/base.log" 2>&1 ||
            { tail -n 30 "$WORK/base.log" >&2; die "the base build failed (see $WORK/base.log)"; }
        printf '%s\n' "$rev" >"$WORK/base/rev"
    fi
    BASE_BIN=$WORK/base/cmake
    BASE_REV=$rev
}

# ratio NEW OLD [DECIMALS]: NEW / OLD as "1.23×" (or "n/a").
ratio() { if ge "${2:-0}" 1e-12 && [ -n "${1:-}" ]; then printf '%s×' "$(calc "$1 / $2" "${3:-2}")"; else printf 'n/a'; fi; }

# cpu_per_call state rate outfile [loadgen args]: CPU µs per tools/call of every stack
# component (its pid files in state: ingress-0, worker-N, redis, devbroker) during an open
# loop of echo at a fixed rate (DURATION s after a 2 s warm-up that is not counted). Writes
# "<component>_us=...", "calls=", "total_us=", the loadgen's own lines and other_cpu_pct.
cpu_per_call() {
    local state=$1 rate=$2 out=$3 f n pid
    shift 3
    local lg=("$BIN/bench-loadgen" --url "$MCPQ_URL" --rate "$rate" --connections 256
        --body "$ECHO_BODY" -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json'
        -H "Accept: $ACCEPT_BOTH" --check-result "$@")
    "${lg[@]}" --duration 2 --warmup 0 >/dev/null 2>&1 || true # warm-up
    declare -A t0=()
    for f in "$state"/*.pid; do t0[$(basename "$f" .pid)]=$(cpu_ticks "$(cat "$f")"); done
    others_start
    "${lg[@]}" --duration "$DURATION" --warmup 0 >"$out" 2>&1 || true
    others_end "$out" >/dev/null
    local calls total=0 us
    calls=$(val "$out" recorded)
    for f in "$state"/*.pid; do
        n=$(basename "$f" .pid)
        pid=$(cat "$f")
        us=$(calc "($(cpu_ticks "$pid") - ${t0[$n]}) / $CLK_TCK * 1e6 / (${calls:-0} + 1e-9)" 1)
        printf '%s_us=%s\n' "$n" "$us" >>"$out"
        total=$(calc "$total + $us" 1)
    done
    printf 'calls=%s\ntotal_us=%s\n' "$calls" "$total" >>"$out"
    note_cmd "$(rel "$BIN")/bench-loadgen --url $MCPQ_URL --rate $rate --duration $DURATION --connections 256 --body '$ECHO_BODY' ... --check-result $*   # CPU per call from /proc/<pid>/stat of each component"
}

# ------------------------------------------------------------------ sections of round two

# Each bench/sec_<name>.sh defines sec_<name>: it measures (starting and stopping its own
# stacks with start_stack/stop_stack), and writes its part of the doc to $RES/sec-<name>.md
# (a "## ..." section) and the lines `make bench` prints at the end to $RES/sec-<name>.txt.
# BENCH_ONLY=<name> runs only that section and puts it into an existing $DOC in place of its
# previous text. SECTIONS is the order of the full run.
SECTIONS=()
for f in "$ROOT"/bench/sec_*.sh; do
    # shellcheck source=/dev/null
    . "$f"
done
# The order of the doc's numbered sections (5. throughput ... 9. redislat); a section file
# not named here runs last.
ordered=()
for sec in throughput inflight workers stages redislat; do
    printf '%s\n' "${SECTIONS[@]}" | grep -qx "$sec" && ordered+=("$sec")
done
for sec in "${SECTIONS[@]}"; do
    printf '%s\n' "${ordered[@]}" | grep -qx "$sec" || ordered+=("$sec")
done
SECTIONS=("${ordered[@]}")
section_doc() { # name: $RES/sec-<name>.md between markers, in place of the previous one
    local name=$1 sec=$WORK/section-$1.md
    {
        printf '<!-- bench %s begin: bench/run.sh writes this section; BENCH_ONLY=%s runs only it -->\n' "$name" "$name"
        cat "$RES/sec-$name.md"
        printf '<!-- bench %s end -->\n' "$name"
    } >"$sec"
    [ -f "$DOC" ] || die "$DOC is missing: run the whole bench first"
    if grep -q "^<!-- bench $name begin" "$DOC"; then
        awk -v f="$sec" -v b="<!-- bench $name begin" -v e="<!-- bench $name end" \
            'index($0, b) == 1 { while ((getline l < f) > 0) print l; skip = 1; next }
            index($0, e) == 1 { skip = 0; next } !skip' "$DOC" >"$DOC.tmp"
    else
        awk -v f="$sec" '/^## How the run works/ && !done { while ((getline l < f) > 0) print l; print ""; done = 1 }
            { print }' "$DOC" >"$DOC.tmp"
    fi
    mv "$DOC.tmp" "$DOC"
    say "wrote the $name section of $DOC"
}
run_section() { # name
    rm -f "$RES/sec-$1.md" "$RES/sec-$1.txt"
    "sec_$1"
    [ -s "$RES/sec-$1.md" ] || die "section $1 wrote no $RES/sec-$1.md"
}
if [ -n "${BENCH_ONLY:-}" ] && [ "$BENCH_ONLY" != fsync ]; then
    printf '%s\n' "${SECTIONS[@]}" | grep -qx "$BENCH_ONLY" ||
        die "BENCH_ONLY=$BENCH_ONLY: known are fsync ${SECTIONS[*]}"
    run_section "$BENCH_ONLY"
    stop_all
    section_doc "$BENCH_ONLY"
    cat "$RES/sec-$BENCH_ONLY.txt" 2>/dev/null || true
    exit 0
fi

if [ "${BENCH_ONLY:-}" = fsync ]; then
    fsync_compare
    stop_all
    fsync_doc
    fsync_cost
    exit 0
fi
LOADAVG_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

say "starting the bare libmicrohttpd responder on $BARE_PORT"
start_server bare "$WORK/bare.out" "$BIN/bench-bare_responder" --port "$BARE_PORT" --threads 2
BARE_PID=$LAST_PID
note_cmd "$(rel "$BIN")/bench-bare_responder --port $BARE_PORT --threads 2"

say "starting the TypeScript SDK $SDK_VERSION server on $TS_PORT"
start_server ts-sdk "$WORK/ts.out" env -C "$NPM" node ts_sdk_server.mjs --port "$TS_PORT" --key "$KEY"
TS_PID=$LAST_PID
note_cmd "(cd $(rel "$NPM") && node ts_sdk_server.mjs --port $TS_PORT --key $KEY)"

say "starting the mcpq stack on $PORT (2 workers)"
STACK_ENV=(--env "MCPQ_MAX_CONNECTIONS=$((N + 1000))")
start_stack "$STATE" "$WORK/launcher.out" "${STACK_ENV[@]}"
STACK_STATE=$STATE

check_answer "bare responder tools/list" "$BARE_URL" "$ACCEPT_JSON" "$LIST_BODY"
check_answer "mcpq tools/list" "$MCPQ_URL" "$ACCEPT_JSON" "$LIST_BODY"
check_answer "mcpq tools/call echo" "$MCPQ_URL" "$ACCEPT_JSON" "$ECHO_BODY"
check_answer "TS SDK tools/list" "$TS_URL" "$ACCEPT_BOTH" "$LIST_BODY"
check_answer "TS SDK tools/call echo" "$TS_URL" "$ACCEPT_BOTH" "$ECHO_BODY"

# ------------------------------------------------------------------ 1. in-flight (mcpq)

run_inflight mcpq "$MCPQ_URL" "$ACCEPT_JSON" "$INGRESS_PID" "$RES/inflight-mcpq.txt"
rss_map "$INGRESS_PID" "$RES/inflight-mcpq-smaps.txt" # glibc keeps freed memory: still the peak
sleep 2 # let the closed connections drain

# ------------------------------------------------------------------ 2-3. throughput (wrk)

# tools/list: the 70% target is a ratio of two CPU-bound runs on a shared 2-core machine, so
# the bare responder and the ingress alternate for LIST_ROUNDS rounds; the verdict takes the
# median of the per-round ratios of the quiet rounds (other processes below QUIET_PCT% of the
# CPU during both halves), so a burst of other work spoils a round, not the verdict.
L200_0=$(metric 'mcpq_http_requests_total{method="tools/list",status="200"}')
for ((r = 1; r <= LIST_ROUNDS; r++)); do
    w=0
    [ "$r" = 1 ] && w=$WARMUP
    WRK_PIDS=$BARE_PID WRK_WARMUP=$w WRK_DURATION=$LIST_DURATION run_wrk \
        "bare responder tools/list (round $r)" "$BARE_URL" "$ACCEPT_JSON" "$LIST_BODY" "$CONNS" \
        "$RES/list-bare-r$r.txt"
    WRK_PIDS=$INGRESS_PID WRK_WARMUP=$w WRK_DURATION=$LIST_DURATION run_wrk \
        "mcpq tools/list (round $r)" "$MCPQ_URL" "$ACCEPT_JSON" "$LIST_BODY" "$CONNS" \
        "$RES/list-mcpq-r$r.txt"
done
L200_1=$(metric 'mcpq_http_requests_total{method="tools/list",status="200"}')
WRK_PIDS=$TS_PID run_wrk "TS SDK tools/list" "$TS_URL" "$ACCEPT_BOTH" "$LIST_BODY" "$CONNS" "$RES/list-ts.txt"

call_counts() { # summed over the tenant label
    local o
    for o in ok tool_error timeout failed; do
        curl -s -m 5 "http://127.0.0.1:$PORT/metrics" | awk -v o="outcome=\"$o\"}" \
            'index($1, "mcpq_tool_calls_total{") == 1 && index($1, o) { v += $2 } END { printf "%d ", v }'
    done
}
STACK_NAMES=()
STACK_PIDS=
for f in "$STACK_STATE"/*.pid; do
    STACK_NAMES+=("$(basename "$f" .pid)")
    STACK_PIDS+=" $(cat "$f")"
done
read -r -a CALLS_0 <<<"$(call_counts)"
ECHO_MCPQ_RPS=0
ECHO_TS_RPS=0
ECHO_MCPQ_C=
ECHO_TS_C=
declare -A T0=()
for c in $ECHO_LEVELS; do
    # CPU time of every stack component over the warm-up and the measured run.
    for n in "${STACK_NAMES[@]}"; do
        T0[$n]=$(cpu_ticks "$(cat "$STACK_STATE/$n.pid")")
    done
    W0=$(date +%s.%N)
    PERF_PID=
    if [ "${BENCH_PROFILE:-}" = 1 ] && command -v perf >/dev/null; then
        (sleep "$((WARMUP + 1))" && exec perf record -F 499 -g -a -o "$WORK/perf-echo-$c.data" \
            -- sleep "$((DURATION - 2))") >"$WORK/perf.log" 2>&1 &
        PERF_PID=$!
    fi
    WRK_PIDS="$STACK_PIDS" run_wrk "mcpq tools/call echo" "$MCPQ_URL" "$ACCEPT_JSON" "$ECHO_BODY" \
        "$c" "$RES/echo-mcpq-c$c.txt"
    WALL=$(calc "$(date +%s.%N) - $W0" 3)
    {
        for n in "${STACK_NAMES[@]}"; do
            t1=$(cpu_ticks "$(cat "$STACK_STATE/$n.pid")")
            printf '%s=%s\n' "$n" "$(calc "($t1 - ${T0[$n]}) / $CLK_TCK / $WALL * 100" 0)"
        done
    } >"$RES/echo-mcpq-c$c-cpu.txt"
    if [ -n "$PERF_PID" ]; then
        wait "$PERF_PID" || true
        {
            echo "# by thread name"
            perf report -i "$WORK/perf-echo-$c.data" --no-children --stdio --sort comm -g none \
                2>/dev/null | grep '%' | head -n 12
            echo "# by thread name, library and symbol (>= 1%)"
            perf report -i "$WORK/perf-echo-$c.data" --no-children --stdio --sort comm,dso,symbol \
                -g none --percent-limit 1 2>/dev/null | grep '%' | head -n 25
        } >"$RES/perf-echo-c$c.txt" || true
    fi
    r=$(val "$RES/echo-mcpq-c$c.txt" rps)
    if [ -n "$r" ] && ge "$r" "$ECHO_MCPQ_RPS"; then
        ECHO_MCPQ_RPS=$r
        ECHO_MCPQ_C=$c
    fi
done
read -r -a CALLS_1 <<<"$(call_counts)"
for c in $ECHO_LEVELS; do
    WRK_PIDS=$TS_PID run_wrk "TS SDK tools/call echo" "$TS_URL" "$ACCEPT_BOTH" "$ECHO_BODY" "$c" \
        "$RES/echo-ts-c$c.txt"
    r=$(val "$RES/echo-ts-c$c.txt" rps)
    if [ -n "$r" ] && ge "$r" "$ECHO_TS_RPS"; then
        ECHO_TS_RPS=$r
        ECHO_TS_C=$c
    fi
done

# ------------------------------------------------------------------ 3b. latency at half load

HALF_MCPQ=$(calc "${ECHO_MCPQ_RPS:-0} / 2" 0)
HALF_TS=$(calc "${ECHO_TS_RPS:-0} / 2" 0)
[ "$HALF_MCPQ" -ge 1 ] || HALF_MCPQ=1
[ "$HALF_TS" -ge 1 ] || HALF_TS=1
run_loadgen "mcpq tools/call echo" "$MCPQ_URL" "$ACCEPT_JSON" "$HALF_MCPQ" "$RES/half-mcpq.txt"
# The bare responder ignores the body: its latency at the same rate is the floor that loopback
# HTTP, the client and the scheduler add on this machine.
run_loadgen "bare responder (HTTP floor)" "$BARE_URL" "$ACCEPT_JSON" "$HALF_MCPQ" "$RES/half-bare.txt"
run_loadgen "TS SDK tools/call echo" "$TS_URL" "$ACCEPT_BOTH" "$HALF_TS" "$RES/half-ts.txt"
# The same at a low rate: the fixed cost of the Kafka and Redis round trip, without queueing.
run_loadgen "mcpq tools/call echo, unloaded" "$MCPQ_URL" "$ACCEPT_JSON" 100 "$RES/low-mcpq.txt"
INGRESS_LOG_LINES=$(wc -l <"$STACK_STATE/ingress-0.log" 2>/dev/null || echo 0)

# ------------------------------------------------------------------ 4. in-flight (TS SDK)

if [ "${BENCH_SKIP_TS_INFLIGHT:-}" != 1 ]; then
    run_inflight "TS SDK" "$TS_URL" "$ACCEPT_BOTH" "$TS_PID" "$RES/inflight-ts.txt"
fi

# ------------------------------------------------------------------ 5. diagnosis of an RSS miss

IM_RSS=$(val "$RES/inflight-mcpq.txt" rss_max_kb)
VARIANT_ENV=MCPQ_CONN_MEMORY_LIMIT=8192
if [ -n "$IM_RSS" ] && [ "$IM_RSS" -ge 131072 ] && [ "${BENCH_NO_VARIANT:-}" != 1 ]; then
    say "the ingress passed 128 MiB: the in-flight run again with $VARIANT_ENV"
    stop_stack
    start_stack "$WORK/state-variant" "$WORK/launcher-variant.out" "${STACK_ENV[@]}" --env "$VARIANT_ENV"
    run_inflight "mcpq ($VARIANT_ENV)" "$MCPQ_URL" "$ACCEPT_JSON" "$INGRESS_PID" "$RES/inflight-mcpq-variant.txt"
    check_answer "mcpq tools/list ($VARIANT_ENV)" "$MCPQ_URL" "$ACCEPT_JSON" "$LIST_BODY"
fi

# ------------------------------------------------------------------ 6. appendfsync everysec vs always

stop_stack
fsync_compare

# ------------------------------------------------------------------ 7. round two's sections

for sec in "${SECTIONS[@]}"; do
    run_section "$sec"
done

# ------------------------------------------------------------------ stop

LOADAVG_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
say "stopping everything"
stop_all

# ------------------------------------------------------------------ the report

met() { if [ "$1" = 1 ]; then printf '**met**'; else printf '**NOT met**'; fi; }
num() { if [ -n "$1" ]; then printf '%s' "$1"; else printf 'n/a'; fi; }
mib() { if [ -n "$1" ]; then calc "$1 / 1024" 1; else printf 'n/a'; fi; }
rps_of() { local v; v=$(val "$1" rps); printf '%s' "${v:-0}"; }

IM=$RES/inflight-mcpq.txt
IT=$RES/inflight-ts.txt
IV=$RES/inflight-mcpq-variant.txt
IM_COMPLETED=$(val "$IM" completed)
IM_TMIN=$(val "$IM" threads_min)
IM_TMAX=$(val "$IM" threads_max)
T1=0
if [ "${IM_COMPLETED:-0}" = "$N" ] && [ "$N" -ge 10000 ] && [ -n "$IM_RSS" ] &&
    [ "$IM_RSS" -lt 131072 ] && [ -n "$IM_TMIN" ] && [ "$IM_TMIN" = "$IM_TMAX" ]; then
    T1=1
fi
median() { { grep . || true; } | sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }
LIST_ERRORS=0
LIST_RATIOS=()
for ((r = 1; r <= LIST_ROUNDS; r++)); do
    LIST_RATIOS+=("$(calc "$(rps_of "$RES/list-mcpq-r$r.txt") / ($(rps_of "$RES/list-bare-r$r.txt") + 1e-9)" 3)")
    e=$(val "$RES/list-mcpq-r$r.txt" errors)
    LIST_ERRORS=$((LIST_ERRORS + ${e:-1}))
done
LIST_QUIET=()
for ((r = 1; r <= LIST_ROUNDS; r++)); do
    ob=$(val "$RES/list-bare-r$r.txt" other_cpu_pct)
    om=$(val "$RES/list-mcpq-r$r.txt" other_cpu_pct)
    if [ -n "$ob" ] && [ -n "$om" ] && ! ge "$ob" "$QUIET_PCT" && ! ge "$om" "$QUIET_PCT"; then
        LIST_QUIET+=("$r")
    fi
done
if [ ${#LIST_QUIET[@]} -ge 2 ]; then
    LIST_USE=("${LIST_QUIET[@]}")
    LIST_BASIS="median of the ${#LIST_QUIET[@]} quiet rounds (${LIST_QUIET[*]}) of $LIST_ROUNDS"
else
    mapfile -t LIST_USE < <(seq 1 "$LIST_ROUNDS")
    LIST_BASIS="median of all $LIST_ROUNDS rounds: fewer than 2 were quiet, the machine was busy and this verdict is unreliable"
fi
LIST_BARE=$(for r in "${LIST_USE[@]}"; do rps_of "$RES/list-bare-r$r.txt"; echo; done | median)
LIST_MCPQ=$(for r in "${LIST_USE[@]}"; do rps_of "$RES/list-mcpq-r$r.txt"; echo; done | median)
LIST_TS=$(rps_of "$RES/list-ts.txt")
LIST_RATIO=$(for r in "${LIST_USE[@]}"; do echo "${LIST_RATIOS[$((r - 1))]}"; done | median)
LIST_CPU_BARE=$(for r in "${LIST_USE[@]}"; do val "$RES/list-bare-r$r.txt" server_us_per_req; done | median)
LIST_CPU_MCPQ=$(for r in "${LIST_USE[@]}"; do val "$RES/list-mcpq-r$r.txt" server_us_per_req; done | median)
T2=0
if ge "$LIST_RATIO" 0.70 && [ "$LIST_ERRORS" = 0 ]; then
    T2=1
fi
ECHO_RATIO=$(calc "$ECHO_MCPQ_RPS / ($ECHO_TS_RPS + 1e-9)" 2)
CALL_OK=$((${CALLS_1[0]:-0} - ${CALLS_0[0]:-0}))
CALL_BAD=$(((${CALLS_1[1]:-0} + ${CALLS_1[2]:-0} + ${CALLS_1[3]:-0}) - (${CALLS_0[1]:-0} + ${CALLS_0[2]:-0} + ${CALLS_0[3]:-0})))
ECHO_ERRORS=0
for c in $ECHO_LEVELS; do
    e=$(val "$RES/echo-mcpq-c$c.txt" errors)
    ECHO_ERRORS=$((ECHO_ERRORS + ${e:-1}))
done
T3=0
if ge "$ECHO_RATIO" 5 && [ "$ECHO_ERRORS" = 0 ] && [ "$CALL_BAD" = 0 ]; then
    T3=1
fi
HALF_P50=$(val "$RES/half-mcpq.txt" latency_p50_ms)
FLOOR_P50=$(val "$RES/half-bare.txt" latency_p50_ms)
ADDED=$(calc "${HALF_P50:-999} - ${FLOOR_P50:-0}" 3)
T4=0
if ! ge "$ADDED" 2 && [ "$(val "$RES/half-mcpq.txt" errors)" = 0 ] &&
    ge "$(val "$RES/half-mcpq.txt" achieved_rps)" "$(calc "$HALF_MCPQ * 0.95" 1)"; then
    T4=1
fi

MEM_KB=$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)
CPU_MODEL=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
GIT_REV=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$ROOT" status --porcelain 2>/dev/null || true)" ]; then
    GIT_REV="$GIT_REV with uncommitted changes in the working tree"
fi
WRK_VERSION=$({ wrk -v 2>&1 || true; } | awk 'NR == 1 { print $1, $2 }')
MHD_VERSION=$(pkg-config --modversion libmicrohttpd 2>/dev/null || echo '?')
RDK_VERSION=$(pkg-config --modversion rdkafka 2>/dev/null || echo '?')
REDIS_VERSION=$(redis-server --version 2>/dev/null | sed -n 's/.*v=\([^ ]*\).*/\1/p' || true)

row_wrk() { # label connections file [ratio text]
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s%% | %s |\n' "$1" "$2" \
        "$(num "$(val "$3" rps)")" "$(num "$(val "$3" latency_p50_ms)")" \
        "$(num "$(val "$3" latency_p99_ms)")" "$(num "$(val "$3" latency_max_ms)")" \
        "$(num "$(val "$3" errors)")" "$(num "$(val "$3" server_us_per_req)")" \
        "$(num "$(val "$3" other_cpu_pct)")" "${4:-}"
}
WRK_HEAD="| server | connections | req/s | p50 | p99 | max | errors | server CPU µs/req | others' CPU |"
WRK_RULE='|---|---|---|---|---|---|---|---|---|---|' 
row_half() { # label file
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s%% |\n' "$1" \
        "$(num "$(val "$2" rate_target)")" "$(num "$(val "$2" achieved_rps)")" \
        "$(num "$(val "$2" latency_p50_ms)")" "$(num "$(val "$2" latency_p90_ms)")" \
        "$(num "$(val "$2" latency_p99_ms)")" "$(num "$(val "$2" latency_max_ms)")" \
        "$(num "$(val "$2" service_p50_ms)")" "$(num "$(val "$2" errors)")" \
        "$(num "$(val "$2" other_cpu_pct)")"
}
row_inflight() { # label file
    [ -f "$2" ] || return 0
    printf '| %s | %s | %s | %s | %s | %s | %s / %s / %s | %s | %s | %s | %s–%s |\n' "$1" \
        "$(num "$(val "$2" n)")" "$(num "$(val "$2" completed)")" "$(num "$(val "$2" failed)")" \
        "$(num "$(val "$2" peak_inflight)")" "$(num "$(val "$2" all_sent_s)")" \
        "$(num "$(val "$2" latency_p50_ms)")" "$(num "$(val "$2" latency_p99_ms)")" \
        "$(num "$(val "$2" latency_max_ms)")" "$(mib "$(val "$2" rss_before_kb)")" \
        "$(mib "$(val "$2" rss_max_kb)")" "$(mib "$(val "$2" vmhwm_kb)")" \
        "$(num "$(val "$2" threads_min)")" "$(num "$(val "$2" threads_max)")"
}

ECHO_TEXT="peak $ECHO_MCPQ_RPS req/s (at $ECHO_MCPQ_C connections) vs $ECHO_TS_RPS req/s (at $ECHO_TS_C) = ${ECHO_RATIO}×"
for c in $ECHO_LEVELS; do
    ECHO_TEXT+="; at $c connections each: $(calc "$(rps_of "$RES/echo-mcpq-c$c.txt") / ($(rps_of "$RES/echo-ts-c$c.txt") + 1e-9)" 2)×"
done

LIST_ROWS=$(
    for ((r = 1; r <= LIST_ROUNDS; r++)); do
        row_wrk "bare libmicrohttpd responder, round $r" "$CONNS" "$RES/list-bare-r$r.txt" "100%"
        row_wrk "mcpq ingress, round $r" "$CONNS" "$RES/list-mcpq-r$r.txt" \
            "$(calc "${LIST_RATIOS[$((r - 1))]}*100" 1)%"
    done
)
INFLIGHT_ROWS=$(
    row_inflight "mcpq ingress (1 replica, MHD 2 threads), defaults" "$IM"
    row_inflight "mcpq ingress with $VARIANT_ENV (diagnosis, fresh stack)" "$IV"
    row_inflight "TS SDK $SDK_VERSION (node, after the other runs)" "$IT"
)

mkdir -p "$(dirname "$DOC")"
{
    cat <<DOC_END
# Benchmarks

Generated by \`make bench\` (\`bash bench/run.sh\`) on $(date -u '+%Y-%m-%d %H:%M UTC'); the run
took $((SECONDS - T_START)) s. Numbers are from that one run on the machine below; they move by
several percent between runs, and the load generators share the two cores with the servers
(load average before / after the run: $LOADAVG_BEFORE / $LOADAVG_AFTER).
Tests never assert on speed: these numbers are measured here and nowhere else.

## Machine and software

| | |
|---|---|
| CPU | $(nproc) cores, $CPU_MODEL |
| memory | $(calc "$MEM_KB / 1048576" 1) GiB |
| kernel | $(uname -r) |
| mcpq | git $GIT_REV; Release build (\`-O3\`) in $(rel "$BIN") |
| libmicrohttpd / librdkafka / redis | $MHD_VERSION / $RDK_VERSION / $REDIS_VERSION |
| TypeScript SDK | @modelcontextprotocol/sdk $SDK_VERSION on Node $(node --version) |
| load tools | $WRK_VERSION; bench-loadgen and bench-inflight (bench/*.c) |

## Targets of round two (issue 34)

Each line is the summary its section below prints (\`make bench\` prints them too); the
sections hold the tables, the before/after ratios against the build of git $BENCH_BASE (the
commit before round two) and what the figures mean.

\`\`\`
$(for sec in "${SECTIONS[@]}"; do cat "$RES/sec-$sec.txt" 2>/dev/null || true; done)
\`\`\`

## Targets of round one (2026-11-23), measured again

| target | measured | verdict |
|---|---|---|
| 10,000 in-flight \`tools/call\` (5 s tool) on one ingress: all complete, < 128 MB RSS, constant thread count | $(num "$IM_COMPLETED")/$N completed, max RSS $(mib "$IM_RSS") MiB ($(calc "${IM_RSS:-0}/1024/128*100" 0)% of 128 MiB), threads $(num "$IM_TMIN")–$(num "$IM_TMAX") | $(met $T1) |
| \`tools/list\` ≥ 70% of a bare libmicrohttpd responder | $(calc "$LIST_RATIO*100" 1)%, the $LIST_BASIS (every round: $(for x in "${LIST_RATIOS[@]}"; do printf '%s%% ' "$(calc "$x*100" 1)"; done | sed 's/ $//')); median rates $LIST_MCPQ vs $LIST_BARE req/s | $(met $T2) |
| \`tools/call\` echo through Kafka and Redis ≥ 5× the TS SDK in-process | $ECHO_TEXT | $(met $T3) |
| median added latency < 2 ms at half of peak load | p50 $(num "$HALF_P50") ms at $HALF_MCPQ req/s, minus the $(num "$FLOOR_P50") ms loopback floor = $ADDED ms | $(met $T4) |

"128 MB" is read as 128 MiB (131,072 KiB). A verdict of met also needs every call of that
measurement to have succeeded.

## 1. In-flight calls to a sleeping tool

\`bench-inflight\`: $N connections opened as fast as possible (non-blocking connect, at most
1,000 handshakes outstanding), each one HTTP/1.1 POST of \`tools/call sleep {"ms": $SLEEP_MS}\`
with \`Connection: close\`, all waiting at once; the server's \`/proc/<pid>/status\` is sampled
every 100 ms. "Peak in flight" is the largest number of requests sent and not yet answered at
the same moment. Latency is from connect() to the last byte of the answer. VmHWM is the
kernel's peak RSS of the process since it started (it includes start-up).

| server | N | completed | failed | peak in flight | all sent after (s) | latency p50 / p99 / max (ms) | RSS before (MiB) | max RSS (MiB) | VmHWM (MiB) | threads |
|---|---|---|---|---|---|---|---|---|---|---|
$INFLIGHT_ROWS

DOC_END
    for f in "$IM" "$IV" "$IT"; do
        if [ -f "$f" ] && [ -n "$(val "$f" first_error)" ]; then
            printf 'First failure seen by the client (%s): `%s`\n\n' "$(basename "$f" .txt)" "$(val "$f" first_error)"
        fi
    done
    if [ -s "$RES/inflight-mcpq-smaps.txt" ]; then
        printf 'Where the ingress RSS was after its run (KiB; the largest mappings of /proc/<pid>/smaps,\nthen the totals; glibc keeps the freed heap, so this is still the peak):\n\n```\n%s\n```\n\n' \
            "$(cat "$RES/inflight-mcpq-smaps.txt")"
    fi
    cat <<DOC_END
## 2. \`tools/list\` throughput

wrk, $WRK_THREADS threads, $CONNS keep-alive connections. The bare responder and the ingress
alternate for $LIST_ROUNDS rounds of ${LIST_DURATION} s (each got a ${WARMUP} s warm-up run first, not counted);
the TS SDK ran once for ${DURATION} s after its warm-up. Every request is a POST of
\`$LIST_BODY\` with \`Authorization: Bearer …\` and \`Content-Type: application/json\`.
Latencies in ms. mcpq's \`/metrics\` counted $((L200_1 - L200_0)) \`tools/list\` answers with status
200 during its runs.

The machine is shared (other engineers' builds and test suites run on the same two cores), so
each run also records the CPU time of the server's processes per request ("server CPU
µs/req"; for mcpq's echo runs, all five processes of the stack) and the share of the
machine's CPU used meanwhile by processes this run did not start ("others' CPU"). A
\`tools/list\` round is quiet when that stays below ${QUIET_PCT}% for both servers; the verdict is the
$LIST_BASIS.
Per request, in those rounds, the ingress used $(num "$LIST_CPU_MCPQ") µs of CPU and the bare
responder $(num "$LIST_CPU_BARE") µs.

$WRK_HEAD vs bare (same round) |
$WRK_RULE
$LIST_ROWS
$(row_wrk "TS SDK $SDK_VERSION" "$CONNS" "$RES/list-ts.txt" "$(calc "$LIST_TS/($LIST_BARE+1e-9)*100" 1)% (of the median bare rate)")

## 3. \`tools/call\` of \`echo\`

### Peak throughput

wrk as above with \`$ECHO_BODY\`, at each of $ECHO_LEVELS connections; the best
rate of each server is its peak. For mcpq every call is a Kafka job run by one of 2 workers,
whose result comes back through Redis; the TS SDK server runs \`echo\` in its own process (one
JavaScript thread). wrk counts only transport errors and non-2xx statuses, so the ingress's
\`mcpq_tool_calls_total\` was read before and after mcpq's runs: $CALL_OK calls ended \`ok\` and
$CALL_BAD ended otherwise (\`tool_error\`, \`timeout\` or \`failed\`).

$WRK_HEAD vs TS SDK (same connections) |
$WRK_RULE
DOC_END
    for c in $ECHO_LEVELS; do
        row_wrk "mcpq (ingress → Kafka → worker → Redis → ingress)" "$c" "$RES/echo-mcpq-c$c.txt" \
            "$(calc "$(rps_of "$RES/echo-mcpq-c$c.txt") / ($(rps_of "$RES/echo-ts-c$c.txt") + 1e-9)" 2)×"
    done
    for c in $ECHO_LEVELS; do
        row_wrk "TS SDK $SDK_VERSION (in-process)" "$c" "$RES/echo-ts-c$c.txt" "1×"
    done
    echo
    echo "CPU used by each mcpq process during its echo runs (% of one core, averaged over the"
    echo "warm-up and the measured run; $(nproc) cores = $(($(nproc) * 100))%; the rest went to wrk, interrupts"
    echo "and whatever else ran on the machine):"
    echo
    printf '| connections |'
    for n in "${STACK_NAMES[@]}"; do printf ' %s |' "$n"; done
    printf '\n|---|'
    for n in "${STACK_NAMES[@]}"; do printf -- '---|'; done
    printf '\n'
    for c in $ECHO_LEVELS; do
        printf '| %s |' "$c"
        for n in "${STACK_NAMES[@]}"; do printf ' %s%% |' "$(num "$(val "$RES/echo-mcpq-c$c-cpu.txt" "$n")")"; done
        printf '\n'
    done
    cat <<DOC_END

### Latency at half of peak load

\`bench-loadgen\`: an open loop at a fixed rate, half of the peak measured just above, on up to
256 keep-alive connections, ${DURATION} s after a 2 s warm-up. Request k is due at t0 + k/rate and its
latency counts from that due time, so a stalled server is charged for the requests it
delayed (no coordinated omission, as in wrk2); "service" is from the write to the answer.
Each answer must be HTTP 200 with a JSON-RPC result without \`isError\`. The bare responder at
mcpq's rate is the floor that loopback HTTP, the client and the scheduler add on this
machine; "added latency" is mcpq's median minus that floor. The last row is mcpq at 100 req/s:
the cost of the round trip through Kafka and Redis without queueing. Latencies in ms.

| server | rate (req/s) | achieved | p50 | p90 | p99 | max | service p50 | errors | others' CPU |
|---|---|---|---|---|---|---|---|---|---|
$(row_half "mcpq echo" "$RES/half-mcpq.txt")
$(row_half "bare responder (floor)" "$RES/half-bare.txt")
$(row_half "TS SDK echo" "$RES/half-ts.txt")
$(row_half "mcpq echo, unloaded" "$RES/low-mcpq.txt")

DOC_END
    for c in $ECHO_LEVELS; do
        if [ -s "$RES/perf-echo-c$c.txt" ]; then
            printf '### System profile during the mcpq echo run at %s connections (`BENCH_PROFILE=1`)\n\n' "$c"
            printf '`perf record -F 499 -g -a`, self time:\n\n```\n%s\n```\n\n' "$(cat "$RES/perf-echo-c$c.txt")"
        fi
    done
    if [ -f "$ROOT/bench/analysis.md" ]; then
        cat "$ROOT/bench/analysis.md"
        echo
    fi
    fsync_section
    echo
    for sec in "${SECTIONS[@]}"; do
        printf '<!-- bench %s begin: bench/run.sh writes this section; BENCH_ONLY=%s runs only it -->\n' "$sec" "$sec"
        cat "$RES/sec-$sec.md"
        printf '<!-- bench %s end -->\n\n' "$sec"
    done
    cat <<DOC_END
## How the run works

- Servers: the bare responder and the ingress both run libmicrohttpd with an internal
  thread pool of 2 epoll threads and \`MHD_USE_TURBO\` (same connection memory limit and
  backlog). The TS SDK server follows the SDK's stateless example: a new \`McpServer\` and
  \`StreamableHTTPServerTransport\` per request, \`enableJsonResponse: true\`, on Node's
  \`http\` module, and checks the same bearer key. It needs \`Accept: application/json,
  text/event-stream\` (406 otherwise); mcpq and the bare responder get \`Accept:
  application/json\`. No \`MCP-Protocol-Version\` header is sent (2025-03-26, no session).
- The mcpq stack: redis-server, mcpq-devbroker (librdkafka's in-memory mock cluster; a real
  Kafka would add its own costs and latency), 1 ingress, 2 workers, default settings except
  \`MCPQ_MAX_CONNECTIONS=$((N + 1000))\`; \`ulimit -n\` was $NOFILE. The ingress wrote
  $INGRESS_LOG_LINES log lines during the run (its default log level, \`info\`).
- Order: the mcpq in-flight run first (on a fresh ingress), then the throughput runs, the
  half-load runs, the TS SDK in-flight run (last for the TS server, so its memory does not
  carry into its throughput runs), and, only when the ingress missed 128 MiB, the diagnosis
  run on a fresh stack.
- Clean stop: every process the run started was stopped with SIGTERM; processes left
  behind: $CLEAN_STOP.
- Raw outputs: \`$(rel "$RES")/*.txt\`; stack logs: \`$(rel "$STATE")/\`.

Commands, in the order they ran:

\`\`\`
$(printf '%s\n' "${COMMANDS[@]}")
\`\`\`
DOC_END
} >"$DOC"
say "wrote $DOC"
verdict() { if [ "$1" = 1 ]; then echo met; else echo 'NOT met'; fi; }
printf 'in-flight: %s/%s completed, max RSS %s MiB, threads %s-%s: %s\n' "$(num "$IM_COMPLETED")" "$N" \
    "$(mib "$IM_RSS")" "$(num "$IM_TMIN")" "$(num "$IM_TMAX")" "$(verdict $T1)"
printf 'tools/list: %s%% of the bare responder: %s\n' "$(calc "$LIST_RATIO*100" 1)" "$(verdict $T2)"
printf 'tools/call echo: %sx the TS SDK: %s\n' "$ECHO_RATIO" "$(verdict $T3)"
printf 'added latency at half load: %s ms: %s\n' "$ADDED" "$(verdict $T4)"
fsync_cost
for sec in "${SECTIONS[@]}"; do cat "$RES/sec-$sec.txt" 2>/dev/null || true; done
