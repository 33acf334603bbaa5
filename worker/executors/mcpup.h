/*
 * mcpup.h - what the mcp executor's modules share (internal to worker/executors/): one
 * upstream as a worker negotiated it (wrk_mcpup_t), one job's call to it (wrk_mcpup_call_t),
 * the executor's state (struct wrk_mcpexec), and the requests every module sends upstream.
 *
 * mcpexec.c owns these objects and drives a call (handshake, request, answer); uptask.c
 * follows an upstream task of a call, upnotify.c holds an upstream's notification stream for
 * resource subscriptions. Those two never call mcpexec.c (scripts/check-layers.py: no
 * circles): what they need of a call (send a request, take an answer, end it) comes through
 * the executor's wrk_mcpup_ops_t. Nothing outside worker/executors/mcp*.c, uptask.c and
 * upnotify.c includes this header.
 *
 * Thread safety: loop thread only.
 */
#ifndef MCPQ_WORKER_MCPUP_H
#define MCPQ_WORKER_MCPUP_H

#include "httpexec.h"
#include "job.h"
#include "loop.h"
#include "mcprelay.h"
#include "mcpexec.h"
#include "mcpmethod.h"
#include "mcpsubs.h"
#include "mcpw.h"
#include "stdiopool.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <stddef.h>
#include <stdint.h>

#define WRK_MCPUP_NEGOTIATE_TIMEOUT_MS 10000 /* each handshake request */
#define WRK_MCPUP_CANCEL_NOTE_TIMEOUT_MS 2000
#define WRK_MCPUP_MESSAGE_MAX 1024 /* bytes of an upstream error message passed on */
#define WRK_MCPUP_HOST_MAX 300
#define WRK_MCPUP_TASK_ID_MAX 256
#define WRK_MCPUP_INPUT_ROUNDS_MAX 16     /* 2026-07-28 input_required answers followed per call */
#define WRK_MCPUP_ANSWER_TIMEOUT_MS 10000 /* the POST of an answer to an upstream's request */

typedef enum {
    WRK_MCPUP_NEW = 0,
    WRK_MCPUP_DISCOVER,
    WRK_MCPUP_INITIALIZE,
    WRK_MCPUP_INITIALIZED,
    WRK_MCPUP_TOOLS, /* legacy with tasks: learning which tools run as tasks (tools/list) */
    WRK_MCPUP_READY
} wrk_mcpup_state_t;

typedef struct wrk_mcpup_call wrk_mcpup_call_t;
typedef struct wrk_mcpup_ops wrk_mcpup_ops_t;

/* One upstream (url + headers) as this worker negotiated it. */
typedef struct wrk_mcpup {
    struct wrk_mcpexec *m;
    char *key; /* url "\n" compact headers */
    char *url;
    cJSON *headers; /* the configured headers (a copy) */
    char host[WRK_MCPUP_HOST_MAX];
    wrk_mcpup_state_t state;
    int modern;
    const char *version; /* legacy: the version settled on */
    char session[WRK_HTTP_SESSION_MAX];
    int tasks;         /* the upstream runs tools/call as tasks (its capabilities say so) */
    cJSON *task_tools; /* legacy: names of its tools whose taskSupport is required/optional */
    int tool_pages;
    long neg_id;
    /* The trace of the call that started the handshake: each handshake request (server/discover,
     * initialize, notifications/initialized, tools/list) is a CLIENT span in it, and the
     * upstream receives that span's context and this tracestate. "" when none (cleared when
     * the handshake ends: up_ready). */
    char neg_tp[TRACE_PARENT_LEN + 1];
    char neg_ts[TRACE_STATE_MAX + 1];
    wrk_httpexec_req_t *req;   /* the handshake request in flight */
    wrk_mcpup_call_t *waiters; /* calls waiting for the handshake */
    cJSON *info;               /* what the handshake told (wrk_mcpmethod_info), for mcpq/catalog */
    /* The notification stream for resource subscriptions ("Resource subscriptions" in
     * docs/executors.md): a GET stream in the session (legacy) or subscriptions/listen. */
    wrk_httpexec_req_t *ev_req;
    mcpw_reader_t ev_rd;
    long ev_id;                            /* subscriptions/listen's request id */
    int ev_open;                           /* the stream is open (acknowledged) */
    char ev_session[WRK_HTTP_SESSION_MAX]; /* legacy: the session the uris were subscribed in */
    int64_t ev_backoff_ms;
    wrk_loop_timer_t ev_retry;
    wrk_mcpup_call_t *ev_waiters; /* subscribe jobs waiting for the stream to open */
    struct wrk_mcpup *next;
} wrk_mcpup_t;

struct wrk_mcpexec {
    wrk_httpexec_t *http;
    wrk_rt_t *rt; /* the worker's runtime (loop, store), known from the first job */
    wrk_mcpsubs_t *subs;
    wrk_mcpup_t *ups;
    long next_id;
    wrk_stdiopool_t *stdio;     /* stdio upstreams, made on the first stdio call */
    const wrk_mcpup_ops_t *ops; /* mcpexec.c's, for uptask.c and upnotify.c */
};

