#!/usr/bin/env bash
# End-to-end test, run by ctest with MCPQ_BIN_DIR set to the build dir and the repository root
# as cwd: the offline check of deploy/ (scripts/check-deploy.sh). It renders
# deploy/kubernetes/base and every overlay with `kubectl kustomize`, validates every object
# (Kubernetes, KEDA and Prometheus Operator schemas from pinned npm packages, references,
# mcpq's settings from `mcpq-ingress --env-table`), and checks deploy/docker/Dockerfile
# against `ldd` of the binaries of MCPQ_BIN_DIR (scripts/check-images.sh). A missing tool
# (kubectl, node; scripts/deps.sh installs them) fails the test: it never skips.
#
# Then the check must catch planted mistakes in a copy of deploy/kubernetes, run on the
# production overlay alone (CHECK_DEPLOY_K8S, CHECK_DEPLOY_ONLY):
#   1. a secret in plain text: an env var named *TOKEN with a literal value, and a Redis URL
#      with a password in the mcpq-env ConfigMap;
#   2. the ingress's ops port exposed by the clients' Service, and a readiness probe on the
#      clients' port (where /readyz is 404 once MCPQ_OPS_LISTEN is set).
#   3. a worker container of the one mcpq image without the args that choose mcpq-worker
#      (it would run the image's default, mcpq-ingress).
#   4. the watched config file (MCPQ_CONFIG_WATCH_MS) mounted with subPath, which kubelet
#      never updates.
set -euo pipefail

REPO=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
BIN=${MCPQ_BIN_DIR:-$REPO/build}
bash "$REPO/scripts/check-deploy.sh" "$BIN"

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
FAILS=0
# planted NAME EXPECTED-MESSAGE...: the check on $TMP/k8s must fail and print each message.
planted() {
    local what=$1 out rc=0 msg
    shift
    out=$(CHECK_DEPLOY_K8S=$TMP/k8s CHECK_DEPLOY_OUT=$TMP/render CHECK_DEPLOY_ONLY=production bash "$REPO/scripts/check-deploy.sh" "$BIN" 2>&1) || rc=$?
    if [ "$rc" = 0 ]; then
        echo "not ok - $what: check-deploy.sh passed"
        FAILS=$((FAILS + 1))
        return
    fi
    for msg in "$@"; do
        if ! grep -qF -- "$msg" <<<"$out"; then
            echo "not ok - $what: no \"$msg\" in its output:"
            grep FAIL <<<"$out" | sed 's/^/    /'
            FAILS=$((FAILS + 1))
            return
        fi
    done
    echo "ok - $what: check-deploy.sh fails (exit $rc) naming it"
}

cp -r "$REPO/deploy/kubernetes" "$TMP/k8s"
P=$TMP/k8s/overlays/production
sed -i 's/^          env:$/          env:\n            - name: ACME_EXTRA_TOKEN\n              value: hunter2/' "$P/ingress.yaml"
sed -i 's|MCPQ_REDIS_URL=rediss://mcpq@|MCPQ_REDIS_URL=rediss://mcpq:hunter2@|' "$P/kustomization.yaml"
planted "a secret in plain text in the production overlay" \
    "env ACME_EXTRA_TOKEN has a literal value" "key MCPQ_REDIS_URL holds a URL with a password"

rm -rf "$TMP/k8s"
cp -r "$REPO/deploy/kubernetes" "$TMP/k8s"
B=$TMP/k8s/base
cat >>"$B/ingress-service.yaml" <<'YAML'
    - name: ops
      port: 9464
      targetPort: ops
      protocol: TCP
YAML
sed -i '/readinessProbe:/,/port: ops/ s/port: ops/port: http/' "$B/ingress-deployment.yaml"
planted "the ops port on the clients' Service, /readyz probed on the clients' port" \
    "Service/mcpq-ingress: exposes Deployment/mcpq-ingress's ops port 9464" \
    "readinessProbe is on port http, but /readyz is served on MCPQ_OPS_LISTEN's port 9464"

rm -rf "$TMP/k8s"
cp -r "$REPO/deploy/kubernetes" "$TMP/k8s"
sed -i '\|args: \["/usr/local/bin/mcpq-worker"\]|d' "$TMP/k8s/base/worker-deployment.yaml"
planted "a worker container running the image's default binary" \
    "container worker: runs the image's default command, not its binary: set args: [\"/usr/local/bin/mcpq-worker\"]"

rm -rf "$TMP/k8s"
cp -r "$REPO/deploy/kubernetes" "$TMP/k8s"
sed -i 's|^              mountPath: /etc/mcpq$|              mountPath: /etc/mcpq/mcpq.json\n              subPath: mcpq.json|' \
    "$TMP/k8s/base/ingress-deployment.yaml"
planted "the watched config file on a subPath mount" \
    "MCPQ_CONFIG_WATCH_MS is set but /etc/mcpq/mcpq.json is a subPath mount, which kubelet never updates"

[ "$FAILS" = 0 ]
