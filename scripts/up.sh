#!/usr/bin/env bash
# `make up`: the local stack (scripts/mcpq-local with deploy/local/mcpq.json and Redis's
# append-only file, fsynced before every answer: --redis-persist, --redis-fsync always) with
# the demo's two helpers next to it, all in the foreground:
#   - the demo HTTP tool service (deploy/local/tools/http-demo.mjs, behind the `add` tool) on
#     127.0.0.1:$DEMO_HTTP_PORT (default 8099);
#   - the webhook receiver (deploy/local/webhook-receiver.mjs) on 127.0.0.1:$DEMO_WEBHOOK_PORT
#     (default 8098), the URL of the demo tenant's webhook `demo-hook`: it verifies every
#     delivery with the npm package standardwebhooks (pinned by deploy/local/package-lock.json,
#     installed with npm ci into build/demo, reused while the lock is unchanged) and prints it.
# When the stack is ready it prints `READY <url>`, then the MCP URL, the demo key and the
# client snippets of docs/clients.md filled in for this port. Ctrl-C or SIGTERM stops
# everything; the exit status is the launcher's.
#
#   scripts/up.sh [PORT [mcpq-local options...]]     PORT: the ingress port (default 8080)
#
# With other DEMO_HTTP_PORT/DEMO_WEBHOOK_PORT values the config is a copy of
# deploy/local/mcpq.json with the two URLs changed. Without node (scripts/deps.sh installs
# it) there is no tool service (`add` answers isError) and no receiver (deliveries are
# retried, docs/webhooks.md); without npm or the registry, no receiver.
set -euo pipefail

ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
PORT=${1:-8080}
[ $# -eq 0 ] || shift
DEMO_HTTP_PORT=${DEMO_HTTP_PORT:-8099}
DEMO_WEBHOOK_PORT=${DEMO_WEBHOOK_PORT:-8098}
export DEMO_HTTP_PORT DEMO_WEBHOOK_PORT

config=$ROOT/deploy/local/mcpq.json
tmp=
if [ "$DEMO_HTTP_PORT" != 8099 ] || [ "$DEMO_WEBHOOK_PORT" != 8098 ]; then
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/mcpq-up.XXXXXX")
    sed -e "s#//127\.0\.0\.1:8099/#//127.0.0.1:$DEMO_HTTP_PORT/#g" \
        -e "s#//127\.0\.0\.1:8098/#//127.0.0.1:$DEMO_WEBHOOK_PORT/#g" "$config" >"$tmp/mcpq.json"
    config=$tmp/mcpq.json
fi

helpers=()
stop_helpers() {
    local p
    for p in "${helpers[@]}"; do
        kill -TERM "$p" 2>/dev/null || true
    done
    for p in "${helpers[@]}"; do
        wait "$p" 2>/dev/null || true
    done
    [ -z "$tmp" ] || rm -rf "$tmp"
}
trap stop_helpers EXIT

if command -v node >/dev/null; then
    node "$ROOT/deploy/local/tools/http-demo.mjs" &
    helpers+=($!)
    demo_work=${MCPQ_DEMO_WORK:-$ROOT/build/demo}
    if "$ROOT/scripts/npm-install.sh" demo "$ROOT/deploy/local" "$demo_work"; then
        DEMO_NODE_MODULES=$demo_work/node_modules DEMO_CONFIG=$config \
            node "$ROOT/deploy/local/webhook-receiver.mjs" &
        helpers+=($!)
    else
        echo "up: could not install deploy/local's npm packages: no webhook receiver (deliveries to demo-hook are retried)" >&2
    fi
else
    echo "up: node is missing: the demo 'add' tool will answer isError and no webhook receiver runs (scripts/deps.sh installs node)" >&2
fi

# The client snippets of docs/clients.md for this stack, one line each.
block() { # lang heading host:port → the first fenced block after the heading, for host:port
    awk -v lang="$1" -v after="$2" '
        index($0, after) { seen = 1 }
        seen && !inside && $0 == "```" lang { inside = 1; next }
        inside && $0 == "```" { exit }
        inside { print }' "$ROOT/docs/clients.md" | sed "s#127\.0\.0\.1:8080#$3#g"
}
snippets() { # base url
    local at=${1#http://}
    printf 'mcpq demo: MCP URL %s/mcp, API key demo-key (tenant demo, deploy/local/mcpq.json)\n' "$1"
    printf '  Claude Code:   %s\n' "$(block sh '## Claude Code' "$at" | head -n 1)"
    printf '  VS Code (.vscode/mcp.json): %s\n' "$(block json '## VS Code' "$at" | tr '\n' ' ' | tr -s ' ' | sed 's/ $//')"
    printf '  Claude Desktop (mcp-remote): %s\n' "$(block json '## Claude Desktop' "$at" | tr '\n' ' ' | tr -s ' ' | sed 's/ $//')"
    printf '  Operator console: %s/console/ (admin token %s; docs/console.md)\n' "$1" "${MCPQ_ADMIN_TOKEN:-demo-admin-token}"
    printf '  More clients: docs/clients.md. The two-minute tour: README.md (webhooks are printed here as "webhook ..." lines).\n'
}
announce() {
    local line
    while IFS= read -r line; do
        printf '%s\n' "$line"
        case $line in "READY "*) snippets "${line#READY }" ;; esac
    done
}

"$ROOT/scripts/mcpq-local" --config "$config" --port "$PORT" --redis-persist \
    --env "MCPQ_ADMIN_TOKEN=${MCPQ_ADMIN_TOKEN:-demo-admin-token}" "$@" > >(announce) &
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
