# bench/sec_redislat.sh: section "redislat" of bench/run.sh (sourced; BENCH_ONLY=redislat runs
# only it). What a slow Redis does to tools/call and /healthz, before (BENCH_BASE) and after
# this build, with Redis direct and behind bench-latency_proxy adding REDISLAT_DELAY_MS (2) per
# round trip for the ingress only (scripts/mcpq-local --redis-port/--redis-via; the workers
# reach Redis directly). Per stack: echo at a fixed rate (bench-loadgen, REDISLAT_RATE, 300/s)
# with /healthz asked at 200/s by a second bench-loadgen meanwhile, the Redis commands per
# call over that run (INFO commandstats delta / calls) and the ingress pool's own counters
# (mcpq_redis_pool_commands_total), then wrk at 64 connections with /healthz asked again.
SECTIONS+=(redislat)

REDISLAT_DELAY_MS=${REDISLAT_DELAY_MS:-2}
REDISLAT_RATE=${REDISLAT_RATE:-300}
REDISLAT_HEALTHZ_RATE=${REDISLAT_HEALTHZ_RATE:-200}

# redislat_cmds PORT: "name calls" per command of Redis at PORT (INFO commandstats).
redislat_cmds() {
    redis-cli -p "$1" INFO commandstats | tr -d '\r' |
        awk -F'[:=,]' '/^cmdstat_/ { sub("cmdstat_", "", $1); print $1, $3 }'
}

# redislat_delta BEFORE AFTER CALLS OUT: commands per call, in total and by command.
redislat_delta() {
    awk -v n="$3" 'FNR == NR { b[$1] = $2; next }
        { d = $2 - b[$1]; if (d > 0) { t += d; by[$1] = d } }
        END { printf "cmds_per_call=%.2f\n", t / (n + 1e-9)
              for (c in by) if (by[c] / (n + 1e-9) >= 0.05) printf "cmd_%s=%.2f\n", c, by[c] / (n + 1e-9) }' \
        "$1" "$2" >>"$4"
}

