#!/usr/bin/env bash
# End-to-end test, run by ctest with MCPQ_BIN_DIR set to the build dir and the repository root
# as cwd: the operator console (docs/console.md) in a real browser, Debian's chromium driven
# headless by playwright-core (tests/clients/console.test.mjs), against a local stack whose
# ingress serves the operations plane on a port of its own. Screenshots of each step go to
# $MCPQ_BIN_DIR/artifacts/console/ (the test prints their paths). Without chromium: skipped
# (77) naming the package, unless CI=true, where it fails.
set -euo pipefail

REPO=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
CHROMIUM=${MCPQ_CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$CHROMIUM" ]; then
    if [ "${CI:-}" = true ]; then
        echo "test_console: needs $CHROMIUM (Debian package chromium, installed by scripts/deps.sh)" >&2
        exit 1
    fi
    echo "test_console: SKIP: $CHROMIUM is missing (Debian package chromium; scripts/deps.sh installs it)"
    exit 77
fi
export MCPQ_CHROMIUM=$CHROMIUM
exec bash "$REPO/tests/clients/run.sh" console
