#!/usr/bin/env bash
# End-to-end test, run by ctest with MCPQ_BIN_DIR set to the build dir and the repository root
# as cwd: the hostile-input catalogue (tests/clients/hostile.test.mjs), malformed and malicious
# requests over raw TCP against a local stack, each with its exact status and error, then a
# normal call. A thin wrapper over tests/clients/run.sh, which starts and stops the stack.
set -euo pipefail

REPO=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
exec bash "$REPO/tests/clients/run.sh" hostile
