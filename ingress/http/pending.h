/*
 * pending.h - tools/call requests waiting for their result, without a thread each.
 *
 * A waiting call is an ing_call_t embedded in its HTTP request. The HTTP thread adds it
 * (ing_pending_add), publishes the job, then parks the connection (ing_pending_park, which
 * suspends it in libmicrohttpd unless the answer is already there). One reader thread
 * follows this replica's Redis reply stream (XREAD BLOCK, docs/internals.md) and completes
 * calls as results arrive; the same thread answers calls whose deadline passed with
 * -32003, after one last look at the durable result key. Completing a parked call resumes
 * its connection; the HTTP thread then sends call->response.
 *
 * Streaming (SSE, docs/protocol.md): a call whose client accepts text/event-stream gets the
 * progress and log entries of its job as `event: message` frames as they arrive, then its
 * response. The first frame (or the first keep-alive comment, after keepalive_ms of waiting)
 * resumes the connection with want_stream set; the HTTP thread then queues a streamed
 * response whose content reader (ing_pending_read) hands out the frames, suspending the
 * connection whenever there is nothing to send. Keep-alive comments continue every
 * keepalive_ms until the response is sent; a failed write is how a closed stream is seen.
 *
 * Listeners (listen.h): a long-lived notification stream (the legacy GET stream, a 2026-07-28
 * subscriptions/listen) is a call with `listener` set, keyed by an id of its own ("l_<hex>"),
 * no deadline and no result: it streams from the start, gets frames through ing_pending_post()
 * and keep-alive comments every keepalive_ms, and ends with ing_pending_finish() or when its
 * client goes away. Listeners are not counted by ing_pending_count().
 *
 * Batches (2025-03-26 JSON-RPC batches, docs/internals.md): the elements of one batch that
 * wait (tools/call, tasks/result) are calls of their own, each in the table under its own
 * job id with its own deadline, whose `group` is the batch's call. The group owns the
 * connection and is never in the table itself: only the group parks, wakes, streams and
 * finishes. A group made with ing_pending_group_init() holds one reference of its own until
 * ing_pending_group_seal(), so elements that finish while the batch is still being
 * dispatched cannot end it early; it is done when the seal and every element are. A group
 * whose client accepts text/event-stream streams from the seal on: every element's response
 * (and its notifications) is a frame, the stream ends with the last one. Otherwise each
 * element keeps its response and the HTTP thread answers the whole array once the group is
 * done.
 *
 * Cancellation (docs/internals.md): ing_pending_cancel() queues a job id; the reader thread
 * sets `{mcpq}:cancel:<job>` and publishes it. A `cancelled` entry from the worker ends the
 * call: an open stream ends without a response, a JSON answer is -32800.
 *
 * Questions (docs/internals.md, "Asking the client"): an `input` entry of a job is handed to
 * the on_input hook of each of its calls here (set by the MCP layer for its era): the hook
 * says whether the reader posts its messages as frames (the requests on a legacy SSE stream),
 * answers the call with them (2026-07-28), or cannot reach the client, in which case the
 * reader answers every request with an error (answer.h) so the tool need not wait. A call
 * whose client was asked remembers it (asking): at a graceful stop its job is cancelled
 * (ing_pending_stop_asking), since no other replica can deliver its result.
 *
 * Thread safety: every function is thread-safe. A call's fields are written under the
 * table's lock until done is set (streamed calls: until the stream ends); after that the
 * HTTP thread owns them.
 */
#ifndef MCPQ_ING_PENDING_H
#define MCPQ_ING_PENDING_H

#include "kv.h"
#include "metrics.h"
#include "stages.h"
#include "trace.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define ING_JOB_ID_LEN 40

/* Reshapes a worker's result (the record's `result`, in place) for the client's protocol
 * version before it is rendered: the MCP layer's era.h picks one per call. */
typedef void (*ing_call_shape_fn)(cJSON *result);

/* What the reader does with an `input` entry (a question the job asks its client:
 * docs/internals.md, "Asking the client") for one of its calls, as the call's hook says. */
