/*
 * http.h - the http executor (SPEC section 6.2) and the libcurl multi handle it runs on.
 *
 * The executor config is {"type": "http", "url": "http(s)://...", "headers": {name: value},
 * "secret": "whsec_..."}. Each job POSTs its envelope (wrk_envelope_for_executor) as
 * application/json, with the extra headers, a traceparent when the call carried one, and
 * Standard Webhooks headers (webhook-id = job id) when a secret is set. The transfer is
 * bounded by the job's deadline and MCPQ_MAX_OUTPUT_BYTES; the answer becomes the
 * CallToolResult through wrk_output_from_http().
 *
 * All transfers share one curl multi handle driven by the worker's loop
 * (curl_multi_socket_action with socket and timer callbacks): no thread per request.
 * Thread safety: loop thread only.
 */
#ifndef MCPQ_WORKER_HTTP_H
#define MCPQ_WORKER_HTTP_H

#include "loop.h"

#include <stddef.h>

typedef struct wrk_http wrk_http_t;

typedef struct wrk_job wrk_job_t;
typedef struct wrk_http_xfer wrk_http_xfer_t;

/* What a transfer ended with: status 0 when no HTTP answer came (error says why; too_big
 * when the body passed MCPQ_MAX_OUTPUT_BYTES). The bytes are valid during the callback only. */
typedef struct wrk_http_resp {
    long status;
    const char *ctype;
    const char *body;
    size_t len;
    const char *error;
    int too_big;
    size_t max_output;
} wrk_http_resp_t;

/* Runs once per transfer on the loop thread; it may finish the job but must not cancel the
 * transfer (it is freed when the callback returns). */
typedef void (*wrk_http_done_fn)(wrk_job_t *job, const wrk_http_resp_t *resp, void *arg);

/*
 * The transfer machinery the http and agent executors share: POSTs body (borrowed: it must
 * outlive the transfer) to job->env.executor's url with its headers, a traceparent, and
 * Standard Webhooks headers over body when the executor has a secret; bounded by the job's
 * deadline. NULL when nothing was started: *why is a message for the caller when the
 * executor config is bad, NULL on an internal failure (logged).
 */
wrk_http_xfer_t *wrk_http_post(wrk_job_t *job, const char *body, size_t len, wrk_http_done_fn done,
                               void *arg, const char **why);
/* Stops a transfer at once; its callback never runs. NULL is a no-op. */
void wrk_http_xfer_cancel(wrk_http_t *h, wrk_http_xfer_t *x);

/* curl_global_init() must have run. NULL on failure (logged). */
wrk_http_t *wrk_http_new(wrk_loop_t *loop, size_t max_output);
/* Every transfer must have finished (or been cancelled) before. NULL is a no-op. */
void wrk_http_free(wrk_http_t *h);

#endif
