#!/usr/bin/env bash
# End-to-end test, run by ctest with MCPQ_BIN_DIR set to the build dir and the repository root
# as cwd. It runs the official TypeScript SDK v2 client (@modelcontextprotocol/client 2.x) pinned
#   to 2026-07-28: server/discover, headers and _meta, tools/list paging with ttlMs/cacheScope,
#   echo, content types, progress, per-request logLevel and cancellation by closing the stream
#   (tests/clients/sdk-v2.test.mjs).
# A thin wrapper: tests/clients/run.sh installs the pinned npm packages (npm ci into
# build/clients, reused while tests/clients/package-lock.json is unchanged), starts its own
# stack with scripts/mcpq-local on the binaries of MCPQ_BIN_DIR, and stops it at the end.
set -euo pipefail

REPO=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
exec bash "$REPO/tests/clients/run.sh" v2