typedef enum {
    ING_INPUT_POST = 0,   /* post each message as an SSE frame of the call, which keeps waiting
                           * (legacy: the requests on the call's stream) */
    ING_INPUT_ANSWER,     /* msgs has one element, the call's response: the call ends now,
                           * outcome ok (2026-07-28: an InputRequiredResult) */
    ING_INPUT_UNREACHABLE /* the call cannot carry a request: the reader answers every key
                           * with an error (answer.h) so the tool is not left waiting */
} ing_input_t;

/* The message of the error answer for a question its call cannot carry (docs/internals.md). */
#define ING_PENDING_UNREACHABLE_MSG                                                                \
    "the client cannot be asked on this call (it does not accept text/event-stream)"

struct ing_call;
/* For an `input` entry of call's job (data: {"n", "requests", "expires_ms"}): fills *msgs (a
 * new cJSON array of JSON-RPC messages; the reader frees it) and says what the reader does.
 * Runs on the reader thread under no lock of the table; the call stays valid meanwhile (its
 * removal waits for the hook). */
typedef ing_input_t (*ing_call_input_fn)(struct ing_call *call, const char *job_id,
                                         const cJSON *data, cJSON **msgs);

typedef struct ing_call {
    char job_id[ING_JOB_ID_LEN];
    char id_json[300];     /* the JSON-RPC id, rendered */
    int64_t deadline_mono; /* monotonic ms */
    struct MHD_Connection *conn;
    /* set before ing_pending_add, read-only after */
    int sse_ok;                 /* the client accepts text/event-stream */
    int modern;                 /* 2026-07-28: the result carries resultType */
    ing_call_shape_fn shape;    /* the client's era's reshaping of a result; NULL: as is */
    int log_min;                /* forward log entries at or above this level; -1: none */
    char progress_token[300];   /* rendered JSON; "" when the call has none */
    char tool[128];             /* logger name of forwarded log entries */
    trace_ctx_t trace;          /* the call's trace, the ingress's span; trace_id "" if none */
    int task_result;            /* tasks/result: the result carries the related-task _meta */
    int method_result;          /* not a tools/call (toolcall.h): the record's result is the
                                 * method's own, passed through; never a tool error */
    int cacheable;              /* 2026-07-28 resources/read: the result gets ttlMs, cacheScope */
    long long ttl_ms;           /* cacheable: ttlMs */
    int cache_public;           /* cacheable: cacheScope "public" (else "private") */
    int listener;               /* a notification stream (listen.h): see above */
    int keepalive_ms;           /* > 0: its keep-alive interval instead of the table's */
    ing_call_input_fn on_input; /* the `input` entry hook (above); NULL: UNREACHABLE */
    void *input_arg;            /* the hook's, owned by the request (freed with it) */
    /* A batch element's own SERVER span (otel.h; a single request's is ing_req_t's span):
     * ended by server.c when the response is complete, or when the element is dropped
     * (ing_batch_call_drop: answered at once); NULL when none. */
    struct otel_span *span;
    /* streaming state, under the table lock */
    int want_stream;   /* an SSE response should start */
    int streaming;     /* the SSE response is queued; frames go to out */
    int stream_end;    /* nothing more is appended to out */
    int cancelled;     /* ended by a `cancelled` entry */
    long long input_n; /* the last question (`input` entry n) handed to on_input; 0: none.
                        * Set before ing_pending_add (0 for a new call; a 2026-07-28 retry:
                        * the question it answers, which the reader may still be handing
                        * out), then the reader's, under the lock */
    int asking;        /* on_input posted a question to the client (ING_INPUT_POST) */
    int in_hook;       /* the reader runs on_input for it: ing_pending_remove waits */
    util_buf_t out;    /* SSE bytes not yet handed to libmicrohttpd */
    size_t out_off;
    int64_t next_keepalive_mono;
    /* batches: see above */
    struct ing_call *group; /* an element: the batch's call (set before ing_pending_add) */
    size_t nwaiting;        /* a group: the seal plus elements not done, under the lock */
    /* table bookkeeping */
    struct ing_call *next;
    size_t heap_idx;
    int in_table;
    int parked;
    /* outcome, valid once done */
    int done;
    char *response;             /* malloc'd JSON-RPC response */
    ing_call_outcome_t outcome; /* what response says, for the log and metrics */
    int timed_out;
    /* The stamps of its stages (stages.h): door_us and sent_us set by the HTTP thread before
     * ing_pending_add; acked_us (ing_pending_acked), the worker's (its result) and woke_us
     * under the lock; finished_us also feeds mcpq_result_delivery_seconds. */
    ing_stamps_t stamps;
} ing_call_t;

