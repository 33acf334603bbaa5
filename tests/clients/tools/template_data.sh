#!/bin/sh
# MCP conformance fixture: the resource template `test://template/{id}/data` (scenario
# resources-templates-read), read by a worker. The job's arguments are
# {"uri": "...", "variables": {"id": "<matched>"}} (docs/executors.md, "Methods other than
# tools/call"); the text answer becomes the read's one text content (the template's
# mimeType, the uri read).
env=$(cat)
id=$(printf '%s\n' "$env" | sed -n 's/.*"variables"[[:space:]]*:[[:space:]]*{[^}]*"id"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' | head -n 1)
if [ -z "$id" ]; then
    echo "template_data: no variable id in the job" >&2
    exit 1
fi
printf '{"id":"%s","templateTest":true,"data":"Data for ID: %s"}\n' "$id" "$id"
