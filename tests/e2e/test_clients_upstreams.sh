#!/usr/bin/env bash
# End-to-end test, run by ctest with MCPQ_BIN_DIR set to the build dir and the repository root
# as cwd. Real MCP servers from npm behind mcpq through the SDK v1 and v2 clients
# (tests/clients/upstreams.test.mjs): @modelcontextprotocol/server-everything federated over
# stdio and over Streamable HTTP, @modelcontextprotocol/server-filesystem over stdio; tools,
# resources, templates, prompts, completion, a subscription's update and live progress, through
# two ingress replicas and a worker.
# A thin wrapper over tests/clients/run.sh (installs the pinned npm packages, starts the stack).
set -euo pipefail

REPO=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
exec bash "$REPO/tests/clients/run.sh" upstreams
