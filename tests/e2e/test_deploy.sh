#!/usr/bin/env bash
# End-to-end test, run by ctest with MCPQ_BIN_DIR set to the build dir and the repository root
# as cwd: the offline check of deploy/ (scripts/check-deploy.sh). It renders
# deploy/kubernetes/base and every overlay with `kubectl kustomize`, validates every object
# (Kubernetes, KEDA and Prometheus Operator schemas from pinned npm packages, references,
# mcpq's settings from `mcpq-ingress --env-table`), and checks deploy/docker/Dockerfile
# against `ldd` of the binaries of MCPQ_BIN_DIR (scripts/check-images.sh). A missing tool
# (kubectl, node; scripts/deps.sh installs them) fails the test: it never skips.
set -euo pipefail

REPO=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
exec bash "$REPO/scripts/check-deploy.sh" "${MCPQ_BIN_DIR:-$REPO/build}"
