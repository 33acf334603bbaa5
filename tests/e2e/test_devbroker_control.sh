#!/usr/bin/env bash
# The devbroker's control channel (MCPQ_DEVBROKER_CONTROL, docs/kafka.md "Fault injection"):
# for each command (brokers down and up, leader moves, request errors, round-trip time) what a
# caller of tools/call sees, bad input answered with errors, the socket removed at exit
# (tests/e2e/devbroker_control.py). KEEP=1 keeps the state dir.
set -euo pipefail
REPO=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
export MCPQ_BIN_DIR=${MCPQ_BIN_DIR:-$REPO/build}
exec timeout -k 10 300 python3 "$REPO/tests/e2e/devbroker_control.py"
