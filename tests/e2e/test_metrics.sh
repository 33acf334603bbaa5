#!/usr/bin/env bash
# End-to-end test of the metrics (docs/operations.md "Metrics"), run by ctest with MCPQ_BIN_DIR set:
#   a stack from scripts/mcpq-local with --metrics-port (two workers with their own /metrics);
#   tools/call ok, tool error and unknown tool; then
#   - every /metrics (the ingress, both workers, and an ingress with MCPQ_OPS_LISTEN on its
#     operations port) passes `promtool check metrics` with no lint output at all; that
#     second ingress runs with MCPQ_METRICS_TENANTS_MAX=0 and counts its call as "_other";
#   - the ingress's mcpq_http_requests_total{method="tools/call",status="200"} grew by the
#     number of calls, mcpq_inflight_calls is back to 0, mcpq_tool_calls_total counted them
#     under tenant="demo", and the histograms have the sub-millisecond buckets (le="0.0001"):
#     tools/call end to end for tenant demo, result delivery of each job that reached a worker;
#   - the workers observed each job's queue wait, execution and result write;
#   - process_* values are above 0 and mcpq_build_info names the libraries, on every binary;
#   - the workers' mcpq_worker_jobs_total{executor="builtin"} grew by the jobs that reached
#     them (ok and tool_error), mcpq_worker_running_jobs is 0, and
#     mcpq_worker_kafka_consumer_lag has one series per partition assigned to a worker;
#   - worker /healthz and /readyz answer 200, and a worker draining running jobs after
#     SIGTERM answers /readyz 503 with "stopping":true;
#   - deploy/grafana/mcpq-dashboard.json is valid JSON whose every panel query parses as PromQL
#     (`promtool check rules` on them as recording rules), and every metric named by the
#     dashboard or by deploy/kubernetes/base/prometheusrule.yaml is in the scrapes.
# promtool comes with Debian's prometheus package (scripts/deps.sh); without it the test fails
# under CI=true and is skipped (exit 77) otherwise. KEEP=1 keeps the state dir.
set -euo pipefail
STEP=start
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/readme_lib.sh"

need_promtool

KEY=demo-key # deploy/local/mcpq.json
STEP="start the stack"
for _ in $(seq 1 50); do # two free ports in a row for the workers' metrics servers
    MPORT=$(free_port)
    listening $((MPORT + 1)) || break
done
# The demo config and a tenant that takes access tokens (its issuer is never reached), so the
# mcpq_oauth_* metrics the dashboard and the alerts name are exported.
python3 - "$REPO/deploy/local/mcpq.json" >"$TMP/config.json" <<'PY'
import json, sys
cfg = json.load(open(sys.argv[1]))
cfg["tenants"].append({"id": "sso", "oauth": {"issuers": ["http://127.0.0.1:9/realms/sso"]}})
json.dump(cfg, sys.stdout)
PY
start_stack --workers 2 --metrics-port "$MPORT" --config "$TMP/config.json"
URL=http://127.0.0.1:$PORT
W0=http://127.0.0.1:$MPORT
W1=http://127.0.0.1:$((MPORT + 1))
grep -q "worker-0 metrics: $W0/metrics" "$TMP/launcher.err" || fail "the launcher does not say where worker-0's metrics are"

scrape() { # url file
    curl -sS --max-time 5 "$1/metrics" >"$2" || fail "GET $1/metrics failed"
}
# value FILE SERIES: the sample of exactly that series (name and labels as rendered), else 0
value() {
    awk -v s="$2" 'index($0, s " ") == 1 { v = $2 } END { print (v == "" ? 0 : v) }' "$1"
}
# sum FILE PREFIX: the sum of every sample whose line starts with PREFIX
sum() {
    awk -v p="$2" 'index($0, p) == 1 { t += $NF } END { printf "%d\n", t }' "$1"
}
rpc_call() { # name arguments-json
    curl -sS --max-time 30 -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
        -H 'Accept: application/json, text/event-stream' \
        -d "{\"jsonrpc\":\"2.0\",\"id\":$RANDOM,\"method\":\"tools/call\",\"params\":{\"name\":\"$1\",\"arguments\":$2}}" \
        "$URL/mcp"
}
CALLS='mcpq_http_requests_total{method="tools/call",status="200"}'
JOBS='mcpq_worker_jobs_total{executor="builtin",'

