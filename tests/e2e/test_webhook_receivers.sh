#!/usr/bin/env bash
# End-to-end test of the webhook receivers of docs/webhooks.md ("Receiving and verifying
# deliveries"), run by ctest with MCPQ_BIN_DIR set to the build dir and the repository root as
# cwd. Each receiver is taken from docs/webhooks.md exactly as printed, only its port changed,
# and run as a user would; a local stack (scripts/mcpq-local) has one webhook to each:
#   - Node.js with the npm package standardwebhooks (pinned by deploy/local/package-lock.json,
#     installed with npm ci into build/demo as scripts/up.sh does);
#   - Python with the package standardwebhooks: only when RECEIVERS names sw-py, as
#     tests/e2e/test_webhook_receivers_pysw.sh does (the package comes from PyPI, which the
#     build machines cannot reach: that test is a ctest of its own, skipped without it);
#   - Python with the standard library only, and Node.js with no dependency; the latter's
#     webhook is in a rotation (a new secret, the receiver's as previous_secret), so its
#     deliveries carry two signatures and the receiver still holding the old secret accepts.
# Then:
#   - a task-mode tool's task.completed delivery reaches every receiver, and each verifies it
#     (prints "<webhook-id> task.completed <TaskId> complete" and answers 204);
#   - a wrong signature and a correctly signed but stale timestamp get 401 from each; a header
#     with a wrong and a right signature gets 204.
# RECEIVERS: the receivers to run (names below; default "sw-js py js"). KEEP=1 keeps the state dir.
set -euo pipefail
RECEIVERS=${RECEIVERS:-sw-js py js}
want() { [[ " $RECEIVERS " == *" $1 "* ]]; }

KEY='hooks-key-7c2e'
SECRET=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw # the Standard Webhooks test vector's secret
NEW_SECRET=whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYX # the js webhook's new secret (a rotation)
DOC=docs/webhooks.md
# shellcheck source=tests/e2e/readme_lib.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/readme_lib.sh"

# ------------------------------------------------------------------ the receivers
STEP="receivers"
DEMO_WORK=$REPO/build/demo
"$REPO/scripts/npm-install.sh" demo "$REPO/deploy/local" "$DEMO_WORK" || fail "npm ci of deploy/local failed"
mkdir -p "$DEMO_WORK/.snippets"
NAMES=()
declare -A PORT_OF
start_receiver() { # name lang heading marker file runner...
    local name=$1 lang=$2 heading=$3 marker=$4 file=$5 port
    shift 5
    port=$(free_port)
    while [[ " ${PORT_OF[*]} " == *" $port "* ]]; do port=$(free_port); done
    doc_block "$DOC" "$lang" "$heading" >"$file"
    grep -q "$marker" "$file" || fail "no receiver under '$heading' in $DOC"
    sed -i "s/9999/$port/" "$file"
    WEBHOOK_SECRET=$SECRET setsid "$@" "$file" >"$TMP/$name.out" 2>"$TMP/$name.err" </dev/null &
    PIDS+=($!)
    PORT_OF[$name]=$port
    NAMES+=("$name")
}
SW_JS=$DEMO_WORK/.snippets/receiver-$$.mjs # under build/demo: `standardwebhooks` resolves there
! want sw-js || start_receiver sw-js js '### Node.js with standardwebhooks' 'from "standardwebhooks"' "$SW_JS" node
! want sw-py || start_receiver sw-py python '### Python with standardwebhooks' 'serve_forever' "$TMP/sw-receiver.py" python3 -u
! want py || start_receiver py python '### Python, standard library only' 'serve_forever' "$TMP/receiver.py" python3 -u
! want js || start_receiver js js '### Node.js, no dependency' 'createServer' "$TMP/receiver.mjs" node
[ ${#NAMES[@]} -gt 0 ] || fail "RECEIVERS names no receiver: $RECEIVERS"
for name in "${NAMES[@]}"; do
    wait_for 20 listening "${PORT_OF[$name]}" || fail "the $name receiver does not listen on ${PORT_OF[$name]}"
done
rm -f "$SW_JS" # node has loaded it

# ------------------------------------------------------------------ the stack
STEP="stack"
hooks=
for name in "${NAMES[@]}"; do
    if [ "$name" = js ]; then
        secret="\"secret\": \"$NEW_SECRET\", \"previous_secret_env\": \"HOOK_SECRET\""
    else
        secret='"secret_env": "HOOK_SECRET"'
    fi
    hooks+="${hooks:+,}{\"id\": \"$name\", \"url\": \"http://127.0.0.1:${PORT_OF[$name]}/hook\", $secret, \"events\": [\"task.completed\"]}"
done
cat >"$TMP/mcpq.json" <<EOF2
{
  "tenants": [{"id": "hooks", "api_keys": [{"id": "k1", "key": "$KEY"}], "default_server": "default",
               "webhooks": [$hooks]}],
  "servers": [{"tenant": "hooks", "name": "default", "description": "webhook receivers"}],
  "tools": [
    {"tenant": "hooks", "server": "default", "name": "monthly_report", "published": "1",
     "versions": [{"version": "1", "description": "a task-mode tool",
                   "inputSchema": {"type": "object", "properties": {"month": {"type": "string"}}},
                   "executor": {"type": "builtin", "name": "echo"}, "timeout_ms": 60000, "mode": "task"}]}
  ]
}
EOF2
start_stack --workers 1 --config "$TMP/mcpq.json" --env "HOOK_SECRET=$SECRET"

# ------------------------------------------------------------------ a signed delivery
STEP="task.completed reaches every receiver"
answer=$(curl -sS --max-time 30 -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"monthly_report","arguments":{"month":"2026-10"}}}' \
    "http://127.0.0.1:$PORT/mcp")
TASK=$(printf '%s' "$answer" | sed -n 's/.*"TaskId":"\([0-9a-f-]\{36\}\)".*/\1/p' | head -n 1)
[ -n "$TASK" ] || fail "no TaskId in: $answer"
got() { grep -Eq "^msg_[^ ]+ task\.completed $TASK complete\$" "$1"; }
for name in "${NAMES[@]}"; do
    wait_for 30 got "$TMP/$name.out" || fail "the $name receiver did not print the delivery of $TASK"
done
printf 'ok - a task.completed delivery of task %s is verified by the receivers %s (js through the previous secret of a rotation)\n' "$TASK" "${NAMES[*]}"

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
for name in "${NAMES[@]}"; do
    port=${PORT_OF[$name]}
    good=$(sign msg_fresh "$now")
    [ "$(post "$port" msg_fresh "$now" "$good")" = 204 ] || fail "a correctly signed delivery is refused by $name"
    [ "$(post "$port" msg_forged "$now" "v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")" = 401 ] ||
        fail "a wrong signature is accepted by $name"
    two="v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA= $(sign msg_two "$now")"
    [ "$(post "$port" msg_two "$now" "$two")" = 204 ] ||
        fail "two signatures, the second one right, are refused by $name"
    stale=$((now - 3600))
    [ "$(post "$port" msg_stale "$stale" "$(sign msg_stale "$stale")")" = 401 ] ||
        fail "a stale timestamp is accepted by $name"
done
echo "ok - every receiver answers 204 to a signed delivery (also with two signatures, one right), 401 to a wrong signature and to a stale timestamp"
