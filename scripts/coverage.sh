#!/usr/bin/env bash
# make coverage: the suite's line and branch coverage of the product code (common/, ingress/,
# worker/), measured by gcovr over a --coverage build (MCPQ_COVERAGE=ON) in BUILD_COV
# (default build-cov).
#
#   scripts/coverage.sh [ctest -R regex]
#
# With a regex only those ctest tests run (a quick look at one area); without, every ctest
# test of the build (the shared acceptance suite is not run: it drives the binaries of the
# normal build). Prints gcovr's summary and writes the per-file table to
# BUILD_COV/coverage.txt. The bar (docs/architecture.md, "Tests"): 90% of lines, 77% of
# branches; this script reports, it does not fail on the figures.
set -euo pipefail
REPO=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
cd "$REPO"
source scripts/need.sh
need gcovr
BUILD_COV=${BUILD_COV:-build-cov}
JOBS=${JOBS:-2}
cmake -S . -B "$BUILD_COV" -DMCPQ_WERROR=ON -DMCPQ_COVERAGE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$BUILD_COV" -j "$JOBS"
find "$BUILD_COV" -name '*.gcda' -delete
args=(--test-dir "$BUILD_COV" -j "$JOBS")
[ $# -gt 0 ] && args+=(-R "$1")
ctest "${args[@]}" || echo "coverage: some tests failed; the figures count what ran" >&2
gcovr -r . --object-directory "$BUILD_COV" --filter 'common/' --filter 'ingress/' \
    --filter 'worker/' --exclude-unreachable-branches --exclude-throw-branches --gcov-ignore-parse-errors \
    --txt "$BUILD_COV/coverage.txt" --print-summary