STEP="scrape before"
scrape "$URL" "$TMP/ingress-0.prom"
scrape "$W0" "$TMP/w0-0.prom"
scrape "$W1" "$TMP/w1-0.prom"
calls0=$(value "$TMP/ingress-0.prom" "$CALLS")
ok0=$(value "$TMP/ingress-0.prom" 'mcpq_tool_calls_total{tenant="demo",outcome="ok"}')
terr0=$(value "$TMP/ingress-0.prom" 'mcpq_tool_calls_total{tenant="demo",outcome="tool_error"}')
TCD='mcpq_tool_call_duration_seconds_count{tenant="demo"}'
tcd0=$(value "$TMP/ingress-0.prom" "$TCD")
rd0=$(value "$TMP/ingress-0.prom" mcpq_result_delivery_seconds_count)
jobs0=$(($(sum "$TMP/w0-0.prom" "$JOBS") + $(sum "$TMP/w1-0.prom" "$JOBS")))
# workers FILE-PREFIX SERIES: the sum of SERIES over both workers' scrapes
workers() { echo $(($(value "$TMP/w0$1.prom" "$2") + $(value "$TMP/w1$1.prom" "$2"))); }
qw0=$(workers -0 mcpq_worker_queue_wait_seconds_count)
rw0=$(workers -0 mcpq_worker_result_write_seconds_count)
ex0=$(workers -0 'mcpq_worker_job_duration_seconds_count{executor="builtin"}')

STEP="calls"
for i in 1 2 3; do
    r=$(rpc_call echo "{\"text\":\"metrics-$i\"}") || fail "curl failed"
    case $r in *'"isError":false'*) ;; *) fail "echo: $r" ;; esac
done
r=$(rpc_call fail '{"message":"on purpose"}') || fail "curl failed"
case $r in *'"isError":true'*) ;; *) fail "fail: $r" ;; esac
r=$(rpc_call no-such-tool '{}') || fail "curl failed"
case $r in *'"error"'*) ;; *) fail "unknown tool: $r" ;; esac
echo "ok - 5 tools/call: 3 ok, 1 tool error, 1 unknown tool"

STEP="ingress metrics"
scrape "$URL" "$TMP/ingress.prom"
calls=$(value "$TMP/ingress.prom" "$CALLS")
[ "$((calls - calls0))" = 5 ] || fail "$CALLS went from $calls0 to $calls, not +5"
[ "$(value "$TMP/ingress.prom" mcpq_inflight_calls)" = 0 ] || fail "mcpq_inflight_calls is not 0"
[ "$(($(value "$TMP/ingress.prom" 'mcpq_tool_calls_total{tenant="demo",outcome="ok"}') - ok0))" = 3 ] ||
    fail "mcpq_tool_calls_total{tenant=\"demo\",outcome=\"ok\"} did not grow by 3"
[ "$(($(value "$TMP/ingress.prom" 'mcpq_tool_calls_total{tenant="demo",outcome="tool_error"}') - terr0))" = 1 ] ||
    fail "mcpq_tool_calls_total{tenant=\"demo\",outcome=\"tool_error\"} did not grow by 1"
for m in mcpq_request_duration_seconds_bucket mcpq_notification_streams mcpq_webhook_attempts_total \
    mcpq_build_info process_start_time_seconds 'mcpq_dependency_up{dependency="kafka"} 1' \
    'mcpq_request_duration_seconds_bucket{method="tools/call",le="0.0001"}' \
    'mcpq_tool_call_duration_seconds_bucket{tenant="demo",le="0.0001"}' \
    'mcpq_result_delivery_seconds_bucket{le="0.0001"}'; do
    grep -qF "$m" "$TMP/ingress.prom" || fail "no $m in the ingress's /metrics"
done
tcd=$(value "$TMP/ingress.prom" "$TCD")
# (the unknown tool is answered before it is a call: -32602, counted in no outcome)
[ "$((tcd - tcd0))" = 4 ] || fail "$TCD went from $tcd0 to $tcd, not +4"
rd=$(value "$TMP/ingress.prom" mcpq_result_delivery_seconds_count)
[ "$((rd - rd0))" = 4 ] || fail "mcpq_result_delivery_seconds_count went from $rd0 to $rd, not +4 (the jobs that reached a worker)"
echo "ok - ingress: tools/call 200 +5, in flight 0, outcomes and latency counted for tenant demo, 4 result deliveries observed"

STEP="worker metrics"
# A worker publishes its counters once per loop round and its lag every 2 s (statistics).
worker_settled() {
    scrape "$W0" "$TMP/w0.prom"
    scrape "$W1" "$TMP/w1.prom"
    jobs=$(($(sum "$TMP/w0.prom" "$JOBS") + $(sum "$TMP/w1.prom" "$JOBS")))
    assigned=$(($(sum "$TMP/w0.prom" mcpq_worker_kafka_assigned_partitions) +
        $(sum "$TMP/w1.prom" mcpq_worker_kafka_assigned_partitions)))
    lags=$(cat "$TMP/w0.prom" "$TMP/w1.prom" | grep -c '^mcpq_worker_kafka_consumer_lag{' || true)
    [ "$((jobs - jobs0))" = 4 ] && [ "$assigned" -gt 0 ] && [ "$lags" = "$assigned" ]
}
wait_for 15 worker_settled ||
    fail "workers: jobs +$((jobs - jobs0)) (want 4), $assigned partitions assigned, $lags lag series"
