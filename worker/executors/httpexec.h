/*
 * httpexec.h - the http executor (docs/executors.md) and the libcurl multi handle it runs on.
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
 * Other executors run their POSTs on the same handle: worker/executors/mcpexec.c through
 * wrk_httpexec_post(), worker/executors/agent.c through wrk_httpexec_post_job(): one transfer
 * machinery per worker. Thread safety: loop thread only.
 */
#ifndef MCPQ_WORKER_HTTP_H
#define MCPQ_WORKER_HTTP_H

#include "loop.h"
#include "otel.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <stddef.h>
#include <stdint.h>

typedef struct wrk_httpexec wrk_httpexec_t;
typedef struct wrk_httpexec_req wrk_httpexec_req_t;

/* Bytes of one header line a request may carry. */
#define WRK_HTTP_HEADER_MAX 8192
/* Bytes of an Mcp-Session-Id kept from a response (longer ones are treated as absent). */
#define WRK_HTTP_SESSION_MAX 256

/* The outcome of a POST, valid only during the done callback. */
typedef struct wrk_httpexec_resp {
    CURLcode code;     /* CURLE_OK: an HTTP exchange completed (any status) */
    const char *error; /* code != CURLE_OK: curl's message (no header values in it) */
    int too_big;       /* the body passed the output limit (code is then an error) */
    int streamed;      /* the body was text/event-stream and went to the chunk callback (body "") */
    long status;       /* HTTP status */
    const char *content_type; /* may be NULL */
    const char *body;         /* NUL-terminated; len bytes */
    size_t len;
    const char *session_id; /* the response's Mcp-Session-Id, "" when absent */
} wrk_httpexec_resp_t;

/* Called once when the request ends (not after wrk_httpexec_req_cancel). The request is freed
 * after the callback returns. */
typedef void (*wrk_httpexec_done_fn)(const wrk_httpexec_resp_t *resp, void *arg);

/* curl_global_init() must have run. NULL on failure (logged). */
wrk_httpexec_t *wrk_httpexec_new(wrk_loop_t *loop, size_t max_output);
/* Requests still running (fire-and-forget ones) are dropped without their callbacks.
 * NULL is a no-op. */
void wrk_httpexec_free(wrk_httpexec_t *h);

/* The output limit (MCPQ_MAX_OUTPUT_BYTES) every response body is bounded by. */
size_t wrk_httpexec_max_output(const wrk_httpexec_t *h);

/*
 * Starts a POST of body[0..len) (copied) to url with headers (ownership passes to the
 * request, also on failure), bounded by timeout_ms. done(resp, arg) runs once when it ends;
 * done may be NULL (fire-and-forget). Returns the request, or NULL when curl refused it
 * (logged; done will not run).
 */
wrk_httpexec_req_t *wrk_httpexec_post(wrk_httpexec_t *h, const char *url,
                                      struct curl_slist *headers, const char *body, size_t len,
                                      int64_t timeout_ms, wrk_httpexec_done_fn done, void *arg);

/* A piece of a text/event-stream response body, as it arrives (wrk_httpexec_stream); first,
 * once the headers of a 2xx text/event-stream answer are in, data NULL and len 0 (the stream
 * is open). Return 0 to go on, > 0 when the caller has what it wanted (the transfer ends and
 * done sees CURLE_OK), < 0 when the stream breaks a bound (the transfer ends, done sees
 * too_big). */
typedef int (*wrk_httpexec_chunk_fn)(const char *data, size_t len, void *arg);

/*
 * Like wrk_httpexec_post, for an answer that may be a live stream: a response whose
 * Content-Type is text/event-stream is not buffered but handed to chunk (may be NULL) piece by
 * piece as it arrives, on the loop thread; any other body is buffered as by
 * wrk_httpexec_post. body NULL makes the request a GET (len ignored). timeout_ms <= 0: no
 * overall timeout (a long-lived stream; the caller cancels it). done runs once at the end, as
 * for wrk_httpexec_post (resp->streamed says where the body went). The same arg goes to chunk
 * and done. Neither callback may cancel the request itself: chunk returns > 0 instead.
 */
wrk_httpexec_req_t *wrk_httpexec_stream(wrk_httpexec_t *h, const char *url,
                                        struct curl_slist *headers, const char *body, size_t len,
                                        int64_t timeout_ms, wrk_httpexec_chunk_fn chunk,
                                        wrk_httpexec_done_fn done, void *arg);

typedef struct wrk_job wrk_job_t;

/*
 * The POST the http and agent executors make for a job: body (copied) to
 * job->env.executor's url with its configured headers, a traceparent, and Standard Webhooks
 * headers over body when the executor has a secret; bounded by the job's deadline. NULL when
 * nothing was started: *why is a message for the caller when the executor config is bad,
 * NULL on an internal failure (logged).
 */
wrk_httpexec_req_t *wrk_httpexec_post_job(wrk_job_t *job, const char *body, size_t len,
                                          wrk_httpexec_done_fn done, void *arg, const char **why);

/* The caller's result for a request of job's executor that got no HTTP answer (resp->code
 * is not CURLE_OK, not too_big): "<what> did not answer in time" or "<what> could not be
 * reached" with an error id, while the host of executor.url and curl's message go to the
 * log (wrk_job_error_hidden). NULL on ENOMEM. */
cJSON *wrk_httpexec_failure(const wrk_job_t *job, const wrk_httpexec_resp_t *resp,
                            const char *what);

/* Aborts a running request at once; its callback does not run. NULL is a no-op. */
void wrk_httpexec_req_cancel(wrk_httpexec_t *h, wrk_httpexec_req_t *req);

/* Gives the request r its CLIENT span (otel.h; owned by r from now on): ended when the
 * response is complete (http.response.status_code, error status from 400 on or for a transfer
 * error) or when r is cancelled. r NULL (the request could not start): the span ends as an
 * error at once. span NULL: nothing. */
void wrk_httpexec_req_span(wrk_httpexec_req_t *r, otel_span_t *span);

/* Header helpers shared by executors. 1 when s is a header name: one or more token
 * characters (RFC 9110), else 0. */
int wrk_httpexec_header_name_valid(const char *s);
/* 1 when s holds no control character but tab (no CR or LF to split a header), else 0. */
int wrk_httpexec_header_value_valid(const char *s);
/* Appends "name: value" to *list; 0, MCPQ_ETOOBIG or MCPQ_ENOMEM. */
int wrk_httpexec_header_add(struct curl_slist **list, const char *name, const char *value);

#endif
