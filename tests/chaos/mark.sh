#!/bin/sh
# The chaos campaign's tool (tests/chaos/chaos.py): records that it ran (a marker file per
# execution: $CHAOS_MARKS/<op>.<job id>), waits arguments.ms milliseconds, and answers with
# its op id, so the checker can count executions and tell whose result a client got.
env=$(cat)
op=$(printf '%s' "$env" | sed -n 's/.*"op":"\([A-Za-z0-9_-]*\)".*/\1/p')
ms=$(printf '%s' "$env" | sed -n 's/.*"ms":\([0-9]*\).*/\1/p')
[ -n "$op" ] || { echo "no op" >&2; exit 2; }
: >"$CHAOS_MARKS/$op.$MCPQ_JOB_ID"
[ -n "$ms" ] && [ "$ms" -gt 0 ] && sleep "$(awk "BEGIN{print $ms/1000}")"
printf 'done %s\n' "$op"
