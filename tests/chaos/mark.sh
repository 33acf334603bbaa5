#!/bin/sh
# The chaos campaign's tool (tests/chaos/chaos.py): records that it ran, one marker file per
# execution ($CHAOS_MARKS/<op>.<job id>.<run>, where <run> is this execution's own id: its pid
# and the time in ns), waits arguments.ms milliseconds, and answers `done <op> <run>`. So the
# checker counts every execution, a redelivered job included (its job id is the same, its run
# is not), tells whose result a client got and which execution gave it, and a repeat that ran
# the tool again answers differently from the first.
env=$(cat)
op=$(printf '%s' "$env" | sed -n 's/.*"op":"\([A-Za-z0-9_-]*\)".*/\1/p')
ms=$(printf '%s' "$env" | sed -n 's/.*"ms":\([0-9]*\).*/\1/p')
[ -n "$op" ] || { echo "no op" >&2; exit 2; }
run="$$-$(date +%s%N)"
: >"$CHAOS_MARKS/$op.$MCPQ_JOB_ID.$run"
[ -n "$ms" ] && [ "$ms" -gt 0 ] && sleep "$(awk "BEGIN{print $ms/1000}")"
printf 'done %s %s\n' "$op" "$run"
