#!/usr/bin/env bash
# End-to-end test, run by ctest with MCPQ_BIN_DIR set to the build dir and the repository root
# as cwd: resource subscriptions and list changes with the official TypeScript SDKs
# (tests/clients/subs.test.mjs): SDK v1 resources/subscribe and notifications/resources/updated
# on the GET stream, SDK v2 subscriptions/listen with resourceSubscriptions. A thin wrapper
# around tests/clients/run.sh, which starts its own stack with scripts/mcpq-local.
set -euo pipefail

REPO=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
exec bash "$REPO/tests/clients/run.sh" subs
