#!/usr/bin/env bash
# docs/configuration.md against the code, run by ctest with MCPQ_BIN_DIR set to the build dir:
# its settings table must be exactly what the settings table in common/settings.c prints
# (scripts/config-doc.sh --check), so a setting added, renamed, re-defaulted or re-described in
# the code fails here until `make docs` rewrites the doc. Then a planted change must be caught:
# a copy of the doc with one default altered fails the same check.
set -euo pipefail

REPO=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
BIN_DIR=${MCPQ_BIN_DIR:-$REPO/build}
case $BIN_DIR in /*) ;; *) BIN_DIR=$REPO/$BIN_DIR ;; esac

bash "$REPO/scripts/config-doc.sh" --check "$BIN_DIR"

# The check must notice a doc that drifted: the same script on a copy of the repository's
# docs/ and scripts/ with MCPQ_PAGE_SIZE's default changed in the doc.
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$TMP/docs" "$TMP/scripts"
cp "$REPO/scripts/config-doc.sh" "$TMP/scripts/"
sed 's/^\(| `MCPQ_PAGE_SIZE` | `--page-size` | \)`[0-9]*`/\1`7`/' "$REPO/docs/configuration.md" \
    >"$TMP/docs/configuration.md"
cmp -s "$REPO/docs/configuration.md" "$TMP/docs/configuration.md" &&
    { echo "not ok - could not plant a wrong default for MCPQ_PAGE_SIZE"; exit 1; }
if bash "$TMP/scripts/config-doc.sh" --check "$BIN_DIR" >"$TMP/out" 2>&1; then
    echo "not ok - a wrong default in the doc was not caught"
    exit 1
fi
grep -q 'MCPQ_PAGE_SIZE' "$TMP/out" || { echo "not ok - the diff does not name the setting"; exit 1; }
echo "ok - a wrong default in the doc is caught"
