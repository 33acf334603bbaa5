#!/bin/sh
# MCP conformance server fixture `test_tool_with_logging` (scenario tools-call-with-logging):
# three info log lines, about 50 ms apart, on stderr.
cat >/dev/null
echo "log info Tool execution started" >&2
sleep 0.05
echo "log info Tool processing data" >&2
sleep 0.05
echo "log info Tool execution completed" >&2
echo "Logging test completed"
