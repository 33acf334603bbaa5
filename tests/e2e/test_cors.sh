#!/usr/bin/env bash
# End-to-end test of CORS for browser clients (docs/authorization.md "Browser clients"), run by
# ctest with MCPQ_BIN_DIR set to the build dir and the repository root as cwd: against a local
# stack with the demo config and MCPQ_ALLOWED_ORIGINS=http://app.example:3000, a preflight from
# that Origin is answered 204 with the methods and the headers asked (Mcp-Param-* too) and the
# Origin echoed (never *), one asking for a header the ingress does not read gets the fixed
# list, one from another Origin gets 403 and no CORS header; a real POST from the allowed
# Origin carries Access-Control-Allow-Origin and exposes Mcp-Session-Id and WWW-Authenticate
# (its 401 too); the operations plane (/healthz) carries none. KEEP=1 keeps the state dir.
set -euo pipefail

# shellcheck source=tests/e2e/readme_lib.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/readme_lib.sh"

ALLOWED=http://app.example:3000
STEP="stack"
MCPQ_ALLOWED_ORIGINS=$ALLOWED start_stack --workers 1 --config "$REPO/deploy/local/mcpq.json"
URL="http://127.0.0.1:$PORT/mcp"

hdr() { # file name → the value of header name (case-insensitive), "" when absent
    grep -i "^$2:" "$1" | head -n1 | cut -d: -f2- | sed 's/^ *//; s/\r$//' || true
}
status() { head -n1 "$1" | cut -d' ' -f2; }

STEP="preflight from the allowed Origin"
curl -sS -D "$TMP/pre.h" -o /dev/null -X OPTIONS "$URL" -H "Origin: $ALLOWED" \
    -H 'Access-Control-Request-Method: POST' \
    -H 'Access-Control-Request-Headers: authorization, content-type, mcp-session-id, mcp-protocol-version, mcp-param-region'
[ "$(status "$TMP/pre.h")" = 204 ] || fail "preflight status $(status "$TMP/pre.h")"
[ "$(hdr "$TMP/pre.h" Access-Control-Allow-Origin)" = "$ALLOWED" ] || fail "Allow-Origin is '$(hdr "$TMP/pre.h" Access-Control-Allow-Origin)'"
hdr "$TMP/pre.h" Access-Control-Allow-Methods | grep -q POST || fail "POST not allowed"
hdr "$TMP/pre.h" Access-Control-Allow-Headers | grep -qi 'mcp-param-region' || fail "Mcp-Param-* header not allowed"
hdr "$TMP/pre.h" Access-Control-Allow-Headers | grep -qi 'authorization' || fail "Authorization not allowed"
hdr "$TMP/pre.h" Vary | grep -qi origin || fail "no Vary: Origin"
[ -z "$(hdr "$TMP/pre.h" Access-Control-Allow-Credentials)" ] || fail "credentials allowed"
printf 'ok - the preflight of the allowed Origin is answered 204 with what it asked\n'

STEP="preflight asking for an unknown header"
curl -sS -D "$TMP/pre2.h" -o /dev/null -X OPTIONS "$URL" -H "Origin: $ALLOWED" \
    -H 'Access-Control-Request-Method: POST' -H 'Access-Control-Request-Headers: x-evil'
[ "$(status "$TMP/pre2.h")" = 204 ] || fail "status $(status "$TMP/pre2.h")"
if hdr "$TMP/pre2.h" Access-Control-Allow-Headers | grep -qi 'x-evil'; then fail "x-evil allowed"; fi
hdr "$TMP/pre2.h" Access-Control-Allow-Headers | grep -qi 'mcp-session-id' || fail "no fixed list"
printf 'ok - a header the ingress does not read is not allowed\n'

STEP="preflight from another Origin"
curl -sS -D "$TMP/bad.h" -o /dev/null -X OPTIONS "$URL" -H 'Origin: http://evil.example' \
    -H 'Access-Control-Request-Method: POST'
[ "$(status "$TMP/bad.h")" = 403 ] || fail "status $(status "$TMP/bad.h")"
if grep -qi '^Access-Control-' "$TMP/bad.h"; then fail "CORS headers for a refused Origin"; fi
printf 'ok - another Origin gets 403 and no CORS header\n'

STEP="POST from the allowed Origin"
INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"cors","version":"1"}}}'
curl -sS -D "$TMP/post.h" -o "$TMP/post.b" "$URL" -H "Origin: $ALLOWED" \
    -H 'Authorization: Bearer demo-key' -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' -d "$INIT"
[ "$(status "$TMP/post.h")" = 200 ] || fail "status $(status "$TMP/post.h"): $(cat "$TMP/post.b")"
[ "$(hdr "$TMP/post.h" Access-Control-Allow-Origin)" = "$ALLOWED" ] || fail "no Allow-Origin on the answer"
hdr "$TMP/post.h" Access-Control-Expose-Headers | grep -q 'Mcp-Session-Id' || fail "Mcp-Session-Id not exposed"
hdr "$TMP/post.h" Access-Control-Expose-Headers | grep -q 'WWW-Authenticate' || fail "WWW-Authenticate not exposed"
curl -sS -D "$TMP/401.h" -o /dev/null "$URL" -H "Origin: $ALLOWED" \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' -d "$INIT"
[ "$(status "$TMP/401.h")" = 401 ] || fail "status $(status "$TMP/401.h") without a key"
[ "$(hdr "$TMP/401.h" Access-Control-Allow-Origin)" = "$ALLOWED" ] || fail "no Allow-Origin on the 401"
printf 'ok - answers to the allowed Origin (200 and 401) can be read by the script\n'

STEP="operations plane"
curl -sS -D "$TMP/hz.h" -o /dev/null "http://127.0.0.1:$PORT/healthz" -H "Origin: $ALLOWED"
if grep -qi '^Access-Control-' "$TMP/hz.h"; then fail "CORS headers on /healthz"; fi
printf 'ok - the operations plane has no CORS headers\n'
