#include "listen.h"

#include "err.h"
#include "kinds.h"
#include "log.h"
#include "kv.h"
#include "rsub.h"
#include "session.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LISTEN_POLL_MS 200        /* the Pub/Sub thread looks at its stop flag this often */
#define LISTEN_PING_MS 5000       /* a PING on the subscribed connection */
#define LISTEN_STALL_MIN_MS 1000  /* least time a PING answer is waited for */
#define LISTEN_BACKOFF_MIN_MS 100 /* reconnect backoff, doubling */
#define LISTEN_BACKOFF_MAX_MS 5000
#define LISTEN_SWEEP_MS 30000  /* GET streams' sessions: refreshed, or their streams end */
#define LISTEN_SWEEP_BATCH 256 /* EXPIREs per pipeline */

#define LISTEN_URI_MAX KINDS_URI_MAX /* the longest resource uri a message may name */

/* Frames (see listen.h for where each shape comes from): the three list_changed kinds, a
 * 2026-07-28 one with the subscriptionId in _meta. */
#define FRAME_LEGACY "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/%s/list_changed\"}"
#define FRAME_MODERN                                                                               \
    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/%s/list_changed\",\"params\":{\"_meta\":{"    \
    "\"" ING_META_SUBSCRIPTION_ID "\":%s}}}"
#define FRAME_ACK                                                                                  \
    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/subscriptions/acknowledged\",\"params\":{"    \
    "\"_meta\":{\"" ING_META_SUBSCRIPTION_ID "\":%s},\"notifications\":%s}}"
#define FRAME_UPDATED_LEGACY                                                                       \
    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/updated\",\"params\":{\"uri\":%s}}"
#define FRAME_UPDATED_MODERN                                                                       \
    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/updated\",\"params\":{\"_meta\":{"  \
    "\"" ING_META_SUBSCRIPTION_ID "\":%s},\"uri\":%s}}"

/* The lists whose changes a stream may hear of, in the order of the frames' kinds. */
enum { LIST_TOOLS, LIST_RESOURCES, LIST_PROMPTS, NLISTS };
static const char *const list_names[NLISTS] = {"tools", "resources", "prompts"};
static const char *const list_filters[NLISTS] = {"toolsListChanged", "resourcesListChanged",
                                                 "promptsListChanged"};

struct ing_listener {
    ing_listener_t *prev, *next;
    char key[ING_JOB_ID_LEN]; /* its call's key in the pending table: "l_<hex>" */
    char tenant[128];
    char server[128];
    char session[80];     /* legacy GET stream: its session; "" for 2026-07-28 */
    char *notify[NLISTS]; /* the frame a change of each list sends; NULL: not honoured */
    char *sub_id;         /* 2026-07-28: the subscriptionId, rendered; NULL on a GET stream */
    char **uris;          /* 2026-07-28 resourceSubscriptions honoured (GET: rsub.h) */
    size_t nuris;
    char *end; /* the frame that ends it gracefully (2026-07-28); NULL: none */
    int ended; /* ended by the server (ing_pending_finish) */
};

struct ing_listen {
    ing_ctx_t *ctx;
    void (*wake)(void *);
    void *wake_arg;
    pthread_mutex_t lock;
    ing_listener_t *head; /* every stream whose request is not over */
    size_t n;
    pthread_t thread;
    atomic_int stop;
};

static void listener_free(ing_listener_t *lr)
{
    if (!lr)
        return;
    for (int k = 0; k < NLISTS; k++)
        free(lr->notify[k]);
    for (size_t i = 0; i < lr->nuris; i++)
        free(lr->uris[i]);
    free(lr->uris);
    free(lr->sub_id);
    free(lr->end);
    free(lr);
}

/* Ends a stream from the server's side (lock held): its last frame, then the end. */
static void end_locked(ing_listen_t *l, ing_listener_t *lr)
{
    if (lr->ended)
        return;
    ing_pending_finish(l->ctx->pending, lr->key, lr->end);
    lr->end = NULL; /* now owned by the pending table */
    lr->ended = 1;
}

