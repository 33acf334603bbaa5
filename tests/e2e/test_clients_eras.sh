#!/usr/bin/env bash
# End-to-end test, run by ctest with MCPQ_BIN_DIR set to the build dir and the repository root
# as cwd. The era-pair matrix (tests/clients/eras.test.mjs): raw clients of 2025-03-26,
# 2025-06-18, 2025-11-25 and 2026-07-28 against upstreams built with the official SDKs and
# pinned to each of those versions (tests/clients/era-upstream.mjs), on a tool call, a resource
# read, a prompt get and a completion through two ingress replicas and two workers.
# A thin wrapper over tests/clients/run.sh (installs the pinned npm packages, starts the stack).
set -euo pipefail

REPO=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
exec bash "$REPO/tests/clients/run.sh" eras
