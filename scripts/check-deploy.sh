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
#    then starts each mcpq container's real binary on its rendered settings and config file
#    (Kafka and Redis pointed at a closed loopback port): the binaries reject a bad MCPQ_*
#    value or config file at start-up, before they connect to anything;
#    every PrometheusRule's rule groups go through `promtool check rules`;
# 3. runs scripts/check-images.sh BUILD_DIR (the Dockerfile against ldd and dpkg).
#
# The production overlay is also checked with --no-plaintext-secrets (validate.mjs): an env
# var named *PASSWORD, *SECRET, *TOKEN or *KEY with a literal value, such a ConfigMap key, or a
# URL with a password in either fails. Files its settings name on a Secret volume that is not
# in the manifests get stand-ins for the start check (start_check).
#
# A missing tool is a failure, never a skip. Renders are kept in BUILD_DIR/deploy-render/.
# Ends with "deploy: N passed, M failed" (one per render, validation and the image check) and
# exits non-zero on any failure.
set -euo pipefail

REPO=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
BUILD_DIR=${1:-${MCPQ_BIN_DIR:-$REPO/build}}
BUILD_DIR=$(cd "$BUILD_DIR" && pwd)
KUBECTL=${KUBECTL:-kubectl}
K8S=${CHECK_DEPLOY_K8S:-$REPO/deploy/kubernetes}
OUT=${CHECK_DEPLOY_OUT:-$BUILD_DIR/deploy-render}

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
TOOLS=$("$REPO/deploy/kubernetes/tools/install.sh") || die "could not install the npm packages of deploy/kubernetes/tools"
cp "$REPO/deploy/kubernetes/tools/validate.mjs" "$TOOLS/validate.mjs" # resolves its imports from $TOOLS/node_modules
mkdir -p "$OUT"
"$BUILD_DIR/mcpq-ingress" --env-table >"$OUT/env-table.md"

# Starts the real binary of one mcpq container (a dir written by validate.mjs --dump-runs) with
# the container's settings and config file, but Kafka and Redis on a closed loopback port and
# its files under the run dir: it validates every MCPQ_* value and the config file (with the
# values of its *_env variables) at start-up and exits 2 on a bad one; once it logs that it
# listens (ingress) or started (worker), all of that passed, and it is stopped.
stop() { # pid: SIGTERM, then SIGKILL after 5 s
    local i
    kill "$1" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
        kill -0 "$1" 2>/dev/null || break
        sleep 0.05
    done
    kill -9 "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}
start_check() { # run_dir label
    local dir=$1 label=$2 bin env=() log pid i line redis_scheme=redis
    bin=$(cat "$dir/binary")
    log=$dir/start.log
    while IFS= read -r line; do
        case ${line%%=*} in
        # Redis at a closed port, but over TLS when the manifests say rediss:// (the TLS files
        # are only accepted with it).
        MCPQ_REDIS_URL) [ "${line#MCPQ_REDIS_URL=rediss://}" != "$line" ] && redis_scheme=rediss ;;
        MCPQ_KAFKA_BROKERS | MCPQ_LISTEN | MCPQ_FILES_DIR | MCPQ_CONFIG | MCPQ_READY_FILE) ;;
        # With the watch an ingress starts on a bad config file (and refuses it): off here, so
        # a bad file still stops it (docs/config-file.md, "Watching the file").
        MCPQ_CONFIG_WATCH_MS) env+=(MCPQ_CONFIG_WATCH_MS=0) ;;
        # The worker's metrics server and the ingress's ops listener: any free loopback port
        # (their format is checked by validate.mjs; the binary refuses a malformed one at
        # start-up all the same).
        MCPQ_METRICS_LISTEN) env+=(MCPQ_METRICS_LISTEN=127.0.0.1:0) ;;
        MCPQ_OPS_LISTEN) env+=(MCPQ_OPS_LISTEN=127.0.0.1:0) ;;
        *) env+=("$line") ;;
        esac
    done <"$dir/env"
    env+=(MCPQ_KAFKA_BROKERS=127.0.0.1:1 MCPQ_REDIS_URL=$redis_scheme://127.0.0.1:1/0
        MCPQ_LISTEN=127.0.0.1:0 MCPQ_FILES_DIR="$dir/files")
    # Files on a Secret volume the manifests do not hold (overlays/production's
    # /var/run/secrets/mcpq/...): stand-ins of the right kind in the run dir, so the binary
    # reads real files (a certificate for a *_CA_FILE or *_CERT_FILE, its key for a
    # *_TLS_KEY_FILE, an empty properties file, 32 random bytes in hex for anything else).
    if [ -s "$dir/secretfiles" ]; then
        mkdir -p "$dir/secrets"
        [ -f "$OUT/standin.crt" ] || openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=stand-in \
            -keyout "$OUT/standin.key" -out "$OUT/standin.crt" >/dev/null 2>&1 ||
            { echo "FAIL $label: openssl could not make a stand-in certificate"; return 1; }
        while IFS= read -r line; do
            local name=${line%%=*} f
            f="$dir/secrets/$name"
            case $name in
            *_CA_FILE | *_CERT_FILE) cp "$OUT/standin.crt" "$f" ;;
            *TLS_KEY_FILE) cp "$OUT/standin.key" "$f" ;;
            *_PROPERTIES) : >"$f" ;;
            *) openssl rand -hex 32 >"$f" ;;
            esac
            env+=("$name=$f")
        done <"$dir/secretfiles"
    fi
    if [ -f "$dir/mcpq.json" ]; then
        if [ -s "$dir/unresolved" ]; then
            echo "     $label: config file not loaded: $(tr '\n' ' ' <"$dir/unresolved")come from outside the manifests"
        else
            env+=(MCPQ_CONFIG="$dir/mcpq.json")
        fi
    fi
    env -i PATH="$PATH" "${env[@]}" "$BUILD_DIR/$bin" >"$log" 2>&1 &
    pid=$!
    for ((i = 0; i < 200; i++)); do
        if grep -qE '"msg":"(listening|worker started)"' "$log"; then
            stop "$pid"
            echo "ok   $label: $bin starts with these settings$([ -f "$dir/mcpq.json" ] && [ ! -s "$dir/unresolved" ] && echo " and config file")"
            return 0
        fi
        if ! kill -0 "$pid" 2>/dev/null; then
            wait "$pid" 2>/dev/null || true
            echo "FAIL $label: $bin refused to start:"
            grep -vE 'Connect to|kafka error|unreachable|Redis call failed' "$log" | head -n 5 | sed 's/^/       /'
            return 1
        fi
        sleep 0.05
    done
    stop "$pid"
    echo "FAIL $label: $bin neither started nor exited within 10 s (log: $log)"
    return 1
}

