#!/usr/bin/env bash
# `make up`: the demo HTTP tool service (deploy/local/tools/http-demo.mjs, behind the demo
# config's `add` tool) next to the local stack (scripts/mcpq-local with
# deploy/local/mcpq.json), both in the foreground. Ctrl-C or SIGTERM stops both; the exit
# status is the launcher's.
#
#   scripts/up.sh [PORT]          PORT: the ingress port (default 8080)
#
# The launcher itself starts only Redis, the broker, the ingresses and the workers; the demo service is here so
# that every demo tool works right after `make up`. DEMO_HTTP_PORT (default 8099) must match
# the `add` tool's URL in deploy/local/mcpq.json.
set -euo pipefail

ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
PORT=${1:-8080}

demo=
if command -v node >/dev/null; then
    node "$ROOT/deploy/local/tools/http-demo.mjs" &
    demo=$!
else
    echo "up: node is missing: the demo 'add' tool will answer isError (scripts/deps.sh installs it)" >&2
fi

stop_demo() {
    if [ -n "$demo" ]; then
        kill -TERM "$demo" 2>/dev/null || true
        wait "$demo" 2>/dev/null || true
    fi
}
trap stop_demo EXIT

"$ROOT/scripts/mcpq-local" --config "$ROOT/deploy/local/mcpq.json" --port "$PORT" \
    --env "MCPQ_ADMIN_TOKEN=${MCPQ_ADMIN_TOKEN:-demo-admin-token}" &
launcher=$!
signalled=0
trap 'signalled=1; kill -TERM "$launcher" 2>/dev/null || true' INT TERM
rc=0
wait "$launcher" || rc=$?
# A trapped signal interrupts that wait; the launcher is still stopping: collect its status.
if [ "$signalled" = 1 ]; then
    rc=0
    wait "$launcher" || rc=$?
fi
exit "$rc"
