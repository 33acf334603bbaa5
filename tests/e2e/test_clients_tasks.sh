#!/usr/bin/env bash
# End-to-end test, run by ctest with MCPQ_BIN_DIR set to the build dir and the repository root
# as cwd: MCP Tasks on both surfaces over raw HTTP (tests/clients/tasks.test.mjs): the
# 2026-07-28 io.modelcontextprotocol/tasks extension (resultType "task", tasks/get with
# result/error, tasks/update, tasks/cancel, -32021) and 2025-11-25 tasks/get and tasks/result
# reading the same tasks. A thin wrapper around tests/clients/run.sh, which starts its own
# stack with scripts/mcpq-local.
set -euo pipefail

REPO=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
exec bash "$REPO/tests/clients/run.sh" tasks
