#!/bin/sh
# MCP conformance fixture `test_elicitation_sep1034_defaults` (scenario
# elicitation-sep1034-defaults): an interactive exec tool (docs/tools.md, "Asking the user")
# that elicits a form whose every primitive field has a default (SEP-1034) and answers with the
# reply. stdin: the envelope line, then the answer line; stdout: the `input` line, then the result.
set -eu
IFS= read -r envelope || true
printf 'input {"method":"elicitation/create","params":{"message":"Please review and update the form fields with defaults","requestedSchema":{"type":"object","properties":{"name":{"type":"string","description":"User name","default":"John Doe"},"age":{"type":"integer","description":"User age","default":30},"score":{"type":"number","description":"User score","default":95.5},"status":{"type":"string","description":"User status","enum":["active","inactive","pending"],"default":"active"},"verified":{"type":"boolean","description":"Verification status","default":true}}}}}\n'
IFS= read -r answer || answer=null
[ -n "$answer" ] || answer=null
printf '{"content":[{"type":"text","text":"Elicitation completed: %s"}],"structuredContent":{"answer":%s}}\n' \
    "$(printf '%s' "$answer" | sed 's/\\/\\\\/g; s/"/\\"/g')" "$answer"
