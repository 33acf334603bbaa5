#!/bin/sh
# MCP conformance server fixture `test_embedded_resource` (scenario tools-call-embedded-resource).
cat >/dev/null
printf '%s\n' '{"content":[{"type":"resource","resource":{"uri":"test://embedded-resource","mimeType":"text/plain","text":"This is an embedded resource content."}}]}'
