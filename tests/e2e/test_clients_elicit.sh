#!/usr/bin/env bash
# End-to-end test, run by ctest with MCPQ_BIN_DIR set to the build dir and the repository root
# as cwd. Tools asking the client mid-call (tests/clients/elicit.test.mjs): an exec tool, an
# http tool and a stdio upstream each elicit from the SDK v1 and v2 clients in each era, the
# answer sent to the other of two ingress replicas; sampling, roots, a client without the
# capability; a silent client, a stopped replica and a killed worker each end the call clearly.
# A thin wrapper over tests/clients/run.sh (installs the pinned npm packages, starts the stacks).
set -euo pipefail

REPO=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
exec bash "$REPO/tests/clients/run.sh" elicit
