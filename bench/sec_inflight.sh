# shellcheck shell=bash
# bench/sec_inflight.sh: section "inflight" of bench/run.sh (sourced; issue 34, item 6).
#
# Memory of waiting calls, each run on a fresh stack (2 workers) so that no run inherits the
# heap of another; bench-inflight samples the ingress's /proc status every 100 ms (max RSS,
# threads) and this script samples its /metrics gauge mcpq_inflight_calls every 0.5 s (the
# most calls waiting at once):
#   1. IF_N (10,000) calls of sleep (IF_SLEEP_MS, 5 s), one connection each, with the Accept
#      header the SDK clients send (application/json, text/event-stream): the base build
#      (BENCH_BASE, "before") and this build ("after");
#   2. the same with Accept: application/json only, before and after (round one measured it
#      so: 110.7 MiB);
#   3. the socket form at the largest count one ingress can hold: its file-descriptor limit
#      (`ulimit -Hn`, 20,000 here, cannot be raised without CAP_SYS_RESOURCE) less IF_FD_SPARE
#      (500) for its own files, IF_BIG_SLEEP_MS (30 s) tool, clients spread over IF_SOURCES
#      (8) source addresses and over as many bench-inflight processes as needed for at most
#      IF_PER_PROC (19,000) connections each;
#   4. IF_BATCH_N (100,000) calls as JSON-RPC batches of IF_BATCH (100) tools/call
#      (2025-03-26) over IF_BATCH_N / IF_BATCH connections, the same tool, with
#      MCPQ_MAX_INFLIGHT_JOBS=IF_WORKER_JOBS (60,000) per worker so that the 2 workers hold
#      every job at once.
# Bytes per waiting call: (max RSS - RSS before the run) / calls.
#
# Knobs: BENCH_IF_N, BENCH_IF_SLEEP_MS, BENCH_IF_BIG_SLEEP_MS, BENCH_IF_BATCH_N, BENCH_IF_BATCH,
# BENCH_IF_SOURCES, BENCH_IF_PER_PROC, BENCH_IF_FD_SPARE, BENCH_IF_WORKER_JOBS.
SECTIONS+=(inflight)

IF_N=${BENCH_IF_N:-10000}
IF_SLEEP_MS=${BENCH_IF_SLEEP_MS:-5000}
IF_BIG_SLEEP_MS=${BENCH_IF_BIG_SLEEP_MS:-30000}
IF_BATCH_N=${BENCH_IF_BATCH_N:-100000}
IF_BATCH=${BENCH_IF_BATCH:-100}
IF_SOURCES=${BENCH_IF_SOURCES:-8}
IF_PER_PROC=${BENCH_IF_PER_PROC:-19000}
IF_FD_SPARE=${BENCH_IF_FD_SPARE:-500}
IF_WORKER_JOBS=${BENCH_IF_WORKER_JOBS:-60000}
IF_TARGET_MIB=64
IF_BIG_TARGET_MIB=1024

# if_waiting_sampler OUT: in the background, the largest mcpq_inflight_calls seen, written to
# OUT as waiting_max= (sets IF_SAMPLER).
if_waiting_sampler() {
    (
        local m=0 v
        while :; do
            v=$(metric mcpq_inflight_calls || true) # a busy ingress may not answer in 5 s
            if [ "${v:-0}" -gt "$m" ]; then
                m=$v
                printf 'waiting_max=%s\n' "$m" >"$1"
            fi
            sleep 0.5
        done
    ) &
    IF_SAMPLER=$!
}

IF_ENV=() # more --env K=V for the next if_run's stack