/* Ends the GET streams of session_id on this replica; how many. */
static size_t end_session_local(ing_listen_t *l, const char *session_id)
{
    size_t n = 0;
    pthread_mutex_lock(&l->lock);
    for (ing_listener_t *lr = l->head; lr; lr = lr->next) {
        if (!lr->ended && lr->session[0] && strcmp(lr->session, session_id) == 0) {
            end_locked(l, lr);
            n++;
        }
    }
    pthread_mutex_unlock(&l->lock);
    return n;
}

/* 1 when the stream honours something: it stays open. */
static int honours(const ing_listener_t *lr)
{
    for (int k = 0; k < NLISTS; k++)
        if (lr->notify[k])
            return 1;
    return lr->nuris > 0;
}

/* The acknowledgement of a subscriptions/listen stream: the filter's honoured subset
 * (malloc'd, or NULL). */
static char *ack_frame(const ing_listener_t *lr)
{
    cJSON *n = cJSON_CreateObject();
    for (int k = 0; k < NLISTS; k++)
        if (lr->notify[k])
            cJSON_AddBoolToObject(n, list_filters[k], 1);
    if (lr->nuris) {
        cJSON *a = cJSON_AddArrayToObject(n, "resourceSubscriptions");
        for (size_t i = 0; i < lr->nuris; i++)
            cJSON_AddItemToArray(a, cJSON_CreateString(lr->uris[i]));
    }
    char *filter = cJSON_PrintUnformatted(n), *json = NULL;
    cJSON_Delete(n);
    if (filter && asprintf(&json, FRAME_ACK, lr->sub_id, filter) < 0)
        json = NULL;
    cJSON_free(filter);
    return json;
}

/* The frames of a new stream: the acknowledgement (*ack, the caller frees it), the
 * notification frames, the uris and the end frame of a subscriptions/listen stream, or the
 * notification frames of a GET stream. 0 or MCPQ_ENOMEM. */
static int listener_frames(ing_listener_t *lr, const ing_listen_spec_t *spec, int modern,
                           char **ack)
{
    const int want[NLISTS] = {spec->tools, spec->resources, spec->prompts};
    int rc = 0;
    if (modern) {
        lr->sub_id = strdup(spec->sub_id_json);
        lr->end = spec->end_json ? strdup(spec->end_json) : NULL;
        lr->uris = spec->nuris ? calloc(spec->nuris, sizeof(*lr->uris)) : NULL;
        if (!lr->sub_id || !lr->end || (spec->nuris && !lr->uris))
            return MCPQ_ENOMEM;
        for (size_t i = 0; i < spec->nuris; i++)
            if (!(lr->uris[lr->nuris++] = strdup(spec->uris[i])))
                return MCPQ_ENOMEM;
        for (int k = 0; k < NLISTS && rc == 0; k++)
            if (want[k] && asprintf(&lr->notify[k], FRAME_MODERN, list_names[k], lr->sub_id) < 0) {
                lr->notify[k] = NULL;
                rc = MCPQ_ENOMEM;
            }
        if (rc == 0 && !(*ack = ack_frame(lr)))
            rc = MCPQ_ENOMEM;
    } else {
        /* A GET stream hears of every list's changes (the capabilities announce them all). */
        snprintf(lr->session, sizeof(lr->session), "%s", spec->session_id);
        for (int k = 0; k < NLISTS && rc == 0; k++)
            if (asprintf(&lr->notify[k], FRAME_LEGACY, list_names[k]) < 0) {
                lr->notify[k] = NULL;
                rc = MCPQ_ENOMEM;
            }
    }
    return rc;
}

/* The request's call, parked as the stream keyed lr_key: never answered by a deadline. */
static void listener_call(ing_ctx_t *ctx, ing_req_t *req, const char *lr_key,
                          const ing_listen_spec_t *spec, int modern)
{
    ing_call_t *call = &req->call;
    snprintf(call->job_id, sizeof(call->job_id), "%s", lr_key);
    snprintf(call->id_json, sizeof(call->id_json), "%s", modern ? spec->sub_id_json : "null");
    call->deadline_mono = INT64_MAX; /* never answered -32003 */
    call->conn = req->conn;
    call->sse_ok = 1;
    call->modern = modern;
    call->log_min = -1;
    call->progress_token[0] = '\0';
    call->tool[0] = '\0';
    call->task_result = 0;
    call->listener = 1;
    call->keepalive_ms = (int)ctx->set->listen_keepalive_ms;
}

