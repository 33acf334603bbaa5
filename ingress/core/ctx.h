/*
 * ctx.h - the ingress process context: everything one replica holds, in one struct.
 *
 * One ing_ctx_t per process, built in mcpq_ingress.c (or by a test) and passed to every
 * handler through its request (req.h: req->ctx); no handler reaches it another way. The registry
 * snapshot pointer is swapped by the refresh thread under reg_lock; request handlers take a
 * reference (ing_ctx_registry) and drop it when the request ends.
 */
#ifndef MCPQ_INGRESS_H
#define MCPQ_INGRESS_H

#include "mq.h"
#include "names.h"
#include "metrics.h"
#include "oauth.h"
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
    ing_oauth_t *oauth;            /* OAuth keys and introspection (oauth.h); its issuers are the
                                      registry's: ing_oauth_configure at each registry swap */
    struct ing_rstate *rstate;     /* 2026-07-28 requestState signing (rstate.h) */
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

#endif