# if_run NAME BIN ACCEPT CALLS SLEEP_MS BATCH [bench-inflight args...]: a fresh stack from BIN,
# CALLS calls, BATCH per connection, spread over ceil(connections / IF_PER_PROC)
# bench-inflight processes, results
# summed into $RES/inflight-NAME.txt (completed, failed, connections, rss_before_kb,
# rss_max_kb, threads_min/max, waiting_max, bytes_per_call).
if_run() {
    local name=$1 bin=$2 accept=$3 calls=$4 ms=$5 batch=$6
    shift 6
    [ "$batch" -le 1 ] || set -- --batch "$batch" "$@"
    local conns=$((calls / batch)) out=$RES/inflight-$name.txt
    local procs=$(((conns + IF_PER_PROC - 1) / IF_PER_PROC))
    local env=(--env "MCPQ_MAX_CONNECTIONS=$((conns + 200))"
        --env "MCPQ_MAX_INFLIGHT_JOBS=$IF_WORKER_JOBS" ${IF_ENV[@]+"${IF_ENV[@]}"})
    say "inflight $name: $calls calls of sleep(${ms} ms) on $conns connections, Accept: $accept"
    SBIN=$bin start_stack "$WORK/state-if-$name" "$WORK/launcher-if-$name.out" "${env[@]}"
    local rss0 i pids=()
    rss0=$(awk '/^VmRSS:/ { print $2 }' "/proc/$INGRESS_PID/status")
    rm -f "$RES/inflight-$name".*
    if_waiting_sampler "$RES/inflight-$name.waiting"
    for ((i = 0; i < procs; i++)); do
        local n=$(((conns / procs + (i < conns % procs ? 1 : 0)) * batch))
        "$BIN/bench-inflight" --url "$MCPQ_URL" --key "$KEY" -n "$n" --tool sleep --ms "$ms" \
            --accept "$accept" --pid "$INGRESS_PID" --timeout-s $((ms / 1000 + 90)) "$@" \
            >"$RES/inflight-$name.p$i.txt" 2>&1 &
        pids+=($!)
    done
    note_cmd "$(rel "$BIN")/bench-inflight --url $MCPQ_URL --key $KEY -n <$calls / $procs process(es)> --tool sleep --ms $ms --accept '$accept' --pid <ingress pid> $*   # stack: $(rel "$bin"), ${env[*]}"
    for i in "${pids[@]}"; do wait "$i" || true; done
    kill "$IF_SAMPLER" 2>/dev/null || true
    wait "$IF_SAMPLER" 2>/dev/null || true
    stop_stack
    if_sum "$name" "$procs" "$rss0" "$calls" "$conns" >"$out"
    say "  completed $(val "$out" completed)/$calls, max RSS $(val "$out" rss_max_mib) MiB, threads $(val "$out" threads_min)-$(val "$out" threads_max), most waiting $(val "$out" waiting_max), $(val "$out" bytes_per_call) bytes per waiting call"
}

# if_sum NAME PROCS RSS0_KB CALLS CONNS: the processes' outputs as one.
if_sum() {
    local f=() i
    for ((i = 0; i < $2; i++)); do f+=("$RES/inflight-$1.p$i.txt"); done
    awk -v rss0="$3" -v calls="$4" -v conns="$5" -F= '
        $1 == "completed" { c += $2 } $1 == "failed" { fl += $2 }
        $1 == "rss_max_kb" && $2 > rmax { rmax = $2 }
        $1 == "threads_min" && (tmin == "" || $2 < tmin) { tmin = $2 }
        $1 == "threads_max" && $2 > tmax { tmax = $2 }
        $1 == "latency_p50_ms" && $2 > p50 { p50 = $2 }
        $1 == "first_error" && fe == "" { fe = $2 }
        END {
            printf "calls=%d\nconnections=%d\ncompleted=%d\nfailed=%d\n", calls, conns, c, fl
            printf "rss_before_kb=%d\nrss_max_kb=%d\nrss_max_mib=%.1f\n", rss0, rmax, rmax / 1024
            printf "threads_min=%s\nthreads_max=%s\nlatency_p50_ms=%s\n", tmin, tmax, p50
            printf "bytes_per_call=%d\n", calls ? (rmax - rss0) * 1024 / calls : 0
            if (fe != "") printf "first_error=%s\n", fe
        }' "${f[@]}"
    cat "$RES/inflight-$1.waiting" 2>/dev/null || echo waiting_max=0
}

