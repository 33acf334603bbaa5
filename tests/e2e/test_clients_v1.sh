#!/usr/bin/env bash
# End-to-end test, run by ctest with MCPQ_BIN_DIR set to the build dir and the repository root
# as cwd. It runs the official TypeScript SDK v1 client (@modelcontextprotocol/sdk 1.x, 2025-11-25):
#   connect, tools/list paging, echo, content types, progress, logging and cancellation
#   (tests/clients/sdk-v1.test.mjs).
# A thin wrapper: tests/clients/run.sh installs the pinned npm packages (npm ci into
# build/clients, reused while tests/clients/package-lock.json is unchanged), starts its own
# stack with scripts/mcpq-local on the binaries of MCPQ_BIN_DIR, and stops it at the end.
set -euo pipefail

REPO=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
exec bash "$REPO/tests/clients/run.sh" v1
