#!/usr/bin/env bash
# What the end-to-end tests of documents share (sourced, not run): the repository and binaries,
# a temporary dir removed on success, process groups stopped on exit, `fail` with log tails,
# free loopback ports, the fenced blocks of README.md and docs/ pages, polling. The sourcing test sets STEP.
REPO=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
BIN_DIR=${MCPQ_BIN_DIR:-$REPO/build}
case $BIN_DIR in /*) ;; *) BIN_DIR=$REPO/$BIN_DIR ;; esac
TMP=$(mktemp -d "${TMPDIR:-/tmp}/mcpq-readme.XXXXXX")
PIDS=()
STEP=start

fail() {
    printf 'not ok - %s: %s\n' "$STEP" "$*"
    for f in "$TMP"/*.out "$TMP"/*.err "$TMP"/state/*.log; do
        [ -f "$f" ] || continue
        echo "# --- tail of $f"
        tail -n 20 "$f" | sed 's/^/#   /'
    done
    exit 1
}

cleanup() {
    local rc=$? p i
    for p in "${PIDS[@]}"; do
        kill -TERM -- "-$p" 2>/dev/null || true
    done
    for p in "${PIDS[@]}"; do # the launcher stops its stack within 20 s
        for ((i = 0; i < 200; i++)); do
            kill -0 "$p" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL -- "-$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    if [ "${KEEP:-0}" = 1 ] || { [ "$rc" != 0 ] && [ "$rc" != 77 ]; }; then # 77: skipped
        echo "# state kept in $TMP"
    else
        rm -rf "$TMP"
    fi
}
trap cleanup EXIT

# need_promtool: returns when promtool is on PATH; without it fails under CI=true and otherwise
# ends the test as skipped, exit 77 (promtool comes with Debian's prometheus package,
# scripts/deps.sh).
need_promtool() {
    command -v promtool >/dev/null && return 0
    [ "${CI:-}" = true ] && fail "promtool is missing (scripts/deps.sh installs Debian's prometheus)"
    echo "ok - # SKIP no promtool (scripts/deps.sh installs Debian's prometheus)"
    exit 77
}

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

# The body of the first fenced block in README.md opened with ```$1 after the line "$2"; a
# fence indented (inside a list item) has that indentation removed from its lines.
readme_block() { doc_block README.md "$@"; }

# The same in another file of the repository: doc_block docs/api.md sh 'admin-walkthrough'.
doc_block() {
    local file=$1
    shift
    awk -v lang="$1" -v after="$2" '
        index($0, after) { seen = 1 }
        seen && !inside && match($0, /^ */) && substr($0, RLENGTH + 1) == "```" lang {
            inside = 1; indent = RLENGTH; next
        }
        inside && substr($0, indent + 1) == "```" { exit }
        inside { print substr($0, indent + 1) }
    ' "$REPO/$file"
}

wait_for() { # seconds command...
    local n=$1 i
    shift
    for ((i = 0; i < n * 10; i++)); do
        "$@" && return 0
        sleep 0.1
    done
    return 1
}

listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }


# Starts scripts/mcpq-local (arguments added to --bin-dir/--port/--state-dir) and waits for
# READY; sets PORT.
start_stack() {
    PORT=$(free_port)
    mkdir -p "$TMP/state"
    setsid "$REPO/scripts/mcpq-local" --bin-dir "$BIN_DIR" --port "$PORT" --state-dir "$TMP/state" \
        "$@" >"$TMP/launcher.out" 2>"$TMP/launcher.err" </dev/null &
    PIDS+=($!)
    wait_for 120 grep -q '^READY ' "$TMP/launcher.out" || fail "the stack did not start"
}
