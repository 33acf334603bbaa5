#!/usr/bin/env bash
# make install and --version (docs/operations.md, "Installing on a host (systemd)"), run by
# ctest with MCPQ_BIN_DIR set to the build dir; installs that build without rebuilding it:
#   make install INSTALL_NO_BUILD=1 BUILD=$MCPQ_BIN_DIR DESTDIR=<tmp> PREFIX=/opt/mcpq
# and checks that
#   - the files land where the doc says, and nothing outside DESTDIR/PREFIX;
#   - every binary the install ships answers --version (exit 0, even with a bad setting in the
#     environment and no Kafka named) with "<name> <git describe --tags --always --dirty>"
#     (the project version outside a git checkout) and the librdkafka, libmicrohttpd (ingress
#     and worker), hiredis and OpenSSL versions this machine has; its --help names --version;
#   - the systemd units start the installed binaries with /etc/mcpq/mcpq.env, stop them with
#     SIGTERM and a TimeoutStopSec above the drain the env example configures (read back with
#     --print-config, which also validates the example), and pass `systemd-analyze verify`
#     without a word (paths moved into DESTDIR, as the binaries are not at /opt/mcpq here);
#   - every MCPQ_* name of the env example is a real setting.
set -euo pipefail

REPO=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
BIN_DIR=${MCPQ_BIN_DIR:-$REPO/build}
case $BIN_DIR in /*) ;; *) BIN_DIR=$REPO/$BIN_DIR ;; esac
PREFIX=/opt/mcpq
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
DEST=$TMP/root
ROOT=$DEST$PREFIX
FAILS=0

ok() { printf 'ok - %s\n' "$*"; }
bad() { printf 'not ok - %s\n' "$*"; FAILS=$((FAILS + 1)); }

if ! make -C "$REPO" --no-print-directory install INSTALL_NO_BUILD=1 BUILD="$BIN_DIR" \
    DESTDIR="$DEST" PREFIX="$PREFIX" >"$TMP/install.log" 2>&1; then
    cat "$TMP/install.log"
    bad "make install failed"
    exit 1
fi
ok "make install DESTDIR=... PREFIX=$PREFIX"

# --- where the files land --------------------------------------------------------------------
missing=
for f in bin/mcpq-ingress bin/mcpq-worker bin/mcpq-devbroker \
    lib/systemd/system/mcpq-ingress.service lib/systemd/system/mcpq-worker.service \
    lib/systemd/system/mcpq-worker@.service share/mcpq/mcpq.env.example share/mcpq/mcpq.acl \
    share/doc/mcpq/LICENSE share/doc/mcpq/CHANGELOG.md share/doc/mcpq/docs/operations.md; do
    [ -f "$ROOT/$f" ] || missing="$missing $f"
done
if [ -z "$missing" ]; then ok "every documented file is under PREFIX"; else bad "missing:$missing"; fi
outside=$(cd "$DEST" && find . -mindepth 1 -not -path ./opt -not -path "./opt/mcpq" -not -path "./opt/mcpq/*")
if [ -z "$outside" ]; then ok "nothing outside DESTDIR/PREFIX"; else bad "outside PREFIX: $outside"; fi

# --- --version of every shipped binary -------------------------------------------------------
if git -C "$REPO" rev-parse --show-toplevel >/dev/null 2>&1 && [ -e "$REPO/.git" ]; then
    want=$(git -C "$REPO" describe --tags --always --dirty)
else
    want=$(sed -n 's/^project(mcpq VERSION \([^ ]*\) .*/\1/p' "$REPO/CMakeLists.txt")
fi
if grep -q "^MCPQ_VERSION:STRING=." "$BIN_DIR/CMakeCache.txt"; then # -DMCPQ_VERSION= wins
    want=$(sed -n 's/^MCPQ_VERSION:STRING=//p' "$BIN_DIR/CMakeCache.txt")
fi
lib_version() { pkg-config --modversion "$1"; }
shipped=$(grep -o "^$PREFIX/bin/[^/]*$" "$BIN_DIR/install_manifest.txt" | sed 's#.*/##' | sort)
[ "$(echo $shipped)" = "mcpq-devbroker mcpq-ingress mcpq-worker" ] ||
    bad "the install ships [$(echo $shipped)], not the three binaries the doc names"
