# shellcheck shell=bash
# bench/sec_throughput.sh: section "throughput" of bench/run.sh (sourced; issue 34, items 2 and 4).
#
# 1. CPU per call: CPU µs per tools/call echo of every process of the stack (ingress-0,
#    worker-N, redis, devbroker; cpu_per_call) at a fixed modest rate (TP_RATE), on the base
#    build (BENCH_BASE, "before") and on this build ("now"), back to back.
# 2. Throughput against the official TypeScript SDK v1: echo through Kafka and Redis on a
#    fresh stack (2 workers) and the SDK's echo in-process (bench/ts_sdk_server.mjs, tuned:
#    see the doc text below), wrk at each of TP_CONNS connections, both sending the Accept
#    header the SDK clients send; TP_ROUNDS interleaved rounds (mcpq, SDK, mcpq, SDK, ...),
#    the median rate of each; ratios at each connection count.
#
# Knobs: BENCH_TP_RATE (1000 req/s), BENCH_TP_CPU_ROUNDS (2: base and now alternate), BENCH_TP_CONNECTIONS ("64 256"), BENCH_TP_ROUNDS (3),
# BENCH_TP_DURATION (5 s per wrk run, after a 2 s warm-up), BENCH_TP_NODE_FLAGS
# (--max-semi-space-size=64). The SDK server listens on BENCH_PORT+14.
SECTIONS+=(throughput)

TP_RATE=${BENCH_TP_RATE:-1000}
TP_CONNS=${BENCH_TP_CONNECTIONS:-64 256}
TP_ROUNDS=${BENCH_TP_ROUNDS:-3}
TP_DURATION=${BENCH_TP_DURATION:-5}
TP_CPU_ROUNDS=${BENCH_TP_CPU_ROUNDS:-2}
TP_NODE_FLAGS=${BENCH_TP_NODE_FLAGS:---max-semi-space-size=64}
TP_TS_PORT=$((PORT + 14))
TP_COMPONENTS=(ingress-0 worker-0 worker-1 redis devbroker)

# tp_stop_pid PID: stops one server this section started and drops it from PIDS.
tp_stop_pid() {
    local i
    for i in "${!PIDS[@]}"; do
        if [ "${PIDS[$i]}" = "$1" ]; then
            stop_pid "$1" "${NAMES_OF[$i]}" 10
            unset "PIDS[$i]" "NAMES_OF[$i]"
        fi
    done
    PIDS=("${PIDS[@]+"${PIDS[@]}"}")
    NAMES_OF=("${NAMES_OF[@]+"${NAMES_OF[@]}"}")
}

# tp_cpu LABEL BIN ROUND: CPU per call of a fresh stack built from BIN into
# $RES/tp-cpu-LABEL-rROUND.txt.
tp_cpu() {
    local state=$WORK/state-tp-$1 out=$RES/tp-cpu-$1-r$3.txt
    say "throughput: CPU per call of the $1 build at $TP_RATE req/s, round $3"
    SBIN=$2 start_stack "$state" "$WORK/launcher-tp-$1.out"
    check_answer "mcpq tools/call echo ($1)" "$MCPQ_URL" "$ACCEPT_BOTH" "$ECHO_BODY"
    cpu_per_call "$state" "$TP_RATE" "$out"
    say "  total $(val "$out" total_us) µs per call (ingress $(val "$out" ingress-0_us)), others $(val "$out" other_cpu_pct)%"
    stop_stack
}

# tp_cpu_best LABEL: the round of LABEL with the least CPU per call in total, copied to
# $RES/tp-cpu-LABEL.txt. Sharing the cores only ever adds CPU per call (cache misses, more
# wake-ups per call), so the least disturbed round is the one with the smallest figure.
tp_cpu_best() {
    local r best='' bt=''
    for ((r = 1; r <= TP_CPU_ROUNDS; r++)); do
        local t
        t=$(val "$RES/tp-cpu-$1-r$r.txt" total_us)
        if [ -n "$t" ] && { [ -z "$bt" ] || ! ge "$t" "$bt"; }; then
            best=$r
            bt=$t
        fi
    done
    [ -z "$best" ] || cp "$RES/tp-cpu-$1-r$best.txt" "$RES/tp-cpu-$1.txt"
}

