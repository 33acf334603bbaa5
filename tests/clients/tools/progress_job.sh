#!/bin/sh
# exec tool `progress_job`: three progress lines on stderr, 300 ms apart (docs/executors.md, "exec":
# `progress <done> <total> [message]`), then a plain-text result on stdout.
cat >/dev/null
i=1
while [ "$i" -le 3 ]; do
    echo "progress $i 3 step $i" >&2
    sleep 0.3
    i=$((i + 1))
done
echo "progress job done"
