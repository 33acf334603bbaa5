#!/usr/bin/env bash
# End-to-end test of the request-signing examples of docs/authentication.md, run by ctest
# with MCPQ_BIN_DIR set to the build dir and the repository root as cwd. The version 1 and
# version 2 shell examples are run exactly as printed (only the port changed) against a local
# stack with the demo config, and must be served; the version 2 example with a header added
# after signing (an Mcp-Param-* it did not sign) and with another Mcp-Name must be refused
# with 401. KEEP=1 keeps the state dir.
set -euo pipefail

# shellcheck source=tests/e2e/readme_lib.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/readme_lib.sh"

STEP="stack"
start_stack --workers 1 --config "$REPO/deploy/local/mcpq.json"

run_block() { # name file → the block's output in $TMP/<name>.out
    sed -i "s/127\.0\.0\.1:8080/127.0.0.1:$PORT/g" "$2"
    bash -euo pipefail "$2" >"$TMP/$1.out" 2>"$TMP/$1.err" || fail "the $1 example failed"
}

STEP="version 1 example"
doc_block docs/authentication.md sh 'An unknown app and a wrong signature get the same answer' >"$TMP/v1.sh"
grep -q 'X-Signature' "$TMP/v1.sh" || fail "no version 1 signing example found in docs/authentication.md"
run_block v1 "$TMP/v1.sh"
grep -q '"name":"echo"' "$TMP/v1.out" || fail "tools/list was not served: $(cat "$TMP/v1.out")"
printf 'ok - the version 1 example is served\n'

STEP="version 2 example"
doc_block docs/authentication.md sh '`tools/call` signed with version 2:' >"$TMP/v2.sh"
grep -q 'X-Signature-Version: 2' "$TMP/v2.sh" || fail "no version 2 signing example found"
cp "$TMP/v2.sh" "$TMP/v2-added.sh"
cp "$TMP/v2.sh" "$TMP/v2-renamed.sh"
run_block v2 "$TMP/v2.sh"
grep -q '"structuredContent":{"text":"hi"}' "$TMP/v2.out" ||
    fail "the signed tools/call was not served: $(cat "$TMP/v2.out")"
printf 'ok - the version 2 example is served\n'

STEP="version 2 example, changed after signing"
sed -i "s/-H 'Mcp-Name: echo'/-H 'Mcp-Name: echo' -H 'Mcp-Param-Extra: 1'/" "$TMP/v2-added.sh"
grep -q 'Mcp-Param-Extra' "$TMP/v2-added.sh" || fail "could not add a header to the example"
run_block v2-added "$TMP/v2-added.sh"
grep -q 'not in X-Signed-Headers' "$TMP/v2-added.out" ||
    fail "an added Mcp-Param-* header was not refused: $(cat "$TMP/v2-added.out")"
printf 'ok - a covered header added after signing is refused\n'
sed -i "s/-H 'Mcp-Name: echo'/-H 'Mcp-Name: sleep'/" "$TMP/v2-renamed.sh"
run_block v2-renamed "$TMP/v2-renamed.sh"
grep -q 'invalid signature' "$TMP/v2-renamed.out" ||
    fail "a changed Mcp-Name was not refused: $(cat "$TMP/v2-renamed.out")"
printf 'ok - a signed header changed after signing is refused\n'
