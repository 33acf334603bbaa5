#!/usr/bin/env bash
# The operator console's /metrics parser and quantiles (ingress/console/prom.js, docs/console.md
# "Live metrics") as a plain node:test, no browser: tests/e2e/console-prom.test.mjs loads the
# module the page serves, as it is. Run by ctest with the repository root as cwd.
set -euo pipefail

REPO=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
exec node --test "$REPO/tests/e2e/console-prom.test.mjs"
