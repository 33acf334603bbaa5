#!/bin/sh
# exec tool `log_job`: one `log <level> <message>` line on stderr per level (docs/executors.md, "exec"),
# so a client can check both delivery and the minimum-level filter, then a text result.
cat >/dev/null
for level in debug info notice warning error; do
    echo "log $level $level message from log_job" >&2
    sleep 0.05
done
echo "log job done"
