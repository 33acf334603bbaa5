#!/usr/bin/env bash
# End-to-end test, run by ctest with MCPQ_BIN_DIR set to the build dir and the repository root
# as cwd: 2025-03-26 JSON-RPC batches as one aggregate (tests/clients/batch.test.mjs), among
# them two tasks/result of one task in a batch, which used to hang the ingress. A thin wrapper
# over tests/clients/run.sh, which starts and stops the stack.
set -euo pipefail

REPO=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
exec bash "$REPO/tests/clients/run.sh" batch
