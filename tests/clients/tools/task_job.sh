#!/bin/sh
# exec tool `task_job` (mode "task"): the MCP Tasks target. Reports progress, sleeps `seconds`
# (default 1), then answers a text result, or an isError result when `fail` is true (the
# tool's own error, which the 2026-07-28 tasks extension reports as `completed`).
env=$(cat)
seconds=$(printf '%s\n' "$env" | sed -n 's/.*"seconds"[[:space:]]*:[[:space:]]*\([0-9][0-9]*\).*/\1/p' | head -n 1)
case $env in
*'"fail":true'* | *'"fail": true'*) fail=1 ;;
*) fail=0 ;;
esac
echo "progress 0 1 working for ${seconds:-1} s" >&2
sleep "${seconds:-1}"
if [ "$fail" = 1 ]; then
    printf '%s\n' '{"content":[{"type":"text","text":"task_job failed as asked"}],"isError":true}'
else
    echo "task_job done after ${seconds:-1} s"
fi
