#!/usr/bin/env bash
# Runs one group of the real-client tests against a local stack (scripts/mcpq-local):
#
#   tests/clients/run.sh v1            sdk-v1.test.mjs   (@modelcontextprotocol/sdk 1.x, 2025-11-25)
#   tests/clients/run.sh v2            sdk-v2.test.mjs   (@modelcontextprotocol/client 2.x, 2026-07-28)
#   tests/clients/run.sh conformance   conformance.sh    (official conformance suite, server scenarios)
#   tests/clients/run.sh hostile       hostile.test.mjs  (hostile-input catalogue over raw TCP)
#   tests/clients/run.sh tasks         tasks.test.mjs    (MCP Tasks: 2026-07-28 extension, 2025-11-25)
#   tests/clients/run.sh batch         batch.test.mjs    (2025-03-26 JSON-RPC batches as one aggregate)
#   tests/clients/run.sh oauth         oauth.test.mjs    (OAuth tokens from oidc-provider: SDKs, mcp-remote)
#   tests/clients/run.sh eras          eras.test.mjs     (every client era x every upstream era)
#   tests/clients/run.sh upstreams     upstreams.test.mjs (server-everything, server-filesystem via SDK v1/v2)
#   tests/clients/run.sh subs          subs.test.mjs     (resource subscriptions, list changes: SDK v1, v2)
#   tests/clients/run.sh elicit        elicit.test.mjs   (tools asking the client mid-call: SDK v1, v2; faults)
#   tests/clients/run.sh console       console.test.mjs  (the operator console in chromium, playwright-core)
#
# The binaries come from $MCPQ_BIN_DIR (default <repo>/build; ctest sets it to its build dir).
# npm packages are installed (once per package-lock.json) by install.sh into
# $MCPQ_CLIENTS_WORK (default <repo>/build/clients). KEEP=1 keeps the stacks' state dirs.
set -euo pipefail

HERE=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)

if [ $# -ne 1 ]; then
    echo "usage: tests/clients/run.sh v1|v2|conformance|hostile|tasks|batch|oauth|eras|upstreams|subs|elicit|console" >&2
    exit 2
fi

BIN_DIR=${MCPQ_BIN_DIR:-$REPO/build}
case $BIN_DIR in /*) ;; *) BIN_DIR=$REPO/$BIN_DIR ;; esac
for b in mcpq-ingress mcpq-worker mcpq-devbroker; do
    [ -x "$BIN_DIR/$b" ] || { echo "clients: $BIN_DIR/$b is missing (run make build)" >&2; exit 2; }
done
export MCPQ_BIN_DIR=$BIN_DIR

WORK=$("$HERE/install.sh")
export MCPQ_CLIENTS_DEPS=$WORK

case $1 in
v1 | v2 | hostile | tasks | batch | oauth | eras | upstreams | subs | elicit | console)
    test_file=$HERE/sdk-$1.test.mjs
    [ "$1" = v1 ] || [ "$1" = v2 ] || test_file=$HERE/$1.test.mjs
    cd "$REPO"
    exec node --import "$HERE/lib/register.mjs" --test --test-concurrency=1 \
        --test-reporter=spec "$test_file"
    ;;
conformance)
    exec bash "$HERE/conformance.sh"
    ;;
*)
    echo "clients: unknown group '$1' (v1, v2, conformance, hostile, tasks, batch, oauth, eras, upstreams, subs, elicit or console)" >&2
    exit 2
    ;;
esac
