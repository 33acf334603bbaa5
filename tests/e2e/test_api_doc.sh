#!/usr/bin/env bash
# End-to-end test of the admin walkthrough of docs/api.md ("Administration: the admin API"), run
# by ctest with MCPQ_BIN_DIR set to the build dir and the repository root as cwd. The fenced
# block after the `admin-walkthrough` marker is run exactly as printed (only the port changed)
# against a local stack with the demo config and two ingress replicas, as `make up` starts
# it, and its output is checked step by step: create, add a version, publish, call, publish a
# new version, offline, rename, list. Then the tasks walkthrough of its "Tasks" section (the
# `tasks-walkthrough` marker) the same way: a task of the demo's report tool read while it
# works and once it has ended, listed, another cancelled twice. KEEP=1 keeps the state dir.
set -euo pipefail

# shellcheck source=tests/e2e/readme_lib.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/readme_lib.sh"

STEP="stack"
start_stack --ingresses 2 --workers 1 --config "$REPO/deploy/local/mcpq.json" \
    --env MCPQ_ADMIN_TOKEN=demo-admin-token

STEP="docs/api.md walkthrough"
doc_block docs/api.md sh 'admin-walkthrough' >"$TMP/walkthrough.sh"
grep -q ':publish' "$TMP/walkthrough.sh" || fail "no admin walkthrough found in docs/api.md"
sed -i "s/127\.0\.0\.1:8080/127.0.0.1:$PORT/g" "$TMP/walkthrough.sh"
bash -euo pipefail "$TMP/walkthrough.sh" >"$TMP/walkthrough.out" 2>"$TMP/walkthrough.err" ||
    fail "the walkthrough failed"
mapfile -t out <"$TMP/walkthrough.out"
[ "${#out[@]}" -eq 9 ] || fail "expected 9 answers, got ${#out[@]}"

expect() { # index description extended-regex
    printf '%s' "${out[$1]}" | grep -Eq "$3" || fail "$2: answer was ${out[$1]}"
    printf 'ok - %s\n' "$2"
}
expect 0 "1. the tool is created offline" '^\{"tenant":"demo","name":"greet","server":"default","published":false,.*"versions":\["1"\],"createTime":"[0-9T:.-]+Z","updateTime":"[^"]+","etag":"[0-9a-f]{20}"\}$'
expect 1 "2. version 2 starts from version 1" '"version":"2","description":"Greet someone, politely","inputSchema":\{"type":"object","properties":\{"who"'
expect 2 "3. version 1 is published" '"version":"1".*"published":true'
expect 3 "4. the call runs version 1" '"structuredContent":\{"who":"ops"\},"isError":false'
expect 4 "5. version 2 is published" '"version":"2".*"published":true'
expect 5 "5. tools/list shows version 2" '"name":"greet","description":"Greet someone, politely"'
expect 6 "6. version 2 is offline" '"version":"2".*"published":false'
expect 7 "7. the tool is renamed" '"name":"say_hello","server":"default","published":false'
expect 8 "the listing filters offline tools" '^\{"tools":\[\{"tenant":"demo","name":"say_hello"'

STEP="after the walkthrough"
listed() { # → 0 when replica 1's tools/list has the demo tools and not the offline one
    list=$(curl -sS --max-time 10 "http://127.0.0.1:$((PORT + 1))/mcp" \
        -H 'Authorization: Bearer demo-key' -H 'Content-Type: application/json' \
        -H 'Accept: application/json, text/event-stream' \
        -d '{"jsonrpc":"2.0","id":1,"method":"tools/list"}')
    case $list in *'"name":"echo"'*) ;; *) return 1 ;; esac
    case $list in *'"name":"greet"'* | *'"name":"say_hello"'*) return 1 ;; esac
}
# A change reaches every replica within 1 s (wait_for polls every 0.1 s).
wait_for 1 listed || fail "replica 1 still lists the offline tool, or not the demo tools: $list"
printf 'ok - within 1 s the other replica lists the demo tools and not the offline one\n'

STEP="docs/api.md tasks walkthrough"
# The "Tasks" walkthrough, run as printed against the same stack: the demo's task-mode tool
# report, read while it works and once it has ended, listed, and another one cancelled twice.
doc_block docs/api.md sh 'tasks-walkthrough' >"$TMP/tasks.sh"
grep -q '/cancel' "$TMP/tasks.sh" || fail "no tasks walkthrough found in docs/api.md"
sed -i "s/127\.0\.0\.1:8080/127.0.0.1:$PORT/g" "$TMP/tasks.sh"
timeout 30 bash -euo pipefail "$TMP/tasks.sh" >"$TMP/tasks.out" 2>"$TMP/tasks.err" ||
    fail "the tasks walkthrough failed"
mapfile -t out <"$TMP/tasks.out"
[ "${#out[@]}" -eq 5 ] || fail "expected 5 answers, got ${#out[@]}"
T='"taskId":"[0-9a-f-]{36}"'
expect 0 "2. the task works" "^\{$T,\"status\":\"working\",.*\"pollIntervalMs\":1000,\"tool\":\"report\",\"server\":\"default\"\}$"
expect 1 "3. it completed with the tool's result" "^\{$T,\"status\":\"completed\",.*\"result\":\{\"content\":\[\{\"type\":\"text\",\"text\":\"report ready: 1 steps\"\}\].*\"isError\":false\},\"tool\":\"report\""
expect 2 "4. the listing has it, without its result" "^\{\"tasks\":\[\{$T,\"status\":\"completed\",[^]]*\"tool\":\"report\",\"server\":\"default\"\}\],\"nextCursor\":null\}$"
expect 3 "5. cancel answers the cancelled task" "^\{$T,\"status\":\"cancelled\",\"statusMessage\":\"cancelled by POST /v1/tasks/\{id\}/cancel\""
expect 4 "5. cancelling it again is 409" '^\{"error":"Cannot cancel task: already in a terminal status"\} 409$'
