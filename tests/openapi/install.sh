#!/usr/bin/env bash
# Installs the pinned npm packages of tests/openapi (package-lock.json: an OpenAPI 3.1
# document validator and a JSON Schema 2020-12 validator) with `npm ci` into a work dir outside
# the source tree, and prints that dir. Reused while package-lock.json is unchanged
# (scripts/npm-install.sh).
#
#   tests/openapi/install.sh [WORK_DIR]
#
# WORK_DIR defaults to $MCPQ_OPENAPI_WORK, else <repo>/build/openapi-npm.
set -euo pipefail

HERE=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
WORK=${1:-${MCPQ_OPENAPI_WORK:-$REPO/build/openapi-npm}}

mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
"$REPO/scripts/npm-install.sh" openapi "$HERE" "$WORK"
[ -d "$WORK/node_modules/ajv" ] || { echo "openapi: $WORK/node_modules/ajv is missing" >&2; exit 2; }
echo "$WORK"