typedef struct ing_pending ing_pending_t;

/* reply_key: this replica's stream ({mcpq}:reply:<instance>); keepalive_ms: SSE comment
 * interval while a streamed call waits. */
ing_pending_t *ing_pending_new(kv_target_t *kvt, int redis_timeout_ms, const char *reply_key,
                               int keepalive_ms);
/* Completes every call still waiting with -32603 "server shutting down", stops the thread. */
void ing_pending_free(ing_pending_t *p);

/* Adds call under its job id. 0; MCPQ_ENOMEM when the table cannot track it (the call is
 * then done, with no response: answer -32603); MCPQ_EEXIST when this very call is in the
 * table already (a caller bug: an assertion in debug builds; the call is left as it was). */
int ing_pending_add(ing_pending_t *p, ing_call_t *call);
/* Makes group the call of a batch whose elements will wait (see above): its stream state is
 * reset and it holds the seal's reference. sse_ok must be set before. Not in the table. */
void ing_pending_group_init(ing_pending_t *p, ing_call_t *group);
/* Drops the seal's reference once every element has been dispatched: with no element
 * waiting the group is done at once. A streaming group (sse_ok) starts its stream with
 * frames, one per JSON-RPC response in bodies[0..n) (the elements answered at once). */
void ing_pending_group_seal(ing_pending_t *p, ing_call_t *group, char *const *bodies, size_t n);
/* Suspends call->conn (a group's: the batch) until completion or its first SSE frame: 1 when
 * it is parked, 0 (nothing suspended) when there is something to send already. Must run on
 * the connection's HTTP thread, inside the access handler. */
int ing_pending_park(ing_pending_t *p, ing_call_t *call);
/* For a call without a connection (call->conn NULL: a synthetic request, req.h): waits up
 * to timeout_ms for a parked call (a group's: the batch) to wake, as a connection would be
 * resumed. 1 when it woke (then ing_pending_take says what to send), 0 on timeout. */
int ing_pending_wait(ing_pending_t *p, ing_call_t *call, int timeout_ms);
/* Kafka acknowledged the job of the waiting calls job_id at acked_us (Unix µs): the produce
 * stage's end (stages.h), kept when the call has none yet. Nothing when none waits. */
void ing_pending_acked(ing_pending_t *p, const char *job_id, int64_t acked_us);
/* Completes a call by job id with a JSON-RPC error (e.g. Kafka refused the job). */
void ing_pending_fail(ing_pending_t *p, const char *job_id, int code, const char *message);
/* Removes a call that is still waiting (its request failed or its client went away).
 * 1 when it was waiting, 0 when it had already completed. A batch element gives its
 * group's reference back without ending the group. */
int ing_pending_remove(ing_pending_t *p, ing_call_t *call);

/* What the HTTP thread does with a resumed call (ing_pending_take). */
typedef enum {
    ING_TAKE_WAIT = 0, /* nothing yet: the connection was suspended again */
    ING_TAKE_JSON,     /* done: send call->response as one JSON object */
    ING_TAKE_STREAM    /* queue the SSE response now (the call is marked streaming) */
} ing_take_t;

/* On the connection's HTTP thread, inside the access handler. */
ing_take_t ing_pending_take(ing_pending_t *p, ing_call_t *call);
/* The SSE response's content reader: bytes copied, MHD_CONTENT_READER_END_OF_STREAM, or 0
 * after suspending the connection until more arrives. */