# redislat_run LABEL BIN DELAY OUT: one stack of BIN, the ingress's Redis behind a proxy of
# DELAY ms per round trip (0: direct), measured as the header says.
redislat_run() {
    local label=$1 bin=$2 delay=$3 out=$4 rport=$((PORT + 50)) pport=$((PORT + 51))
    local via=() hz=$WORK/redislat-healthz.txt
    : >"$out"
    if [ "$delay" != 0 ]; then
        "$BIN/bench-latency_proxy" --listen "127.0.0.1:$pport" --to "127.0.0.1:$rport" \
            --delay-ms "$delay" >"$WORK/redislat-proxy.out" 2>&1 &
        REDISLAT_PROXY_PID=$!
        PIDS+=("$REDISLAT_PROXY_PID")
        NAMES_OF+=(latency-proxy)
        local t=0
        until grep -q '^LISTENING' "$WORK/redislat-proxy.out"; do
            [ "$t" -lt 100 ] && kill -0 "$REDISLAT_PROXY_PID" 2>/dev/null ||
                die "bench-latency_proxy did not start (see $WORK/redislat-proxy.out)"
            sleep 0.1
            t=$((t + 1))
        done
        via=(--redis-via "$pport")
        note_cmd "$(rel "$BIN")/bench-latency_proxy --listen 127.0.0.1:$pport --to 127.0.0.1:$rport --delay-ms $delay"
    fi
    say "redislat: $label (Redis ${delay} ms slower per round trip for the ingress)"
    SBIN=$bin start_stack "$WORK/state-redislat" "$WORK/redislat-launcher.out" \
        --redis-port "$rport" "${via[@]}"
    check_answer "mcpq tools/call echo ($label)" "$MCPQ_URL" "$ACCEPT_JSON" "$ECHO_BODY"
    # /healthz while the calls run: a second open loop of GETs.
    "$BIN/bench-loadgen" --url "http://127.0.0.1:$PORT/healthz" --rate "$REDISLAT_HEALTHZ_RATE" \
        --duration "$((DURATION + 2))" --warmup 2 --connections 8 --get >"$hz" 2>&1 &
    local hzpid=$!
    redislat_cmds "$rport" >"$WORK/redislat-cmds.before"
    local w0 q0 w1 q1 calls
    w0=$(metric 'mcpq_redis_pool_commands_total{how="waited"}')
    q0=$(metric 'mcpq_redis_pool_commands_total{how="queued"}')
    run_loadgen "mcpq echo ($label)" "$MCPQ_URL" "$ACCEPT_JSON" "$REDISLAT_RATE" "$out.lg"
    redislat_cmds "$rport" >"$WORK/redislat-cmds.after"
    w1=$(metric 'mcpq_redis_pool_commands_total{how="waited"}')
    q1=$(metric 'mcpq_redis_pool_commands_total{how="queued"}')
    # Every call sent between the snapshots: the recorded ones and those of the 2 s warm-up.
    calls=$(($(val "$out.lg" recorded) + 2 * REDISLAT_RATE))
    if [ "$w1" != 0 ] || [ "$q1" != 0 ]; then # the base has no such counter
        printf 'pool_waited_per_call=%s\npool_queued_per_call=%s\n' \
            "$(calc "($w1 - $w0) / (${calls:-0} + 1e-9)" 2)" "$(calc "($q1 - $q0) / (${calls:-0} + 1e-9)" 2)" >>"$out"
    fi
    wait "$hzpid" || true
    cat "$out.lg" >>"$out"
    redislat_delta "$WORK/redislat-cmds.before" "$WORK/redislat-cmds.after" \
        "$calls" "$out"
    printf 'healthz_p50_ms=%s\nhealthz_p99_ms=%s\nhealthz_max_ms=%s\nhealthz_errors=%s\n' \
        "$(val "$hz" latency_p50_ms)" "$(val "$hz" latency_p99_ms)" "$(val "$hz" latency_max_ms)" \
        "$(val "$hz" errors)" >>"$out"
    say "  /healthz meanwhile: p50 $(val "$out" healthz_p50_ms) ms, p99 $(val "$out" healthz_p99_ms) ms; Redis commands per call $(val "$out" cmds_per_call)"
    # /healthz again while wrk keeps both HTTP threads busy (its 1 s warm-up not recorded).
    "$BIN/bench-loadgen" --url "http://127.0.0.1:$PORT/healthz" --rate "$REDISLAT_HEALTHZ_RATE" \
        --duration 5 --warmup 1 --connections 8 --get >"$hz.wrk" 2>&1 &
    hzpid=$!
    WRK_WARMUP=1 WRK_DURATION=5 run_wrk "mcpq echo ($label)" "$MCPQ_URL" "$ACCEPT_JSON" \
        "$ECHO_BODY" 64 "$out.wrk"
    wait "$hzpid" || true
    printf 'healthz_wrk_p50_ms=%s\nhealthz_wrk_p99_ms=%s\nhealthz_wrk_max_ms=%s\n' \
        "$(val "$hz.wrk" latency_p50_ms)" "$(val "$hz.wrk" latency_p99_ms)" \
        "$(val "$hz.wrk" latency_max_ms)" >>"$out"
    say "  /healthz during wrk: p50 $(val "$out" healthz_wrk_p50_ms) ms, p99 $(val "$out" healthz_wrk_p99_ms) ms"
    printf 'wrk_rps=%s\nwrk_p50_ms=%s\nwrk_p99_ms=%s\nwrk_errors=%s\n' "$(val "$out.wrk" rps)" \
        "$(val "$out.wrk" latency_p50_ms)" "$(val "$out.wrk" latency_p99_ms)" \
        "$(val "$out.wrk" errors)" >>"$out"
    stop_stack
    if [ -n "${REDISLAT_PROXY_PID:-}" ]; then
        stop_pid "$REDISLAT_PROXY_PID" latency-proxy 5
        REDISLAT_PROXY_PID=
    fi
}

sec_redislat() {
    command -v redis-cli >/dev/null || die "redis-cli is missing (Debian package redis-tools)"
    base_build || die "redislat needs the base build (BENCH_BASE)"
    local d runs=()
    for d in 0 "$REDISLAT_DELAY_MS"; do
        redislat_run "before, +$d ms" "$BASE_BIN" "$d" "$RES/redislat-before-$d.txt"
        redislat_run "after, +$d ms" "$BIN" "$d" "$RES/redislat-after-$d.txt"
        runs+=("$d")
    done
    redislat_doc
}

# redislat_row LABEL KEY [DEC]: before | after | ratio for direct and the proxy.
redislat_row() {
    local d b a line="| $1 |"
    for d in 0 "$REDISLAT_DELAY_MS"; do
        b=$(val "$RES/redislat-before-$d.txt" "$2")
        a=$(val "$RES/redislat-after-$d.txt" "$2")
        line+=" ${b:-n/a} | ${a:-n/a} | $(ratio "${a:-}" "${b:-}" 3) |"
    done
    printf '%s\n' "$line"
}

