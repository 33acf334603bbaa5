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

/* curl_global_init() must have run. NULL on failure (logged). */
wrk_http_t *wrk_http_new(wrk_loop_t *loop, size_t max_output);
/* Every transfer must have finished (or been cancelled) before. NULL is a no-op. */
void wrk_http_free(wrk_http_t *h);

#endif
