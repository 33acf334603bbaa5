#!/bin/sh
# MCP conformance server fixture `test_tool_with_progress` (scenario tools-call-with-progress):
# progress 0, 50 and 100 of 100, about 50 ms apart, on stderr.
cat >/dev/null
echo "progress 0 100" >&2
sleep 0.05
echo "progress 50 100" >&2
sleep 0.05
echo "progress 100 100" >&2
echo "Progress test completed"