redislat_doc() {
    local D=$REDISLAT_DELAY_MS bf=$RES/redislat-before-$REDISLAT_DELAY_MS.txt
    local af=$RES/redislat-after-$REDISLAT_DELAY_MS.txt
    {
        printf '## %s. Redis off the HTTP threads (redislat)\n\n' "${SECTION_NUMBER:-9}"
        printf 'What a slow Redis does to `tools/call` and `/healthz`, before (base %s) and after, with the ingress reaching Redis directly and through `bench-latency_proxy` adding %s ms per round trip (%s ms each way; `scripts/mcpq-local --redis-port N --redis-via P`: only the ingress goes through it, the workers reach Redis directly). Per stack: `tools/call` echo at %s req/s (bench-loadgen, open loop, %s s) with `/healthz` asked at %s req/s by a second bench-loadgen during the same run, the Redis commands per call over that run (`INFO commandstats` delta / calls: every client of Redis, workers and background threads included), then wrk at 64 connections (5 s) with `/healthz` asked at the same rate again (the HTTP threads busy). Round trips a call makes on the HTTP threads, by step: docs/internals.md, "Redis round trips per call".\n\n' \
            "${BASE_REV:-$BENCH_BASE}" "$D" "$(calc "$D / 2" 1)" "$REDISLAT_RATE" "$DURATION" "$REDISLAT_HEALTHZ_RATE"
        printf '| figure | direct: before | after | after/before | +%s ms: before | after | after/before |\n|---|---|---|---|---|---|---|\n' "$D"
        redislat_row "echo p50 at $REDISLAT_RATE/s (ms)" latency_p50_ms
        redislat_row "echo p99 at $REDISLAT_RATE/s (ms)" latency_p99_ms
        redislat_row "echo achieved (req/s)" achieved_rps
        redislat_row "echo errors" errors
        redislat_row "/healthz p50 meanwhile (ms)" healthz_p50_ms
        redislat_row "/healthz p99 meanwhile (ms)" healthz_p99_ms
        redislat_row "/healthz max meanwhile (ms)" healthz_max_ms
        redislat_row "echo, wrk 64 connections (req/s)" wrk_rps
        redislat_row "echo, wrk 64 connections p50 (ms)" wrk_p50_ms
        redislat_row "echo, wrk 64 connections p99 (ms)" wrk_p99_ms
        redislat_row "/healthz p50 during wrk (ms)" healthz_wrk_p50_ms
        redislat_row "/healthz p99 during wrk (ms)" healthz_wrk_p99_ms
        redislat_row "/healthz max during wrk (ms)" healthz_wrk_max_ms
        redislat_row "Redis commands per call, all clients" cmds_per_call
        redislat_row "of which SET per call (the legacy cancel map among them)" cmd_set
        redislat_row "ingress pool: round trips waited for per call (\`mcpq_redis_pool_commands_total{how=\"waited\"}\`; not counted before: 1 by docs/internals.md)" pool_waited_per_call
        redislat_row "ingress pool: writes queued for the keeper per call (\`{how=\"queued\"}\`)" pool_queued_per_call
        printf '\nWhat it means: before, every call of a client without a 2026-07-28 header made one synchronous `SET` (the map that lets `notifications/cancelled` find the job) on a libmicrohttpd thread, so behind a Redis %s ms away each call held one of the two HTTP threads for a round trip, which caps throughput at about 2 / (round trip) and queues `/healthz` behind it (the rows "during wrk"). After, that `SET` is queued for the pool'"'"'s keeper thread, which pipelines what is queued: the call makes no Redis round trip on an HTTP thread (the same commands reach Redis, from another thread), and no HTTP thread connects to Redis (the keeper keeps `MCPQ_REDIS_POOL_MIN_IDLE` connections ready). The latency that remains behind the proxy is the reply reader'"'"'s `XREAD` (the wake-up) reaching Redis through the proxy too. A frozen Redis is tested, not benched: tests/integration/test_redis_freeze.c.\n' "$D"
    } >"$RES/sec-redislat.md"
    {
        printf 'redislat: Redis +%s ms per round trip: echo wrk-64 %s -> %s req/s (%s), p50 at %s/s %s -> %s ms; /healthz p99 during wrk %s -> %s ms\n' \
            "$D" "$(val "$bf" wrk_rps)" "$(val "$af" wrk_rps)" "$(ratio "$(val "$af" wrk_rps)" "$(val "$bf" wrk_rps)")" \
            "$REDISLAT_RATE" "$(val "$bf" latency_p50_ms)" "$(val "$af" latency_p50_ms)" \
            "$(val "$bf" healthz_wrk_p99_ms)" "$(val "$af" healthz_wrk_p99_ms)"
        printf 'redislat: Redis round trips per echo call on the HTTP threads 1 -> %s (1 write queued for the keeper instead: %s); Redis commands per call, all clients %s -> %s\n' \
            "$(val "$RES/redislat-after-0.txt" pool_waited_per_call)" "$(val "$RES/redislat-after-0.txt" pool_queued_per_call)" \
            "$(val "$RES/redislat-before-0.txt" cmds_per_call)" "$(val "$RES/redislat-after-0.txt" cmds_per_call)"
    } >"$RES/sec-redislat.txt"
}