for f in "$TMP/w0.prom" "$TMP/w1.prom"; do
    [ "$(value "$f" mcpq_worker_running_jobs)" = 0 ] || fail "mcpq_worker_running_jobs is not 0 in $f"
    grep -q '^mcpq_worker_dependency_up{dependency="redis"} 1' "$f" || fail "redis not up in $f"
done
okj=$(($(value "$TMP/w0.prom" 'mcpq_worker_jobs_total{executor="builtin",outcome="tool_error"}') +
    $(value "$TMP/w1.prom" 'mcpq_worker_jobs_total{executor="builtin",outcome="tool_error"}')))
[ "$okj" -ge 1 ] || fail "no builtin tool_error job counted"
qw=$(workers "" mcpq_worker_queue_wait_seconds_count)
rw=$(workers "" mcpq_worker_result_write_seconds_count)
ex=$(workers "" 'mcpq_worker_job_duration_seconds_count{executor="builtin"}')
[ "$((qw - qw0))" = 4 ] || fail "queue wait observed $((qw - qw0)) times, not 4"
[ "$((ex - ex0))" = 4 ] || fail "builtin execution observed $((ex - ex0)) times, not 4"
[ "$((rw - rw0))" -ge 4 ] || fail "result write observed $((rw - rw0)) times, want 4 or more"
for f in "$TMP/w0.prom" "$TMP/w1.prom"; do
    grep -qF 'mcpq_worker_queue_wait_seconds_bucket{le="0.0001"}' "$f" ||
        ! grep -q '^mcpq_worker_queue_wait_seconds_count' "$f" || fail "no sub-ms queue wait bucket in $f"
done
echo "ok - workers: builtin jobs +4, queue wait, execution and result write observed, running 0, $lags lag series for $assigned assigned partitions"

STEP="process metrics"
# positive FILE SERIES: the sample is a number above 0
positive() { awk -v s="$2" '$1 == s { v = $2 } END { exit !(v + 0 > 0) }' "$1"; }
PROC_BAD=
# process_ok URL NAME: a fresh scrape has every process_* above 0 (CPU time counts in clock
# ticks, 10 ms: a process that just started may still show 0, so this is polled)
process_ok() {
    scrape "$1" "$TMP/$2-proc.prom"
    for m in process_cpu_seconds_total process_resident_memory_bytes process_virtual_memory_bytes \
        process_open_fds process_max_fds process_start_time_seconds; do
        positive "$TMP/$2-proc.prom" "$m" || { PROC_BAD="$m in $2"; return 1; }
    done
}
for t in "$URL ingress" "$W0 w0" "$W1 w1"; do
    set -- $t
    wait_for 20 process_ok "$1" "$2" || fail "$PROC_BAD is not above 0"
    grep -qE '^mcpq_build_info\{version="[^"]+",binary="(ingress|worker)",librdkafka="[^"]+",libmicrohttpd="[^"]+",hiredis="[^"]+",openssl="[^"]+"\} 1$' "$TMP/$2-proc.prom" ||
        fail "mcpq_build_info of $2 does not name every library"
done
echo "ok - process_* above 0 and mcpq_build_info with library versions on the ingress and both workers"

STEP="an ingress with MCPQ_OPS_LISTEN"
# A second ingress of the same stack (the environment the launcher gave ingress-0) whose
# operations plane has a port of its own: /metrics is there, and 404 on the clients' port.
# It keeps no tenant label value (MCPQ_METRICS_TENANTS_MAX=0): its calls count as _other.
OPS=$(free_port)
while LIS=$(free_port) && [ "$LIS" = "$OPS" ]; do :; done
ING0=$(cat "$TMP/state/ingress-0.pid")
(
    while IFS= read -r -d '' kv; do export "${kv?}"; done <"/proc/$ING0/environ"
    export MCPQ_LISTEN=127.0.0.1:$LIS MCPQ_OPS_LISTEN=127.0.0.1:$OPS MCPQ_INSTANCE_ID=ingress-ops \
        MCPQ_METRICS_TENANTS_MAX=0
    unset MCPQ_CONFIG MCPQ_READY_FILE
    exec setsid "$BIN_DIR/mcpq-ingress" >"$TMP/ingress-ops.out" 2>"$TMP/ingress-ops.err" </dev/null
) &
PIDS+=($!)
ops_ready() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$OPS/readyz")" = 200 ]; }
wait_for 60 ops_ready || fail "the ingress with MCPQ_OPS_LISTEN did not get ready"
r=$(URL=http://127.0.0.1:$LIS rpc_call echo '{"text":"ops"}') || fail "curl failed"
case $r in *'"isError":false'*) ;; *) fail "echo through the second ingress: $r" ;; esac
scrape "http://127.0.0.1:$OPS" "$TMP/ingress-ops.prom"
[ "$(value "$TMP/ingress-ops.prom" 'mcpq_tool_calls_total{tenant="_other",outcome="ok"}')" = 1 ] ||
    fail "with MCPQ_METRICS_TENANTS_MAX=0 the call is not counted under tenant=\"_other\""
