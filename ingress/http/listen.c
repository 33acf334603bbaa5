#include "listen.h"

#include "err.h"
#include "log.h"
#include "kv.h"
#include "session.h"
#include "util.h"

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

/* Frames (see listen.h for where each shape comes from). */
#define FRAME_LEGACY "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}"
#define FRAME_MODERN                                                                               \
    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\",\"params\":{\"_meta\":{" \
    "\"" ING_META_SUBSCRIPTION_ID "\":%s}}}"
#define FRAME_ACK                                                                                  \
    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/subscriptions/acknowledged\",\"params\":{"    \
    "\"_meta\":{\"" ING_META_SUBSCRIPTION_ID "\":%s},\"notifications\":{%s}}}"

struct ing_listener {
    ing_listener_t *prev, *next;
    char key[ING_JOB_ID_LEN]; /* its call's key in the pending table: "l_<hex>" */
    char tenant[128];
    char server[128];
    char session[80]; /* legacy GET stream: its session; "" for 2026-07-28 */
    char *notify;     /* the frame a change sends; NULL: it honours nothing */
    char *end;        /* the frame that ends it gracefully (2026-07-28); NULL: none */
    int ended;        /* ended by the server (ing_pending_finish) */
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
    free(lr->notify);
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

/* The frames of a new stream: the acknowledgement (*ack, the caller frees it) and the
 * notification and end frames of a subscriptions/listen stream, or the notification of a GET
 * stream. 0 or MCPQ_ENOMEM. */
static int listener_frames(ing_listener_t *lr, const ing_listen_spec_t *spec, int modern,
                           char **ack)
{
    int rc = 0;
    if (modern) {
        if (asprintf(ack, FRAME_ACK, spec->sub_id_json,
                     spec->tools ? "\"toolsListChanged\":true" : "") < 0)
            *ack = NULL;
        if (spec->tools && asprintf(&lr->notify, FRAME_MODERN, spec->sub_id_json) < 0)
            lr->notify = NULL;
        lr->end = spec->end_json ? strdup(spec->end_json) : NULL;
        if (!*ack || (spec->tools && !lr->notify) || !lr->end)
            rc = MCPQ_ENOMEM;
    } else {
        snprintf(lr->session, sizeof(lr->session), "%s", spec->session_id);
        lr->notify = strdup(FRAME_LEGACY);
        if (!lr->notify)
            rc = MCPQ_ENOMEM;
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
    if (!lr->notify) /* honours nothing: the result at once (listen.h) */
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

/* 1 when tools/list of a server differs between two snapshots (NULL: no such server). */
static int tools_changed(const ing_server_t *a, const ing_server_t *b)
{
    if (!a || !b)
        return a != b;
    return memcmp(a->tools_fp, b->tools_fp, sizeof(a->tools_fp)) != 0;
}

void ing_listen_registry_changed(ing_listen_t *l, const ing_registry_t *old,
                                 const ing_registry_t *reg)
{
    if (!l || !old || !reg)
        return;
    size_t notified = 0, ended = 0;
    pthread_mutex_lock(&l->lock);
    for (ing_listener_t *lr = l->head; lr; lr = lr->next) {
        if (lr->ended || !lr->notify)
            continue;
        if (!tools_changed(ing_registry_server(old, lr->tenant, lr->server),
                           ing_registry_server(reg, lr->tenant, lr->server)))
            continue;
        int rc = ing_pending_post(l->ctx->pending, lr->key, lr->notify);
        if (rc == 0) {
            notified++;
        } else if (rc == MCPQ_ENOMEM) {
            /* Its client has not read 8 MiB: end the stream rather than drop a change
             * silently; the client reconnects and lists again. */
            end_locked(l, lr);
            ended++;
        }
    }
    pthread_mutex_unlock(&l->lock);
    if (notified || ended) {
        char ns[24], es[24], revs[24];
        snprintf(ns, sizeof(ns), "%zu", notified);
        snprintf(es, sizeof(es), "%zu", ended);
        snprintf(revs, sizeof(revs), "%lld", ing_registry_rev(reg));
        log_event(LOG_INFO, "tools/list changed: listeners notified", "revision", revs, "notified",
                  ns, "ended_slow", es, (char *)NULL);
    }
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
        /* The key is session.h's (docs/internals.md). */
        for (size_t i = from; i < to; i++)
            redisAppendCommand(c, "EXPIRE " ING_SESSION_KEY_PREFIX "%s %lld", ids[i],
                               l->ctx->set->session_ttl_s);
        int broken = 0;
        for (size_t i = from; i < to && !broken; i++) {
            redisReply *r = NULL;
            if (redisGetReply(c, (void **)&r) != REDIS_OK || !r) {
                broken = 1;
                break;
            }
            broken = kv_ctx_failover(NULL, c, r); /* a demoted master: the context goes */
            if (r->type == REDIS_REPLY_INTEGER && r->integer == 0 &&
                end_session_local(l, ids[i]) > 0)
                log_event(LOG_INFO, "notification stream ended: its session is gone", "session",
                          ids[i], (char *)NULL);
            freeReplyObject(r);
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
    /* One confirmation per channel: the first here, the second read by the loop. */
    redisReply *r =
        redisCommand(c, "SUBSCRIBE %s %s", ING_CHANNEL_REGISTRY, ING_CHANNEL_SESSION_ENDED);
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
