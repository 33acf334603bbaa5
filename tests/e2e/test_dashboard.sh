#!/usr/bin/env bash
# The Grafana dashboard (deploy/grafana/mcpq-dashboard.json) against Grafana's own types:
# tests/e2e/dashboard-schema.mjs validates the dashboard, each panel's options and field config
# and each Prometheus query against JSON Schema generated from @grafana/schema and
# @grafana/grafana-foundation-sdk, and shows that broken copies are refused. The npm packages
# are the pinned ones of tests/clients, installed by tests/clients/install.sh (npm ci into
# build/clients, reused while package-lock.json is unchanged). That every query parses as
# PromQL and names exported metrics is tests/e2e/test_metrics.sh's part (it has the scrapes).
set -euo pipefail

REPO=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
WORK=$(bash "$REPO/tests/clients/install.sh") || { echo "not ok - tests/clients/install.sh failed"; exit 1; }
MCPQ_CLIENTS_DEPS=$WORK exec node "$REPO/tests/e2e/dashboard-schema.mjs" \
    "$REPO/deploy/grafana/mcpq-dashboard.json"
