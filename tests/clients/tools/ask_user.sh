#!/bin/sh
# An interactive exec tool (docs/tools.md, "Asking the user"; executor "interactive": true)
# for tests/clients/elicit.test.mjs: asks its caller one question through the exec line
# protocol and answers with what came back.
#
#   argv: /bin/sh tests/clients/tools/ask_user.sh elicit|sample|roots
#
# stdin: the envelope (one line), then the answer (one line: {"result": ...} or {"error": ...}).
# stdout: the question as `input {"method": ..., "params": ...}`, then the CallToolResult, whose
# structuredContent is {"answer": <the answer line>, "worker_pid": <the worker that ran it>,
# "job_id": ...}. With ASK_STATE_DIR set (the tool's env), `<pid> <worker pid> <job id>` is
# appended to $ASK_STATE_DIR/asked before it asks (the fault tests find the job and its worker
# there).
set -eu
kind=${1:-elicit}
IFS= read -r envelope || true
case $kind in
elicit)
    q='{"method":"elicitation/create","params":{"message":"Deploy build 42 to production?","requestedSchema":{"type":"object","properties":{"confirm":{"type":"boolean","title":"Deploy now?"},"approver":{"type":"string","title":"Your name"}},"required":["confirm","approver"]}}}' ;;
sample)
    q='{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"Name a colour for the release."}}],"maxTokens":20}}' ;;
roots)
    q='{"method":"roots/list","params":{}}' ;;
*)
    echo "ask_user.sh: unknown question kind '$kind'" >&2
    exit 2 ;;
esac
if [ -n "${ASK_STATE_DIR:-}" ]; then
    echo "$$ $PPID ${MCPQ_JOB_ID:-}" >>"$ASK_STATE_DIR/asked"
fi
printf 'input %s\n' "$q"
IFS= read -r answer || answer=null
[ -n "$answer" ] || answer=null
printf '{"content":[{"type":"text","text":"%s answered"}],"structuredContent":{"answer":%s,"worker_pid":%s,"job_id":"%s"}}\n' \
    "$kind" "$answer" "$PPID" "${MCPQ_JOB_ID:-}"
