# shellcheck shell=bash
# Sourced by scripts (scripts/mcpq-local): `need PROGRAM...` returns when every PROGRAM is on
# PATH; otherwise it prints, for each missing one, "needs <program> (Debian package <package>,
# installed by scripts/deps.sh)" with its package from scripts/programs.txt, and exits 1, so a
# missing program stops the script at once instead of failing later or after a timeout. (C tests
# have tests/fixture.c fx_need; ctest runs every test through scripts/check-programs.py --run.)
need() {
    local prog pkg missing=0 map
    map=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/programs.txt
    for prog in "$@"; do
        command -v "$prog" >/dev/null && continue
        pkg=$(awk -v p="$prog" '$1 == p { print $2; exit }' "$map")
        printf '%s: needs %s (Debian package %s, installed by scripts/deps.sh)\n' \
            "$(basename "$0")" "$prog" "${pkg:-?}" >&2
        missing=1
    done
    [ "$missing" = 0 ] || exit 1
}
