#!/usr/bin/env bash
# End-to-end test of the container image (scripts/image.sh, docs/production.md "Container
# image"), run by ctest with MCPQ_BIN_DIR set to the build dir:
#   builds the image from the binaries of MCPQ_BIN_DIR (or reuses it when they, the package
#   list and the mirrors are unchanged); starts redis-server and mcpq-devbroker on loopback on
#   this host, then an ingress container and a worker container of the image with podman
#   (host network, --read-only, --user 10001, the demo config deploy/local/mcpq.json mounted
#   read-only); through the ingress container: MCP initialize, then tools/call echo, whose
#   answer comes from the worker container. Asserts both containers' processes run as uid
#   10001, their root file system refuses writes, the image has no compiler or apt, and it is
#   under 100 MB with the ENTRYPOINT, CMD, USER, WORKDIR, ENV and EXPOSE of
#   deploy/docker/Dockerfile's image stage.
# A sanitizer build dir is skipped (exit 77: its binaries cannot go in an image).
# KEEP=1 keeps the state dir (the Redis and devbroker logs, the env file).
set -euo pipefail

REPO=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
BIN_DIR=${MCPQ_BIN_DIR:-$REPO/build}
case $BIN_DIR in /*) ;; *) BIN_DIR=$REPO/$BIN_DIR ;; esac
KEY=demo-key
STEP=start
TMP=
RPID=
BPID=
CTRS=()

log() { printf '# %s\n' "$*"; }
ok() { printf 'ok - %s\n' "$*"; }

if grep -q '^MCPQ_SANITIZE:BOOL=ON' "$BIN_DIR/CMakeCache.txt" 2>/dev/null; then
    echo "# skip: $BIN_DIR is a sanitizer build (the image takes the normal build's binaries)"
    exit 77
fi

show_state() {
    local c f
    for c in "${CTRS[@]+"${CTRS[@]}"}"; do
        echo "# --- podman logs $c"
        podman logs "$c" 2>&1 | tail -n 30 | sed 's/^/#   /' || true
    done
    for f in "$TMP"/*.log; do
        [ -f "$f" ] || continue
        echo "# --- tail of $f"
        tail -n 20 "$f" | sed 's/^/#   /'
    done
}

fail() {
    printf 'not ok - %s: %s\n' "$STEP" "$*"
    show_state
    exit 1
}

cleanup() {
    local rc=$? c
    for c in "${CTRS[@]+"${CTRS[@]}"}"; do
        podman rm --force --time 2 "$c" >/dev/null 2>&1 || true
    done
    for p in $BPID $RPID; do
        kill "$p" 2>/dev/null || true
    done
    for p in $BPID $RPID; do
        wait "$p" 2>/dev/null || true
    done
    if [ -n "$TMP" ]; then
        if [ "${KEEP:-0}" = 1 ] || [ "$rc" != 0 ]; then
            echo "# state kept in $TMP"
        else
            rm -rf "$TMP"
        fi
    fi
}
trap cleanup EXIT

[ "$(id -u)" = 0 ] || fail "needs root (podman, buildah and mmdebstrap as root)"
for tool in podman buildah mmdebstrap redis-server curl; do
    command -v "$tool" >/dev/null || fail "$tool is missing (scripts/deps.sh installs it)"
done

# ---------------------------------------------------------------- the image
STEP=build
t0=$SECONDS
BIN_DIR=$BIN_DIR bash "$REPO/scripts/image.sh" >"${TMPDIR:-/tmp}/mcpq-image-build.$$.log" 2>&1 || {
    tail -n 40 "${TMPDIR:-/tmp}/mcpq-image-build.$$.log" | sed 's/^/#   /'
    rm -f "${TMPDIR:-/tmp}/mcpq-image-build.$$.log"
    fail "scripts/image.sh failed"
}
grep '^image: ' "${TMPDIR:-/tmp}/mcpq-image-build.$$.log" | sed 's/^/# /'
rm -f "${TMPDIR:-/tmp}/mcpq-image-build.$$.log"
eval "$(BIN_DIR=$BIN_DIR bash "$REPO/scripts/image.sh" --print-env)"
# shellcheck source=/dev/null
. "$BIN_DIR/image/image.env"
ok "image $IMAGE_REF ready in $((SECONDS - t0)) s"
[ "$IMAGE_BYTES" -lt 100000000 ] || fail "image is $IMAGE_BYTES bytes, not under 100 MB"
ok "image size $IMAGE_BYTES bytes (< 100 MB), archive $IMAGE_ARCHIVE_BYTES bytes"
# The image is the one deploy/docker/Dockerfile builds with Docker: the same ENTRYPOINT, CMD,
# USER, WORKDIR, ENV and EXPOSE as its last stage (the image), compared without blanks.
STEP=config
last_stage=$(awk '/^FROM /{buf=""} {buf=buf $0 "\n"} END{printf "%s", buf}' "$REPO/deploy/docker/Dockerfile")
df() { sed -n "s/^$1 //p" <<<"$last_stage" | tr -d ' '; }
insp() { podman image inspect --format "$1" "$IMAGE_REF" | tr -d ' '; }
[ "$(insp '{{json .Config.Entrypoint}}')" = "$(df ENTRYPOINT)" ] || fail "ENTRYPOINT $(insp '{{json .Config.Entrypoint}}') is not the Dockerfile's $(df ENTRYPOINT)"
[ "$(insp '{{json .Config.Cmd}}')" = "$(df CMD)" ] || fail "CMD $(insp '{{json .Config.Cmd}}') is not the Dockerfile's $(df CMD)"
[ "$(insp '{{.Config.User}}')" = "$(df USER)" ] || fail "USER $(insp '{{.Config.User}}') is not the Dockerfile's $(df USER)"
[ "$(df USER)" = 10001:10001 ] || fail "the Dockerfile's USER is not 10001:10001"
[ "$(insp '{{.Config.WorkingDir}}')" = "$(df WORKDIR)" ] || fail "WORKDIR is not the Dockerfile's $(df WORKDIR)"
for e in $(df ENV); do
    insp '{{range .Config.Env}}{{.}}{{"\n"}}{{end}}' | grep -qxF "$e" || fail "ENV $e of the Dockerfile is not in the image"
done
for port in $(df EXPOSE); do
    insp '{{json .Config.ExposedPorts}}' | grep -qF "\"$port/tcp\"" || fail "EXPOSE $port of the Dockerfile is not in the image"
done
ok "image config as the Dockerfile's: ENTRYPOINT $(df ENTRYPOINT) CMD $(df CMD) USER $(df USER) ENV $(df ENV | tr '\n' ' ')EXPOSE $(df EXPOSE)"
[ -z "$(podman image inspect --format '{{.Config.Healthcheck}}' "$IMAGE_REF" | grep -v '<nil>' || true)" ] ||
    fail "image has a HEALTHCHECK"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/mcpq-image.XXXXXX")

free_port() {
    local p i
    for i in $(seq 1 100); do
        p=$((10000 + RANDOM % 22000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
            echo "$p"
            return
        fi
    done
    return 1
}

# ---------------------------------------------------------------- redis and the broker
STEP=dependencies
REDIS_PORT=$(free_port)
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$TMP" \
    >"$TMP/redis.log" 2>&1 </dev/null &
RPID=$!
"$BIN_DIR/mcpq-devbroker" >"$TMP/devbroker.log" 2>&1 </dev/null &
BPID=$!
BROKERS=
for ((i = 0; i < 200; i++)); do
    BROKERS=$(sed -n 's/^BOOTSTRAP //p' "$TMP/devbroker.log" | head -n1)
    [ -n "$BROKERS" ] && break
    kill -0 "$BPID" 2>/dev/null || fail "mcpq-devbroker exited"
    sleep 0.1
done
[ -n "$BROKERS" ] || fail "no BOOTSTRAP line from mcpq-devbroker in 20 s"
for ((i = 0; i < 100; i++)); do
    [ "$( (exec 3<>"/dev/tcp/127.0.0.1/$REDIS_PORT" && printf 'PING\r\n' >&3 && timeout 1 head -c 5 <&3) 2>/dev/null || true)" = +PONG ] && break
    sleep 0.1
done
ok "redis-server on 127.0.0.1:$REDIS_PORT, mcpq-devbroker at $BROKERS"

# ---------------------------------------------------------------- the containers
STEP=containers
PORT=$(free_port)
MPORT=$(free_port)
SECRET=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
cat >"$TMP/env" <<EOF
MCPQ_KAFKA_BROKERS=$BROKERS
MCPQ_REDIS_URL=redis://127.0.0.1:$REDIS_PORT/0
MCPQ_CONFIG=/etc/mcpq/mcpq.json
MCPQ_KAFKA_FETCH_WAIT_MS=5
MCPQ_JOB_SIGNING_KEY=$SECRET
MCPQ_FILES_SECRET=$SECRET
MCPQ_APP_SECRET_MIN_BYTES=1
MCPQ_WEBHOOK_ALLOW_PRIVATE=1
EOF
chmod 600 "$TMP/env"
run=(podman run --detach --network host --read-only --user 10001:10001
    --env-file "$TMP/env" --volume "$REPO/deploy/local/mcpq.json:/etc/mcpq/mcpq.json:ro")
# The files directory is a volume (an emptyDir or a shared PersistentVolumeClaim in Kubernetes).
install -d -o 10001 -g 10001 -m 0750 "$TMP/files"
ING=mcpq-test-ingress-$$
WRK=mcpq-test-worker-$$
CTRS=("$ING" "$WRK")
"${run[@]}" --name "$ING" --env MCPQ_LISTEN="127.0.0.1:$PORT" --env MCPQ_INSTANCE_ID=ingress-image \
    --volume "$TMP/files:/var/lib/mcpq/files" \
    "$IMAGE_REF" >/dev/null || fail "podman run (ingress) failed"
"${run[@]}" --name "$WRK" --env MCPQ_METRICS_LISTEN="127.0.0.1:$MPORT" --env MCPQ_WORKER_ID=worker-image \
    "$IMAGE_REF" mcpq-worker >/dev/null || fail "podman run (worker) failed"

ready() { [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$1")" = 200 ]; }
for ((i = 0; i < 300; i++)); do
    ready "http://127.0.0.1:$PORT/readyz" && ready "http://127.0.0.1:$MPORT/readyz" && break
    for c in "$ING" "$WRK"; do
        [ "$(podman inspect --format '{{.State.Running}}' "$c")" = true ] || fail "container $c stopped"
    done
    sleep 0.1
done
ready "http://127.0.0.1:$PORT/readyz" || fail "ingress container not ready (GET /readyz) in 30 s"
ready "http://127.0.0.1:$MPORT/readyz" || fail "worker container not ready (GET /readyz) in 30 s"
ok "ingress and worker containers ready"

# Every process of a container (tini as PID 1, and the mcpq binary it runs), seen from the
# host: its executable, then its real, effective, saved and file-system uids (no user
# namespace: host uids).
uids_of() {
    local pid p
    pid=$(podman inspect --format '{{.State.Pid}}' "$1")
    for p in "$pid" $(cat /proc/"$pid"/task/*/children 2>/dev/null); do
        printf '%s %s\n' "$(readlink /proc/"$p"/exe)" \
            "$(awk '/^Uid:/ { print $2, $3, $4, $5 }' /proc/"$p"/status)"
    done
}
for c in "$ING" "$WRK"; do
    procs=$(uids_of "$c")
    log "$c: $(tr '\n' ';' <<<"$procs")"
    [ "$(wc -l <<<"$procs")" -ge 2 ] || fail "$c: expected tini and an mcpq binary, got: $procs"
    while read -r line; do
        [[ $line =~ \ 10001\ 10001\ 10001\ 10001$ ]] || fail "$c: a process not running as uid 10001: $line"
    done <<<"$procs"
    grep -q "^/usr/local/bin/mcpq-$( [ "$c" = "$ING" ] && echo ingress || echo worker) " <<<"$procs" ||
        fail "$c: does not run its mcpq binary: $procs"
    out=$(podman exec "$c" /bin/sh -c 'touch /usr/local/bin/x 2>&1; touch /x 2>&1' || true)
    [[ $out == *Read-only* ]] || fail "$c: the root file system is writable: $out"