! grep -q 'tenant="demo"' "$TMP/ingress-ops.prom" || fail "tenant=\"demo\" is a label despite MCPQ_METRICS_TENANTS_MAX=0"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$LIS/metrics")
[ "$code" = 404 ] || fail "/metrics on the clients' port of the ingress with MCPQ_OPS_LISTEN answered $code"
grep -q '^process_resident_memory_bytes ' "$TMP/ingress-ops.prom" || fail "no process_* on the ops port's /metrics"
echo "ok - an ingress with MCPQ_OPS_LISTEN serves /metrics on its operations port only; with MCPQ_METRICS_TENANTS_MAX=0 its call counts under tenant=\"_other\""

STEP="worker probes"
for u in "$W0" "$W1"; do
    for p in healthz readyz; do
        code=$(curl -s -o /dev/null -w '%{http_code}' "$u/$p")
        [ "$code" = 200 ] || fail "$u/$p answered $code"
    done
done
echo "ok - worker /healthz and /readyz answer 200"

STEP="promtool check metrics"
for f in "$TMP/ingress.prom" "$TMP/w0.prom" "$TMP/w1.prom" "$TMP/ingress-ops.prom"; do
    out=$(promtool check metrics <"$f" 2>&1) || fail "promtool check metrics $(basename "$f"): $out"
    [ -z "$out" ] || fail "promtool check metrics $(basename "$f") has lint problems: $out"
done
echo "ok - promtool check metrics: ingress, both workers and the ops port clean"

STEP="dashboard and alert rules"
out=$(python3 "$REPO/scripts/check-metrics-refs.py" --metrics "$TMP/ingress.prom" "$TMP/w0.prom" \
    "$TMP/w1.prom" --dashboard "$REPO/deploy/grafana/mcpq-dashboard.json" \
    --rules-out "$TMP/dashboard-rules.json" \
    --refs "$REPO/deploy/kubernetes/base/prometheusrule.yaml" 2>&1) || fail "$out"
out=$(promtool check rules "$TMP/dashboard-rules.json" 2>&1) || fail "dashboard queries: $out"
echo "ok - dashboard: valid JSON, $(grep -c '"record"' "$TMP/dashboard-rules.json") queries parse as PromQL, every metric it and the alert rules name exists"

STEP="a stopping worker is not ready"
# Sleep calls keep a worker busy; SIGTERM makes it finish them (MCPQ_SHUTDOWN_GRACE_MS) while
# /readyz answers 503 and mcpq_worker_stopping is 1.
busy() { scrape "$W0" "$TMP/w0-busy.prom" && [ "$(value "$TMP/w0-busy.prom" mcpq_worker_running_jobs)" -gt 0 ]; }
stopping() {
    body=$(curl -s --max-time 1 -w ' %{http_code}' "$W0/readyz") || return 1
    [[ $body == *'"stopping":true'*' 503' ]]
}
# Job keys spread over the partitions of both workers: a round of 8 calls misses worker-0 with
# odds of about 1 in 256, so up to 5 rounds.
checked=0
for round in 1 2 3 4 5; do
    curls=()
    for i in $(seq 1 8); do
        (rpc_call sleep '{"ms":3000}' >"$TMP/sleep-$round-$i.out" 2>&1 || true) &
        curls+=($!)
    done
    if wait_for 5 busy; then
        kill -TERM "$(cat "$TMP/state/worker-0.pid")"
        wait_for 3 stopping || fail "worker-0 /readyz after SIGTERM: $body"
        scrape "$W0" "$TMP/w0-stop.prom"
        [ "$(value "$TMP/w0-stop.prom" mcpq_worker_stopping)" = 1 ] || fail "mcpq_worker_stopping is not 1"
        checked=1
    fi
    wait "${curls[@]}"
    [ "$checked" = 1 ] && break
done
[ "$checked" = 1 ] || fail "no sleep job landed on worker-0 in 5 rounds of 8 calls"
echo "ok - a worker draining after SIGTERM answers /readyz 503 {\"stopping\":true}"
