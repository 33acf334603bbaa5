/*
 * stdiopool.h - the mcp executor's stdio transport (docs/executors.md, "mcp", "stdio
 * upstreams"): pools of long-lived MCP server processes on one worker, spoken to with
 * newline-delimited JSON-RPC on their stdin and stdout (the stdio transport of the MCP
 * specification, 2025-06-18 and 2025-11-25 basic/transports).
 *
 * A pool holds one group of processes per distinct stdio upstream: the executor's
 * "command", "args", "env" (references only), "cwd" and "limits". Within a group:
 *   - processes start on demand, up to limits.processes, each with wrk_exec_spawn (its own
 *     process group) and an environment of PATH, HOME and LANG (the exec executor's
 *     defaults) plus the resolved references: {"NAME": {"env": "WORKER_VAR"}} takes the
 *     worker's variable, {"NAME": {"file": "/path"}} the file's content (one trailing newline
 *     dropped). A reference that cannot be resolved fails the calls waiting for the process;
 *     the log names the variable or path;
 *   - each process is opened once within limits.start_timeout_ms: server/discover with the
 *     2026-07-28 _meta envelope first; a result listing 2026-07-28 makes every request carry
 *     that envelope (no initialize); any other answer, or none within 5 s (at most half the
 *     start timeout), leads to initialize offering MCPW_LEGACY_VERSION, accepting a legacy
 *     version the server settles on, then notifications/initialized. Calls wait for it in a
 *     queue of at most
 *     WRK_STDIOPOOL_QUEUE_MAX calls (a call beyond that is refused at once);
 *   - a ready process carries up to limits.concurrency calls at once; calls go to the least
 *     busy ready process; responses are matched by id; each call's params carry
 *     _meta.progressToken = its request id, so notifications/progress reach its note
 *     callback; notifications/message (log) reaches the note callback of the call when one
 *     call is in flight on the process, else only the worker's log;
 *     notifications/resources/updated goes to the pool's updated callback; server-to-client
 *     requests: ping is answered {}; any other goes to the request callback of the call it
 *     belongs to, which is the only call in flight on the process (a stdio message names no
 *     call; with several in flight mcpq does not guess: it answers -32603 naming
 *     limits.concurrency 1 as the way to let the server ask; with none, or a call without a
 *     request callback, -32601); the answer is written with wrk_stdiopool_respond;
 *   - the handshake declares the client capabilities of mcpw_client_capabilities (initialize;
 *     server/discover's _meta); a call's params._meta clientCapabilities (the calling
 *     client's, set by the executor) reach a 2026-07-28 process and are dropped for a legacy
 *     one;
 *   - a process that exits, closes its stdout, breaks its stdin pipe or sends a line longer
 *     than the worker's output limit fails its calls in flight (their done callback with a
 *     failure), and is started again on the next call, no sooner than the restart backoff
 *     (limits.restart_backoff_ms after the first failure, doubling up to
 *     WRK_STDIOPOOL_BACKOFF_MAX_MS, back to the start after a successful initialize). A
 *     process that fails before it is initialized also fails the calls waiting for it;
 *   - a process without calls for limits.idle_ms is shut down: stdin closed, then SIGTERM
 *     to its group after the worker's kill grace (MCPQ_KILL_GRACE_MS), then SIGKILL after
 *     another;
 *   - stderr goes to the worker's log line by line (cut to WRK_STDIOPOOL_STDERR_LINE_MAX
 *     bytes), tagged with the command and pid.
 * wrk_stdiopool_free kills every process group with SIGKILL and reaps the processes (the
 * worker's drain and shutdown).
 *
 * Thread safety: loop thread only.
 */
#ifndef MCPQ_WORKER_STDIOPOOL_H
#define MCPQ_WORKER_STDIOPOOL_H

#include "loop.h"
#include "settings.h"

#include <cjson/cJSON.h>
#include <stddef.h>

#define WRK_STDIOPOOL_QUEUE_MAX 256 /* calls waiting for a process, per group */
#define WRK_STDIOPOOL_PROCESSES_MAX 16
#define WRK_STDIOPOOL_CONCURRENCY_MAX 256
#define WRK_STDIOPOOL_BACKOFF_MAX_MS 60000
#define WRK_STDIOPOOL_STDERR_LINE_MAX 1024
#define WRK_STDIOPOOL_ARGS_MAX 255
#define WRK_STDIOPOOL_ENV_MAX 64
#define WRK_STDIOPOOL_FILE_MAX 65536 /* bytes of a {"file"} reference */

