#!/usr/bin/env bash
# End-to-end test, run by ctest with MCPQ_BIN_DIR set to the build dir and the repository root
# as cwd. It runs the official MCP conformance suite (server scenarios) through an
#   auth-adding proxy, compared with tests/clients/conformance-baseline.txt
#   (tests/clients/conformance.sh).
# A thin wrapper: tests/clients/run.sh installs the pinned npm packages (npm ci into
# build/clients, reused while tests/clients/package-lock.json is unchanged), starts its own
# stack with scripts/mcpq-local on the binaries of MCPQ_BIN_DIR, and stops it at the end.
set -euo pipefail

REPO=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
exec bash "$REPO/tests/clients/run.sh" conformance