ssize_t ing_pending_read(ing_pending_t *p, ing_call_t *call, char *buf, size_t max);
/* Appends one `event: message` frame carrying json to the stream of the waiting call job_id
 * (a listener's). 0, MCPQ_ENOTFOUND (it has ended), or MCPQ_ENOMEM (out of memory, or its
 * client has not read SSE_MAX_BACKLOG bytes). */
int ing_pending_post(ing_pending_t *p, const char *job_id, const char *json);
/* Appends the SSE comment ": <text>" to the stream of the waiting call job_id. Same returns. */
int ing_pending_comment(ing_pending_t *p, const char *job_id, const char *text);
/* Ends the waiting call job_id: last (malloc'd JSON, consumed; may be NULL) is its last
 * frame, then its stream ends. Nothing when it has ended already. */
void ing_pending_finish(ing_pending_t *p, const char *job_id, char *last);
/* Frees a call's buffers (and its hook's input_arg) once its request is over. */
void ing_pending_release(ing_call_t *call);

/* Asks the workers to stop job_id (asynchronously, from the reader thread). */
void ing_pending_cancel(ing_pending_t *p, const char *job_id, const char *reason);

/* The Redis pool the reader answers questions with (answer.h: a call that cannot be asked).
 * Set once, before calls wait; without it such a question is left to the worker's timeout. */
void ing_pending_set_kv(ing_pending_t *p, kv_pool_t *kv);

/* Returning freed memory after a burst (docs/operations.md, "Memory of waiting calls"): once the
 * calls waiting are `calls` fewer than their peak since the last trim, the reader thread runs
 * malloc_trim(0) (at most every 250 ms), and once more when the table is empty after such a burst,
 * so that the pages of connections that were answered go back to the system instead of staying in
 * the HTTP threads' malloc arenas; it logs each at debug level ("memory returned to the system":
 * calls_waiting, rss_kb, took_us). A table that stays as large (steady traffic) is never
 * trimmed. A trim holds the arenas' locks for its duration (2-9 ms at 10,000 calls, 1-30 ms
 * at 100,000). 0 (the default until set): never. Set once, before calls wait. */
void ing_pending_set_trim(ing_pending_t *p, size_t calls);

/* Graceful stop (drain.h): every call whose client was asked a question still open (its
 * `{mcpq}:ask:<job_id>` holds the n it posted) has its job cancelled with reason and ends
 * with -32603 reason (a streamed call: its last frame), since no other replica can deliver
 * its result; from now on a question arriving for any call does the same. Returns the number
 * of calls ended. */
size_t ing_pending_stop_asking(ing_pending_t *p, const char *reason);

size_t ing_pending_count(ing_pending_t *p);
/* 1 while the reader is connected to Redis. */
int ing_pending_healthy(ing_pending_t *p);
/* The same, but when the reader lost its connection less than a second ago (a failover, a
 * dropped connection) it first waits, up to that second, for the reader to reconnect: a call
 * is refused for a Redis that is down, not for one that moved. */
int ing_pending_healthy_wait(ing_pending_t *p);
/* Completes everything still waiting with -32603 (graceful shutdown after the grace period);
 * listeners' streams just end. */
void ing_pending_fail_all(ing_pending_t *p, const char *message);

/* The JSON-RPC response for a result record (docs/internals.md) answering call (its id_json,
 * modern, task_result, method_result and cache hints are used): the record's result, -32003
 * for a timeout, or its error (code and message as the worker wrote them). Under 2026-07-28
 * the result carries resultType, and a cacheable one ttlMs and cacheScope. The outcome is a
 * tool error only for a tools/call result with isError. stamps (when not NULL) gets the
 * record's exec_us and finished_us (stages.h), 0 when it has none. Malloc'd; NULL on ENOMEM. */
char *ing_pending_record_response(const ing_call_t *call, const char *record, size_t len,
                                  ing_call_outcome_t *outcome, ing_stamps_t *stamps);

#endif