/* Under l->lock: may lr open? Not while stopping, within MCPQ_MAX_LISTENERS and the tenant's
 * limit, one GET stream per session. 0, MCPQ_EUNAVAIL, MCPQ_ETOOBIG, MCPQ_EEXIST or
 * MCPQ_EQUOTA. */
static int admit_locked(ing_listen_t *l, const ing_listener_t *lr, const ing_listen_spec_t *spec,
                        int modern)
{
    ing_ctx_t *ctx = l->ctx;
    int rc = 0;
    if (atomic_load(&ctx->stopping)) {
        rc = MCPQ_EUNAVAIL;
    } else if (l->n >= (size_t)ctx->set->max_listeners) {
        rc = MCPQ_ETOOBIG;
    } else {
        size_t mine = 0; /* the tenant's streams here, counted as l->n counts them */
        for (ing_listener_t *o = l->head; o && rc == 0; o = o->next) {
            if (!modern && !o->ended && strcmp(o->session, lr->session) == 0)
                rc = MCPQ_EEXIST;
            mine += strcmp(o->tenant, lr->tenant) == 0;
        }
        if (rc == 0 && spec->tenant_max > 0 && mine >= (size_t)spec->tenant_max)
            rc = MCPQ_EQUOTA;
    }
    return rc;
}

/* Under l->lock: parks call and sends the stream's first bytes (ack on a modern stream). 0 or
 * a negative code, with the call no longer parked. */
static int start_locked(ing_listen_t *l, ing_call_t *call, const char *lr_key, const char *ack,
                        int modern)
{
    ing_ctx_t *ctx = l->ctx;
    int rc = 0;
    ing_pending_add(ctx->pending, call);
    if (call->done) /* the table could not take it */
        rc = MCPQ_ENOMEM;
    if (rc == 0) {
        /* The first bytes: the acknowledgement MUST come first on a 2026-07-28 stream; a
         * comment lets a GET stream's headers and first chunk leave at once. */
        rc = modern ? ing_pending_post(ctx->pending, lr_key, ack)
                    : ing_pending_comment(ctx->pending, lr_key, "listening");
        if (rc < 0)
            ing_pending_remove(ctx->pending, call);
    }
    return rc;
}

/* Under l->lock: lr at the head of the list. */
static void link_locked(ing_listen_t *l, ing_listener_t *lr)
{
    lr->next = l->head;
    if (l->head)
        l->head->prev = lr;
    l->head = lr;
    l->n++;
    if (!honours(lr)) /* honours nothing: the result at once (listen.h) */
        end_locked(l, lr);
}

int ing_listen_open(ing_listen_t *l, ing_req_t *req, const ing_listen_spec_t *spec)
{
    ing_ctx_t *ctx = l->ctx;
    int modern = spec->session_id == NULL, rc = 0;
    char *ack = NULL, hex[33];
    ing_listener_t *lr = calloc(1, sizeof(*lr));
    if (!lr || util_random_hex(hex, 16) < 0) {
        free(lr);
        return MCPQ_ENOMEM;
    }
    snprintf(lr->key, sizeof(lr->key), "l_%s", hex);
    snprintf(lr->tenant, sizeof(lr->tenant), "%s", spec->tenant);
    snprintf(lr->server, sizeof(lr->server), "%s", spec->server);
    rc = listener_frames(lr, spec, modern, &ack);
    if (rc < 0)
        goto out;
    listener_call(ctx, req, lr->key, spec, modern);

    pthread_mutex_lock(&l->lock);
    rc = admit_locked(l, lr, spec, modern);
    if (rc == 0)
        rc = start_locked(l, &req->call, lr->key, ack, modern);
    if (rc == 0) {
        link_locked(l, lr);
        req->has_call = 1;
        req->listener = lr;
        lr = NULL; /* now on the list */
    }
    pthread_mutex_unlock(&l->lock);
    if (rc == 0)
        log_event(LOG_INFO, "notification stream opened", "tenant", spec->tenant, "server",
                  spec->server, "kind", modern ? "subscriptions/listen" : "GET", (char *)NULL);
out:
    free(ack);
    listener_free(lr);
    return rc;
}

