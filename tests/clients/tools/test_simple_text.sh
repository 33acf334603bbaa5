#!/bin/sh
# MCP conformance server fixture `test_simple_text` (scenario tools-call-simple-text).
cat >/dev/null
printf '%s\n' '{"content":[{"type":"text","text":"This is a simple text response for testing."}]}'
