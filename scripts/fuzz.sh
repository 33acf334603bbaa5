#!/usr/bin/env bash
# Builds the libFuzzer drivers (tests/fuzz/fuzz_<name>.c) with clang and -DMCPQ_FUZZ=ON in
# $BUILD_FUZZ (default build-fuzz) and runs them one after the other, each for SECONDS on a
# fresh copy of its seed corpus (tests/fuzz/corpus/<name> -> $BUILD_FUZZ/fuzz/corpus/<name>),
# so the inputs libFuzzer adds never land in the repository. `make fuzz` calls it.
#
#   scripts/fuzz.sh [SECONDS] [NAME ...]      (default: 600 seconds, every driver)
#
# tests/fuzz/<name>.dict, when present, is passed as the libFuzzer dictionary. Installs clang
# and libclang-rt-14-dev (libFuzzer) with apt-get when clang is missing.
# Per driver it prints libFuzzer's final lines ("Done N runs in S second(s)" and the last
# "#N DONE cov: ..." status line); the full log is $BUILD_FUZZ/fuzz/<name>.log and a crash,
# leak, timeout or out-of-memory input is written to $BUILD_FUZZ/fuzz/artifacts/<name>/.
# FUZZ_TIMEOUT (seconds per input, default 10) and FUZZ_ARGS (extra libFuzzer flags) tune
# the runs. Exits non-zero when a driver found something.
set -euo pipefail

cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

RUN_SECONDS=${1:-${FUZZ_SECONDS:-600}}
if [ $# -gt 0 ]; then
  shift
fi
case $RUN_SECONDS in
  '' | *[!0-9]*)
    echo "usage: scripts/fuzz.sh [SECONDS] [NAME ...]" >&2
    exit 2
    ;;
esac
BUILD=${BUILD_FUZZ:-build-fuzz}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
TIMEOUT=${FUZZ_TIMEOUT:-10}

# libFuzzer comes with clang's runtime libraries; only this target needs them, so they are
# not in scripts/deps.sh.
if ! command -v clang >/dev/null; then
  echo "fuzz: installing clang libclang-rt-14-dev" >&2
  SUDO=
  if [ "$(id -u)" != 0 ]; then
    SUDO=sudo
  fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends clang libclang-rt-14-dev >/dev/null
  echo "fuzz: done" >&2
fi

names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for src in tests/fuzz/fuzz_*.c; do
    n=${src##*/fuzz_}
    names+=("${n%.c}")
  done
fi
targets=()
for n in "${names[@]}"; do
  if [ ! -f "tests/fuzz/fuzz_$n.c" ]; then
    echo "fuzz: no driver tests/fuzz/fuzz_$n.c" >&2
    exit 2
  fi
  targets+=("fuzz-$n")
done

CC=clang cmake -S . -B "$BUILD" -DMCPQ_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
# (Without make's variables: under `make fuzz` the nested make would print every directory.)
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL cmake --build "$BUILD" -j "$JOBS" --target "${targets[@]}"

failed=()
for n in "${names[@]}"; do
  work=$BUILD/fuzz
  corpus=$work/corpus/$n
  artifacts=$work/artifacts/$n
  log=$work/$n.log
  rm -rf "$corpus" "$artifacts"
  mkdir -p "$corpus" "$artifacts"
  cp -R "tests/fuzz/corpus/$n/." "$corpus/"
  echo "fuzz: $n for ${RUN_SECONDS}s ($log)"
  dict=()
  if [ -f "tests/fuzz/$n.dict" ]; then
    dict=(-dict="tests/fuzz/$n.dict")
  fi
  rc=0
  # shellcheck disable=SC2086 # FUZZ_ARGS is a list of flags
  "$BUILD/fuzz-$n" -max_total_time="$RUN_SECONDS" -timeout="$TIMEOUT" -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "${dict[@]}" ${FUZZ_ARGS:-} "$corpus" >"$log" 2>&1 || rc=$?
  grep -E '^#[0-9]+[[:space:]]+DONE ' "$log" | tail -n 1 | sed "s/^/fuzz: $n: /" || true
  grep -E '^Done [0-9]+ runs in ' "$log" | tail -n 1 | sed "s/^/fuzz: $n: /" || true
  if [ "$rc" != 0 ] || [ -n "$(ls -A "$artifacts")" ]; then
    echo "fuzz: $n FAILED (exit $rc); see $log and $artifacts/" >&2
    grep -E 'ERROR: |FUZZ_CHECK|SUMMARY: |runtime error' "$log" | head -n 5 >&2 || true
    failed+=("$n")
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: found something in: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: ${#names[@]} driver(s), nothing found"