void ing_listen_remove(ing_listen_t *l, ing_listener_t *lr)
{
    if (!l || !lr)
        return;
    pthread_mutex_lock(&l->lock);
    if (lr->prev)
        lr->prev->next = lr->next;
    else
        l->head = lr->next;
    if (lr->next)
        lr->next->prev = lr->prev;
    l->n--;
    pthread_mutex_unlock(&l->lock);
    log_event(LOG_INFO, "notification stream closed", "tenant", lr->tenant, "server", lr->server,
              "by", lr->ended ? "server" : "client", (char *)NULL);
    listener_free(lr);
}

/* 1 when list k of a server differs between two snapshots (NULL: no such server). */
static int list_changed(const ing_server_t *a, const ing_server_t *b, int k)
{
    if (!a || !b)
        return a != b;
    const unsigned char *fa = k == LIST_TOOLS       ? a->tools_fp
                              : k == LIST_RESOURCES ? a->resources_fp
                                                    : a->prompts_fp;
    const unsigned char *fb = k == LIST_TOOLS       ? b->tools_fp
                              : k == LIST_RESOURCES ? b->resources_fp
                                                    : b->prompts_fp;
    return memcmp(fa, fb, sizeof(a->tools_fp)) != 0;
}

/* Under l->lock: posts frame on lr's stream. 1 sent; 0 not (its call is gone); -1 its client
 * has not read 8 MiB: the stream is ended rather than a notification dropped silently (the
 * client reconnects and lists again). */
static int post_locked(ing_listen_t *l, ing_listener_t *lr, const char *frame)
{
    int rc = ing_pending_post(l->ctx->pending, lr->key, frame);
    if (rc == 0)
        return 1;
    if (rc == MCPQ_ENOMEM) {
        end_locked(l, lr);
        return -1;
    }
    return 0;
}

void ing_listen_registry_changed(ing_listen_t *l, const ing_registry_t *old,
                                 const ing_registry_t *reg)
{
    if (!l || !old || !reg)
        return;
    size_t notified[NLISTS] = {0}, ended = 0;
    pthread_mutex_lock(&l->lock);
    for (ing_listener_t *lr = l->head; lr; lr = lr->next) {
        const ing_server_t *a = ing_registry_server(old, lr->tenant, lr->server);
        const ing_server_t *b = ing_registry_server(reg, lr->tenant, lr->server);
        for (int k = 0; k < NLISTS && !lr->ended; k++) {
            if (!lr->notify[k] || !list_changed(a, b, k))
                continue;
            int rc = post_locked(l, lr, lr->notify[k]);
            notified[k] += rc > 0;
            ended += rc < 0;
        }
    }
    pthread_mutex_unlock(&l->lock);
    for (int k = 0; k < NLISTS; k++) {
        if (!notified[k] && !(k == 0 && ended))
            continue;
        char ns[24], es[24], revs[24], msg[80];
        snprintf(ns, sizeof(ns), "%zu", notified[k]);
        snprintf(es, sizeof(es), "%zu", ended);
        snprintf(revs, sizeof(revs), "%lld", ing_registry_rev(reg));
        snprintf(msg, sizeof(msg), "%s/list changed: listeners notified", list_names[k]);
        log_event(LOG_INFO, msg, "revision", revs, "notified", ns, "ended_slow", es, (char *)NULL);
    }
}

/* notifications/resources/updated for uri, on a stream with sub_id (rendered JSON; NULL: a
 * GET stream). malloc'd, or NULL. */
static char *updated_frame(const char *uri, const char *sub_id)
{
    cJSON *u = cJSON_CreateString(uri);
    char *quoted = cJSON_PrintUnformatted(u), *json = NULL;
    cJSON_Delete(u);
    if (quoted && (sub_id ? asprintf(&json, FRAME_UPDATED_MODERN, sub_id, quoted)
                          : asprintf(&json, FRAME_UPDATED_LEGACY, quoted)) < 0)
        json = NULL;
    cJSON_free(quoted);
    return json;
}

/* 1 when the 2026-07-28 stream lr listens to uri. */
static int listens_to(const ing_listener_t *lr, const char *uri)
{
    for (size_t i = 0; i < lr->nuris; i++)
        if (strcmp(lr->uris[i], uri) == 0)
            return 1;
    return 0;
}