done
ok "both containers run every process as uid 10001 on a read-only root file system"
tools=$(podman exec "$ING" /bin/sh -c 'for t in cc gcc make apt-get apt; do command -v $t; done' || true)
[ -z "$tools" ] || fail "the image has build or package tools: $tools"
ok "no compiler, make or apt in the image"

# ---------------------------------------------------------------- MCP through the containers
STEP=mcp
URL=http://127.0.0.1:$PORT/mcp
H=(-H "Authorization: Bearer $KEY" -H 'Content-Type: application/json'
    -H 'Accept: application/json, text/event-stream')
init=$(curl -sS --max-time 10 -D "$TMP/init.headers" "${H[@]}" \
    -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test_image","version":"1"}}}' \
    "$URL") || fail "initialize: curl failed"
[[ $init == *'"protocolVersion":"2025-06-18"'* && $init == *'"serverInfo"'* ]] ||
    fail "initialize: unexpected answer: $init"
SID=$(sed -n 's/^[Mm][Cc][Pp]-[Ss]ession-[Ii][Dd]: *\([^[:space:]]*\).*/\1/p' "$TMP/init.headers")
[ -n "$SID" ] || fail "initialize: no Mcp-Session-Id header"
H+=(-H "Mcp-Session-Id: $SID" -H 'MCP-Protocol-Version: 2025-06-18')
code=$(curl -sS --max-time 10 -o /dev/null -w '%{http_code}' "${H[@]}" \
    -d '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$URL")
[ "$code" = 202 ] || fail "notifications/initialized: HTTP $code"
ok "initialize through the ingress container (session $SID)"

TEXT="hello from the image $$"
res=$(curl -sS --max-time 30 "${H[@]}" \
    -d "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"$TEXT\"}}}" \
    "$URL") || fail "tools/call echo: curl failed"
[[ $res == *'"result"'* && $res == *"$TEXT"* ]] || fail "tools/call echo: unexpected answer: $res"
[[ $res != *'"isError":true'* ]] || fail "tools/call echo: isError: $res"
ok "tools/call echo through the ingress and worker containers: $(cut -c1-160 <<<"$res")"