# tp_calls: "ok bad" tools/call outcomes counted by the ingress's /metrics (all tenants).
tp_calls() {
    curl -s -m 5 "http://127.0.0.1:$PORT/metrics" | awk 'index($1, "mcpq_tool_calls_total{") == 1 {
        if (index($1, "outcome=\"ok\"")) ok += $2; else bad += $2 } END { printf "%d %d", ok, bad }'
}

# tp_rounds: interleaved wrk rounds of mcpq (stack running, STACK_PIDS) and the SDK (TP_TS_PID).
tp_rounds() {
    local r c
    for ((r = 1; r <= TP_ROUNDS; r++)); do
        for c in $TP_CONNS; do
            WRK_WARMUP=2 WRK_DURATION=$TP_DURATION WRK_PIDS="$TP_STACK_PIDS" run_wrk \
                "throughput round $r: mcpq echo" "$MCPQ_URL" "$ACCEPT_BOTH" "$ECHO_BODY" "$c" \
                "$RES/tp-mcpq-c$c-r$r.txt"
            WRK_WARMUP=2 WRK_DURATION=$TP_DURATION WRK_PIDS=$TP_TS_PID run_wrk \
                "throughput round $r: TS SDK echo" "$TP_TS_URL" "$ACCEPT_BOTH" "$ECHO_BODY" "$c" \
                "$RES/tp-ts-c$c-r$r.txt"
        done
    done
}

# tp_median KIND CONNS KEY: the median of KEY over the rounds of KIND (mcpq or ts).
tp_median() {
    local r
    for ((r = 1; r <= TP_ROUNDS; r++)); do val "$RES/tp-$1-c$2-r$r.txt" "$3"; done |
        { grep . || true; } | sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'
}

