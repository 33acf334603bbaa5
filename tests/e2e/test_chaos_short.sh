#!/usr/bin/env bash
# The short form of the fault campaign (make chaos, docs/reliability.md) in every `make test`:
# 25 s of client calls through 2 ingresses and 3 workers while workers and ingresses are
# killed with SIGKILL and Redis is frozen; fails on a lost call or a result that belongs to
# another call (tests/chaos/chaos.py).
set -euo pipefail
REPO=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
export MCPQ_BIN_DIR=${MCPQ_BIN_DIR:-$REPO/build}
exec python3 "$REPO/tests/chaos/chaos.py" --seconds "${CHAOS_SHORT_SECONDS:-25}" --clients 6 \
    --nemesis kill-worker,kill-ingress,freeze-redis --port 19280