typedef struct wrk_stdiopool wrk_stdiopool_t;
typedef struct wrk_stdiopool_call wrk_stdiopool_call_t;

/* What the handshake of the process that served a call told: the version it settled on and
 * the result of its server/discover or initialize (borrowed, valid during the callback). */
typedef struct wrk_stdiopool_hello {
    const char *version;
    const cJSON *result;
} wrk_stdiopool_hello_t;

/* A call's end: response is the server's JSON-RPC response (owned by the callee), or NULL
 * with failure (what the caller may be told) and detail (for the operator's log: command,
 * pid, exit status); hello is the serving process's handshake (NULL on failure). A call
 * without a method ends with response and failure NULL once a process is ready. Called once
 * per call, from the loop, never from wrk_stdiopool_call. */
typedef void (*wrk_stdiopool_done_fn)(cJSON *response, const char *failure, const char *detail,
                                      const wrk_stdiopool_hello_t *hello, void *arg);
/* A notification that belongs to the call (progress, log), borrowed. */
typedef void (*wrk_stdiopool_note_fn)(const cJSON *note, void *arg);
/* A request of the server that belongs to the call (elicitation/create, ...), borrowed;
 * arg is the call's. */
typedef void (*wrk_stdiopool_request_fn)(const cJSON *request, void *arg);
/* notifications/resources/updated from a process of group key (the JSON of its command,
 * args, env, cwd and limits) for uri. */
typedef void (*wrk_stdiopool_updated_fn)(const char *key, const char *uri, void *arg);

/* An empty pool on loop; settings give the output limit and the kill grace (borrowed).
 * NULL on ENOMEM. */
wrk_stdiopool_t *wrk_stdiopool_new(wrk_loop_t *loop, const mcpq_settings_t *settings);
/* Kills every process group (SIGKILL), reaps them and frees the pool. Calls still queued or
 * in flight are dropped without their done callback (their jobs were aborted before). NULL
 * is a no-op. */
void wrk_stdiopool_free(wrk_stdiopool_t *pool);

/* Sets the callback of notifications/resources/updated (fn NULL: dropped). */
void wrk_stdiopool_on_updated(wrk_stdiopool_t *pool, wrk_stdiopool_updated_fn fn, void *arg);

/* 1 when executor (an mcp executor object) names a stdio upstream ("command"), else 0. */
int wrk_stdiopool_is_stdio(const cJSON *executor);

/*
 * Sends method with params (taken over, may be NULL) to a process of executor's group,
 * starting one when needed; method NULL sends nothing and only waits for a ready process
 * (for its handshake's answer). tag names the call in the log (the job id, copied). The pool
 * calls note for the call's notifications and done once at its end. Returns the call, or
 * NULL with why filled (a malformed executor, a full queue; nothing will be called back).
 */
wrk_stdiopool_call_t *wrk_stdiopool_call(wrk_stdiopool_t *pool, const cJSON *executor,
                                         const char *method, cJSON *params, const char *tag,
                                         wrk_stdiopool_note_fn note, wrk_stdiopool_done_fn done,
                                         void *arg, char *why, size_t why_size);

/* The server's requests that belong to call go to fn (with the call's arg) from now on. */
void wrk_stdiopool_on_request(wrk_stdiopool_call_t *call, wrk_stdiopool_request_fn fn);
/* Writes response (a JSON-RPC response to a request handed to the call's request callback,
 * taken over) to the process serving call, from the loop (never inside this call). 0, or
 * MCPQ_EIO when the call is on no working process any more (response dropped). */
int wrk_stdiopool_respond(wrk_stdiopool_t *pool, wrk_stdiopool_call_t *call, cJSON *response);

/* Drops call without its done callback: a queued call leaves the queue; a sent one is
 * followed by notifications/cancelled {requestId, reason} to its process, whose later answer
 * is ignored. NULL is a no-op. */
void wrk_stdiopool_cancel(wrk_stdiopool_t *pool, wrk_stdiopool_call_t *call, const char *reason);

/* The group key of executor (what the updated callback names), as a new string the caller
 * frees; NULL when executor is no valid stdio upstream (or ENOMEM). */
char *wrk_stdiopool_key(const cJSON *executor);

/* Processes alive (started and not yet reaped) in the pool. */
size_t wrk_stdiopool_processes(const wrk_stdiopool_t *pool);

#endif
