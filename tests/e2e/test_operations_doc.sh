#!/usr/bin/env bash
# docs/operations.md against the code, run by ctest with MCPQ_BIN_DIR set to the build dir:
#   - every MCPQ_* setting it names is a setting of mcpq-ingress or mcpq-worker (their
#     --env-table), so a renamed or removed setting cannot linger in the operator's guide;
#   - every setting it gives a default for in the form "`MCPQ_X` (<value>...)" with a plain
#     number has that default in the table (ms/s values written as the table writes them);
#   - its alert table and deploy/kubernetes/base/prometheusrule.yaml name the same alerts.
set -euo pipefail

REPO=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
BIN_DIR=${MCPQ_BIN_DIR:-$REPO/build}
case $BIN_DIR in /*) ;; *) BIN_DIR=$REPO/$BIN_DIR ;; esac
DOC=$REPO/docs/operations.md
RULES=$REPO/deploy/kubernetes/base/prometheusrule.yaml
FAILS=0

ok() { printf 'ok - %s\n' "$*"; }
bad() { printf 'not ok - %s\n' "$*"; FAILS=$((FAILS + 1)); }

table=$("$BIN_DIR/mcpq-ingress" --env-table; "$BIN_DIR/mcpq-worker" --env-table)

missing=
for name in $(grep -o 'MCPQ_[A-Z0-9_]*' "$DOC" | sort -u); do
    grep -q "^| \`$name\` |" <<<"$table" || missing="$missing $name"
done
if [ -z "$missing" ]; then ok "every setting docs/operations.md names exists"; else
    bad "docs/operations.md names settings that do not exist:$missing"; fi

# "`MCPQ_X` (20,000)" or "(15 s)": compare the number with the table's default.
wrong=
while read -r name value; do
    def=$(grep "^| \`$name\` |" <<<"$table" | head -1 | awk -F'|' '{print $4}' | tr -d ' `')
    num=${value//,/}
    case $name in
        *_MS) case $value in *s) num=$((${num% s} * 1000)) ;; esac ;;
    esac
    num=${num% s}
    num=${num% KiB}
    case $name in *_LIMIT) [ "${value% KiB}" != "$value" ] && num=$((num * 1024)) ;; esac
    [ "$num" = "$def" ] || wrong="$wrong $name(doc $value, default $def)"
done < <(grep -o '`MCPQ_[A-Z0-9_]*` ([0-9][0-9,]*\( s\| KiB\)\?)' "$DOC" |
    sed 's/`\(MCPQ_[A-Z0-9_]*\)` (\(.*\))/\1 \2/')
if [ -z "$wrong" ]; then ok "the defaults docs/operations.md quotes are the defaults"; else
    bad "docs/operations.md quotes wrong defaults:$wrong"; fi

doc_alerts=$(grep -o '^| `Mcpq[A-Za-z0-9]*`' "$DOC" | tr -d '|` ' | sort -u)
rule_alerts=$(grep -o 'alert: *Mcpq[A-Za-z0-9]*' "$RULES" | sed 's/alert: *//' | sort -u)
if [ -n "$doc_alerts" ] && [ "$doc_alerts" = "$rule_alerts" ]; then
    ok "the alert table and prometheusrule.yaml name the same $(wc -l <<<"$doc_alerts") alerts"
else
    bad "alerts differ: doc [$(echo $doc_alerts)] rules [$(echo $rule_alerts)]"
fi

[ "$FAILS" = 0 ]
