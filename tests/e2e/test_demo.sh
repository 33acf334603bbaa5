#!/usr/bin/env bash
# End-to-end test of the demo (`make up` = scripts/up.sh) and the two-minute tour of
# README.md, run by ctest with MCPQ_BIN_DIR set to the build dir and the repository root as
# cwd. scripts/up.sh runs on free ports (DEMO_HTTP_PORT and DEMO_WEBHOOK_PORT too, so its
# config is a copy of deploy/local/mcpq.json with those URLs changed), then:
#   - after READY it prints the MCP URL, the demo key and the Claude Code, VS Code and Claude
#     Desktop snippets of docs/clients.md for its port;
#   - the tour's commands, taken from README.md as printed (only the port 8080 changed):
#     the word_count call answers {"lines":1,"words":3,"chars":13}; the report task's
#     task.completed delivery is printed by the demo's receiver
#     (deploy/local/webhook-receiver.mjs, standardwebhooks) as verified=yes; the deliveries API
#     shows it delivered; /metrics counts the calls and the delivered attempt;
#   - a delivery with a wrong signature is printed verified=no and answered 401;
#   - the demo tools that ask the user (docs/tools.md, "Asking the user"), called as a
#     2026-07-28 client that declares elicitation: hello (the HTTP service answers
#     input_required) and confirm (builtin) are answered input_required, and called again with
#     the answer and the requestState they greet and say "You said yes.";
#   - SIGTERM stops the stack and its helpers with exit status 0.
# KEEP=1 keeps the state dir.
set -euo pipefail
# shellcheck source=tests/e2e/readme_lib.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/readme_lib.sh"

command -v node >/dev/null || fail "node is required (scripts/deps.sh installs it)"
DOC=README.md

STEP="make up"
PORT=$(free_port)
DEMO_HTTP_PORT=$(free_port)
DEMO_WEBHOOK_PORT=$(free_port)
export DEMO_HTTP_PORT DEMO_WEBHOOK_PORT
mkdir -p "$TMP/state"
setsid "$REPO/scripts/up.sh" "$PORT" --workers 1 --bin-dir "$BIN_DIR" --state-dir "$TMP/state" \
    >"$TMP/up.out" 2>"$TMP/up.err" </dev/null &
UP=$!
PIDS+=("$UP")
wait_for 120 grep -q '^READY ' "$TMP/up.out" || fail "scripts/up.sh did not print READY"
wait_for 20 grep -q '^  Claude Desktop' "$TMP/up.out" || fail "no snippets after READY"
URL=http://127.0.0.1:$PORT/mcp
grep -qF "MCP URL $URL, API key demo-key" "$TMP/up.out" || fail "no URL and key line: $(cat "$TMP/up.out")"
grep -qF "claude mcp add --transport http mcpq $URL --header \"Authorization: Bearer demo-key\"" "$TMP/up.out" ||
    fail "no Claude Code snippet for $URL: $(cat "$TMP/up.out")"
grep -qF "\"type\": \"http\", \"url\": \"$URL\"" "$TMP/up.out" || fail "no VS Code snippet for $URL"
grep -qF "\"mcp-remote\", \"$URL\"" "$TMP/up.out" || fail "no mcp-remote snippet for $URL"
CONSOLE=http://127.0.0.1:$PORT/console/
grep -qF "Operator console: $CONSOLE (admin token demo-admin-token" "$TMP/up.out" ||
    fail "no operator console line for $CONSOLE: $(cat "$TMP/up.out")"
curl -sfI "$CONSOLE" | grep -qi "^content-security-policy: default-src 'none'" ||
    fail "$CONSOLE does not answer with the console's CSP"
wait_for 30 grep -q "^webhook receiver: http://127.0.0.1:$DEMO_WEBHOOK_PORT/webhook" "$TMP/up.out" ||
    fail "the webhook receiver did not start"
echo "ok - scripts/up.sh prints READY, the URL, the key and the client snippets for port $PORT"

STEP="durable redis"
# The demo's Redis is durable as shipped: an append-only file, fsynced before every answer
# (docs/redis.md, "Durability on a host crash").
RPORT=$(sed -n 's/.*redis ready on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$TMP/up.err" | tail -n 1)
[ -n "$RPORT" ] || fail "no 'redis ready on' line in $TMP/up.err"
for want in "appendonly yes" "appendfsync always"; do
    got=$(redis-cli -p "$RPORT" --raw CONFIG GET "${want% *}" | tail -n 1)
    [ "$got" = "${want#* }" ] || fail "make up's Redis has ${want% *} '$got', not '${want#* }'"
done
echo "ok - make up's Redis keeps an append-only file with appendfsync always"

# ------------------------------------------------------------------ the tour
tour() { # heading → the first sh block after it, for this stack
    doc_block "$DOC" sh "$1" | sed "s#127\.0\.0\.1:8080#127.0.0.1:$PORT#g"
}
STEP="tour 1: call a tool"
tour '### 1. Call a tool' >"$TMP/tour1.sh"
out=$(bash -e "$TMP/tour1.sh") || fail "step 1 failed"
case $out in *'"structuredContent":{"lines":1,"words":3,"chars":13}'*) ;; *) fail "step 1 printed: $out" ;; esac
echo "ok - tour step 1: word_count answers {\"lines\":1,\"words\":3,\"chars\":13}"

