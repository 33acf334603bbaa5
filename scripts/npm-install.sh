#!/usr/bin/env bash
# Installs the pinned npm packages of a package.json + package-lock.json pair with `npm ci`
# into a work dir outside the source tree. The install is reused while package-lock.json is
# unchanged (its sha256 is kept in <work>/.lock-sha256); concurrent runs are serialised with
# flock. Used by tests/clients/install.sh and deploy/kubernetes/tools/install.sh.
#
#   scripts/npm-install.sh NAME SRC_DIR WORK_DIR     (NAME prefixes the messages)
#
# Needs node, npm and the npm registry (only when the lockfile changed).
set -euo pipefail

NAME=$1
SRC=$2
WORK=$3

command -v node >/dev/null || { echo "$NAME: node is required (scripts/deps.sh installs it)" >&2; exit 2; }
command -v npm >/dev/null || { echo "$NAME: npm is required (scripts/deps.sh installs it)" >&2; exit 2; }

mkdir -p "$WORK"
exec 9>"$WORK/.install.lock"
flock 9

lock_sum=$(sha256sum "$SRC/package-lock.json" | cut -d' ' -f1)
if [ ! -d "$WORK/node_modules" ] || [ "$(cat "$WORK/.lock-sha256" 2>/dev/null)" != "$lock_sum" ]; then
    echo "$NAME: installing npm packages into $WORK" >&2
    rm -f "$WORK/.lock-sha256"
    cp "$SRC/package.json" "$SRC/package-lock.json" "$WORK/"
    (cd "$WORK" && npm ci --no-audit --no-fund --loglevel=error >&2)
    echo "$lock_sum" >"$WORK/.lock-sha256"
fi
