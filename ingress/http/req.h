/*
 * req.h - the request abstraction: one HTTP exchange as every handler sees it (method,
 * target, headers, query arguments, body, client address); the answer it builds is
 * resp.h's ing_resp_t. server.c makes an ing_req_t from a libmicrohttpd connection and sends the
 * ing_resp_t; a test makes one with ing_req_synthetic() and reads the ing_resp_t, so every
 * handler runs in a unit test without a socket. Handlers call no MHD_* function.
 *
 * Thread safety: a request belongs to the thread serving it.
 */
#ifndef MCPQ_ING_REQ_H
#define MCPQ_ING_REQ_H

#include "ctx.h"
#include "log.h"
#include "peer.h"
#include "resp.h"

#include <stdint.h>
#include <sys/socket.h>

/* A request made without a connection (tests, fuzzers): its headers, query arguments and
 * client address. Arrays of {name, value} pairs ending with {NULL, NULL}; the caller keeps
 * them alive as long as the request. */
typedef struct ing_req_pair {
    const char *name;
    const char *value;
} ing_req_pair_t;

typedef struct ing_req_synth {
    const ing_req_pair_t *headers;
    const ing_req_pair_t *args;
    const struct sockaddr *client; /* NULL: 127.0.0.1 */
} ing_req_synth_t;

/* The longest X-Request-Id kept (docs/operations.md "Logs and tracing"). */
#define ING_REQ_ID_MAX LOG_REQUEST_ID_MAX

/* One HTTP exchange. Handlers read it through the functions below, never through conn. */
typedef struct ing_req {
    ing_ctx_t *ctx;
    struct MHD_Connection *conn;  /* the connection it arrived on; NULL for a synthetic one */
    const ing_req_synth_t *synth; /* the synthetic request's parts; NULL with a connection */
    char *uri;          /* the request target exactly as sent (path and query), malloc'd */
    const char *method; /* valid for the request's lifetime (libmicrohttpd's string) */
    int started;        /* the first access-handler call has run */
    util_buf_t body;
    long long body_limit; /* this request's body limit (server.c: before and after credentials) */
    size_t body_held;     /* bytes of ctx->body_bytes this request holds */
    int too_big;          /* the body passed body_limit: answered 413 */
    int busy;             /* the body would pass MCPQ_MAX_BODY_MEMORY_BYTES: answered 503 */
    int handled;          /* the request was dispatched */
    int has_call;         /* call is in use (a job was published) */
    int64_t t0;
    int64_t t0_us;  /* util_mono_us() at the first access-handler call: the access log's start */
    int status;     /* the HTTP status queued (server.c); 0 while nothing was */
    uint64_t bytes; /* body bytes sent: the buffer's length, or the SSE frames read so far */
    char request_id[ING_REQ_ID_MAX + 1]; /* X-Request-Id: the client's when valid, else new */
    ing_method_t metric;
    unsigned planes; /* the routes the listener it came in on serves (server.c "listeners") */
    int cors;        /* on the clients' plane: answers carry CORS headers (cors.h) */
    int gate;        /* server.c: waiting for its access token's keys (GATE_*) */
    struct ing_req *gate_next; /* server.c: the list of gated requests */
    char tenant[128];
    ing_call_t call;
    struct ing_upload *upload;     /* a PUT of a signed upload URL being streamed (files.h) */
    struct ing_listener *listener; /* a notification stream open on call (listen.h) */
    struct ing_batch *batch;       /* a batch whose elements wait, call its group (batch.h) */
} ing_req_t;

/* The value of request header name (case-insensitive), or NULL when absent. Valid for the
 * request's lifetime. */
const char *ing_req_header(const ing_req_t *req, const char *name);

/* The value of query argument name (decoded), or NULL when absent. */
const char *ing_req_arg(const ing_req_t *req, const char *name);

/* Calls fn(cls, name, value) for every request header in the order received; stops when
 * fn returns non-zero. fn may be NULL to count. Returns the number of headers visited. */
size_t ing_req_header_each(const ing_req_t *req,
                           int (*fn)(void *cls, const char *name, const char *value), void *cls);

/* The client's address as text into out (ING_PEER_LEN bytes): the connection's peer, or the
 * right-most X-Forwarded-For entry not in trusted when the peer is a trusted proxy (peer.h). */
void ing_req_client(const ing_req_t *req, const ing_peer_nets_t *trusted, char *out, size_t size);

/* Sets req->request_id: the request's X-Request-Id header when log_request_id_valid (log.h),
 * else a new id of 32 lowercase hex characters (RAND_bytes). Never fails: a load balancer's
 * odd id is replaced, not refused (and not logged: it may hold anything). */
void ing_req_id_assign(ing_req_t *req);

/* The trace id the access log prints for req: its call's trace when it has one, else the
 * trace id of a valid `traceparent` header, else "". The string is req's or this thread's
 * (valid until the next call on the thread). */
const char *ing_req_trace_id(const ing_req_t *req);

/* Starts a synthetic request of ctx for a test: method and target (path and query, copied)
 * with the headers, arguments and client of synth (kept by reference) and body (copied;
 * may be NULL). 0, or -1 out of memory. Free with ing_req_release(). */
int ing_req_synthetic(ing_req_t *req, ing_ctx_t *ctx, const char *method, const char *uri,
                      const ing_req_synth_t *synth, const char *body, size_t body_len);

/* Frees what a request owns (its target and body); the struct itself is the caller's. */
void ing_req_release(ing_req_t *req);

#endif