# if_row LABEL NAME: one row of the doc's table.
if_row() {
    local o=$RES/inflight-$2.txt
    [ -f "$o" ] || return 0
    printf '| %s | %s | %s | %s | %s | %s | %s–%s | %s | %s |\n' "$1" "$(val "$o" calls)" \
        "$(val "$o" connections)" "$(val "$o" completed)" "$(val "$o" failed)" \
        "$(val "$o" rss_max_mib)" "$(val "$o" threads_min)" "$(val "$o" threads_max)" \
        "$(val "$o" waiting_max)" "$(val "$o" bytes_per_call)"
}

sec_inflight() {
    local hard sock_n base=
    hard=$(ulimit -Hn)
    [ "$hard" = unlimited ] && hard=1000000
    sock_n=$((hard - IF_FD_SPARE))
    [ "$sock_n" -le "$IF_BATCH_N" ] || sock_n=$IF_BATCH_N
    base_build && base=$BASE_BIN
    if [ -n "$base" ]; then
        if_run base-sse "$base" "$ACCEPT_BOTH" "$IF_N" "$IF_SLEEP_MS" 1
    fi
    if_run sse "$BIN" "$ACCEPT_BOTH" "$IF_N" "$IF_SLEEP_MS" 1
    if [ -n "$base" ]; then
        if_run base-json "$base" "$ACCEPT_JSON" "$IF_N" "$IF_SLEEP_MS" 1
    fi
    if_run json "$BIN" "$ACCEPT_JSON" "$IF_N" "$IF_SLEEP_MS" 1
    IF_ENV=(--env MCPQ_MEMORY_TRIM_CALLS=0)
    if_run json-notrim "$BIN" "$ACCEPT_JSON" "$IF_N" "$IF_SLEEP_MS" 1
    IF_ENV=(--env MCPQ_SSE_KEEPALIVE_MS=15000)
    if_run sse-ka15 "$BIN" "$ACCEPT_BOTH" "$IF_N" "$IF_SLEEP_MS" 1
    IF_ENV=()
    if_run sockets "$BIN" "$ACCEPT_BOTH" "$sock_n" "$IF_BIG_SLEEP_MS" 1 --sources "$IF_SOURCES"
    if_run batch "$BIN" "$ACCEPT_BOTH" "$IF_BATCH_N" "$IF_BIG_SLEEP_MS" "$IF_BATCH" \
        --sources "$IF_SOURCES"
    if_doc >"$RES/sec-inflight.md"
    if_summary >"$RES/sec-inflight.txt"
}

# if_ok NAME MIB: 1 when every call of NAME completed, all of them waited at once (the gauge),
# under MIB MiB and with a constant thread count.
if_ok() {
    local o=$RES/inflight-$1.txt
    [ "$(val "$o" failed)" = 0 ] && [ -n "$(val "$o" completed)" ] &&
        [ "$(val "$o" waiting_max)" = "$(val "$o" calls)" ] &&
        [ "$(val "$o" threads_min)" = "$(val "$o" threads_max)" ] &&
        ! ge "$(val "$o" rss_max_mib)" "$2" && echo 1 || echo 0
}
if_verdict() { if [ "$(if_ok "$1" "$2")" = 1 ]; then echo met; else echo 'NOT met'; fi; }

# if_extrapolated [NAME]: the RSS of NAME's form (sockets) at IF_BATCH_N calls, in MiB.
if_extrapolated() {
    local o=$RES/inflight-${1:-sockets}.txt
    calc "($(val "$o" rss_before_kb) + $(val "$o" bytes_per_call) * $IF_BATCH_N / 1024) / 1024" 0
}

