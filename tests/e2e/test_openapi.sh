#!/usr/bin/env bash
# The API description cannot drift: docs/openapi.json is validated as OpenAPI 3.1 and every
# answer of a real stack to every documented operation (success and the main errors) is
# checked against it, and the ingress may answer nothing the document lacks
# (tests/openapi/check.mjs says how). The stack is scripts/mcpq-local with an admin token and a
# config whose tools reach a small host the checker runs (an agent, an http tool that keeps
# its attachments, a webhook receiver). Run by ctest with MCPQ_BIN_DIR set; KEEP=1 keeps the
# state dir.
set -euo pipefail

# shellcheck source=tests/e2e/readme_lib.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/readme_lib.sh"

STEP="routes"
# Every row of the ingress's routing table (ingress/server.c, routes[]) is documented: some
# path of the document starts with it.
mapfile -t rows < <(sed -n '/^} routes\[\] = {/,/^};/p' "$REPO/ingress/server.c" | grep -o '{"/[^"]*"' | tr -d '{"')
[ "${#rows[@]}" -ge 8 ] || fail "could not read the routing table of ingress/server.c (${#rows[@]} rows)"
for row in "${rows[@]}"; do
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if any(p.startswith(sys.argv[2]) for p in d["paths"]) else 1)' \
        "$REPO/docs/openapi.json" "$row" || fail "route $row of ingress/server.c is not in docs/openapi.json"
done
printf 'ok - every route of ingress/server.c (%d) has paths in docs/openapi.json\n' "${#rows[@]}"

STEP="npm"
WORK=$("$REPO/tests/openapi/install.sh") || fail "npm install of tests/openapi failed"
cp "$REPO/tests/openapi/check.mjs" "$WORK/check.mjs"

STEP="stack"
HOOK_PORT=$(free_port)
H="http://127.0.0.1:$HOOK_PORT"
cat >"$TMP/config.json" <<JSON
{"tenants": [{"id": "demo", "default_server": "default",
   "api_keys": [{"id": "demo-k1", "key": "demo-key"}, {"id": "demo-k2", "key": "demo-key-2"}],
   "apps": [{"app_id": "demo-app", "secret": "demo-app-secret-for-local-use-only", "scopes": ["tasks:all"]}],
   "webhooks": [{"id": "hook", "url": "$H/hook", "events": ["task.completed"],
                 "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}]},
  {"id": "other", "api_keys": [{"id": "other-k1", "key": "other-key"}],
   "oauth": {"issuers": ["$H/realms/other"], "jwks_uri": "$H/jwks", "scopes_supported": ["mcp:tools"]}}],
 "servers": [{"tenant": "demo", "name": "default"}, {"tenant": "other", "name": "default"}],
 "tools": [
  {"tenant": "demo", "server": "default", "name": "echo", "published": "1", "versions": [{"version": "1",
    "inputSchema": {"type": "object"}, "executor": {"type": "builtin", "name": "echo"}}]},
  {"tenant": "demo", "server": "default", "name": "tasky", "published": "1", "versions": [{"version": "1",
    "inputSchema": {"type": "object"}, "executor": {"type": "builtin", "name": "echo"}, "mode": "task"}]},
  {"tenant": "demo", "server": "default", "name": "slowtask", "published": "1", "versions": [{"version": "1",
    "inputSchema": {"type": "object"}, "executor": {"type": "builtin", "name": "sleep"}, "mode": "task"}]},
  {"tenant": "demo", "server": "default", "name": "attach", "published": "1", "versions": [{"version": "1",
    "inputSchema": {"type": "object"}, "executor": {"type": "http", "url": "$H/attach"}, "timeout_ms": 10000}]},
  {"tenant": "demo", "server": "default", "name": "agent", "published": "1", "versions": [{"version": "1",
    "inputSchema": {"type": "object"}, "executor": {"type": "agent", "url": "$H/agent"}, "timeout_ms": 15000}]}]}
JSON
# (the issuer's keys are served once check.mjs runs: the ingress's first fetch, at start, fails,
# and is tried again on the first token after MCPQ_OAUTH_JWKS_MIN_REFRESH_S)
start_stack --ingresses 1 --workers 1 --config "$TMP/config.json" --env MCPQ_ADMIN_TOKEN=oa-admin-token \
    --env MCPQ_OAUTH_JWKS_MIN_REFRESH_S=1

STEP="check"
ADMIN_TOKEN=oa-admin-token API_KEY=demo-key OTHER_KEY=other-key APP_ID=demo-app APP_SECRET=demo-app-secret-for-local-use-only ISSUER="$H/realms/other" \
    node "$WORK/check.mjs" "$REPO/docs/openapi.json" "http://127.0.0.1:$PORT" "$HOOK_PORT" >"$TMP/check.out" 2>&1 ||
    { grep -v '^ok' "$TMP/check.out" | head -60; fail "the ingress and docs/openapi.json disagree"; }
grep -E '^(ok|#)' "$TMP/check.out"