/* The GET streams of (tenant, server) whose sessions may have subscribed: their keys and
 * sessions (malloc'd arrays of n; the caller frees both), under the lock. 0 or MCPQ_ENOMEM. */
static int legacy_streams(ing_listen_t *l, const char *tenant, const char *server,
                          char (**keys)[ING_JOB_ID_LEN], char (**sessions)[80], size_t *n)
{
    *keys = NULL;
    *sessions = NULL;
    *n = 0;
    pthread_mutex_lock(&l->lock);
    size_t cap = l->n;
    if (cap) {
        *keys = calloc(cap, sizeof(**keys));
        *sessions = calloc(cap, sizeof(**sessions));
    }
    for (ing_listener_t *lr = l->head; *keys && *sessions && lr; lr = lr->next) {
        if (lr->ended || !lr->session[0] || strcmp(lr->tenant, tenant) != 0 ||
            strcmp(lr->server, server) != 0)
            continue;
        memcpy((*keys)[*n], lr->key, sizeof(lr->key));
        memcpy((*sessions)[*n], lr->session, sizeof(lr->session));
        (*n)++;
    }
    pthread_mutex_unlock(&l->lock);
    return cap && (!*keys || !*sessions) ? MCPQ_ENOMEM : 0;
}

/* Under l->lock: the stream whose call is key, or NULL once it is gone or ended. */
static ing_listener_t *find_locked(ing_listen_t *l, const char *key)
{
    for (ing_listener_t *lr = l->head; lr; lr = lr->next)
        if (!lr->ended && strcmp(lr->key, key) == 0)
            return lr;
    return NULL;
}

/* The GET streams of (tenant, server) whose sessions subscribed to uri (rsub.h, asked of
 * Redis outside the lock). How many were sent the update. */
static size_t updated_legacy(ing_listen_t *l, const char *tenant, const char *server,
                             const char *uri)
{
    char(*keys)[ING_JOB_ID_LEN] = NULL, (*sessions)[80] = NULL;
    size_t n = 0, sent = 0;
    const char **ids = NULL;
    int *hit = NULL;
    char *frame = NULL;
    if (legacy_streams(l, tenant, server, &keys, &sessions, &n) < 0 || n == 0)
        goto out;
    ids = calloc(n, sizeof(*ids));
    hit = calloc(n, sizeof(*hit));
    frame = updated_frame(uri, NULL);
    if (!ids || !hit || !frame)
        goto out;
    for (size_t i = 0; i < n; i++)
        ids[i] = sessions[i];
    if (ing_rsub_match(l->ctx->kv, ids, n, server, uri, hit) < 0)
        log_event(LOG_WARN, "resource update: cannot read the sessions' subscriptions (redis)",
                  "uri", uri, (char *)NULL);
    pthread_mutex_lock(&l->lock);
    for (size_t i = 0; i < n; i++) {
        ing_listener_t *lr = hit[i] ? find_locked(l, keys[i]) : NULL;
        sent += lr && post_locked(l, lr, frame) > 0;
    }
    pthread_mutex_unlock(&l->lock);
out:
    free(frame);
    free(hit);
    free(ids);
    free(keys);
    free(sessions);
    return sent;
}

void ing_listen_resource_updated(ing_listen_t *l, const char *tenant, const char *server,
                                 const char *uri)
{
    if (!l)
        return;
    size_t sent = 0;
    pthread_mutex_lock(&l->lock);
    for (ing_listener_t *lr = l->head; lr; lr = lr->next) {
        if (lr->ended || lr->session[0] || strcmp(lr->tenant, tenant) != 0 ||
            strcmp(lr->server, server) != 0 || !listens_to(lr, uri))
            continue;
        char *frame = updated_frame(uri, lr->sub_id);
        sent += frame && post_locked(l, lr, frame) > 0;
        free(frame);
    }
    pthread_mutex_unlock(&l->lock);
    sent += updated_legacy(l, tenant, server, uri);
    if (sent) {
        char ns[24];
        snprintf(ns, sizeof(ns), "%zu", sent);
        log_event(LOG_INFO, "resource updated: listeners notified", "tenant", tenant, "server",
                  server, "uri", uri, "notified", ns, (char *)NULL);
    }
}