STEP="tour 2: a task ends in a verified webhook"
tour '### 2. Run a long task' >"$TMP/tour2.sh"
TASK=$(bash -e "$TMP/tour2.sh" | tail -n 1) || fail "step 2 failed"
[[ $TASK =~ ^[0-9a-f-]{36}$ ]] || fail "step 2 printed no TaskId: '$TASK'"
delivered() { grep -Eq "^webhook msg_[^ ]+ task\.completed task=$TASK status=complete verified=yes\$" "$TMP/up.out"; }
wait_for 30 delivered || fail "the receiver printed no verified delivery of $TASK: $(grep '^webhook' "$TMP/up.out")"
doc_block "$DOC" sh 'ask for the task' | sed "s#127\.0\.0\.1:8080#127.0.0.1:$PORT#g" >"$TMP/tour2b.sh"
out=$(TASK=$TASK bash -e "$TMP/tour2b.sh") || fail "the deliveries command failed"
case $out in *"\"webhook\":\"demo-hook\",\"event\":\"task.completed\",\"task\":\"$TASK\",\"status\":\"delivered\""*) ;;
*) fail "the deliveries API says: $out" ;; esac
echo "ok - tour step 2: task $TASK ends in a task.completed delivery the receiver verified; the API shows it delivered"

STEP="tour 3: metrics"
tour '### 3. Watch it in the metrics' >"$TMP/tour3.sh"
out=$(bash -e "$TMP/tour3.sh") || fail "step 3 failed"
grep -qx 'mcpq_tool_calls_total{tenant="demo",outcome="ok"} 2' <<<"$out" || fail "step 3 printed: $out"
grep -qx 'mcpq_webhook_attempts_total{outcome="delivered"} 1' <<<"$out" || fail "step 3 printed: $out"
echo "ok - tour step 3: /metrics counts 2 ok calls and 1 delivered webhook attempt"

# ------------------------------------------------------------------ a forged delivery
STEP="a forged delivery"
code=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 10 -H 'Content-Type: application/json' \
    -H 'webhook-id: msg_forged' -H "webhook-timestamp: $(date +%s)" \
    -H 'webhook-signature: v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=' \
    --data-binary '{"type":"task.completed","data":{"TaskId":"x","TaskStatus":"complete"}}' \
    "http://127.0.0.1:$DEMO_WEBHOOK_PORT/webhook")
[ "$code" = 401 ] || fail "a forged delivery got $code"
wait_for 5 grep -q '^webhook msg_forged task.completed task=x status=complete verified=no' "$TMP/up.out" ||
    fail "the receiver did not print the forged delivery as verified=no"
echo "ok - the receiver answers a wrong signature 401 and prints it verified=no"

# ------------------------------------------------------------------ tools that ask
STEP="demo tools that ask"
M=(-sS --max-time 30 -H 'Authorization: Bearer demo-key' -H 'Content-Type: application/json'
    -H 'Accept: application/json' -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call')
META='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
META+='"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}'
ask_round() { # tool key answer-content expected-text
    local r state
    r=$(curl "${M[@]}" -H "Mcp-Name: $1" "$URL" \
        -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"'"$1"'","arguments":{},'"$META"'}}')
    grep -q '"resultType":"input_required","inputRequests":{"'"$2"'":{"method":"elicitation/create"' \
        <<<"$r" || fail "$1 did not ask: $r"
    state=$(sed -n 's/.*"requestState":"\([^"]*\)".*/\1/p' <<<"$r")
    [ -n "$state" ] || fail "$1: no requestState in $r"
    r=$(curl "${M[@]}" -H "Mcp-Name: $1" "$URL" -d '{"jsonrpc":"2.0","id":2,"method":"tools/call",
        "params":{"name":"'"$1"'","arguments":{},'"$META"',"requestState":"'"$state"'",
        "inputResponses":{"'"$2"'":{"action":"accept","content":'"$3"'}}}}')
    grep -qF '"text":"'"$4"'"' <<<"$r" || fail "$1 answered: $r"
}
ask_round hello name '{"name":"Ada"}' 'Hello, Ada!'
ask_round confirm q '{"confirmed":true}' 'You said yes.'
echo "ok - hello (HTTP input_required) and confirm (builtin) ask, and answer with the user's answer"

# ------------------------------------------------------------------ stop
STEP="stop"
kill -TERM -- "-$UP"
rc=0
for _ in $(seq 1 200); do
    kill -0 "$UP" 2>/dev/null || break
    sleep 0.1
done
wait "$UP" || rc=$?
[ "$rc" = 0 ] || fail "scripts/up.sh exited $rc after SIGTERM"
for p in $DEMO_HTTP_PORT $DEMO_WEBHOOK_PORT $PORT; do
    ! listening "$p" || fail "port $p still listens after the stop"
done
echo "ok - SIGTERM stops the stack, the tool service and the receiver; exit status 0"
