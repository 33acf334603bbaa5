#!/bin/sh
# Interactive exec tools (docs/tools.md, "Asking the user"; executor "interactive": true) that
# ask their caller one question through the exec line protocol and answer with what came back:
#
#   /bin/sh tests/clients/tools/ask_user.sh KIND
#
#   elicit, sample, roots    tests/clients/elicit.test.mjs: an elicitation (confirm, approver),
#                            a sampling request, roots/list
#   test_elicitation         the MCP conformance fixtures of those names (mcpq-clients.json):
#   test_sampling            the scenarios tools-call-elicitation (the `message` argument),
#   test_elicitation_sep1034_defaults   tools-call-sampling (the `prompt` argument),
#   test_elicitation_sep1330_enums      elicitation-sep1034-defaults, elicitation-sep1330-enums
#
# stdin: the envelope (one line), then the answer (one line: {"result": ...} or {"error": ...}).
# stdout: the question as `input {"method": ..., "params": ...}`, then a CallToolResult: a text
# block "<label>: <the answer line>" and structuredContent {"answer": <the answer line>,
# "worker_pid": <the worker that ran it>, "job_id": ...}. With ASK_STATE_DIR set (the tool's
# env), `<pid> <worker pid> <job id>` is appended to $ASK_STATE_DIR/asked before it asks (the
# fault tests find the job and its worker there).
set -eu
kind=${1:-elicit}
IFS= read -r envelope || true

# A string argument as the envelope spells it (a JSON string's body: its escapes stay valid
# JSON when printed back inside quotes), or $2 when absent.
argument() {
    v=$(printf '%s' "$envelope" | sed -n "s/.*\"arguments\":{[^}]*\"$1\":\"\\(\\([^\"\\\\]\\|\\\\.\\)*\\)\".*/\\1/p")
    printf '%s' "${v:-$2}"
}

case $kind in
elicit)
    label='elicit answered'
    q='{"method":"elicitation/create","params":{"message":"Deploy build 42 to production?","requestedSchema":{"type":"object","properties":{"confirm":{"type":"boolean","title":"Deploy now?"},"approver":{"type":"string","title":"Your name"}},"required":["confirm","approver"]}}}' ;;
sample)
    label='sample answered'
    q='{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"Name a colour for the release."}}],"maxTokens":20}}' ;;
roots)
    label='roots answered'
    q='{"method":"roots/list","params":{}}' ;;
test_elicitation)
    label='User response'
    q='{"method":"elicitation/create","params":{"message":"'$(argument message 'Please provide your information')'","requestedSchema":{"type":"object","properties":{"username":{"type":"string","description":"The user'"'"'s response"},"email":{"type":"string","description":"The user'"'"'s email address"}},"required":["username","email"]}}}' ;;
test_sampling)
    label='LLM response'
    q='{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"'$(argument prompt 'Hello')'"}}],"maxTokens":100}}' ;;
test_elicitation_sep1034_defaults)
    label='Elicitation completed'
    q='{"method":"elicitation/create","params":{"message":"Please review and update the form fields with defaults","requestedSchema":{"type":"object","properties":{"name":{"type":"string","description":"User name","default":"John Doe"},"age":{"type":"integer","description":"User age","default":30},"score":{"type":"number","description":"User score","default":95.5},"status":{"type":"string","description":"User status","enum":["active","inactive","pending"],"default":"active"},"verified":{"type":"boolean","description":"Verification status","default":true}}}}}' ;;
test_elicitation_sep1330_enums)
    label='Elicitation completed'
    q='{"method":"elicitation/create","params":{"message":"Please select options from the enum fields","requestedSchema":{"type":"object","properties":{"untitledSingle":{"type":"string","description":"Select one option","enum":["option1","option2","option3"]},"titledSingle":{"type":"string","description":"Select one option with titles","oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},"legacyEnum":{"type":"string","description":"Select one option (legacy)","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},"untitledMulti":{"type":"array","description":"Select multiple options","minItems":1,"maxItems":3,"items":{"type":"string","enum":["option1","option2","option3"]}},"titledMulti":{"type":"array","description":"Select multiple options with titles","minItems":1,"maxItems":3,"items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}}}}}' ;;
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
printf '{"content":[{"type":"text","text":"%s: %s"}],"structuredContent":{"answer":%s,"worker_pid":%s,"job_id":"%s"}}\n' \
    "$label" "$(printf '%s' "$answer" | sed 's/\\/\\\\/g; s/"/\\"/g')" "$answer" "$PPID" "${MCPQ_JOB_ID:-}"