for b in $shipped; do
    out=$(env MCPQ_THREADS=not-a-number MCPQ_KAFKA_BROKERS= "$ROOT/bin/$b" --version 2>&1) ||
        { bad "$b --version exited $?: $out"; continue; }
    first=$(head -1 <<<"$out")
    [ "$first" = "$b $want" ] || { bad "$b --version says \"$first\", want \"$b $want\" (rebuild?)"; continue; }
    libs="librdkafka:rdkafka hiredis:hiredis OpenSSL:openssl"
    [ "$b" = mcpq-devbroker ] || libs="$libs libmicrohttpd:libmicrohttpd"
    wrong=
    for l in $libs; do
        line="  ${l%%:*} $(lib_version "${l#*:}")"
        grep -qxF -e "$line" -e "$line (compiled against; hiredis 0.14 has no run-time version call)" \
            <<<"$out" || wrong="$wrong [$line]"
    done
    if [ -n "$wrong" ]; then bad "$b --version lacks$wrong in: $out"; continue; fi
    "$ROOT/bin/$b" --help | grep -q -- '--version' || { bad "$b --help does not name --version"; continue; }
    ok "$b --version: $(tr '\n' ' ' <<<"$out" | tr -s ' ')"
done

# --- the systemd units -----------------------------------------------------------------------
drain() { # binary: MCPQ_DRAIN_DELAY_MS + MCPQ_SHUTDOWN_GRACE_MS of the env example, in ms
    env -i PATH=/usr/bin:/bin bash -c 'set -a; . "$1"; set +a; "$2" --print-config' _ \
        "$ROOT/share/mcpq/mcpq.env.example" "$ROOT/bin/$1" |
        awk -F= '/^MCPQ_(DRAIN_DELAY|SHUTDOWN_GRACE)_MS=/ {s += $2} END {print s + 0}'
}
for unit in mcpq-ingress.service mcpq-worker.service mcpq-worker@.service; do
    f=$ROOT/lib/systemd/system/$unit
    b=${unit%%[.@]*}
    exec_start=$(sed -n 's/^ExecStart=//p' "$f")
    stop_s=$(sed -n 's/^TimeoutStopSec=\([0-9]*\)s$/\1/p' "$f")
    budget=$(drain "$b")
    if [ "$exec_start" != "$PREFIX/bin/$b" ] || [ ! -x "$DEST$exec_start" ]; then
        bad "$unit: ExecStart=$exec_start, not the installed $PREFIX/bin/$b"
    elif grep -q '@[A-Z_]*@' "$f"; then
        bad "$unit: a placeholder is left: $(grep '@[A-Z_]*@' "$f")"
    elif ! grep -qx 'EnvironmentFile=/etc/mcpq/mcpq.env' "$f" || ! grep -qx 'KillSignal=SIGTERM' "$f"; then
        bad "$unit: no EnvironmentFile=/etc/mcpq/mcpq.env or KillSignal=SIGTERM"
    elif [ -z "$stop_s" ] || [ "$budget" = 0 ] || [ $((stop_s * 1000)) -le $((budget + 5000)) ]; then
        bad "$unit: TimeoutStopSec=${stop_s}s does not cover the drain of the env example (${budget} ms + 5 s)"
    else
        ok "$unit: ExecStart=$exec_start, TimeoutStopSec=${stop_s}s > ${budget} ms drain + 5 s"
    fi
done
command -v systemd-analyze >/dev/null || { bad "systemd-analyze is missing (scripts/deps.sh installs systemd)"; exit 1; }
mkdir -p "$TMP/verify"
for f in "$ROOT"/lib/systemd/system/*.service; do
    sed "s#^ExecStart=$PREFIX/#ExecStart=$ROOT/#" "$f" >"$TMP/verify/$(basename "$f")"
done
cp "$TMP/verify/mcpq-worker@.service" "$TMP/verify/mcpq-worker@1.service"
units=("$TMP"/verify/*.service)
if said=$(cd "$TMP/verify" && systemd-analyze verify "${units[@]}" 2>&1) && [ -z "$said" ]; then
    ok "systemd-analyze verify: ${#units[@]} units, no warning"
else
    bad "systemd-analyze verify: $said"
fi
for u in mcpq-ingress.service mcpq-worker.service; do
    exposure=$(systemd-analyze security --offline=yes "$TMP/verify/$u" 2>&1 | sed -n 's/.*Overall exposure level for [^:]*: //p')
    echo "# $u exposure (systemd-analyze security): $exposure"
done

# --- the env example names real settings -----------------------------------------------------
table=$("$ROOT/bin/mcpq-ingress" --env-table)
unknown=
for name in $(grep -o 'MCPQ_[A-Z0-9_]*' "$ROOT/share/mcpq/mcpq.env.example" | sort -u); do
    grep -q "^| \`$name\` |" <<<"$table" || unknown="$unknown $name"
done
if [ -z "$unknown" ]; then ok "every MCPQ_* name of mcpq.env.example is a setting"; else
    bad "mcpq.env.example names settings that do not exist:$unknown"; fi

[ "$FAILS" = 0 ]
