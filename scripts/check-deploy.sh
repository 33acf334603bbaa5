#!/usr/bin/env bash
# Offline check of everything under deploy/ (no cluster, no Docker engine, no network but the
# npm registry on the first run):
#
#   scripts/check-deploy.sh [BUILD_DIR]
#
# 1. renders deploy/kubernetes/base and every deploy/kubernetes/overlays/* with
#    `kubectl kustomize` (KUBECTL overrides which kubectl; scripts/deps.sh installs Debian's
#    kubernetes-client when there is none). The kustomizations use the fields kustomize v2.0.3
#    (Debian bookworm's kubectl 1.20) knows, which v5 still accepts with a deprecation warning
#    about `bases` and `patchesStrategicMerge`: those two warnings are filtered, any other
#    output on stderr is shown;
# 2. validates every rendered object with deploy/kubernetes/tools/validate.mjs (Kubernetes,
#    KEDA and Prometheus Operator schemas from pinned npm packages, installed by
#    deploy/kubernetes/tools/install.sh into BUILD_DIR/deploy-tools; cross-references; mcpq's
#    settings from `BUILD_DIR/mcpq-ingress --env-table`);
# 3. runs scripts/check-images.sh BUILD_DIR (the Dockerfile against ldd and dpkg).
#
# A missing tool is a failure, never a skip. Renders are kept in BUILD_DIR/deploy-render/.
# Ends with "deploy: N passed, M failed" (one per render, validation and the image check) and
# exits non-zero on any failure.
set -euo pipefail

REPO=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
BUILD_DIR=${1:-${MCPQ_BIN_DIR:-$REPO/build}}
BUILD_DIR=$(cd "$BUILD_DIR" && pwd)
KUBECTL=${KUBECTL:-kubectl}
K8S=$REPO/deploy/kubernetes
OUT=$BUILD_DIR/deploy-render
# The ingress drain grace (MCPQ_DRAIN_GRACE_S, 25 s by default): terminationGracePeriodSeconds
# of the ingress must leave room after it.
DRAIN_GRACE_S=25

PASS=0
FAIL=0
RESULTS=()
result() { # status what
    if [ "$1" = 0 ]; then PASS=$((PASS + 1)); RESULTS+=("ok   $2"); else FAIL=$((FAIL + 1)); RESULTS+=("FAIL $2"); fi
}
die() { echo "deploy: $*" >&2; echo "deploy: 0 passed, 1 failed"; exit 1; }

command -v "$KUBECTL" >/dev/null || die "$KUBECTL is missing (scripts/deps.sh installs Debian's kubernetes-client)"
"$KUBECTL" kustomize --help >/dev/null 2>&1 || die "$KUBECTL has no kustomize command (kubectl >= 1.14 has)"
command -v node >/dev/null || die "node is missing (scripts/deps.sh installs it)"
[ -x "$BUILD_DIR/mcpq-ingress" ] || die "no $BUILD_DIR/mcpq-ingress (run make build)"

echo "deploy: $("$KUBECTL" version --client 2>/dev/null | tr '\n' ' ' | sed 's/ *$//'), node $(node --version)"
TOOLS=$("$K8S/tools/install.sh") || die "could not install the npm packages of deploy/kubernetes/tools"
cp "$K8S/tools/validate.mjs" "$TOOLS/validate.mjs" # resolves its imports from $TOOLS/node_modules
mkdir -p "$OUT"
"$BUILD_DIR/mcpq-ingress" --env-table >"$OUT/env-table.md"

# name dir validate-args...
check() {
    local name=$1 dir=$2 rc=0
    shift 2
    if ! "$KUBECTL" kustomize "$dir" >"$OUT/$name.yaml" 2>"$OUT/$name.err"; then
        cat "$OUT/$name.err"
        result 1 "$name: kubectl kustomize ${dir#"$REPO"/}"
        return
    fi
    grep -v -e "^# Warning: 'bases' is deprecated" -e "^# Warning: 'patchesStrategicMerge' is deprecated" \
        "$OUT/$name.err" || true
    result 0 "$name: kubectl kustomize ${dir#"$REPO"/} ($(grep -c '^kind:' "$OUT/$name.yaml") objects)"
    node "$TOOLS/validate.mjs" --env-table "$OUT/env-table.md" --schemas "$REPO/schemas" \
        --drain-grace-s "$DRAIN_GRACE_S" --label "$name" "$@" "$OUT/$name.yaml" || rc=$?
    result "$rc" "$name: schemas and references"
}

# The base alone has no Secret (each overlay brings or names its own) and untagged images.
check base "$K8S/base" --external Secret/mcpq-secrets
for overlay in "$K8S"/overlays/*/; do
    name=$(basename "$overlay")
    args=(--require-image-tags)
    # The production Secret is created outside git (deploy/kubernetes/README.md, "Secrets").
    [ "$name" = production ] && args+=(--external Secret/mcpq-secrets)
    check "$name" "$overlay" "${args[@]}"
done

rc=0
bash "$REPO/scripts/check-images.sh" "$BUILD_DIR" || rc=$?
result "$rc" "images: scripts/check-images.sh"

echo
printf '  %s\n' "${RESULTS[@]}"
echo "deploy: $PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
