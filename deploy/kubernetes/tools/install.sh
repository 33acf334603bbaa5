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
# flock (scripts/npm-install.sh).
set -euo pipefail

HERE=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
WORK=${1:-${MCPQ_DEPLOY_TOOLS_WORK:-$REPO/build/deploy-tools}}

mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
"$REPO/scripts/npm-install.sh" deploy-tools "$HERE" "$WORK"
for m in kubernetes-models @kubernetes-models/keda @kubernetes-models/prometheus-operator yaml ajv; do
    [ -f "$WORK/node_modules/$m/package.json" ] ||
        { echo "deploy-tools: $WORK/node_modules/$m is missing" >&2; exit 2; }
done
echo "$WORK"
