#!/bin/sh
# MCP conformance fixture `test_sampling` (scenario tools-call-sampling): an interactive exec
# tool (docs/tools.md, "Asking the user") that asks the caller's model (sampling/createMessage)
# the call's `prompt` argument and answers with the reply. stdin: the envelope line, then the
# answer line; stdout: the `input` line, then the result.
set -eu
IFS= read -r envelope || true
prompt=$(printf '%s' "$envelope" | sed -n 's/.*"arguments":{[^}]*"prompt":"\(\([^"\\]\|\\.\)*\)".*/\1/p')
[ -n "$prompt" ] || prompt='Hello'
printf 'input {"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"%s"}}],"maxTokens":100}}\n' "$prompt"
IFS= read -r answer || answer=null
[ -n "$answer" ] || answer=null
printf '{"content":[{"type":"text","text":"LLM response: %s"}],"structuredContent":{"answer":%s}}\n' \
    "$(printf '%s' "$answer" | sed 's/\\/\\\\/g; s/"/\\"/g')" "$answer"
