#!/usr/bin/env bash
# End-to-end test of a worker whose open-file limit is below MCPQ_MAX_INFLIGHT_JOBS
# (docs/configuration.md, MCPQ_MAX_INFLIGHT_JOBS), run by ctest with MCPQ_BIN_DIR set:
#   a stack from scripts/mcpq-local under `ulimit -n 512` (one worker, the default 20000 jobs
#   in flight) and bench-jobs --serve as a tool's HTTP service that answers after 200 ms;
#   bench-jobs publishes 600 signed http jobs at once straight to the jobs topic. Every one
#   must complete without an error (before, the worker took them all at once and the
#   transfers past its descriptors failed with "could not be reached"), and the worker must
#   say at start that it lowered max_inflight_jobs to (512 - 256) / 4 = 64.
# KEEP=1 keeps the state dir.
set -euo pipefail
STEP=start
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/readme_lib.sh"

JOBS=600
SIGNING_KEY=test-worker-fds-signing-key-0123456789
[ -x "$BIN_DIR/bench-jobs" ] || fail "$BIN_DIR/bench-jobs is missing (build the bench tools)"

STEP="start the tool's HTTP service"
SPORT=$(free_port)
setsid "$BIN_DIR/bench-jobs" --serve "$SPORT" --delay-ms 200 >"$TMP/serve.out" 2>&1 </dev/null &
PIDS+=($!)
wait_for 30 grep -q '^READY ' "$TMP/serve.out" || fail "bench-jobs --serve did not start"

STEP="start the stack with 512 open files"
ulimit -n 512 # soft and hard: the worker cannot raise it
start_stack --workers 1 --env "MCPQ_JOB_SIGNING_KEY=$SIGNING_KEY"
REDIS=$(sed -n 's/^mcpq-local: redis ready on //p' "$TMP/launcher.err")
BROKERS=$(sed -n 's/^mcpq-local: devbroker ready: \([^ ]*\).*/\1/p' "$TMP/launcher.err")
[ -n "$REDIS" ] && [ -n "$BROKERS" ] || fail "no redis or broker address in the launcher's output"

STEP="$JOBS http jobs at once"
MCPQ_JOB_SIGNING_KEY=$SIGNING_KEY "$BIN_DIR/bench-jobs" --brokers "$BROKERS" --redis "$REDIS" \
    -n "$JOBS" --tool http --url "http://127.0.0.1:$SPORT/tool" --timeout-s 120 \
    >"$TMP/jobs.out" 2>&1 || true
grep -qx "completed=$JOBS" "$TMP/jobs.out" || fail "not every job completed: $(tr '\n' ' ' <"$TMP/jobs.out")"
grep -qx "errors=0" "$TMP/jobs.out" || fail "jobs failed: $(tr '\n' ' ' <"$TMP/jobs.out")"
echo "ok - $JOBS http jobs completed under a 512 open-file limit"

STEP="the worker's warning"
grep -q '"msg":"jobs that hold descriptors (every executor but builtin) limited to what the open-file limit allows.*"max_inflight_jobs":"20000","effective":"64","open_file_limit":"512"' \
    "$TMP/state/worker-0.log" || fail "no warning that jobs holding descriptors were limited to 64"
grep -q '"msg":"worker started".*"max_jobs_holding_fds":"64"' "$TMP/state/worker-0.log" ||
    fail "the worker's start line does not give the effective limit"
echo "ok - the worker limited the jobs that hold descriptors to 64 and said so"
