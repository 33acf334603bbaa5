#!/bin/sh
# MCP conformance server fixture `test_error_handling` (scenario tools-call-error): a
# CallToolResult with isError: true, which the exec executor passes through (docs/executors.md, "exec").
cat >/dev/null
printf '%s\n' '{"content":[{"type":"text","text":"This tool intentionally returns an error for testing"}],"isError":true}'