if_summary() {
    local s=$RES/inflight-sse.txt j=$RES/inflight-json.txt b=$RES/inflight-batch.txt
    local k=$RES/inflight-sockets.txt
    printf 'inflight: %s calls (Accept: JSON and SSE) in %s MiB (before %s MiB, %s), JSON only %s MiB (before %s MiB); under %s MiB: %s\n' \
        "$IF_N" "$(val "$s" rss_max_mib)" "$(val "$RES/inflight-base-sse.txt" rss_max_mib)" \
        "$(ratio "$(val "$s" rss_max_mib)" "$(val "$RES/inflight-base-sse.txt" rss_max_mib)")" \
        "$(val "$j" rss_max_mib)" "$(val "$RES/inflight-base-json.txt" rss_max_mib)" \
        "$IF_TARGET_MIB" "$(if_verdict sse "$IF_TARGET_MIB")"
    printf 'inflight: %s calls in batches of %s: %s completed, %s waiting at once, %s MiB, threads %s-%s, %s bytes/call: %s\n' \
        "$(val "$b" calls)" "$IF_BATCH" "$(val "$b" completed)" "$(val "$b" waiting_max)" \
        "$(val "$b" rss_max_mib)" "$(val "$b" threads_min)" "$(val "$b" threads_max)" \
        "$(val "$b" bytes_per_call)" "$(if_verdict batch "$IF_BIG_TARGET_MIB")"
    printf 'inflight: socket per call at the fd limit, %s calls: %s completed, %s MiB, %s bytes/call (%s MiB at %s)\n' \
        "$(val "$k" calls)" "$(val "$k" completed)" "$(val "$k" rss_max_mib)" \
        "$(val "$k" bytes_per_call)" "$(if_extrapolated)" "$IF_BATCH_N"
}

