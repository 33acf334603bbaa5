#!/usr/bin/env bash
# End-to-end test, run by ctest with MCPQ_BIN_DIR set to the build dir and the repository root
# as cwd. OAuth 2.1 with real parts: oidc-provider (npm) on loopback issues the tokens
# (tests/clients/oidc/provider.mjs); the official SDK v1 and v2 clients (client credentials and
# the authorization code flow with PKCE, driven headlessly) and mcp-remote use them against a
# stack whose tenant trusts that issuer; bad tokens, key rotation, per-tool rules, no token
# passthrough, CORS (tests/clients/oauth.test.mjs).
# A thin wrapper: tests/clients/run.sh installs the pinned npm packages (npm ci into
# build/clients, reused while tests/clients/package-lock.json is unchanged), the test starts its
# own provider and stack (scripts/mcpq-local on the binaries of MCPQ_BIN_DIR) and stops both.
set -euo pipefail

REPO=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
exec bash "$REPO/tests/clients/run.sh" oauth