/* A message of ING_CHANNEL_RESOURCE_UPDATED: {"tenant","server","uri"}, each a string of
 * bounded length; anything else is ignored (logged once per message). */
static void on_resource_updated(ing_listen_t *l, const char *payload, size_t len)
{
    cJSON *o = cJSON_ParseWithLength(payload, len);
    const char *tenant = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "tenant"));
    const char *server = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "server"));
    const char *uri = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "uri"));
    if (tenant && server && uri && *tenant && *server && *uri && strlen(tenant) < 128 &&
        strlen(server) < 128 && strlen(uri) <= LISTEN_URI_MAX)
        ing_listen_resource_updated(l, tenant, server, uri);
    else
        log_event(LOG_WARN,
                  "resource update ignored: the message is not {\"tenant\",\"server\",\"uri\"}",
                  "channel", ING_CHANNEL_RESOURCE_UPDATED, (char *)NULL);
    cJSON_Delete(o);
}

void ing_listen_session_ended(ing_listen_t *l, const char *session_id)
{
    if (!l)
        return;
    end_session_local(l, session_id);
    char err[256];
    redisReply *r = kv_pool_command(l->ctx->kv, err, sizeof(err), "PUBLISH %s %s",
                                    ING_CHANNEL_SESSION_ENDED, session_id);
    if (r)
        freeReplyObject(r);
    else
        log_event(LOG_WARN,
                  "cannot publish the end of a session (other replicas end its streams "
                  "at their next sweep)",
                  "error", err, (char *)NULL);
}

void ing_listen_close_all(ing_listen_t *l)
{
    if (!l)
        return;
    size_t n = 0;
    pthread_mutex_lock(&l->lock);
    for (ing_listener_t *lr = l->head; lr; lr = lr->next) {
        if (!lr->ended) {
            end_locked(l, lr);
            n++;
        }
    }
    pthread_mutex_unlock(&l->lock);
    if (n) {
        char ns[24];
        snprintf(ns, sizeof(ns), "%zu", n);
        log_event(LOG_INFO, "notification streams ended: shutting down", "streams", ns,
                  (char *)NULL);
    }
}

size_t ing_listen_count(ing_listen_t *l)
{
    pthread_mutex_lock(&l->lock);
    size_t n = l->n;
    pthread_mutex_unlock(&l->lock);
    return n;
}

/* ---- the Pub/Sub thread ---- */

/* Refreshes the session of every open GET stream (an open stream is activity) and ends the
 * streams whose session is gone: expired, or deleted while the Pub/Sub message was lost. */
static void sweep(ing_listen_t *l)
{
    char(*ids)[80] = NULL;
    size_t n = 0;
    pthread_mutex_lock(&l->lock);
    if (l->n)
        ids = calloc(l->n, sizeof(*ids));
    for (ing_listener_t *lr = l->head; ids && lr; lr = lr->next)
        if (!lr->ended && lr->session[0])
            memcpy(ids[n++], lr->session, sizeof(ids[0]));
    pthread_mutex_unlock(&l->lock);
    char err[256];
    for (size_t from = 0; from < n; from += LISTEN_SWEEP_BATCH) {
        size_t to = from + LISTEN_SWEEP_BATCH < n ? from + LISTEN_SWEEP_BATCH : n;
        redisContext *c = kv_pool_get(l->ctx->kv, err, sizeof(err));
        if (!c)
            break; /* Redis is down: next sweep */
        /* The keys are session.h's and rsub.h's (docs/internals.md): the subscriptions live
         * as long as their session. */
        for (size_t i = from; i < to; i++) {
            redisAppendCommand(c, "EXPIRE " ING_SESSION_KEY_PREFIX "%s %lld", ids[i],
                               l->ctx->set->session_ttl_s);
            redisAppendCommand(c, "EXPIRE " ING_RSUB_KEY_PREFIX "%s %lld", ids[i],
                               l->ctx->set->session_ttl_s);
        }
        int broken = 0;
        for (size_t i = from; i < to && !broken; i++) {
            redisReply *r[2] = {NULL, NULL};
            for (int j = 0; j < 2 && !broken; j++) {
                if (redisGetReply(c, (void **)&r[j]) != REDIS_OK || !r[j])
                    broken = 1;
                else
                    broken = kv_ctx_failover(NULL, c, r[j]); /* a demoted master: it goes */
            }
            if (!broken && r[0]->type == REDIS_REPLY_INTEGER && r[0]->integer == 0 &&
                end_session_local(l, ids[i]) > 0)
                log_event(LOG_INFO, "notification stream ended: its session is gone", "session",
                          ids[i], (char *)NULL);
            for (int j = 0; j < 2; j++)
                if (r[j])
                    freeReplyObject(r[j]);
        }
        kv_pool_put(l->ctx->kv, c, broken);
        if (broken)
            break;
    }
    free(ids);
}