if_doc() {
    local s=$RES/inflight-sse.txt bs=$RES/inflight-base-sse.txt j=$RES/inflight-json.txt
    local bj=$RES/inflight-base-json.txt k=$RES/inflight-sockets.txt b=$RES/inflight-batch.txt
    cat <<DOC_END
## 6. In flight: memory of waiting calls

Issue 34, item 6. Each run starts a fresh stack (1 ingress, 2 workers) and holds calls of the
builtin \`sleep\` waiting on it; bench-inflight samples the ingress's \`/proc/<pid>/status\`
every 100 ms (max RSS, threads) and the section samples its gauge \`mcpq_inflight_calls\`
every 0.5 s ("waiting at once"). Bytes per waiting call = (max RSS − RSS before the run) /
calls. "Before" is the base build (${BASE_REV:-none}), "after" this build, back to back in one run.

| run | calls | connections | completed | failed | max RSS (MiB) | threads | waiting at once | bytes per waiting call |
|---|---|---|---|---|---|---|---|---|
$(if_row "before: Accept JSON and SSE (the SDK clients' header), $IF_SLEEP_MS ms" base-sse)
$(if_row "**after**: Accept JSON and SSE, $IF_SLEEP_MS ms" sse)
$(if_row "after, \`MCPQ_SSE_KEEPALIVE_MS=15000\` (no stream before the result)" sse-ka15)
$(if_row "before: Accept JSON only (as round one), $IF_SLEEP_MS ms" base-json)
$(if_row "**after**: Accept JSON only" json)
$(if_row "after, \`MCPQ_MEMORY_TRIM_CALLS=0\` (no trim)" json-notrim)
$(if_row "socket per call at the fd limit, $IF_BIG_SLEEP_MS ms, $IF_SOURCES source addresses" sockets)
$(if_row "JSON-RPC batches of $IF_BATCH (2025-03-26), $IF_BIG_SLEEP_MS ms, $IF_SOURCES source addresses" batch)

- **10,000 with the SDK clients' Accept header**: $(val "$s" rss_max_mib) MiB after against
  $(val "$bs" rss_max_mib) MiB before ($(ratio "$(val "$s" rss_max_mib)" "$(val "$bs" rss_max_mib)")); the target
  of $IF_TARGET_MIB MiB is **$(if_verdict sse "$IF_TARGET_MIB")**. JSON only: $(val "$j" rss_max_mib) MiB against
  $(val "$bj" rss_max_mib) MiB ($(ratio "$(val "$j" rss_max_mib)" "$(val "$bj" rss_max_mib)"); round one measured 110.7 MiB).
- **What changed.** (1) An SSE answer's libmicrohttpd response carried a 4,096-byte block,
  allocated zeroed with every stream although a chunked stream is written through the
  connection's own buffer; it is 256 bytes now (\`SSE_BLOCK_SIZE\`, ingress/server.c): about
  3.8 KiB less per call whose client accepts SSE, since every call that waits longer than
  \`MCPQ_SSE_KEEPALIVE_MS\` (1 s) becomes a stream. (2) Once a burst of calls is answered, their
  pools and requests are free but stayed resident in the HTTP threads' malloc arenas, and the
  answer itself writes into the middle of each pool (libmicrohttpd zeroes the unused half of
  the read buffer when a response is queued), so the peak came at the end, after the calls:
  the ingress now returns that memory (\`malloc_trim\`) as the table shrinks
  (\`MCPQ_MEMORY_TRIM_CALLS\`, 1,000; compare the row without it). (3) The worker unlinked a
  finished job's queued store request by walking its queue: with 50,000 sleeping jobs per
  worker the jobs ended at 50–300 per second instead of when their timers fired, and most of
  100,000 calls timed out (1,066 of 100,000 completed in a trial before the fix); it is O(1)
  now (worker/core/store.c). (4) A waiting call frees its request body (it was kept, and
  counted in \`MCPQ_MAX_BODY_MEMORY_BYTES\`, until the answer).
- **Where the bytes go** (valgrind massif at 1,000 waiting SSE calls, libmicrohttpd 0.9.75;
  docs/operations.md, "Memory of waiting calls"): the connection pool 8,192 (resident in full
  once a stream started; only its ends while the call waits as JSON), the request with its
  waiting entry 1,528, libmicrohttpd's connection 456, and for a stream libmicrohttpd's
  response 440 (4,280 before), its headers 280 and the frames buffer 256; the request body
  (256 for a short call, a batch's whole body) is freed once the call waits (4).
  Per call with one connection each that is about $(val "$s" bytes_per_call) bytes as SSE and
  $(val "$j" bytes_per_call) as JSON.
- **Why not $IF_TARGET_MIB MiB.** $IF_TARGET_MIB MiB at 10,000 calls leaves about 5 KiB per call after the
  process's own ~15 MiB. The pool alone is 8 KiB and cannot go below about 7 KiB while a
  6,000-byte header must still be read (at \`MCPQ_CONN_MEMORY_LIMIT=7168\` a 6,000-byte header
  passes, at 6656 it gets 431), and once a stream is queued libmicrohttpd has zeroed it all.
  A stream started only with the result (the \`MCPQ_SSE_KEEPALIVE_MS=15000\` row) costs what
  a JSON call costs, but gives up the keep-alive comments and the 1 s notice of a closed
  2026-07-28 stream (docs/protocol.md, "Cancellation"); that is a product decision, not made
  here. Going lower needs an HTTP layer without a per-connection pool of that size.
- **100,000 in flight, batches**: $(val "$b" completed) of $(val "$b" calls) completed ($(val "$b" failed) failed),
  $(val "$b" waiting_max) waiting at once, max RSS $(val "$b" rss_max_mib) MiB (target under $IF_BIG_TARGET_MIB MiB:
  **$(if_verdict batch "$IF_BIG_TARGET_MIB")**), threads $(val "$b" threads_min)–$(val "$b" threads_max), $(val "$b" bytes_per_call) bytes per waiting call, over
  $(val "$b" connections) connections: each element is its own job and its own waiting entry
  (ingress/http/batch.c), answered on its batch's SSE stream.
- **Socket per call**: the machine's limit, not mcpq's: a process may hold at most
  $(ulimit -Hn) file descriptors here (\`ulimit -Hn\`, no CAP_SYS_RESOURCE to raise it), so one
  ingress holds at most about that many connections; the run used $(val "$k" calls) ($(val "$k" completed) completed,
  max RSS $(val "$k" rss_max_mib) MiB, $(val "$k" bytes_per_call) bytes per call, clients spread over $IF_SOURCES source
  addresses on 127.0.0.0/8 and as many client processes as $IF_PER_PROC connections each
  need). Extrapolated to $IF_BATCH_N sockets: about $(if_extrapolated) MiB answered as SSE
  streams, about $(if_extrapolated json) MiB for clients that accept only JSON (from the
  10,000 JSON run), given a file limit above $IF_BATCH_N (and source addresses past one
  address's ~28,000 ephemeral ports, which bench-inflight's \`--sources\` provides).
DOC_END
}