/* What the request in flight asks: the call itself, or a step of following its task. */
typedef enum {
    WRK_MCPUP_STEP_JOB = 0,
    WRK_MCPUP_STEP_TASK_GET,
    WRK_MCPUP_STEP_TASK_RESULT
} wrk_mcpup_step_t;

struct wrk_mcpup_call {
    wrk_job_t *job;
    wrk_mcpexec_t *m;
    wrk_mcpup_t *up;
    wrk_httpexec_req_t *req;
    mcpw_reader_t rd;            /* the answer read as it arrives (live while req is) */
    wrk_stdiopool_call_t *scall; /* a stdio upstream's call in flight (up is NULL) */
    char *skey;                  /* a stdio upstream's group key (wrk_stdiopool_key), owned */
    const char *where;           /* for the log: the upstream's host, or the stdio command */
    long id;
    wrk_mcpup_step_t step;
    int retried;                         /* re-initialized once after a 404 */
    int as_task;                         /* legacy: tools/call sent with params.task */
    char session[WRK_HTTP_SESSION_MAX];  /* the session the call was sent in */
    char task_id[WRK_MCPUP_TASK_ID_MAX]; /* the upstream task being followed, "" when none */
    char task_status[32];
    char task_note[WRK_MCPUP_MESSAGE_MAX]; /* the status and message last sent as progress */
    double task_steps;                     /* status changes seen, the progress forwarded */
    wrk_loop_timer_t poll;
    int cat_started;   /* mcpq/catalog: cat holds the lists read so far */
    cJSON *stdio_info; /* stdio: the handshake's info (wrk_mcpmethod_info), for mcpq/catalog */
    wrk_mcpmethod_catalog_t cat;
    /* Questions of the upstream to the calling client (mcprelay.h): the relay, made on the
     * first; for a 2026-07-28 retry, the answers and the upstream's requestState it carries. */
    wrk_mcprelay_t *ask;
    cJSON *input_responses;
    char *request_state;
    int input_rounds;       /* input_required answers followed so far */
    wrk_mcpup_call_t *next; /* in up->waiters */
};

/* What mcpexec.c lends the modules that work on its calls (uptask.c, upnotify.c). */
struct wrk_mcpup_ops {
    /* Sends method with params (taken over) upstream for c, in its session; the answer
     * comes back to the call's own handler. name: a 2026-07-28 request's Mcp-Name (or NULL). */
    void (*post)(wrk_mcpup_call_t *c, const char *method, const char *name, cJSON *params);
    /* Ends c with the upstream's JSON-RPC response r (owned), as the call's answer. */
    void (*answer)(wrk_mcpup_call_t *c, cJSON *r);
    /* Ends c with a CallToolResult (owned; mapped for other methods, job.h). */
    void (*end)(wrk_mcpup_call_t *c, cJSON *result);
    /* Ends c with the result of its job's method (owned), passed on as it is. */
    void (*end_result)(wrk_mcpup_call_t *c, cJSON *result);
    /* Ends c with a JSON-RPC error. */
    void (*end_error)(wrk_mcpup_call_t *c, int code, const char *message);
    /* Starts up's handshake again (its state WRK_MCPUP_NEW). */
    void (*negotiate)(wrk_mcpexec_t *m, wrk_mcpup_t *up);
};

/* Request headers for up; method/name for 2026-07-28 requests (modern), session for legacy
 * ones after initialize; traceparent and X-Request-Id (request_id) of the job the request is
 * for (NULL: none). NULL on ENOMEM. */
struct curl_slist *wrk_mcpup_headers(const wrk_mcpup_t *up, int modern, const char *version,
                                     const char *method, const char *name, const char *session,
                                     const char *traceparent, const char *request_id);
/* A JSON-RPC request body; params is taken over. NULL on ENOMEM. */
char *wrk_mcpup_body(long id, const char *method, cJSON *params, size_t *len);
/* params with the 2026-07-28 _meta envelope every request carries: the version, the
 * (empty) client capabilities and who the client is. Returns params. */
cJSON *wrk_mcpup_meta(cJSON *params);
/* A JSON-RPC message (borrowed) POSTed to up that nobody waits for (best effort): an answer to
 * the upstream's request, a notification; legacy ones in session (may be NULL). */
void wrk_mcpup_send(wrk_mcpup_t *up, const cJSON *msg, const char *method, const char *name,
                    const char *session, const char *traceparent, const char *request_id,
                    int64_t timeout_ms);
/* A message to up that nobody waits for (best effort): a request of method with params
 * (taken over), or with id < 0 a notification; legacy ones in session (may be NULL), a
 * 2026-07-28 one with the _meta envelope and name as Mcp-Name. */
void wrk_mcpup_fire(wrk_mcpup_t *up, long id, const char *method, const char *name, cJSON *params,
                    const char *session, const char *traceparent, const char *request_id,
                    int64_t timeout_ms);

#endif
