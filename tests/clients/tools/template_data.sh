#!/bin/sh
# MCP conformance fixture: the resource template `test://template/{id}/data` (scenario
# resources-templates-read), served by a worker (docs/executors.md, "Methods"):
#   - resources/read: the job's arguments are {"uri": "...", "variables": {"id": "<matched>"}};
#     the text answer becomes the read's one text content (the template's mimeType, the uri);
#   - completion/complete of `id`: {"ref", "argument": {"name": "id", "value": "<prefix>"}};
#     the known ids (123, 124, 200) that start with the prefix, one per line, become the
#     completion's values.
env=$(cat)
case $env in
*'"method":"completion/complete"'*)
    prefix=$(printf '%s\n' "$env" | sed -n 's/.*"argument"[[:space:]]*:[[:space:]]*{[^}]*"value"[[:space:]]*:[[:space:]]*"\([0-9]*\)".*/\1/p' | head -n 1)
    for id in 123 124 200; do
        case $id in "$prefix"*) echo "$id" ;; esac
    done
    exit 0
    ;;
esac
id=$(printf '%s\n' "$env" | sed -n 's/.*"variables"[[:space:]]*:[[:space:]]*{[^}]*"id"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' | head -n 1)
if [ -z "$id" ]; then
    echo "template_data: no variable id in the job" >&2
    exit 1
fi
printf '{"id":"%s","templateTest":true,"data":"Data for ID: %s"}\n' "$id" "$id"
