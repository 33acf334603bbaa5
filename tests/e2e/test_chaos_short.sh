#!/usr/bin/env bash
# The short form of the fault campaign (make chaos, docs/reliability.md) in every `make test`:
# the mixed workload (synchronous calls with idempotency keys, task-mode calls ending by
# webhook, cancellations) through 2 ingresses and 3 workers while one fault of every kind is
# injected in turn: kill -9 of a worker and of an ingress, a rolling SIGTERM restart, Redis
# frozen and Redis killed and restarted from its AOF, a broker down and errors pushed by the
# mock cluster, worker-0 cut from Redis and losing packets and ingress-0 cut from Redis (in
# the run's own network namespace; skipped with a message where the machine does not allow
# it, which fails the run under CI), and the webhook receiver refusing connections and
# hanging. After the workload every call that succeeded and every task that ended is sent
# again with its idempotency key. Fails on a lost call, task or delivery, a result that
# belongs to another call or execution, a task-mode call answered without its task, a repeat
# answered otherwise than the first time or running the tool again, or clear errors above
# the bound (tests/chaos/checker.py, docs/reliability.md "The checker").
set -euo pipefail
REPO=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
export MCPQ_BIN_DIR=${MCPQ_BIN_DIR:-$REPO/build}
export CHAOS_NETFAULT_SECONDS=${CHAOS_NETFAULT_SECONDS:-5,7}
# Broker faults first, while the consumer group is stable: librdkafka 2.0.2's mock cluster
# aborts (rdkafka_mock_cgrp.c:236) when a member's coordinator connection drops while the
# group is syncing, as it does for tens of seconds after workers restart
# (docs/reliability.md, "What the mock broker cannot show").
FAULTS=broker-down,broker-errors,freeze-redis,kill-redis,part-worker-redis,loss-worker
FAULTS+=,part-ingress-redis,hook-refuse,hook-hang,kill-ingress,kill-worker,term-rolling
exec python3 "$REPO/tests/chaos/chaos.py" --seconds "${CHAOS_SHORT_SECONDS:-30}" --clients 6 \
    --order each --nemesis "$FAULTS" --port 19280
