/*
 * exec.h - the exec executor (docs/executors.md): runs a local program per job, the RPA case.
 *
 * The executor config is {"type": "exec", "argv": ["/path/or/name", ...], "env": {K: V},
 * "env_pass": ["NAME", ...], "cwd": "/dir"}. argv[0] is absolute or found on the worker's
 * PATH. The child:
 *   - runs in its own process group with a minimal environment, never the worker's (which
 *     may hold cloud, Kafka or Redis credentials): PATH=WRK_EXEC_DEFAULT_PATH, TMPDIR (the
 *     worker's when absolute, else /tmp), HOME=TMPDIR, LANG=C.UTF-8, and the worker's LANG,
 *     LC_ALL, LC_CTYPE and TZ when set; then the worker variables executor.env_pass names
 *     (never MCPQ_*; one the worker lacks is left out); then executor.env, which may set
 *     any of these (PATH too); then MCPQ_JOB_ID and TRACEPARENT (when the call carried one),
 *     which the worker owns;
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
/* Most names in executor.env_pass. */
#define WRK_EXEC_ENV_PASS_MAX 64
/* A tool's PATH unless executor.env sets one or executor.env_pass names it. */
#define WRK_EXEC_DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"

#include <sys/types.h>

/* A child started by wrk_exec_spawn: its pid (also its process group id) and the worker's
 * ends of its stdin, stdout and stderr pipes (non-blocking, close-on-exec). */
typedef struct wrk_exec_child {
    pid_t pid;
    int in_fd, out_fd, err_fd;
} wrk_exec_child_t;

/* Starts argv (argv[0] absolute or found on the worker's PATH) with envp, in cwd (NULL: the
 * worker's), in a process group of its own, with every signal at its default and unblocked,
 * no fd but its three pipes. The exec executor's children and the mcp executor's stdio
 * servers (stdiopool.h) start here. 0 with *child filled, or an errno value (nothing left
 * open). The caller reaps the child. */
int wrk_exec_spawn(const char *const *argv, char *const *envp, const char *cwd,
                   wrk_exec_child_t *child);

/* Frees a NULL-terminated vector of malloc'd strings and the vector; NULL is a no-op. */
void wrk_exec_strv_free(char **v);

/* 1 when s is a POSIX-style variable name, [A-Za-z_][A-Za-z0-9_]*, else 0 (NULL too). */
int wrk_exec_env_name_valid(const char *s);

#endif
