/*
 * ctx.h - the ingress process: its context and the request each HTTP exchange carries.
 *
 * One ing_ctx_t per process, built in mcpq_ingress.c and read by every thread. The registry
 * snapshot pointer is swapped by the refresh thread under reg_lock; request handlers take a
 * reference (ing_ctx_registry) and drop it when the request ends.
 */
#ifndef MCPQ_INGRESS_H
#define MCPQ_INGRESS_H

#include "mq.h"
#include "names.h"
#include "metrics.h"
#include "pending.h"
#include "ratelimit.h"
#include "kv.h"
#include "registry.h"
#include "settings.h"
#include "util.h"

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>

#define ING_SUPPORTED_VERSIONS NAMES_PROTO_SUPPORTED
#define ING_MODERN_VERSION NAMES_PROTO_MODERN
#define ING_LATEST_VERSION NAMES_PROTO_LATEST
#define ING_DEFAULT_VERSION NAMES_PROTO_DEFAULT

typedef struct ing_ctx {
    const mcpq_settings_t *set;
    struct MHD_Daemon *daemon;     /* MCPQ_LISTEN (server.c) */
    struct MHD_Daemon *ops_daemon; /* MCPQ_OPS_LISTEN; NULL when unset */
    char listen_addr[80];          /* where daemon is bound, "[::1]:8080" (port 0 resolved) */
    char ops_addr[80];             /* where ops_daemon is bound; "" without it */
    mq_producer_t *producer;
    kv_target_t *kvt; /* where Redis is (kv.h); every connection is made from it */
    kv_pool_t *kv;
    ing_pending_t *pending;
    ing_metrics_t *metrics;
    ing_ratelimit_t *rl;
    ing_authfail_t authfail;       /* limits on failed authentications (auth.h) */
    struct ing_peer_nets *trusted; /* MCPQ_TRUSTED_PROXIES (peer.h) */
    struct ing_files *files;       /* files and attachments (files.h) */
    struct ing_listen *listen;     /* notification streams (listen.h) */
    pthread_mutex_t reg_lock;
    ing_registry_t *reg;
    char instance[128];
    char reply_key[192];
    atomic_int redis_up;
    atomic_int stopping;
    atomic_llong body_bytes; /* request body bytes held now, all requests together (server.c) */
} ing_ctx_t;

/* The current registry with a reference the caller drops (ing_registry_unref); may be NULL
 * before the first successful load. */
ing_registry_t *ing_ctx_registry(ing_ctx_t *ctx);

/* One HTTP exchange. */
typedef struct ing_req {
    ing_ctx_t *ctx;
    struct MHD_Connection *conn;
    char *uri;          /* the request target exactly as sent (path and query), malloc'd */
    const char *method; /* MHD's string, valid for the request's lifetime */
    int started;        /* the first access-handler call has run */
    util_buf_t body;
    long long body_limit; /* this request's body limit (server.c: before and after credentials) */
    size_t body_held;     /* bytes of ctx->body_bytes this request holds */
    int too_big;          /* the body passed body_limit: answered 413 */
    int busy;             /* the body would pass MCPQ_MAX_BODY_MEMORY_BYTES: answered 503 */
    int handled;          /* the request was dispatched */
    int has_call;         /* call is in use (a job was published) */
    int64_t t0;
    ing_method_t metric;
    unsigned planes; /* the routes the listener it came in on serves (server.c "listeners") */
    char tenant[128];
    ing_call_t call;
    struct ing_upload *upload;     /* a PUT of a signed upload URL being streamed (files.h) */
    struct ing_listener *listener; /* a notification stream open on call (listen.h) */
    struct ing_batch *batch;       /* a batch whose elements wait, call its group (batch.h) */
} ing_req_t;

/* The answer a handler produces for a finished exchange. */
typedef struct ing_resp {
    int status;
    char *body; /* malloc'd, may be NULL for an empty body */
    const char *content_type;
    char session_id[80];     /* non-empty: sent as Mcp-Session-Id */
    const char *www_auth;    /* non-NULL: sent as WWW-Authenticate */
    const char *allow;       /* non-NULL: sent as Allow */
    long long retry_after_s; /* > 0: sent as Retry-After */
    char etag[24];           /* non-empty: sent as ETag (quoted) */
} ing_resp_t;

#endif
