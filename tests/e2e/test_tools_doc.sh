#!/usr/bin/env bash
# End-to-end test of docs/tools.md's exec-tool walkthrough, run by ctest with MCPQ_BIN_DIR set
# to the build dir and the repository root as cwd. The fenced block after the
# `tools-walkthrough` marker is run exactly as printed (only the port changed) against a local
# stack with the demo config and the admin token `make up` sets, and what a user would see is
# checked: the tool is created and published, and the call with a progress token is answered
# as an SSE stream carrying the program's three progress notifications, in order, then its
# result. Then the `tools-ask-walkthrough` block ("Asking the user") runs the same way: an
# interactive exec tool asks for a name; the 2026-07-28 call is answered input_required with
# the question and a requestState, and the call again with the answer gets the greeting.
# KEEP=1 keeps the state dir.
set -euo pipefail

# shellcheck source=tests/e2e/readme_lib.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/readme_lib.sh"


STEP="stack"
start_stack --workers 1 --config "$REPO/deploy/local/mcpq.json" \
    --env MCPQ_ADMIN_TOKEN=demo-admin-token

STEP="walkthrough"
doc_block docs/tools.md sh 'tools-walkthrough' >"$TMP/walkthrough.sh"
grep -q 'progressToken' "$TMP/walkthrough.sh" || fail "no tools walkthrough found in docs/tools.md"
sed -i "s/127\.0\.0\.1:8080/127.0.0.1:$PORT/g" "$TMP/walkthrough.sh"
TMPDIR=$TMP timeout 60 bash -euo pipefail "$TMP/walkthrough.sh" >"$TMP/walkthrough.out" \
    2>"$TMP/walkthrough.err" || fail "the walkthrough failed"
out=$(cat "$TMP/walkthrough.out")

grep -q '^{"tenant":"demo","name":"file_invoice","server":"default","published":false' <<<"$out" ||
    fail "the tool was not created: $out"
grep -q '"version":"1".*"published":true' <<<"$out" || fail "the tool was not published: $out"
printf 'ok - the exec tool is created and published\n'

grep -q '^event: message$' <<<"$out" || fail "the call was not answered as an SSE stream: $out"
progress=$(grep -o '"method":"notifications/progress","params":{[^}]*}' <<<"$out" |
    grep -o '"progress":[0-9]*,"total":3' | tr '\n' ' ')
[ "$progress" = '"progress":1,"total":3 "progress":2,"total":3 "progress":3,"total":3 ' ] ||
    fail "expected progress 1, 2, 3 of 3, got: $progress ($out)"
grep -q '"progressToken":"inv-1"' <<<"$out" || fail "the notifications lack the progress token: $out"
printf 'ok - the three progress notifications stream in order with the token\n'

result=$(grep '"id":1,"result"' <<<"$out") || fail "no result in the stream: $out"
grep -q '"structuredContent":{"pages":3}' <<<"$result" || fail "wrong result: $result"
[ "$(grep -n '"id":1,"result"' <<<"$out" | cut -d: -f1)" -gt \
    "$(grep -n '"progress":3' <<<"$out" | cut -d: -f1)" ] || fail "the result came before the progress"
printf 'ok - the result ends the stream, after the progress\n'

STEP="ask walkthrough"
doc_block docs/tools.md sh 'tools-ask-walkthrough' >"$TMP/ask.sh"
grep -q 'inputResponses' "$TMP/ask.sh" || fail "no ask walkthrough found in docs/tools.md"
sed -i "s/127\.0\.0\.1:8080/127.0.0.1:$PORT/g" "$TMP/ask.sh"
TMPDIR=$TMP timeout 90 bash -euo pipefail "$TMP/ask.sh" >"$TMP/ask.out" 2>"$TMP/ask.err" ||
    fail "the ask walkthrough failed: $(cat "$TMP/ask.err")"
out=$(cat "$TMP/ask.out")
grep -q '"interactive":true' <<<"$out" ||
    fail "the interactive tool was not published: $out"
first=$(grep '"id":1,' <<<"$out") || fail "no answer to the first call: $out"
grep -q '"resultType":"input_required"' <<<"$first" || fail "not input_required: $first"
grep -q '"inputRequests":{"who":{"method":"elicitation/create","params":{"message":"What is your name?"' \
    <<<"$first" || fail "the question is not the tool's: $first"
grep -q '"requestState":"v1\.' <<<"$first" || fail "no requestState: $first"
printf 'ok - the interactive tool asks: the call is answered input_required with its question\n'
second=$(grep '"id":2,' <<<"$out") || fail "no answer to the call with the answer: $out"
grep -q '"content":\[{"type":"text","text":"Hello, Ada!"}\]' <<<"$second" ||
    fail "the tool did not greet with the answer: $second"
grep -q '"isError":false' <<<"$second" || fail "an error result: $second"
printf 'ok - called again with inputResponses and the requestState, it greets Ada\n'
