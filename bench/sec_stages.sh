# shellcheck shell=bash disable=SC2016 # backquotes in the doc text are Markdown
# bench/sec_stages.sh: where the time of a tools/call goes, and the added latency (issue 34,
# "Where the time goes" and "Latency"). Sourced by bench/run.sh; BENCH_ONLY=stages runs it
# alone (BENCH_PORT, BENCH_WORK and BENCH_DOC as there).
#
# At half of mcpq's peak echo rate (ECHO_MCPQ_RPS of the full run, else a short wrk run at 256
# connections), for the new build and the base (BENCH_BASE), each with the launcher's default
# fetch wait and with MCPQ_KAFKA_FETCH_WAIT_MS=1 (its minimum): bench-loadgen, open loop, with
# the access log on; the p50 and p99 of every stage of the access lines' stages_us
# (docs/operations.md, "Access log"), CPU µs per call of each process, the stack's idle CPU,
# and the added latency: end-to-end p50 minus the tool's execute p50 minus the loopback floor
# (bench-bare_responder at the same rate). Knobs: BENCH_STAGES_WAITS ("5 1": the fetch waits),
# BENCH_STAGES_IDLE (5 s of idle CPU per stack), BENCH_STAGES_ENV ("K=V ...": more environment
# for every stack of the section, e.g. MCPQ_KAFKA_PROP_LINGER_MS=0.5 to try a Kafka property).
SECTIONS+=(stages)
STAGES_ENV=()
STAGES_LINGER=1 # the producer's linger.ms (common/mq.c's default unless the env sets it)
for kv in ${BENCH_STAGES_ENV:-}; do
    STAGES_ENV+=(--env "$kv")
    case $kv in MCPQ_KAFKA_PROP_LINGER_MS=*) STAGES_LINGER=${kv#*=} ;; esac
done

# stages_num V: V, or n/a when empty (run.sh's num is defined after the sections run).
stages_num() { if [ -n "$1" ]; then printf '%s' "$1"; else printf 'n/a'; fi; }

STAGES_LIST="http_auth validate produce queue execute result_write wake respond"

# stages_collect LOG SKIP OUT: p50 and p99 (ms) of each stage of the stages_us of LOG's access
# lines after its first SKIP lines, and of their duration_us (total), as <stage>_p50= lines.
stages_collect() {
    tail -n +"$(($2 + 1))" "$1" | awk '
        index($0, "\"msg\":\"access\"") && match($0, /"stages_us":\{[^}]*\}/) {
            s = substr($0, RSTART + 13, RLENGTH - 14)
            n = split(s, kv, ",")
            for (i = 1; i <= n; i++) { split(kv[i], p, ":"); gsub(/"/, "", p[1]); print p[1], p[2] }
            if (match($0, /"duration_us":[0-9.e+]+/)) print "total", substr($0, RSTART + 14, RLENGTH - 14)
        }' | sort -k1,1 -k2,2g | awk '
        { n[$1]++; v[$1, n[$1]] = $2 }
        END {
            for (k in n) {
                c = n[k]; i99 = int(c * 0.99 + 0.999)
                printf "%s_p50=%.3f\n%s_p99=%.3f\n", k, v[k, int((c + 1) / 2)] / 1000, k, v[k, i99] / 1000
            }
            printf "stage_calls=%d\n", n["total"]
        }' >>"$3"
}

# stages_cpu STATE: "name ticks" of every component of the stack in STATE.
stages_cpu() {
    local f
    for f in "$1"/*.pid; do printf '%s %s\n' "$(basename "$f" .pid)" "$(cpu_ticks "$(cat "$f")")"; done
}

# stages_cpu_diff BEFORE AFTER SECONDS_OR_CALLS SCALE PREFIX OUT: per component (and total)
# (after - before) ticks as µs, divided by the third argument, times SCALE.
stages_cpu_diff() {
    awk -v per="$3" -v scale="$4" -v pre="$5" -v tck="$CLK_TCK" 'FNR == NR { b[$1] = $2; next }
        { us = ($2 - b[$1]) / tck * 1e6 / (per + 1e-9) * scale; t += us; printf "%s%s=%.1f\n", pre, $1, us }
        END { printf "%stotal=%.1f\n", pre, t }' "$1" "$2" >>"$6"
}

# stages_run LABEL BIN WAIT OUT RATE: a fresh stack of BIN with MCPQ_KAFKA_FETCH_WAIT_MS=WAIT
# (extra --env arguments in STAGES_ENV), its idle CPU, then echo at RATE: loadgen figures, CPU
# µs per call and the stage percentiles into OUT.
stages_run() {
    local label=$1 bin=$2 wait=$3 out=$4 rate=$5 state=$WORK/state-stages log n0
    say "stages: $label (MCPQ_KAFKA_FETCH_WAIT_MS=$wait ${STAGES_ENV[*]-}), echo at $rate req/s"
    SBIN=$bin start_stack "$state" "$WORK/launcher-stages.out" --env "MCPQ_KAFKA_FETCH_WAIT_MS=$wait" \
        --env MCPQ_ACCESS_LOG=1 "${STAGES_ENV[@]+"${STAGES_ENV[@]}"}"
    check_answer "mcpq tools/call echo ($label)" "$MCPQ_URL" "$ACCEPT_JSON" "$ECHO_BODY"
    log=$state/ingress-0.log
    printf 'run_label=%s, %s req/s\n' "$label" "$rate" >"$out"
    sleep 2 # the consumers' first fetches and the group's settling are not idle CPU
    stages_cpu "$state" >"$WORK/stages-c0"
    sleep "$STAGES_IDLE"
    stages_cpu "$state" >"$WORK/stages-c1"
    stages_cpu_diff "$WORK/stages-c0" "$WORK/stages-c1" "$STAGES_IDLE" 1e-4 idle_pct_ "$out"
    local lg=("$BIN/bench-loadgen" --url "$MCPQ_URL" --rate "$rate" --connections 256
        --body "$ECHO_BODY" -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json'
        -H "Accept: $ACCEPT_JSON" --check-result)
    "${lg[@]}" --duration 2 --warmup 0 >/dev/null 2>&1 || true # warm-up, left out below
    sleep 0.5
    n0=$(wc -l <"$log")
    stages_cpu "$state" >"$WORK/stages-c0"
    others_start
    "${lg[@]}" --duration "$DURATION" --warmup 0 >>"$out" 2>&1 || true
    others_end "$out" >/dev/null
    stages_cpu "$state" >"$WORK/stages-c1"
    stages_cpu_diff "$WORK/stages-c0" "$WORK/stages-c1" "$(val "$out" recorded)" 1 cpu_us_ "$out"
    sleep 1 # the last access lines
    stages_collect "$log" "$n0" "$out"
    stop_stack
    say "  p50 $(val "$out" latency_p50_ms) ms, errors $(val "$out" errors), queue p50 $(val "$out" queue_p50) ms, CPU $(val "$out" cpu_us_total) µs/call, idle $(val "$out" idle_pct_total)% of a core"
}

# stages_added OUT FLOOR: end-to-end p50 - execute p50 - floor p50 (ms; execute 0 when the
# build does not stamp it).
stages_added() { calc "$(val "$1" latency_p50_ms) - ${3:-$(val "$1" execute_p50)} - $2" 3; }

sec_stages() {
    local waits=${BENCH_STAGES_WAITS:-5 1} w
    STAGES_IDLE=${BENCH_STAGES_IDLE:-5}
    local def_wait=${waits%% *}
    if [ -n "${ECHO_MCPQ_RPS:-}" ]; then
        STAGES_PEAK=$ECHO_MCPQ_RPS
        STAGES_PEAK_FROM="the full run's echo peak"
    else
        SBIN=$BIN start_stack "$WORK/state-stages" "$WORK/launcher-stages.out"
        check_answer "mcpq tools/call echo" "$MCPQ_URL" "$ACCEPT_JSON" "$ECHO_BODY"
        WRK_WARMUP=2 WRK_DURATION=5 run_wrk "stages: mcpq echo peak" "$MCPQ_URL" "$ACCEPT_JSON" \
            "$ECHO_BODY" 256 "$RES/stages-peak.txt"
        stop_stack
        STAGES_PEAK=$(val "$RES/stages-peak.txt" rps)
        STAGES_PEAK_FROM="wrk at 256 connections for 5 s"
    fi
    STAGES_RATE=$(calc "$STAGES_PEAK / 2" 0)
    [ "$STAGES_RATE" -ge 1 ] || STAGES_RATE=1

    base_build || true
    STAGES_BASE_RATE=
    if [ -n "$BASE_BIN" ]; then # the base at half of its own peak (at the new build's rate too)
        SBIN=$BASE_BIN start_stack "$WORK/state-stages" "$WORK/launcher-stages.out"
        check_answer "mcpq tools/call echo (base)" "$MCPQ_URL" "$ACCEPT_JSON" "$ECHO_BODY"
        WRK_WARMUP=2 WRK_DURATION=5 run_wrk "stages: base $BASE_REV echo peak" "$MCPQ_URL" \
            "$ACCEPT_JSON" "$ECHO_BODY" 256 "$RES/stages-base-peak.txt"
        stop_stack
        STAGES_BASE_RATE=$(calc "$(val "$RES/stages-base-peak.txt" rps) / 2" 0)
        [ "$STAGES_BASE_RATE" -ge 1 ] || STAGES_BASE_RATE=1
    fi
    for w in $waits; do
        stages_run "new build, fetch wait $w ms" "$BIN" "$w" "$RES/stages-new-w$w.txt" "$STAGES_RATE"
        if [ -n "$BASE_BIN" ]; then
            stages_run "base $BASE_REV, fetch wait $w ms" "$BASE_BIN" "$w" \
                "$RES/stages-base-w$w.txt" "$STAGES_BASE_RATE"
            stages_run "base $BASE_REV, fetch wait $w ms" "$BASE_BIN" "$w" \
                "$RES/stages-basenew-w$w.txt" "$STAGES_RATE"
        fi
    done
    # unloaded: the stages without queueing for the CPU, at the minimum fetch wait
    stages_run "new build, fetch wait ${waits##* } ms" "$BIN" "${waits##* }" "$RES/stages-new-low.txt" 100
    say "stages: bare responder (loopback floor) at $STAGES_RATE req/s"
    local bare_pid=
    if ! port_in_use "$BARE_PORT"; then # the full run's responder is still up: use it
        start_server bare "$WORK/bare-stages.out" "$BIN/bench-bare_responder" --port "$BARE_PORT" --threads 2
        bare_pid=$LAST_PID
    fi
    run_loadgen "bare responder (HTTP floor)" "$BARE_URL" "$ACCEPT_JSON" "$STAGES_RATE" "$RES/stages-bare.txt"
    [ -z "$bare_pid" ] || stop_pid "$bare_pid" bare 10
    stages_doc "$waits" "$def_wait"
}

# stages_row LABEL FILE: a table row of the stage p50/p99 of one run.
stages_row() {
    local s cells=""
    for s in $STAGES_LIST; do
        cells+=" $(stages_num "$(val "$2" "${s}_p50")") / $(stages_num "$(val "$2" "${s}_p99")") |"
    done
    printf '| %s | %s | %s | %s |%s\n' "$1" "$(stages_num "$(val "$2" latency_p50_ms)")" \
        "$(stages_num "$(val "$2" total_p50)")" "$(stages_num "$(val "$2" max_queue)")" "$cells"
}

stages_doc() {
    local waits=$1 def_wait=$2 w floor new base added_new added_base f
    floor=$(val "$RES/stages-bare.txt" latency_p50_ms)
    {
        printf '## 8. Where the time of a call goes, and the added latency\n\n'
        printf 'bench/sec_stages.sh. Echo at **%s req/s**, half of the peak (%s req/s, %s); the base\n' \
            "$STAGES_RATE" "$STAGES_PEAK" "$STAGES_PEAK_FROM"
        printf 'build at half of its own peak (%s req/s: wrk at 256 connections for 5 s) and at the new\n' \
            "$(stages_num "$(val "$RES/stages-base-peak.txt" rps)")"
        printf "build's rate. Each row: a fresh stack (2 workers, \`scripts/mcpq-local\`, the devbroker), bench-loadgen open\n"
        printf 'loop on 256 connections for %s s after a 2 s warm-up, Accept: application/json. Each\n' "$DURATION"
        printf 'answered call'"'"'s access line carries `stages_us` (docs/operations.md, "Access log"): the\n'
        printf 'table gives p50 / p99 of each stage over every call of the run, in ms. "e2e" is the\n'
        printf "client's p50 (from the request's due time); \"logged\" the p50 of the access lines'\n"
        printf '`duration_us` (from the headers read to the response written). "max queued" is the most\n'
        printf 'requests the open loop held for want of a free connection: in the hundreds, the stack fell\n'
        printf 'behind the rate (on this shared 2-core machine, when other work took the CPU) and every\n'
        printf 'figure of that row holds queueing for the CPU.\n\n'
        printf '| run | e2e p50 | logged p50 | max queued |'
        for f in $STAGES_LIST; do printf ' %s |' "$f"; done
        printf '\n|---|---|---|---|'
        for f in $STAGES_LIST; do printf -- '---|'; done
        printf '\n'
        for w in $waits; do
            for f in new base basenew; do
                [ -f "$RES/stages-$f-w$w.txt" ] && stages_row "$(val "$RES/stages-$f-w$w.txt" run_label)" "$RES/stages-$f-w$w.txt"
            done
        done
        stages_row "$(val "$RES/stages-new-low.txt" run_label)" "$RES/stages-new-low.txt"
        printf '\nThe base build (%s) stamps no stages (its access line has no `stages_us`): only its\n' "${BASE_REV:-n/a}"
        printf 'end-to-end figure can be compared.\n\n'
        printf '### Added latency\n\n'
        printf 'Median end-to-end latency minus the tool'"'"'s own execution (the `execute` p50; the base\n'
        printf 'does not stamp it: 0 is taken, echo'"'"'s is a few µs) minus the loopback floor: the bare\n'
        printf 'libmicrohttpd responder at the same rate, p50 **%s ms**. Target: under 2 ms.\n\n' "$(stages_num "$floor")"
        printf 'The base is taken at half of its own peak (the target'"'"'s load for that build).\n\n'
        printf '| fetch wait | new: added | base: added | new / base | new: CPU µs per call (ingress, workers, redis, devbroker) | new: idle stack CPU (%% of a core; devbroker) | base: idle |\n'
        printf '|---|---|---|---|---|---|---|\n'
        for w in $waits; do
            new=$RES/stages-new-w$w.txt
            base=$RES/stages-base-w$w.txt
            added_new=$(stages_added "$new" "${floor:-0}")
            added_base=$([ -f "$base" ] && stages_added "$base" "${floor:-0}" 0 || printf '')
            printf '| %s ms%s | %s ms | %s ms | %s | %s (%s, %s, %s, %s) | %s (%s) | %s |\n' "$w" \
                "$([ "$w" = "$def_wait" ] && printf ' (launcher default)')" "$added_new" "$(stages_num "$added_base")" \
                "$(ratio "$added_new" "$added_base")" "$(stages_num "$(val "$new" cpu_us_total)")" \
                "$(val "$new" cpu_us_ingress-0)" "$(calc "$(val "$new" cpu_us_worker-0) + $(val "$new" cpu_us_worker-1)" 1)" \
                "$(val "$new" cpu_us_redis)" "$(val "$new" cpu_us_devbroker)" \
                "$(stages_num "$(val "$new" idle_pct_total)")" "$(stages_num "$(val "$new" idle_pct_devbroker)")" \
                "$(stages_num "$(val "$base" idle_pct_total)")"
            printf 'added_new_w%s=%s\nadded_base_w%s=%s\n' "$w" "$added_new" "$w" "$added_base" >>"$RES/stages-summary.txt"
        done
        printf '\n'
        stages_analysis "$waits" "$def_wait"
    } >"$RES/sec-stages.md"
    {
        for w in $waits; do
            local a
            a=$(val "$RES/stages-summary.txt" "added_new_w$w")
            printf 'stages: added latency at half load (%s req/s), fetch wait %s ms: %s ms (base %s ms): %s\n' \
                "$STAGES_RATE" "$w" "$a" "$(stages_num "$(val "$RES/stages-summary.txt" "added_base_w$w")")" \
                "$(if ge 2 "$a"; then echo 'met (< 2 ms)'; else echo 'NOT met (< 2 ms)'; fi)"
        done
    } >"$RES/sec-stages.txt"
}

# stages_paper FILE: the added latency a real Kafka would give, on paper, from the stages of
# the run in FILE (ms): every stage but queue and execute at its median, queue replaced by one
# broker round trip (estimated as produce's median minus linger.ms: the producer's own round
# trip to the same broker), minus the loopback floor.
stages_paper() {
    local f=$1 s sum=0 rt
    for s in http_auth validate produce result_write wake respond; do
        sum=$(calc "$sum + $(val "$f" "${s}_p50")" 3)
    done
    rt=$(calc "$(val "$f" produce_p50) - $STAGES_LINGER" 3)
    ge "$rt" 0 || rt=0
    printf '%s %s %s' "$sum" "$rt" "$(calc "$sum + $rt - $(val "$RES/stages-bare.txt" latency_p50_ms)" 3)"
}

# stages_analysis WAITS DEFAULT: what the breakdown says, from the figures of this run.
stages_analysis() {
    local def=$RES/stages-new-w$2.txt min w s f kafka own p
    min=$RES/stages-new-w${1##* }.txt
    printf '### What the breakdown says\n\n'
    for f in $(for w in $1; do printf '%s ' "$RES/stages-new-w$w.txt"; done) "$RES/stages-new-low.txt"; do
        [ -f "$f" ] || continue
        kafka=$(calc "$(val "$f" produce_p50) + $(val "$f" queue_p50)" 3)
        own=0
        for s in http_auth validate result_write wake respond; do own=$(calc "$own + $(val "$f" "${s}_p50")" 3); done
        printf -- '- %s: the Kafka leg (`produce` + `queue`) is %s ms of the median call, the\n' "$(val "$f" run_label)" "$kafka"
        printf '  stages mcpq runs on either side of it (`http_auth`, `validate`, `result_write`, `wake`,\n'
        printf '  `respond`) %s ms at their medians.\n' "$own"
    done
    printf -- '- What the devbroker adds is in `queue`: its mock cluster answers a Fetch that finds no\n'
    printf '  data only when `fetch.wait.max.ms` ends (bench/analysis.md), so a job produced while a\n'
    printf '  fetch is held waits out the rest of it; with the wait at %s ms instead of %s, `queue`\n' "${1##* }" "$2"
    printf '  goes from %s to %s ms (p50) and the idle stack burns %s%% of a core instead of %s%%.\n' \
        "$(val "$def" queue_p50)" "$(val "$min" queue_p50)" "$(stages_num "$(val "$min" idle_pct_total)")" \
        "$(stages_num "$(val "$def" idle_pct_total)")"
    printf -- '- `produce` holds the producer'"'"'s `linger.ms` (%s ms) and one produce round trip to\n' "$STAGES_LINGER"
    printf '  the broker; docs/kafka.md, "Latency", says why the default stays 1 ms.\n'
    printf -- '- **A real Kafka, on paper.** It answers a held fetch as soon as `fetch.min.bytes` (1)\n'
    printf '  is there, so `queue` shrinks to about one broker round trip, whatever the fetch wait.\n'
    printf '  This run measures that round trip too: `produce` minus `linger.ms` is the producer'"'"'s own\n'
    printf '  round trip to the same broker. Added latency = every stage but `queue` and `execute` at\n'
    printf '  its median + that round trip - the loopback floor (measured at the half-load rate;\n'
    printf '  at 100 req/s it is no higher):\n\n'
    printf '  | run | other stages (p50 sum) | + round trip | = added on a real Kafka |\n'
    printf '  |---|---|---|---|\n'
    for f in $(for w in $1; do printf '%s ' "$RES/stages-new-w$w.txt"; done) "$RES/stages-new-low.txt"; do
        [ -f "$f" ] || continue
        read -r s w p <<<"$(stages_paper "$f")"
        printf '  | %s | %s ms | %s ms | **%s ms** |\n' "$(val "$f" run_label)" "$s" "$w" "$p"
    done
    printf '\n  A real cluster replicates before it acknowledges (acks=all): add one follower fetch\n'
    printf '  round trip to `produce` per call there, which this single-broker run cannot show.\n'
    if ge "$STAGES_LINGER" 0.2; then
        printf '  The linger is in every row: with `MCPQ_KAFKA_PROP_LINGER_MS=0.1` (docs/kafka.md,\n'
        printf '  "Latency") each figure would be %s ms lower.\n' "$(calc "$STAGES_LINGER - 0.1" 1)"
    fi
    printf '\n'
}
