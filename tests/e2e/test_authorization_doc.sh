#!/usr/bin/env bash
# The worked example of docs/authorization.md ("A complete example: one tenant with Keycloak")
# is a config the gateway loads, run by ctest with MCPQ_BIN_DIR set to the build dir: the JSON
# block after the "authorization-example" marker is applied with `mcpq-ingress --apply` (the
# loader every config goes through: schemas/config.schema.json, then common/cfg.c's checks)
# to a redis-server of its own on a free loopback port, with the environment variables the
# example names set; it must be applied (exit 0), and `--export` must give back its tenant's
# oauth block, the key and app scopes and the tools' access rules. KEEP=1 keeps the state dir.
set -euo pipefail

# shellcheck source=tests/e2e/readme_lib.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/readme_lib.sh"

STEP="the example"
doc_block docs/authorization.md json 'authorization-example' >"$TMP/example.json"
grep -q '"oauth"' "$TMP/example.json" || fail "no example config found after the authorization-example marker"
python3 -m json.tool "$TMP/example.json" >/dev/null 2>"$TMP/json.err" ||
    fail "the example is not JSON: $(cat "$TMP/json.err")"
printf 'ok - the example is JSON\n'

STEP="redis"
RPORT=$(free_port)
setsid redis-server --bind 127.0.0.1 --port "$RPORT" --save '' --appendonly no \
    --dir "$TMP" >"$TMP/redis.out" 2>&1 </dev/null &
PIDS+=($!)
wait_for 10 listening "$RPORT" || fail "redis-server did not start"

STEP="apply"
# The secrets the example takes from the environment, each of the kind it must be.
export ACME_CI_KEY=ci-key-for-the-authorization-doc
ACME_BILLING_SECRET=$(openssl rand -hex 32)
ACME_REFUND_HOOK_SECRET=whsec_$(openssl rand -base64 32)
export ACME_BILLING_SECRET ACME_REFUND_HOOK_SECRET
export MCPQ_REDIS_URL=redis://127.0.0.1:$RPORT/0
export MCPQ_KAFKA_BROKERS=127.0.0.1:9 # a required setting; --apply never connects to Kafka
"$BIN_DIR/mcpq-ingress" --apply "$TMP/example.json" >"$TMP/apply.out" 2>"$TMP/apply.err" ||
    fail "mcpq-ingress --apply refused the example: $(cat "$TMP/apply.err")"
grep -q '^applied ' "$TMP/apply.out" || fail "--apply said: $(cat "$TMP/apply.out")"
printf 'ok - mcpq-ingress --apply loads the example\n'

STEP="export"
"$BIN_DIR/mcpq-ingress" --export >"$TMP/export.json" 2>"$TMP/export.err" ||
    fail "mcpq-ingress --export failed: $(cat "$TMP/export.err")"
python3 - "$TMP/example.json" "$TMP/export.json" <<'EOF' || fail "the export lost part of the example"
import json, sys
doc, out = (json.load(open(p)) for p in sys.argv[1:3])
def tenant(d):
    return next(t for t in d["tenants"] if t["id"] == "acme")
def tools(d):
    return {t["name"]: t for t in d["tools"] if t["tenant"] == "acme"}
def within(w, g):  # what the example says is in the export (which may add defaults)
    if isinstance(w, dict):
        return isinstance(g, dict) and all(k in g and within(v, g[k]) for k, v in w.items())
    return w == g
want, got = tenant(doc), tenant(out)
bad = []
if not within(want["oauth"], got.get("oauth")):
    bad.append("oauth: %r" % got.get("oauth"))
for kind in ("api_keys", "apps"):
    if got[kind][0].get("scopes") != want[kind][0]["scopes"]:
        bad.append("%s[0].scopes: %r" % (kind, got[kind][0].get("scopes")))
for name, t in tools(doc).items():
    if not within(t["access"], tools(out).get(name, {}).get("access")):
        bad.append("tools %s access: %r" % (name, tools(out).get(name, {}).get("access")))
for b in bad:
    print("# " + b)
sys.exit(1 if bad else 0)
EOF
printf 'ok - --export gives back the oauth block, the scopes and the access rules\n'
