#!/usr/bin/env bash
# End-to-end test of the README's webhook receivers, run by ctest with MCPQ_BIN_DIR set to the
# build dir and the repository root as cwd. The Python and the Node.js receiver are taken from
# README.md ("A receiver") exactly as printed, only their port changed, and run as a user
# would; a local stack (scripts/mcpq-local) has one webhook to each. Then:
#   - a task-mode tool's task.completed delivery reaches both, and both verify it (they print
#     "<webhook-id> task.completed <TaskId> complete" and answer 204); the Node.js one's
#     webhook is in a rotation (a new secret, the receiver's as previous_secret), so its
#     deliveries carry two signatures and the receiver still holding the old secret accepts;
#   - a wrong signature and a correctly signed but stale timestamp get 401 from both; a header
#     with a wrong and a right signature gets 204.
# KEEP=1 keeps the state dir.
set -euo pipefail

KEY=readme-hooks-key-7c2e
SECRET=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw # the Standard Webhooks test vector's secret
NEW_SECRET=whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYX # the js webhook's new secret (a rotation)
# shellcheck source=tests/e2e/readme_lib.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/readme_lib.sh"

# ------------------------------------------------------------------ the receivers
STEP="README receivers"
PY_PORT=$(free_port)
JS_PORT=$(free_port)
[ "$PY_PORT" != "$JS_PORT" ] || JS_PORT=$(free_port)
readme_block python '**A receiver**' >"$TMP/receiver.py"
readme_block js 'or in Node.js' >"$TMP/receiver.mjs"
grep -q 'serve_forever' "$TMP/receiver.py" || fail "no Python receiver found in README.md"
grep -q 'createServer' "$TMP/receiver.mjs" || fail "no Node.js receiver found in README.md"
sed -i "s/9999/$PY_PORT/" "$TMP/receiver.py"
sed -i "s/9999/$JS_PORT/" "$TMP/receiver.mjs"
WEBHOOK_SECRET=$SECRET setsid python3 -u "$TMP/receiver.py" >"$TMP/py.out" 2>"$TMP/py.err" </dev/null &
PIDS+=($!)
WEBHOOK_SECRET=$SECRET setsid node "$TMP/receiver.mjs" >"$TMP/js.out" 2>"$TMP/js.err" </dev/null &
PIDS+=($!)
wait_for 20 listening "$PY_PORT" || fail "the Python receiver does not listen on $PY_PORT"
wait_for 20 listening "$JS_PORT" || fail "the Node.js receiver does not listen on $JS_PORT"

# ------------------------------------------------------------------ the stack
STEP="stack"
cat >"$TMP/mcpq.json" <<EOF
{
  "tenants": [{"id": "hooks", "api_keys": [{"id": "k1", "key": "$KEY"}], "default_server": "default",
               "webhooks": [
                 {"id": "py", "url": "http://127.0.0.1:$PY_PORT/hook", "secret_env": "HOOK_SECRET",
                  "events": ["task.completed"]},
                 {"id": "js", "url": "http://127.0.0.1:$JS_PORT/hook", "secret": "$NEW_SECRET",
                  "previous_secret_env": "HOOK_SECRET", "events": ["task.completed"]}]}],
  "servers": [{"tenant": "hooks", "name": "default", "description": "README receivers"}],
  "tools": [
    {"tenant": "hooks", "server": "default", "name": "monthly_report", "published": "1",
     "versions": [{"version": "1", "description": "a task-mode tool",
                   "inputSchema": {"type": "object", "properties": {"month": {"type": "string"}}},
                   "executor": {"type": "builtin", "name": "echo"}, "timeout_ms": 60000, "mode": "task"}]}
  ]
}
EOF
start_stack --workers 1 --config "$TMP/mcpq.json" --env "HOOK_SECRET=$SECRET"

# ------------------------------------------------------------------ a signed delivery
STEP="task.completed reaches both receivers"
answer=$(curl -sS --max-time 30 -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"monthly_report","arguments":{"month":"2026-10"}}}' \
    "http://127.0.0.1:$PORT/mcp")
TASK=$(printf '%s' "$answer" | sed -n 's/.*"TaskId":"\([0-9a-f-]\{36\}\)".*/\1/p' | head -n 1)
[ -n "$TASK" ] || fail "no TaskId in: $answer"
got() { grep -Eq "^msg_[^ ]+ task\.completed $TASK complete\$" "$1"; }
wait_for 30 got "$TMP/py.out" || fail "the Python receiver did not print the delivery of $TASK"
wait_for 30 got "$TMP/js.out" || fail "the Node.js receiver did not print the delivery of $TASK"
printf 'ok - a task.completed delivery of task %s is verified by both README receivers (one of them through the previous secret of a rotation)\n' "$TASK"

# ------------------------------------------------------------------ forged and stale
STEP="forged and stale deliveries"
post() { # port id timestamp signature → HTTP status
    curl -sS -o /dev/null -w '%{http_code}' --max-time 10 -H 'Content-Type: application/json' \
        -H "webhook-id: $2" -H "webhook-timestamp: $3" -H "webhook-signature: $4" \
        --data-binary '{"type":"task.completed","data":{"TaskId":"x","TaskStatus":"complete"}}' \
        "http://127.0.0.1:$1/hook"
}
sign() { # id timestamp → v1,<base64 HMAC-SHA256> with the secret, over the same body as post
    local body='{"type":"task.completed","data":{"TaskId":"x","TaskStatus":"complete"}}'
    printf '%s.%s.%s' "$1" "$2" "$body" |
        openssl dgst -sha256 -mac HMAC -macopt "hexkey:$(printf '%s' "${SECRET#whsec_}" | base64 -d | od -An -tx1 | tr -d ' \n')" -binary |
        base64 | sed 's/^/v1,/'
}
now=$(date +%s)
for port in "$PY_PORT" "$JS_PORT"; do
    good=$(sign msg_fresh "$now")
    [ "$(post "$port" msg_fresh "$now" "$good")" = 204 ] || fail "a correctly signed delivery is refused on $port"
    [ "$(post "$port" msg_forged "$now" "v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")" = 401 ] ||
        fail "a wrong signature is accepted on $port"
    two="v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA= $(sign msg_two "$now")"
    [ "$(post "$port" msg_two "$now" "$two")" = 204 ] ||
        fail "two signatures, the second one right, are refused on $port"
    stale=$((now - 3600))
    [ "$(post "$port" msg_stale "$stale" "$(sign msg_stale "$stale")")" = 401 ] ||
        fail "a stale timestamp is accepted on $port"
done
echo "ok - both receivers answer 204 to a signed delivery (also with two signatures, one right), 401 to a wrong signature and to a stale timestamp"