# name dir validate-args...
check() {
    local name=$1 dir=$2 rc=0 run
    shift 2
    if ! "$KUBECTL" kustomize "$dir" >"$OUT/$name.yaml" 2>"$OUT/$name.err"; then
        cat "$OUT/$name.err"
        result 1 "$name: kubectl kustomize ${dir#"$REPO"/}"
        return
    fi
    grep -v -e "^# Warning: 'bases' is deprecated" -e "^# Warning: 'patchesStrategicMerge' is deprecated" \
        "$OUT/$name.err" || true
    result 0 "$name: kubectl kustomize ${dir#"$REPO"/} ($(grep -c '^kind:' "$OUT/$name.yaml") objects)"
    rm -rf "${OUT:?}/$name.runs"
    node "$TOOLS/validate.mjs" --env-table "$OUT/env-table.md" --schemas "$REPO/schemas" \
        --label "$name" --dump-runs "$OUT/$name.runs" "$@" \
        "$OUT/$name.yaml" || rc=$?
    result "$rc" "$name: schemas and references"
    rc=0
    for run in "$OUT/$name.runs"/*/; do
        [ -d "$run" ] || continue
        start_check "${run%/}" "$name: $(basename "$run")" || rc=1
    done
    result "$rc" "$name: the binaries accept the settings and the config file"
    check_rules "$name"
}

# The alert rules of every PrometheusRule in a render, through `promtool check rules` (PromQL
# syntax, templates, durations). promtool comes with Debian's prometheus package, which
# scripts/deps.sh installs; outside CI a missing promtool skips this check with a note.
check_rules() { # name
    local name=$1 rc=0 f
    grep -q '^kind: PrometheusRule' "$OUT/$name.yaml" || return 0
    if ! command -v promtool >/dev/null; then
        if [ "${CI:-}" = true ]; then
            result 1 "$name: promtool check rules (promtool is missing; scripts/deps.sh installs Debian's prometheus)"
        else
            echo "     $name: promtool check rules skipped: no promtool (scripts/deps.sh installs it)"
        fi
        return 0
    fi
    rm -rf "${OUT:?}/$name.rules"
    mkdir -p "$OUT/$name.rules"
    (cd "$TOOLS" && node --input-type=module -e '
        import fs from "node:fs";
        import YAML from "yaml";
        const [render, dir] = process.argv.slice(1);
        for (const d of YAML.parseAllDocuments(fs.readFileSync(render, "utf8"))) {
            const o = d.toJS();
            if (o?.kind === "PrometheusRule")
                fs.writeFileSync(`${dir}/${o.metadata.name}.json`, JSON.stringify({ groups: o.spec?.groups ?? [] }));
        }' "$OUT/$name.yaml" "$OUT/$name.rules") || rc=1
    for f in "$OUT/$name.rules"/*.json; do
        [ -f "$f" ] || continue
        promtool check rules "$f" >"$f.out" 2>&1 || { rc=1; sed 's/^/     /' "$f.out"; }
    done
    result "$rc" "$name: promtool check rules ($(ls "$OUT/$name.rules"/*.json 2>/dev/null | wc -l) PrometheusRule)"
}

# CHECK_DEPLOY_K8S (default deploy/kubernetes), CHECK_DEPLOY_OUT (default
# BUILD_DIR/deploy-render) and CHECK_DEPLOY_ONLY (one overlay's name; then neither the base nor
# the images are checked) let tests/e2e/test_deploy.sh run the check on a copy with a planted
# mistake.
ONLY=${CHECK_DEPLOY_ONLY:-}
# The base alone has no Secret (each overlay brings or names its own) and untagged images.
[ -n "$ONLY" ] || check base "$K8S/base" --external Secret/mcpq-secrets
for overlay in "$K8S"/overlays/*/; do
    name=$(basename "$overlay")
    [ -z "$ONLY" ] || [ "$name" = "$ONLY" ] || continue
    args=(--require-image-tags)
    # The production Secrets are created outside git (deploy/kubernetes/README.md, "Secrets"),
    # and no secret may sit in plain text in its env or ConfigMaps.
    [ "$name" = production ] && args+=(--external Secret/mcpq-credentials
        --external Secret/mcpq-ingress-secrets --no-plaintext-secrets)
    check "$name" "$overlay" "${args[@]}"
done

if [ -z "$ONLY" ]; then
    rc=0
    bash "$REPO/scripts/check-images.sh" "$BUILD_DIR" || rc=$?
    result "$rc" "images: scripts/check-images.sh"
fi

echo
printf '  %s\n' "${RESULTS[@]}"
echo "deploy: $PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
