#!/usr/bin/env bash
# Installs the pinned npm packages of validate.mjs (package-lock.json beside this file) with
# `npm ci` into a work dir outside the source tree, and prints that dir. The install is reused
# while package-lock.json is unchanged (its sha256 is kept in <work>/.lock-sha256); the same
# scheme as tests/clients/install.sh.
#
#   deploy/kubernetes/tools/install.sh [WORK_DIR]
#
# WORK_DIR defaults to $MCPQ_DEPLOY_TOOLS_WORK, else <repo>/build/deploy-tools. Needs node, npm
# and the npm registry (only when the lockfile changed). Concurrent runs are serialised with
# flock.
set -euo pipefail

HERE=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
WORK=${1:-${MCPQ_DEPLOY_TOOLS_WORK:-$REPO/build/deploy-tools}}

command -v node >/dev/null || { echo "deploy-tools: node is required (scripts/deps.sh installs it)" >&2; exit 2; }
command -v npm >/dev/null || { echo "deploy-tools: npm is required (scripts/deps.sh installs it)" >&2; exit 2; }

mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
exec 9>"$WORK/.install.lock"
flock 9

lock_sum=$(sha256sum "$HERE/package-lock.json" | cut -d' ' -f1)
if [ ! -d "$WORK/node_modules" ] || [ "$(cat "$WORK/.lock-sha256" 2>/dev/null)" != "$lock_sum" ]; then
    echo "deploy-tools: installing npm packages into $WORK" >&2
    rm -f "$WORK/.lock-sha256"
    cp "$HERE/package.json" "$HERE/package-lock.json" "$WORK/"
    (cd "$WORK" && npm ci --no-audit --no-fund --loglevel=error >&2)
    echo "$lock_sum" >"$WORK/.lock-sha256"
fi
for m in kubernetes-models @kubernetes-models/keda @kubernetes-models/prometheus-operator yaml ajv; do
    [ -f "$WORK/node_modules/$m/package.json" ] ||
        { echo "deploy-tools: $WORK/node_modules/$m is missing" >&2; exit 2; }
done
echo "$WORK"
