#!/bin/sh
# Resource `test://worker-resource`, read by a worker: every read is a job, whose id
# (MCPQ_JOB_ID, docs/executors.md "exec") the text names, so two reads differ.
cat >/dev/null
printf 'worker resource read in job %s\n' "${MCPQ_JOB_ID:-unknown}"