/* Sends what hiredis holds in its output buffer (a blocking socket, bounded by its
 * timeout). 0 or MCPQ_EIO. */
static int flush(redisContext *c)
{
    int done = 0;
    while (!done)
        if (redisBufferWrite(c, &done) != REDIS_OK)
            return MCPQ_EIO;
    return 0;
}

/* A subscribed connection, or NULL with err filled. */
static redisContext *subscribe(ing_listen_t *l, char *err, size_t err_size)
{
    const mcpq_settings_t *set = l->ctx->set;
    redisContext *c = kv_connect(l->ctx->kvt, (int)set->redis_timeout_ms, err, err_size);
    if (!c)
        return NULL;
    /* One confirmation per channel: the first here, the others read by the loop. */
    redisReply *r = redisCommand(c, "SUBSCRIBE %s %s %s", ING_CHANNEL_REGISTRY,
                                 ING_CHANNEL_SESSION_ENDED, ING_CHANNEL_RESOURCE_UPDATED);
    if (!r || r->type != REDIS_REPLY_ARRAY) {
        snprintf(err, err_size, "SUBSCRIBE failed: %s",
                 c->err                              ? c->errstr
                 : r && r->type == REDIS_REPLY_ERROR ? r->str
                                                     : "no reply");
        if (r)
            freeReplyObject(r);
        redisFree(c);
        return NULL;
    }
    freeReplyObject(r);
    return c;
}

/* One message of the subscribed connection. */
static void on_reply(ing_listen_t *l, const redisReply *r, int64_t *ping_sent)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 2 ||
        r->element[0]->type != REDIS_REPLY_STRING)
        return;
    const char *kind = r->element[0]->str;
    if (strcmp(kind, "pong") == 0) {
        *ping_sent = 0;
        return;
    }
    if (strcmp(kind, "message") != 0 || r->elements != 3 ||
        r->element[1]->type != REDIS_REPLY_STRING || r->element[2]->type != REDIS_REPLY_STRING)
        return;
    const char *channel = r->element[1]->str, *payload = r->element[2]->str;
    if (strcmp(channel, ING_CHANNEL_REGISTRY) == 0) {
        if (l->wake)
            l->wake(l->wake_arg);
    } else if (strcmp(channel, ING_CHANNEL_SESSION_ENDED) == 0 &&
               strlen(payload) == r->element[2]->len && ing_session_id_valid(payload)) {
        end_session_local(l, payload);
    } else if (strcmp(channel, ING_CHANNEL_RESOURCE_UPDATED) == 0) {
        on_resource_updated(l, payload, r->element[2]->len);
    }
}

/* The subscriber thread's connection and timers. */
typedef struct sub_state {
    redisContext *c; /* NULL while not subscribed */
    char err[256];
    int backoff, logged, stall;
    int64_t next_try, next_ping, ping_sent;
} sub_state_t;

/* Not subscribed: subscribes when the back-off allows, and wakes the refresh for a change
 * published while away. */
static void sub_connect(ing_listen_t *l, sub_state_t *st, int64_t now)
{
    if (now < st->next_try) {
        usleep(LISTEN_POLL_MS * 1000);
        return;
    }
    st->c = subscribe(l, st->err, sizeof(st->err));
    if (!st->c) {
        if (!st->logged++)
            log_event(LOG_WARN,
                      "registry subscriber: redis unreachable (changes are still seen "
                      "by the revision poll)",
                      "error", st->err, (char *)NULL);
        st->next_try = now + st->backoff;
        st->backoff =
            st->backoff * 2 > LISTEN_BACKOFF_MAX_MS ? LISTEN_BACKOFF_MAX_MS : st->backoff * 2;
        return;
    }
    if (st->logged)
        log_event(LOG_INFO, "registry subscriber: subscribed again", (char *)NULL);
    st->logged = 0;
    st->backoff = LISTEN_BACKOFF_MIN_MS;
    st->next_ping = now + LISTEN_PING_MS;
    st->ping_sent = 0;
    if (l->wake)
        l->wake(l->wake_arg); /* a change published while we were away */
}

