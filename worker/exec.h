/*
 * exec.h - the exec executor (SPEC section 6.3): runs a local program per job, the RPA case.
 *
 * The executor config is {"type": "exec", "argv": ["/path/or/name", ...], "env": {K: V},
 * "cwd": "/dir"}. argv[0] is absolute or found on the worker's PATH. The child:
 *   - runs in its own process group, with the worker's environment minus MCPQ_* variables,
 *     plus MCPQ_JOB_ID, TRACEPARENT (when the call carried one) and executor.env;
 *   - gets the envelope (wrk_envelope_for_executor) on stdin, written without blocking;
 *   - prints its result on stdout, up to MCPQ_MAX_OUTPUT_BYTES (beyond that it is killed
 *     and the answer is isError "output too large");
 *   - reports on stderr, line by line (stderrline.h): progress and log lines go to the
 *     reply stream live, other lines are kept (a bounded tail) for error messages.
 * Exit status 0: stdout is the CallToolResult (wrk_output_from_stdout); otherwise isError
 * (wrk_output_from_failure). On timeout the group gets SIGTERM, then SIGKILL after
 * MCPQ_KILL_GRACE_MS; on abort SIGKILL at once. Every child is reaped through its pidfd
 * (pidfd_open), watched by the loop like any other fd: no SIGCHLD handler, no zombies.
 *
 * The executor itself is wrk_exec_executor (executor.h). Thread safety: loop thread only.
 */
#ifndef MCPQ_WORKER_EXEC_H
#define MCPQ_WORKER_EXEC_H

/* Bytes of "other" stderr lines kept for the error message of a failed run. */
#define WRK_EXEC_TAIL_MAX 4096
/* Most entries in executor.argv. */
#define WRK_EXEC_ARGV_MAX 256

#endif
