#!/usr/bin/env bash
# Citations in the repository point inside it, run by ctest (no binaries needed):
#   - no tracked file cites SPEC, the product specification kept outside this repository: a
#     newcomer who clones the repository cannot follow such a citation; the contract it stood
#     for is in docs/ (docs/README.md lists the pages); nor the public seed documents it was
#     built from ("seed 003"), which are not in the repository either;
#   - every docs/<page>.md a tracked file names exists, so a renamed or removed page cannot
#     leave dangling pointers behind;
#   - every section a tracked file cites (README "Two commands", docs/kafka.md, "Topics") is a
#     heading of that page (scripts/check-doc-sections.py), so moving or renaming a section
#     cannot either.
# Files under node_modules are not looked at.
set -euo pipefail

REPO=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
FAILS=0

ok() { printf 'ok - %s\n' "$*"; }
bad() { printf 'not ok - %s\n' "$*"; FAILS=$((FAILS + 1)); }

# Files that still cite SPEC because another engineer is rewriting them now (git pathspec
# globs). The lead empties this list once that work is merged.
SPEC_CITATIONS_LEFT_TO_REWRITE=()
# Pages that files already cite but nobody has written yet. The lead empties this list when
# they are written (or the citations go).
DOCS_PAGES_NOT_WRITTEN_YET=()

if ! git -C "$REPO" rev-parse --git-dir >/dev/null 2>&1; then
    echo "1..0 # SKIP not a git checkout: no list of tracked files"
    exit 77 # skipped (SKIP_RETURN_CODE, CMakeLists.txt)
fi

spec=(':(exclude,glob)**/node_modules/**' ':(exclude)tests/e2e/test_doc_citations.sh')
for p in "${SPEC_CITATIONS_LEFT_TO_REWRITE[@]}"; do spec+=(":(exclude,glob)$p"); done
cites=$(git -C "$REPO" grep -InE '(^|[^A-Za-z0-9_])SPEC([^A-Za-z0-9_]|$)' -- . "${spec[@]}" ||
    true)
if [ -z "$cites" ]; then ok "no tracked file cites SPEC (outside the files left to rewrite)"; else
    bad "these lines cite SPEC, a document outside the repository; point at docs/ instead:"
    sed 's/^/  /' <<<"$cites"
fi

seeds=$(git -C "$REPO" grep -InEi '(^|[^A-Za-z0-9_])seeds? [0-9]{3}|seed-[0-9]{3}' -- . \
    ':(exclude)tests/e2e/test_doc_citations.sh' || true)
if [ -z "$seeds" ]; then ok "no tracked file cites the seed documents kept outside the repository"; else
    bad "these lines cite a seed document, which is not in the repository; name the behaviour or a docs/ page:"
    sed 's/^/  /' <<<"$seeds"
fi

dangling=
while IFS=: read -r file page; do
    [ -n "$page" ] || continue
    [ -f "$REPO/$page" ] && continue
    for p in "${DOCS_PAGES_NOT_WRITTEN_YET[@]}"; do [ "$p" = "$page" ] && continue 2; done
    dangling="$dangling  $file: $page"$'\n'
done < <(git -C "$REPO" grep -IoE 'docs/[a-z-]*\.md' -- . ':(exclude,glob)**/node_modules/**' |
    sort -u)
if [ -z "$dangling" ]; then ok "every docs/ page a tracked file names exists"; else
    bad "these files name docs/ pages that do not exist:"
    printf '%s' "$dangling"
fi

if sections=$(python3 "$REPO/scripts/check-doc-sections.py" "$REPO"); then
    ok "$(tail -n1 <<<"$sections")"
else
    bad "these citations name sections their page does not have:"
    sed 's/^/  /' <<<"$sections"
fi

[ "$FAILS" -eq 0 ]