/* Subscribed: handles what arrives within one poll and checks the connection with PING (no
 * answer within st->stall: lost). Why the connection is lost, or NULL. */
static const char *sub_read(ing_listen_t *l, sub_state_t *st)
{
    redisContext *c = st->c;
    struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
    int ready = poll(&pfd, 1, LISTEN_POLL_MS);
    const char *why = NULL;
    if (ready < 0 && errno != EINTR)
        why = "poll failed";
    if (ready > 0 && redisBufferRead(c) != REDIS_OK)
        why = c->errstr[0] ? c->errstr : "connection lost";
    while (ready > 0 && !why) {
        void *reply = NULL;
        if (redisGetReplyFromReader(c, &reply) != REDIS_OK) {
            why = c->errstr[0] ? c->errstr : "protocol error";
            break;
        }
        if (!reply)
            break;
        on_reply(l, reply, &st->ping_sent);
        freeReplyObject(reply);
    }
    int64_t now = util_mono_ms();
    if (!why && st->ping_sent && now - st->ping_sent >= st->stall) {
        snprintf(st->err, sizeof(st->err), "no answer to PING for %lld ms",
                 (long long)(now - st->ping_sent));
        why = st->err;
    } else if (!why && !st->ping_sent && now >= st->next_ping) {
        if (redisAppendCommand(c, "PING") != REDIS_OK || flush(c) < 0)
            why = c->errstr[0] ? c->errstr : "cannot send PING";
        st->ping_sent = now;
        st->next_ping = now + LISTEN_PING_MS;
    }
    return why;
}

static void *listen_thread(void *arg)
{
    ing_listen_t *l = arg;
    sub_state_t st = {.backoff = LISTEN_BACKOFF_MIN_MS,
                      .stall = (int)l->ctx->set->redis_timeout_ms};
    if (st.stall < LISTEN_STALL_MIN_MS)
        st.stall = LISTEN_STALL_MIN_MS;
    int64_t next_sweep = util_mono_ms() + LISTEN_SWEEP_MS;
    while (!atomic_load(&l->stop)) {
        int64_t now = util_mono_ms();
        if (now >= next_sweep) {
            sweep(l);
            next_sweep = now + LISTEN_SWEEP_MS;
        }
        if (!st.c) {
            sub_connect(l, &st, now);
            continue;
        }
        const char *why = sub_read(l, &st);
        if (why) {
            if (!st.logged++)
                log_event(LOG_WARN, "registry subscriber: connection lost, reconnecting", "error",
                          why, (char *)NULL);
            redisFree(st.c);
            st.c = NULL;
            st.next_try = 0;
        }
    }
    redisFree(st.c);
    return NULL;
}

ing_listen_t *ing_listen_new(ing_ctx_t *ctx, void (*wake)(void *), void *wake_arg)
{
    ing_listen_t *l = calloc(1, sizeof(*l));
    if (!l)
        return NULL;
    l->ctx = ctx;
    l->wake = wake;
    l->wake_arg = wake_arg;
    pthread_mutex_init(&l->lock, NULL);
    atomic_init(&l->stop, 0);
    if (pthread_create(&l->thread, NULL, listen_thread, l) != 0) {
        log_event(LOG_ERROR, "cannot start the registry subscriber thread", (char *)NULL);
        pthread_mutex_destroy(&l->lock);
        free(l);
        return NULL;
    }
    return l;
}

void ing_listen_free(ing_listen_t *l)
{
    if (!l)
        return;
    atomic_store(&l->stop, 1);
    pthread_join(l->thread, NULL);
    while (l->head) {
        ing_listener_t *lr = l->head;
        l->head = lr->next;
        listener_free(lr);
    }
    pthread_mutex_destroy(&l->lock);
    free(l);
}
