#!/bin/sh
# MCP conformance fixture `test_elicitation` (scenario tools-call-elicitation): an interactive
# exec tool (docs/tools.md, "Asking the user") that asks the caller for a username and an email
# (elicitation/create, the call's `message` argument as its message) and answers with the
# reply. stdin: the envelope line, then the answer line; stdout: the `input` line, then the result.
set -eu
IFS= read -r envelope || true
# The argument as the envelope spells it (a JSON string body: its escapes stay valid JSON).
message=$(printf '%s' "$envelope" | sed -n 's/.*"arguments":{[^}]*"message":"\(\([^"\\]\|\\.\)*\)".*/\1/p')
[ -n "$message" ] || message='Please provide your information'
printf 'input {"method":"elicitation/create","params":{"message":"%s","requestedSchema":{"type":"object","properties":{"username":{"type":"string","description":"Your username"},"email":{"type":"string","description":"Your email address"}},"required":["username","email"]}}}\n' "$message"
IFS= read -r answer || answer=null
[ -n "$answer" ] || answer=null
printf '{"content":[{"type":"text","text":"User response: %s"}],"structuredContent":{"answer":%s}}\n' \
    "$(printf '%s' "$answer" | sed 's/\\/\\\\/g; s/"/\\"/g')" "$answer"