sec_throughput() {
    local have_base=0 f
    rm -f "$RES"/tp-*.txt
    local r
    base_build && have_base=1
    for ((r = 1; r <= TP_CPU_ROUNDS; r++)); do
        [ "$have_base" = 0 ] || tp_cpu base "$BASE_BIN" "$r"
        tp_cpu now "$BIN" "$r"
    done
    tp_cpu_best base
    tp_cpu_best now

    say "throughput: the TypeScript SDK server on $TP_TS_PORT (tuned) and a fresh mcpq stack"
    TP_TS_URL=http://127.0.0.1:$TP_TS_PORT/mcp
    # shellcheck disable=SC2086 # TP_NODE_FLAGS is a list of flags
    start_server ts-sdk-tp "$WORK/ts-tp.out" env -C "$NPM" NODE_ENV=production node \
        $TP_NODE_FLAGS ts_sdk_server.mjs --port "$TP_TS_PORT" --key "$KEY"
    TP_TS_PID=$LAST_PID
    note_cmd "(cd $(rel "$NPM") && NODE_ENV=production node $TP_NODE_FLAGS ts_sdk_server.mjs --port $TP_TS_PORT --key $KEY)"
    start_stack "$WORK/state-tp-peak" "$WORK/launcher-tp-peak.out"
    TP_STACK_PIDS=$(for f in "$WORK/state-tp-peak"/*.pid; do cat "$f"; printf ' '; done)
    check_answer "mcpq tools/call echo" "$MCPQ_URL" "$ACCEPT_BOTH" "$ECHO_BODY"
    check_answer "TS SDK tools/call echo" "$TP_TS_URL" "$ACCEPT_BOTH" "$ECHO_BODY"
    local c0 c1
    read -r -a c0 <<<"$(tp_calls)"
    tp_rounds
    read -r -a c1 <<<"$(tp_calls)"
    printf 'calls_ok=%s\ncalls_bad=%s\n' "$((c1[0] - c0[0]))" "$((c1[1] - c0[1]))" >"$RES/tp-calls.txt"
    stop_stack
    tp_stop_pid "$TP_TS_PID"
    tp_doc "$have_base"
}

# tp_cpu_rows HAVE_BASE: the CPU-per-call table's rows (one per component, then the total).
tp_cpu_rows() {
    local n b now
    for n in "${TP_COMPONENTS[@]}" total; do
        now=$(val "$RES/tp-cpu-now.txt" "${n}_us")
        b=$(val "$RES/tp-cpu-base.txt" "${n}_us")
        if [ "$1" = 1 ]; then
            printf '| %s | %s | %s | %s |\n' "$n" "${b:-n/a}" "${now:-n/a}" "$(ratio "$now" "$b")"
        else
            printf '| %s | n/a | %s | n/a |\n' "$n" "${now:-n/a}"
        fi
    done
}

# tp_rate_rows: one row per connection count: medians, ratio, CPU per request at the peak.
tp_rate_rows() {
    local c m t
    for c in $TP_CONNS; do
        m=$(tp_median mcpq "$c" rps)
        t=$(tp_median ts "$c" rps)
        printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$c" "${m:-n/a}" \
            "$(tp_median mcpq "$c" latency_p50_ms)" "$(tp_median mcpq "$c" server_us_per_req)" \
            "${t:-n/a}" "$(tp_median ts "$c" latency_p50_ms)" \
            "$(tp_median ts "$c" server_us_per_req)" "$(ratio "$m" "$t")" \
            "$(for ((r = 1; r <= TP_ROUNDS; r++)); do printf '%s ' "$(ratio "$(val "$RES/tp-mcpq-c$c-r$r.txt" rps)" "$(val "$RES/tp-ts-c$c-r$r.txt" rps)")"; done)"
    done
}

# tp_errors: transport errors and non-2xx of every wrk run, both servers.
tp_errors() {
    local f n e=0
    for f in "$RES"/tp-mcpq-c*-r*.txt "$RES"/tp-ts-c*-r*.txt; do
        n=$(val "$f" errors)
        e=$((e + ${n:-0}))
    done
    printf '%s' "$e"
}

tp_doc() {
    local c m t verdict all=met line=
    for c in $TP_CONNS; do
        m=$(tp_median mcpq "$c" rps)
        t=$(tp_median ts "$c" rps)
        verdict=met
        ge "${m:-0}" "$(calc "${t:-0} * 10" 1)" || { verdict='NOT met'; all='NOT met'; }
        line+="${line:+; }at $c connections $(ratio "$m" "$t") ($m vs $t req/s, 10×: $verdict)"
    done
    {
        printf 'throughput: mcpq echo vs the TS SDK %s (node %s), medians of %s rounds: %s\n' \
            "$SDK_VERSION" "$(node --version)" "$TP_ROUNDS" "$line"
        printf 'throughput: CPU per call at %s req/s, whole stack: %s µs now vs %s µs base (%s); ingress %s vs %s µs (%s)\n' \
            "$TP_RATE" "$(val "$RES/tp-cpu-now.txt" total_us)" "$(val "$RES/tp-cpu-base.txt" total_us || true)" \
            "$(ratio "$(val "$RES/tp-cpu-now.txt" total_us)" "$(val "$RES/tp-cpu-base.txt" total_us)")" \
            "$(val "$RES/tp-cpu-now.txt" ingress-0_us)" "$(val "$RES/tp-cpu-base.txt" ingress-0_us || true)" \
            "$(ratio "$(val "$RES/tp-cpu-now.txt" ingress-0_us)" "$(val "$RES/tp-cpu-base.txt" ingress-0_us)")"
    } >"$RES/sec-throughput.txt"
    tp_doc_text "$1" "$all" >"$RES/sec-throughput.md"
}

tp_doc_text() {
    local TP_LAST
    TP_LAST=${TP_CONNS##* }
    cat <<DOC_END
## 5. Throughput against the TypeScript SDK and CPU per call

Measured on $(date -u '+%Y-%m-%d %H:%M UTC') (git $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown); base $(
        [ "$1" = 1 ] && printf '%s' "$BASE_REV" || printf 'not built'
    )). Node $(node --version), @modelcontextprotocol/sdk $SDK_VERSION. 10× at every connection count:
**$2**.

### CPU per call

\`cpu_per_call\` (bench/run.sh): \`bench-loadgen\` sends \`tools/call\` echo at a fixed $TP_RATE req/s
(open loop, 256 keep-alive connections, \`Accept: $ACCEPT_BOTH\`, every answer checked)
for ${DURATION} s after a 2 s warm-up, on a fresh stack (1 ingress, 2 workers, devbroker, redis);
the CPU time each process used (\`/proc/<pid>/stat\` utime + stime) divided by the calls
answered. At a fixed rate this does not depend on how fast the rest of the shared machine lets
the stack run, unlike the rates below, but sharing the cores still adds to it (cache misses,
more wake-ups per call). "base" is the build of $([ "$1" = 1 ] && printf '%s' "$BASE_REV" || printf 'BENCH_BASE'), the commit
before performance round two; base and now alternate for $TP_CPU_ROUNDS rounds each and the table gives
each build's round with the least CPU in total (the least disturbed one; every round's total:
base $(for ((r = 1; r <= TP_CPU_ROUNDS; r++)); do printf '%s ' "$(val "$RES/tp-cpu-base-r$r.txt" total_us)"; done)µs, now $(for ((r = 1; r <= TP_CPU_ROUNDS; r++)); do printf '%s ' "$(val "$RES/tp-cpu-now-r$r.txt" total_us)"; done)µs). Others' CPU during
the rounds shown: base $(val "$RES/tp-cpu-base.txt" other_cpu_pct)%, now $(val "$RES/tp-cpu-now.txt" other_cpu_pct)% (of one core).

| process | base µs/call | now µs/call | now / base |
|---|---|---|---|
$(tp_cpu_rows "$1")

### Echo throughput, side by side

wrk ($WRK_THREADS threads, ${TP_DURATION} s after a 2 s warm-up) with \`$ECHO_BODY\`
and \`Accept: $ACCEPT_BOTH\` (what the SDK clients send; the SDK answers 406 without
\`text/event-stream\`) at each of $TP_CONNS connections. mcpq: a fresh stack, every call a Kafka
job run by one of 2 workers and answered through Redis. The SDK: \`bench/ts_sdk_server.mjs\`,
echo in-process. $TP_ROUNDS rounds, each running mcpq then the SDK at every connection count,
so both see the same machine; the table gives the medians of the rounds and the ratio of the
medians, and the ratio of each round. "server CPU" is the CPU of the server's processes per
request (all five of the stack for mcpq). wrk reported $(tp_errors) transport errors or non-2xx
answers over all runs; the ingress counted $(val "$RES/tp-calls.txt" calls_ok) calls ending \`ok\` and
$(val "$RES/tp-calls.txt" calls_bad) ending otherwise during mcpq's runs.

| connections | mcpq req/s | mcpq p50 ms | mcpq server CPU µs/req | SDK req/s | SDK p50 ms | SDK server CPU µs/req | ratio of medians | ratio per round |
|---|---|---|---|---|---|---|---|---|
$(tp_rate_rows)

The SDK server is tuned the way its documentation allows: it keeps the example's fresh
\`McpServer\` and \`StreamableHTTPServerTransport\` per request (the SDK refuses to reuse a
stateless transport, and a server connects to one transport at a time), \`enableJsonResponse\`,
Node's plain \`http\` module (no Express), the tools' zod schemas and handlers built once
instead of per request, \`NODE_ENV=production\` and \`$TP_NODE_FLAGS\` (fewer young-generation
collections). Measured by hand on 2026-11-29 at 64 connections, back to back: 356–365 µs of
CPU per request tuned against 479–484 µs as the example is written (\`--example\`), about
1.2× more throughput for the SDK. Node runs JavaScript on one thread, so the SDK uses one core
at most; the mcpq stack can use both.

### Why these figures differ from an outside run

The issue's outside run (2026-11-28) measured mcpq 4.88k req/s against the SDK's 3.27k at 64
connections (1.56×) and 7.45k against 3.37k at 256 (2.16×). This section differs from it in:

- **the machine**: everything shares 2 cores — wrk's 2 threads, the 5 processes of the stack
  and the other engineers' builds — so a faster stack also leaves less CPU to the client. An
  outside client on its own cores would give both servers more, the SDK (one thread) less so;
- **the Accept header**: here both servers get \`$ACCEPT_BOTH\` as SDK clients send it
  (mcpq then answers \`tools/call\` as it does for those clients); the first round's bench sent
  mcpq \`application/json\` only;
- **the rate limit**: the bench key's limit is 10^9/s, so every call still goes through the
  limiter (a local lease, Redis once per 5·10^7 calls); the outside run switched it off;
- **the stack**: the devbroker (librdkafka's mock cluster, in memory) instead of a Kafka
  cluster, 2 workers, as \`make up\` starts it; a real broker adds its own network hops and
  fetch behaviour (section "stages" breaks the latency down by stage);
- **the SDK's tuning and Node version**: Node $(node --version) here, node 20 there; the outside
  run's exact SDK tuning is not recorded;
- **the length**: ${TP_DURATION} s runs after 2 s of warm-up, median of $TP_ROUNDS interleaved rounds.

### Where the ingress's CPU went, and what was cut

Measured by hand on 2026-11-29 (not by this script: it takes a profile build of its own).
\`perf record -g -p <ingress>\` at 2,000 calls/s: 57% of the ingress's samples are in the
kernel (TCP, and 23% in scheduling: every call wakes the HTTP thread, librdkafka's broker
thread and the reply reader), 23% in libc (malloc/free, printf, strlen), 5% in libcrypto,
3.5% in libcjson. User-space cost is best counted in instructions, which the shared machine
does not disturb: \`valgrind --tool=callgrind --instr-atstart=no\` on the Release ingress of
a stack as above, 1,000 calls of echo at 100/s counted after a warm-up (\`callgrind_control
-i on\`, \`-z\`, \`-d\`), all threads, divided by the calls (so it includes the idle
threads' share):

| step (cumulative) | instructions per call | vs base |
|---|---|---|
| base ($([ "$1" = 1 ] && printf '%s' "$BASE_REV" || printf 'BENCH_BASE')) | 466,845 | 1.00× |
| API key cache: a SipHash and a constant-time compare instead of a SHA-256, twice per request (\`ingress/core/keycache.c\`) | 461,676 | 0.99× |
| random ids from a per-thread pool of \`RAND_bytes\` (5 ids per call, each a DRBG call of ~6,800 instructions) and log lines written as text instead of a cJSON object per line (3 lines per call at \`info\`; the log writer now in \`common/log.c\` is part workers', which made the same cut) | 402,174 | 0.86× |
| \`common/jprint.c\`: the envelope and the woken call's result (and then the log lines) printed without cJSON's \`sprintf("%1.15g")\` + \`sscanf\` per number (~4,500 instructions each, 10 per call) | 354,741 | 0.76× |
| an HMAC-SHA256 context kept per thread for the job signature (the one-shot \`HMAC()\` fetched the algorithms each call) | 341,907 | 0.73× |
| strings scanned for escapes through a table in \`jprint\` | 335,214 | 0.72× |
| merged with part workers' log writer (the same text lines), whose date is then formatted once per second and thread and whose typed fields go through \`jprint\` | 339,616 | 0.73× |

What is left, per call: the reply reader 69k (parsing the result record with cJSON 34k),
the envelope 62k (building the cJSON object 21k, printing it ~20k, the HMAC over its ~1 KiB
25k), three log lines ~40k, the request's JSON parse and schema check ~22k, libmicrohttpd,
librdkafka and the kernel. The wake-ups are the largest cost that does not show as
instructions: at a modest rate every call wakes three threads of the ingress.

**Kafka batching (a proposal to part stages, which owns the producer settings).** The same
stack at 2,000 calls/s (8 s, 2 rounds each, by hand), CPU µs per call of each process, with
the producer's \`linger.ms\` at its default 1 against 5 (\`MCPQ_KAFKA_PROP_LINGER_MS=5\`):
the whole stack 347 and 396 µs at 1 against 258 and 303 µs at 5 (0.75×; the devbroker 81–103
against 46–61 µs, the ingress 135–148 against 110–127 µs), but the median latency rises from
6.3 to 9.5 ms. At 64 connections the rate is the connections over the latency, so a longer
linger lowers it there; it helps only where the CPU is the bound (256 connections). The
setting is per deployment: keep 1 for latency, 5 for CPU.

At 64 connections the rate is connections divided by the round-trip time: the SDK answers
in-process in well under a millisecond of its own time, while an mcpq call crosses Kafka and
Redis, so at 64 connections mcpq's rate is bounded by its latency (section "stages") rather
than by its CPU; at 256 connections the bound is the CPU per call above, shared with wrk on
the same two cores. What stands in the way of 10×: in this run the SDK used
$(tp_median ts "$TP_LAST" server_us_per_req) µs of CPU per request at $TP_LAST connections on its one
thread, and the mcpq stack $(tp_median mcpq "$TP_LAST" server_us_per_req) µs over its five processes. Ten
times the SDK's rate on two cores, wrk included, needs the whole stack to stay under about a
fifth of the SDK's CPU per call (two cores against one, less wrk's share), and at 64
connections a round trip through Kafka and Redis of a tenth of the SDK's latency.
DOC_END
}
