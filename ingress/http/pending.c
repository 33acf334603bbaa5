#include "pending.h"
#include "answer.h"
#include "names.h"

#include "err.h"
#include "jprint.h"
#include "rpc.h"
#include "log.h"
#include "notify.h"
#include "prom.h"
#include "kv.h"
#include "tasks.h"
#include "util.h"

#include <assert.h>
#include <time.h>
#include <cjson/cJSON.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NBUCKETS 16384
#define READ_BLOCK_MS 50
#define KEEPALIVE_TICK_MS 200
#define TRIM_EVERY_MS 250 /* at most one malloc_trim this often */
#define CANCEL_TTL_S 86400
#define SSE_MAX_BACKLOG ((size_t)8 << 20) /* per call: frames a slow client has not read */

typedef struct cancel_req {
    struct cancel_req *next;
    char job_id[ING_JOB_ID_LEN];
    char reason[128];
    log_ctx_t trace; /* the cancelling thread's log context: the call's trace when known */
} cancel_req_t;

struct ing_pending {
    pthread_mutex_t lock;
    pthread_cond_t woken;  /* broadcast whenever a parked call wakes (ing_pending_wait) */
    pthread_cond_t hooked; /* broadcast whenever the reader leaves a call's on_input */
    ing_call_t *buckets[NBUCKETS];
    ing_call_t **heap; /* min-heap on deadline_mono */
    size_t nheap, capheap;
    size_t count;      /* calls waiting, listeners excepted */
    size_t nlisteners; /* listeners in the table */
    kv_target_t *kvt;
    int redis_timeout_ms;
    char *reply_key;
    int keepalive_ms;
    int64_t next_tick_mono;
    cancel_req_t *cancels; /* to publish, newest first */
    kv_pool_t *kv;         /* answers for calls that cannot be asked (ing_pending_set_kv) */
    int stop_asking;       /* ing_pending_stop_asking ran: a question ends its call */
    char stop_reason[200];
    pthread_t thread;
    atomic_int stop;
    atomic_int healthy;
    atomic_llong down_since_mono; /* when the reader last lost a working connection; 0: never */
    size_t trim_calls;            /* ing_pending_set_trim; 0: never */
    size_t trim_high;             /* the most calls waiting since the last trim (reader's) */
    int trim_burst;               /* trim_calls were waiting since the table was last empty */
    int64_t next_trim_mono;
};

/* How long a call waits for the reader to reconnect before it is refused (a failover or a
 * dropped connection takes milliseconds to mend; a Redis that stays down is refused at once
 * once this has passed). */
#define RECONNECT_GRACE_MS 1000

static size_t bucket_of(const char *job_id)
{
    size_t h = 1469598103934665603ull;
    for (const char *s = job_id; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h % NBUCKETS;
}

/* --- deadline heap (lock held) --- */

static void heap_swap(ing_pending_t *p, size_t a, size_t b)
{
    ing_call_t *t = p->heap[a];
    p->heap[a] = p->heap[b];
    p->heap[b] = t;
    p->heap[a]->heap_idx = a;
    p->heap[b]->heap_idx = b;
}

static void heap_up(ing_pending_t *p, size_t i)
{
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (p->heap[parent]->deadline_mono <= p->heap[i]->deadline_mono)
            break;
        heap_swap(p, i, parent);
        i = parent;
    }
}

static void heap_down(ing_pending_t *p, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < p->nheap && p->heap[l]->deadline_mono < p->heap[m]->deadline_mono)
            m = l;
        if (r < p->nheap && p->heap[r]->deadline_mono < p->heap[m]->deadline_mono)
            m = r;
        if (m == i)
            return;
        heap_swap(p, i, m);
        i = m;
    }
}

static int heap_push(ing_pending_t *p, ing_call_t *c)
{
    if (p->nheap == p->capheap) {
        size_t cap = p->capheap ? p->capheap * 2 : 1024;
        ing_call_t **h = realloc(p->heap, cap * sizeof(*h));
        if (!h)
            return MCPQ_ENOMEM;
        p->heap = h;
        p->capheap = cap;
    }
    c->heap_idx = p->nheap;
    p->heap[p->nheap++] = c;
    heap_up(p, c->heap_idx);
    return 0;
}

static void heap_remove(ing_pending_t *p, ing_call_t *c)
{
    size_t i = c->heap_idx;
    p->nheap--;
    if (i != p->nheap) {
        p->heap[i] = p->heap[p->nheap];
        p->heap[i]->heap_idx = i;
        heap_down(p, i);
        heap_up(p, i);
    }
}

/* --- table (lock held) --- */

static ing_call_t *find_locked(ing_pending_t *p, const char *job_id)
{
    for (ing_call_t *c = p->buckets[bucket_of(job_id)]; c; c = c->next)
        if (strcmp(c->job_id, job_id) == 0)
            return c;
    return NULL;
}

static void unlink_locked(ing_pending_t *p, ing_call_t *call)
{
    ing_call_t **pp = &p->buckets[bucket_of(call->job_id)];
    while (*pp && *pp != call)
        pp = &(*pp)->next;
    if (*pp)
        *pp = call->next;
    heap_remove(p, call);
    call->in_table = 0;
    if (call->listener)
        p->nlisteners--;
    else
        p->count--;
}

/* A call's keep-alive interval. */
static int keepalive_of(const ing_pending_t *p, const ing_call_t *call)
{
    return call->keepalive_ms > 0 ? call->keepalive_ms : p->keepalive_ms;
}

/* The call that owns the connection: a batch element's group, else the call itself. Streams,
 * keep-alives and wake-ups all go to it. */
static ing_call_t *owner_of(ing_call_t *call)
{
    return call->group ? call->group : call;
}

/* Resumes a suspended connection (lock held); a call without one (ing_pending_wait) is
 * told through p->woken. */
static void wake_locked(ing_pending_t *p, ing_call_t *call)
{
    call = owner_of(call);
    if (call->parked) {
        call->parked = 0;
        if (call->conn)
            MHD_resume_connection(call->conn);
        else
            pthread_cond_broadcast(&p->woken);
    }
}

/* Parks call (lock held): its connection is suspended until wake_locked. */
static void park_locked(ing_call_t *call)
{
    if (call->conn)
        MHD_suspend_connection(call->conn);
    call->parked = 1;
}

/* Appends raw SSE bytes to a call that streams or may (lock held). 0 or MCPQ_ENOMEM. */
static int append_raw_locked(ing_pending_t *p, ing_call_t *call, const char *bytes, size_t n)
{
    call = owner_of(call);
    if (call->out.len - call->out_off + n > SSE_MAX_BACKLOG ||
        util_buf_append(&call->out, bytes, n) < 0)
        return MCPQ_ENOMEM;
    call->want_stream = 1;
    call->next_keepalive_mono = util_mono_ms() + keepalive_of(p, call);
    wake_locked(p, call);
    return 0;
}

/* Appends one `event: message` frame carrying json (lock held). */
static int append_frame_locked(ing_pending_t *p, ing_call_t *call, const char *json)
{
    static const char head[] = "event: message\ndata: ";
    size_t n = strlen(json);
    call = owner_of(call);
    if (call->out.len - call->out_off + n + sizeof(head) + 2 > SSE_MAX_BACKLOG)
        return MCPQ_ENOMEM;
    if (util_buf_append(&call->out, head, sizeof(head) - 1) < 0 ||
        util_buf_append(&call->out, json, n) < 0 || util_buf_append(&call->out, "\n\n", 2) < 0)
        return MCPQ_ENOMEM;
    return append_raw_locked(p, call, "", 0);
}

/* Drops one reference of a batch's group (lock held): the seal's or an element's. The last
 * one ends the batch: its stream ends, or its array can be answered. */
static void group_release_locked(ing_pending_t *p, ing_call_t *group)
{
    assert(group->nwaiting > 0);
    if (--group->nwaiting > 0)
        return;
    group->done = 1;
    if (group->sse_ok)
        group->want_stream = group->stream_end = 1;
    wake_locked(p, group);
}

/* Ends a call (lock held). Takes ownership of response, which may be NULL for a cancelled
 * call that answers nothing. A streamed call gets the response as its last frame; a batch
 * element's response is a frame of its group's stream, or waits for the group's array. */
static void complete_locked(ing_pending_t *p, ing_call_t *call, char *response,
                            ing_call_outcome_t outcome, int timed_out)
{
    unlink_locked(p, call);
    call->stamps.woke_us = util_now_us(); /* the wake stage's end (stages.h) */
    call->timed_out = timed_out;
    call->outcome = timed_out ? ING_CALL_TIMEOUT : outcome;
    call->done = 1;
    if (call->group) {
        if (call->group->sse_ok && response && append_frame_locked(p, call, response) < 0)
            log_event(LOG_WARN, "batch response dropped: the client reads too slowly", "job_id",
                      call->job_id, (char *)NULL);
        call->response = response;
        group_release_locked(p, call->group);
        return;
    }
    if (call->want_stream || call->streaming) {
        if (response)
            append_frame_locked(p, call, response);
        call->stream_end = 1;
    }
    call->response = response;
    wake_locked(p, call);
}

int ing_pending_add(ing_pending_t *p, ing_call_t *call)
{
    /* A call in the table twice makes a loop in its bucket and two heap entries (the
     * reader would spin under the lock): refused, loudly in debug builds. */
    pthread_mutex_lock(&p->lock);
    int twice = call->in_table;
    pthread_mutex_unlock(&p->lock);
    assert(!twice && "a call was added to the pending table twice");
    if (twice) {
        log_event(LOG_ERROR, "refused to add a call that is already waiting", "job_id",
                  call->job_id, (char *)NULL);
        return MCPQ_EEXIST;
    }
    call->done = 0;
    call->parked = 0;
    call->response = NULL;
    call->want_stream = call->streaming = call->stream_end = call->cancelled = 0;
    /* input_n is the caller's (pending.h): a retry skips the question it answers */
    call->asking = call->in_hook = 0;
    util_buf_init(&call->out, SIZE_MAX);
    call->out_off = 0;
    call->next_keepalive_mono = util_mono_ms() + keepalive_of(p, call);
    pthread_mutex_lock(&p->lock);
    size_t b = bucket_of(call->job_id);
    call->next = p->buckets[b];
    p->buckets[b] = call;
    int rc = 0;
    if (heap_push(p, call) < 0) {
        /* Cannot track its deadline: answer at once rather than risk a hang. */
        p->buckets[b] = call->next;
        call->done = 1;
        call->response = NULL;
        rc = MCPQ_ENOMEM;
    } else {
        call->in_table = 1;
        if (call->listener)
            p->nlisteners++;
        else
            p->count++;
        if (call->group)
            call->group->nwaiting++;
    }
    pthread_mutex_unlock(&p->lock);
    return rc;
}

void ing_pending_group_init(ing_pending_t *p, ing_call_t *group)
{
    group->done = group->parked = group->timed_out = 0;
    group->response = NULL;
    group->want_stream = group->streaming = group->stream_end = group->cancelled = 0;
    util_buf_init(&group->out, SIZE_MAX);
    group->out_off = 0;
    group->next_keepalive_mono = util_mono_ms() + keepalive_of(p, group);
    group->group = NULL;
    group->in_table = 0;
    group->nwaiting = 1; /* the seal's */
}

void ing_pending_group_seal(ing_pending_t *p, ing_call_t *group, char *const *bodies, size_t n)
{
    pthread_mutex_lock(&p->lock);
    if (group->sse_ok) {
        for (size_t i = 0; i < n; i++)
            if (bodies[i] && append_frame_locked(p, group, bodies[i]) < 0)
                log_event(LOG_WARN, "batch response dropped: too large for the stream",
                          (char *)NULL);
        group->want_stream = 1;
        group->next_keepalive_mono = util_mono_ms() + keepalive_of(p, group);
    }
    group_release_locked(p, group);
    pthread_mutex_unlock(&p->lock);
}

int ing_pending_park(ing_pending_t *p, ing_call_t *call)
{
    pthread_mutex_lock(&p->lock);
    int parked = !(call->done || call->want_stream);
    if (parked)
        park_locked(call);
    pthread_mutex_unlock(&p->lock);
    return parked;
}

int ing_pending_wait(ing_pending_t *p, ing_call_t *call, int timeout_ms)
{
    struct timespec until = util_deadline_realtime(timeout_ms);
    pthread_mutex_lock(&p->lock);
    ing_call_t *owner = owner_of(call);
    while (owner->parked && pthread_cond_timedwait(&p->woken, &p->lock, &until) == 0)
        ;
    int woke = !owner->parked;
    pthread_mutex_unlock(&p->lock);
    return woke;
}

int ing_pending_remove(ing_pending_t *p, ing_call_t *call)
{
    pthread_mutex_lock(&p->lock);
    while (call->in_hook) /* the reader is asking the call's hook (deliver_input) */
        pthread_cond_wait(&p->hooked, &p->lock);
    int was = call->in_table;
    if (was)
        unlink_locked(p, call);
    if (was && call->group) {
        /* Its reference goes back without ending the group: the element's request failed
         * before the seal (which still holds the group), or the batch's client is gone. */
        assert(call->group->nwaiting > 0);
        call->group->nwaiting--;
    }
    pthread_mutex_unlock(&p->lock);
    return was;
}

ing_take_t ing_pending_take(ing_pending_t *p, ing_call_t *call)
{
    ing_take_t t;
    pthread_mutex_lock(&p->lock);
    if (call->streaming) {
        t = ING_TAKE_WAIT; /* the content reader serves it; nothing for the handler */
    } else if (call->want_stream) {
        call->streaming = 1;
        t = ING_TAKE_STREAM;
    } else if (call->done) {
        t = ING_TAKE_JSON;
    } else {
        park_locked(call);
        t = ING_TAKE_WAIT;
    }
    pthread_mutex_unlock(&p->lock);
    return t;
}

ssize_t ing_pending_read(ing_pending_t *p, ing_call_t *call, char *buf, size_t max)
{
    ssize_t n;
    pthread_mutex_lock(&p->lock);
    size_t avail = call->out.len - call->out_off;
    if (avail > 0) {
        size_t k = avail < max ? avail : max;
        memcpy(buf, call->out.data + call->out_off, k);
        call->out_off += k;
        if (call->out_off == call->out.len)
            call->out.len = call->out_off = 0;
        n = (ssize_t)k;
    } else if (call->stream_end) {
        n = MHD_CONTENT_READER_END_OF_STREAM;
    } else {
        park_locked(call);
        n = 0;
    }
    pthread_mutex_unlock(&p->lock);
    return n;
}

int ing_pending_post(ing_pending_t *p, const char *job_id, const char *json)
{
    pthread_mutex_lock(&p->lock);
    ing_call_t *c = find_locked(p, job_id);
    int rc = c ? append_frame_locked(p, c, json) : MCPQ_ENOTFOUND;
    pthread_mutex_unlock(&p->lock);
    return rc;
}

int ing_pending_comment(ing_pending_t *p, const char *job_id, const char *text)
{
    char line[256];
    int n = snprintf(line, sizeof(line), ": %s\n\n", text);
    if (n < 0 || (size_t)n >= sizeof(line))
        return MCPQ_EINVAL;
    pthread_mutex_lock(&p->lock);
    ing_call_t *c = find_locked(p, job_id);
    int rc = c ? append_raw_locked(p, c, line, (size_t)n) : MCPQ_ENOTFOUND;
    pthread_mutex_unlock(&p->lock);
    return rc;
}

void ing_pending_finish(ing_pending_t *p, const char *job_id, char *last)
{
    pthread_mutex_lock(&p->lock);
    ing_call_t *c = find_locked(p, job_id);
    if (c)
        complete_locked(p, c, last, ING_CALL_OK, 0);
    else
        free(last);
    pthread_mutex_unlock(&p->lock);
}

void ing_pending_release(ing_call_t *call)
{
    util_buf_cleanup(&call->out);
    free(call->response);
    call->response = NULL;
    free(call->input_arg);
    call->input_arg = NULL;
}

/* SET {mcpq}:cancel:<job_id> + PUBLISH mcpq:cancel on ctx. 0 or MCPQ_EUNAVAIL. */
static int cancel_job(redisContext *ctx, const char *job_id, const char *reason)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "reason", reason ? reason : "cancelled");
    char *val = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!val)
        return MCPQ_ENOMEM;
    redisAppendCommand(ctx, "SET " NAMES_KEY_CANCEL "%s %s EX %d", job_id, val, CANCEL_TTL_S);
    redisAppendCommand(ctx, "PUBLISH " NAMES_CHAN_CANCEL " %s", job_id);
    cJSON_free(val);
    int rc = 0;
    for (int i = 0; i < 2; i++) {
        redisReply *r = NULL;
        if (redisGetReply(ctx, (void **)&r) != REDIS_OK || !r || r->type == REDIS_REPLY_ERROR)
            rc = MCPQ_EUNAVAIL;
        kv_ctx_failover(NULL, ctx, r); /* a demoted master: the caller reconnects */
        if (r)
            freeReplyObject(r);
        if (rc < 0 && ctx->err)
            break;
    }
    return rc;
}

void ing_pending_cancel(ing_pending_t *p, const char *job_id, const char *reason)
{
    cancel_req_t *c = calloc(1, sizeof(*c));
    if (!c) {
        log_event(LOG_ERROR, "cannot queue a cancellation: out of memory", "job_id", job_id,
                  (char *)NULL);
        return;
    }
    snprintf(c->job_id, sizeof(c->job_id), "%s", job_id);
    snprintf(c->reason, sizeof(c->reason), "%s", reason);
    log_ctx_get(&c->trace);
    pthread_mutex_lock(&p->lock);
    c->next = p->cancels;
    p->cancels = c;
    pthread_mutex_unlock(&p->lock);
}

static char *error_response_data(const char *id_json, int code, const char *message,
                                 const cJSON *data)
{
    cJSON *id = cJSON_Parse(id_json);
    char *s = rpc_error_str(id, code, message, data);
    cJSON_Delete(id);
    return s;
}

static char *error_response(const char *id_json, int code, const char *message)
{
    return error_response_data(id_json, code, message, NULL);
}

/* Ends a call whose client was asked while the replica stops (lock held): -32603 reason. */
static void stop_asking_locked(ing_pending_t *p, ing_call_t *call)
{
    complete_locked(p, call, error_response(call->id_json, RPC_INTERNAL_ERROR, p->stop_reason),
                    ING_CALL_FAILED, 0);
}

void ing_pending_set_kv(ing_pending_t *p, kv_pool_t *kv)
{
    pthread_mutex_lock(&p->lock);
    p->kv = kv;
    pthread_mutex_unlock(&p->lock);
}

/* 1 when job_id's question n is still open in Redis (or Redis cannot tell: the call is then
 * ended rather than left to hold a worker). */
static int question_open(ing_pending_t *p, const char *job_id, long long n)
{
    char err[128];
    redisReply *r =
        p->kv ? kv_pool_command(p->kv, err, sizeof(err), "HGET " NAMES_KEY_ASK "%s n", job_id)
              : NULL;
    int open = !r || r->type != REDIS_REPLY_NIL;
    if (r && r->type == REDIS_REPLY_STRING)
        open = strtoll(r->str, NULL, 10) == n;
    if (r)
        freeReplyObject(r);
    return open;
}

size_t ing_pending_stop_asking(ing_pending_t *p, const char *reason)
{
    typedef struct {
        char job_id[ING_JOB_ID_LEN];
        long long n;
    } asked_t;
    asked_t *asked = NULL;
    size_t nasked = 0, cap = 0, ended = 0;
    pthread_mutex_lock(&p->lock);
    p->stop_asking = 1;
    snprintf(p->stop_reason, sizeof(p->stop_reason), "%s", reason);
    for (size_t b = 0; b < NBUCKETS; b++)
        for (ing_call_t *c = p->buckets[b]; c; c = c->next) {
            if (!c->asking || c->listener)
                continue;
            if (nasked == cap) {
                asked_t *a = realloc(asked, (cap = cap ? 2 * cap : 16) * sizeof(*a));
                if (!a)
                    break;
                asked = a;
            }
            snprintf(asked[nasked].job_id, ING_JOB_ID_LEN, "%s", c->job_id);
            asked[nasked++].n = c->input_n;
        }
    pthread_mutex_unlock(&p->lock);
    for (size_t i = 0; i < nasked; i++) {
        if (!question_open(p, asked[i].job_id, asked[i].n))
            continue;
        int cancelled = 0;
        char err[128];
        redisContext *ctx = p->kv ? kv_pool_get(p->kv, err, sizeof(err)) : NULL;
        if (ctx) {
            cancelled = cancel_job(ctx, asked[i].job_id, reason) == 0;
            kv_pool_put(p->kv, ctx, ctx->err != 0);
        }
        if (!cancelled) /* the reader tries again until it stops */
            ing_pending_cancel(p, asked[i].job_id, reason);
        log_event(LOG_WARN, "stopping: the job waiting for its client's answer is cancelled",
                  "job_id", asked[i].job_id, (char *)NULL);
        pthread_mutex_lock(&p->lock);
        ing_call_t *c;
        while ((c = find_locked(p, asked[i].job_id)) != NULL) {
            stop_asking_locked(p, c);
            ended++;
        }
        pthread_mutex_unlock(&p->lock);
    }
    free(asked);
    return ended;
}

void ing_pending_fail(ing_pending_t *p, const char *job_id, int code, const char *message)
{
    pthread_mutex_lock(&p->lock);
    ing_call_t *c = find_locked(p, job_id);
    if (c)
        complete_locked(p, c, error_response(c->id_json, code, message), ING_CALL_FAILED, 0);
    pthread_mutex_unlock(&p->lock);
}

void ing_pending_acked(ing_pending_t *p, const char *job_id, int64_t acked_us)
{
    pthread_mutex_lock(&p->lock);
    for (ing_call_t *c = p->buckets[bucket_of(job_id)]; c; c = c->next)
        if (!c->stamps.acked_us && strcmp(c->job_id, job_id) == 0)
            c->stamps.acked_us = acked_us;
    pthread_mutex_unlock(&p->lock);
}

void ing_pending_fail_all(ing_pending_t *p, const char *message)
{
    pthread_mutex_lock(&p->lock);
    while (p->nheap > 0) {
        ing_call_t *c = p->heap[0];
        complete_locked(
            p, c, c->listener ? NULL : error_response(c->id_json, RPC_INTERNAL_ERROR, message),
            ING_CALL_FAILED, 0);
    }
    pthread_mutex_unlock(&p->lock);
}

size_t ing_pending_count(ing_pending_t *p)
{
    pthread_mutex_lock(&p->lock);
    size_t n = p->count;
    pthread_mutex_unlock(&p->lock);
    return n;
}

int ing_pending_healthy(ing_pending_t *p)
{
    return atomic_load(&p->healthy);
}

int ing_pending_healthy_wait(ing_pending_t *p)
{
    int64_t until = atomic_load(&p->down_since_mono) + RECONNECT_GRACE_MS;
    while (!atomic_load(&p->healthy) && util_mono_ms() < until && !atomic_load(&p->stop))
        usleep(5 * 1000);
    return atomic_load(&p->healthy);
}

/* 2026-07-28 CacheableResult members of a resources/read result (docs/protocol.md). */
static void cache_hints(cJSON *result, long long ttl_ms, int cache_public)
{
    cJSON_DeleteItemFromObjectCaseSensitive(result, "ttlMs");
    cJSON_DeleteItemFromObjectCaseSensitive(result, "cacheScope");
    cJSON_AddNumberToObject(result, "ttlMs", (double)(ttl_ms > 0 ? ttl_ms : 0));
    cJSON_AddStringToObject(result, "cacheScope", cache_public ? "public" : "private");
}

/* A record's Unix µs stamp name; 0 when absent or not a plausible one. */
static int64_t stamp_of(const cJSON *rec, const char *name)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(rec, name);
    return cJSON_IsNumber(f) && f->valuedouble > 0 && f->valuedouble < 9e15
               ? (int64_t)f->valuedouble
               : 0;
}

char *ing_pending_record_response(const ing_call_t *call, const char *record, size_t len,
                                  ing_call_outcome_t *outcome, ing_stamps_t *stamps)
{
    *outcome = ING_CALL_FAILED;
    cJSON *rec = cJSON_ParseWithLength(record, len);
    if (stamps) {
        stamps->exec_us = stamp_of(rec, "exec_us");
        stamps->finished_us = stamp_of(rec, "finished_us");
    }
    const char *status = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(rec, "status"));
    cJSON *result = cJSON_GetObjectItemCaseSensitive(rec, "result");
    char *out = NULL;
    if (status && strcmp(status, "ok") == 0 && cJSON_IsObject(result)) {
        if (call->shape)
            call->shape(result);
        if (call->modern && !cJSON_GetObjectItemCaseSensitive(result, "resultType"))
            cJSON_AddStringToObject(result, "resultType", "complete");
        if (call->task_result)
            ing_tasks_related_meta(result, call->job_id);
        if (call->cacheable) /* the version's, whatever an upstream said */
            cache_hints(result, call->ttl_ms, call->cache_public);
        *outcome = !call->method_result &&
                           cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(result, "isError"))
                       ? ING_CALL_TOOL_ERROR
                       : ING_CALL_OK;
        char *rs = jprint_unformatted(result);
        if (rs) {
            size_t n = strlen(call->id_json) + strlen(rs) + 48;
            out = malloc(n);
            if (out)
                snprintf(out, n, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}", call->id_json,
                         rs);
            cJSON_free(rs);
        }
    } else if (status && strcmp(status, "timeout") == 0) {
        out = error_response(call->id_json, RPC_REPLY_TIMEOUT, "Agent reply timeout");
    } else {
        const cJSON *err = cJSON_GetObjectItemCaseSensitive(rec, "error");
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(err, "code");
        const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(err, "message"));
        /* error.data passes on (e.g. {"reason": "input_lost"}: docs/internals.md, "Asking
         * the client") */
        out = error_response_data(
            call->id_json, cJSON_IsNumber(code) ? (int)code->valuedouble : RPC_INTERNAL_ERROR,
            msg ? msg : "the worker could not run the tool",
            cJSON_GetObjectItemCaseSensitive(err, "data"));
    }
    cJSON_Delete(rec);
    return out;
}

/* A `cancelled` entry: a stream ends without a response; a JSON answer is -32800 (or, when
 * the client accepts SSE, an empty stream, so nothing answers the cancelled request). */
static void cancel_locked(ing_pending_t *p, ing_call_t *call)
{
    call->cancelled = 1;
    if (call->sse_ok || call->want_stream || call->streaming) {
        call->want_stream = 1;
        complete_locked(p, call, NULL, ING_CALL_CANCELLED, 0);
    } else {
        complete_locked(p, call,
                        error_response(call->id_json, RPC_REQUEST_CANCELLED, "Request cancelled"),
                        ING_CALL_CANCELLED, 0);
    }
}

/* Answers every request of a question the job's calls here cannot carry (reader thread):
 * the tool gets an error for each key instead of waiting for its timeout. */
static void answer_unreachable(ing_pending_t *p, const char *job_id, long long n,
                               const cJSON *requests)
{
    cJSON *answers = cJSON_CreateObject();
    const cJSON *r;
    cJSON_ArrayForEach(r, requests) cJSON_AddItemToObject(
        answers, r->string, ing_answer_error(RPC_METHOD_NOT_FOUND, ING_PENDING_UNREACHABLE_MSG));
    char err[256] = "";
    int rc = p->kv
                 ? ing_answer_submit(p->kv, job_id, n, NULL, answers, NULL, NULL, err, sizeof(err))
                 : MCPQ_EUNAVAIL;
    cJSON_Delete(answers);
    if (rc != ING_ANSWER_OK)
        log_event(LOG_WARN, "could not answer a question its call cannot carry", "job_id", job_id,
                  "error", err[0] ? err : "no Redis pool", (char *)NULL);
}

/* An `input` entry (a question of the job, docs/internals.md "Asking the client") for every
 * call of this replica waiting on it: each call's hook says how its client is asked; when
 * none can be, the gateway answers the question with errors. A job without a call here (its
 * client went away), or only with tasks/result calls that cannot carry it, is left as it is:
 * the worker's timeout ends it, or an answer from elsewhere. */
static void deliver_input(ing_pending_t *p, const char *job_id, const char *data, size_t len)
{
    cJSON *d = cJSON_ParseWithLength(data, len);
    const cJSON *reqs = cJSON_GetObjectItemCaseSensitive(d, "requests");
    const cJSON *jn = cJSON_GetObjectItemCaseSensitive(d, "n");
    long long n = cJSON_IsNumber(jn) ? (long long)jn->valuedouble : 0;
    if (!cJSON_IsObject(reqs) || n < 1) {
        log_event(LOG_WARN, "malformed input entry ignored", "job_id", job_id, (char *)NULL);
        cJSON_Delete(d);
        return;
    }
    int found = 0, reached = 0;
    for (;;) {
        pthread_mutex_lock(&p->lock);
        ing_call_t *c = p->buckets[bucket_of(job_id)];
        while (c && (strcmp(c->job_id, job_id) != 0 || c->listener || c->input_n >= n))
            c = c->next;
        if (!c) {
            pthread_mutex_unlock(&p->lock);
            break;
        }
        /* A tasks/result call only watches the task: the question stays open for its other
         * ways (tasks/update, tasks/get), never answered with errors for it. */
        found |= !c->task_result;
        c->input_n = n;
        if (p->stop_asking) {
            reached = 1; /* its job is cancelled below: nobody waits for an answer */
            stop_asking_locked(p, c);
            pthread_mutex_unlock(&p->lock);
            ing_pending_cancel(p, job_id, p->stop_reason);
            continue;
        }
        c->in_hook = 1;
        pthread_mutex_unlock(&p->lock);
        cJSON *msgs = NULL;
        ing_input_t what = c->on_input ? c->on_input(c, job_id, d, &msgs) : ING_INPUT_UNREACHABLE;
        pthread_mutex_lock(&p->lock);
        c->in_hook = 0;
        pthread_cond_broadcast(&p->hooked);
        if (c->in_table && what == ING_INPUT_POST) {
            const cJSON *m;
            cJSON_ArrayForEach(m, msgs)
            {
                char *js = cJSON_PrintUnformatted(m);
                if (!js || append_frame_locked(p, c, js) < 0)
                    log_event(LOG_WARN, "a request to the client was dropped", "job_id", job_id,
                              (char *)NULL);
                cJSON_free(js);
            }
            c->asking = 1;
            reached = 1;
        } else if (c->in_table && what == ING_INPUT_ANSWER) {
            char *js = cJSON_PrintUnformatted(cJSON_GetArrayItem(msgs, 0));
            char *resp = js ? strdup(js) : NULL;
            cJSON_free(js);
            complete_locked(p, c, resp, ING_CALL_OK, 0);
            reached = 1;
        }
        pthread_mutex_unlock(&p->lock);
        cJSON_Delete(msgs);
    }
    if (found && !reached)
        answer_unreachable(p, job_id, n, reqs);
    cJSON_Delete(d);
}

/* One reply-stream entry for the calls of this replica waiting on the job: usually one, more
 * when repeats of an idempotent call wait on the same job (idem.h). */
static void deliver(ing_pending_t *p, const char *job_id, const char *kind, const char *data,
                    size_t len, int64_t stored_us)
{
    if (strcmp(kind, "input") == 0) {
        deliver_input(p, job_id, data, len);
        return;
    }
    pthread_mutex_lock(&p->lock);
    int result = strcmp(kind, "result") == 0, cancelled = strcmp(kind, "cancelled") == 0;
    if (result || cancelled) {
        /* Each completion unlinks its call, so look the job up again until none is left. */
        ing_call_t *c;
        while ((c = find_locked(p, job_id)) != NULL) {
            if (result) {
                ing_call_outcome_t outcome;
                char *resp = ing_pending_record_response(c, data, len, &outcome, &c->stamps);
                c->stamps.stored_us = stored_us;
                complete_locked(p, c, resp, outcome, 0);
            } else
                cancel_locked(p, c);
        }
        pthread_mutex_unlock(&p->lock);
        return;
    }
    for (ing_call_t *c = p->buckets[bucket_of(job_id)]; c; c = c->next) {
        if (strcmp(c->job_id, job_id) != 0 || !c->sse_ok)
            continue;
        char *n = NULL;
        if (strcmp(kind, "progress") == 0 && c->progress_token[0])
            n = ing_notify_progress(c->progress_token, data, len);
        else if (strcmp(kind, "log") == 0)
            n = ing_notify_log(data, len, c->log_min, c->tool);
        if (n && append_frame_locked(p, c, n) < 0)
            log_event(LOG_WARN, "notification dropped: the client reads too slowly", "job_id",
                      job_id, "trace_id", c->trace.trace_id[0] ? c->trace.trace_id : NULL,
                      (char *)NULL);
        free(n);
    }
    pthread_mutex_unlock(&p->lock);
}

/* Keep-alive comments for calls that may stream and have been quiet (reader thread). */
static void keepalive_tick(ing_pending_t *p)
{
    static const char comment[] = ": keep-alive\n\n";
    int64_t now = util_mono_ms();
    if (now < p->next_tick_mono)
        return;
    p->next_tick_mono = now + KEEPALIVE_TICK_MS;
    pthread_mutex_lock(&p->lock);
    for (size_t b = 0; b < NBUCKETS && p->count + p->nlisteners > 0; b++)
        for (ing_call_t *c = p->buckets[b]; c; c = c->next)
            if (c->sse_ok && owner_of(c)->next_keepalive_mono <= now)
                append_raw_locked(p, c, comment, sizeof(comment) - 1);
    pthread_mutex_unlock(&p->lock);
}

void ing_pending_set_trim(ing_pending_t *p, size_t calls)
{
    p->trim_calls = calls;
}

/* ing_pending_set_trim: returns freed heap to the system once the table shrank by trim_calls
 * from its peak, and once more when the last calls of such a burst ended (reader thread). The calls
 * answered meanwhile freed their libmicrohttpd pools and requests in the HTTP threads' arenas,
 * where the pages would stay resident. */
static void trim_tick(ing_pending_t *p)
{
    if (!p->trim_calls)
        return;
    pthread_mutex_lock(&p->lock);
    size_t count = p->count;
    pthread_mutex_unlock(&p->lock);
    if (count > p->trim_high)
        p->trim_high = count;
    if (count >= p->trim_calls)
        p->trim_burst = 1;
    int64_t now = util_mono_ms();
    int drained = count == 0 && p->trim_high > 0 && p->trim_burst; /* a burst's last calls */
    if ((p->trim_high - count < p->trim_calls && !drained) || now < p->next_trim_mono)
        return;
    int64_t t0 = util_mono_us();
    malloc_trim(0);
    char waiting[24], rss[24], took[24];
    snprintf(waiting, sizeof(waiting), "%zu", count);
    prom_proc_t proc = {0};
    prom_proc_stat(&proc); /* rss stays 0 when /proc is not readable */
    snprintf(rss, sizeof(rss), "%llu", proc.rss / 1024);
    snprintf(took, sizeof(took), "%lld", (long long)(util_mono_us() - t0));
    log_event(LOG_DEBUG, "memory returned to the system", "calls_waiting", waiting, "rss_kb", rss,
              "took_us", took, (char *)NULL);
    p->trim_high = count;
    if (count == 0)
        p->trim_burst = 0;
    p->next_trim_mono = now + TRIM_EVERY_MS;
}

/* Publishes queued cancellations (reader thread). Kept queued while Redis is down. */
static void publish_cancels(ing_pending_t *p, redisContext **ctx)
{
    pthread_mutex_lock(&p->lock);
    cancel_req_t *list = p->cancels;
    p->cancels = NULL;
    pthread_mutex_unlock(&p->lock);
    while (list) {
        cancel_req_t *c = list;
        if (!*ctx || cancel_job(*ctx, c->job_id, c->reason) < 0) {
            if (*ctx && (*ctx)->err) {
                redisFree(*ctx);
                *ctx = NULL;
            }
            break; /* retried on the next round */
        }
        log_event(LOG_INFO, "tool call cancelled by the client", "job_id", c->job_id, "reason",
                  c->reason, "trace_id", c->trace.trace_id[0] ? c->trace.trace_id : NULL,
                  (char *)NULL);
        list = c->next;
        free(c);
    }
    if (list) {
        cancel_req_t *tail = list;
        while (tail->next)
            tail = tail->next;
        pthread_mutex_lock(&p->lock);
        tail->next = p->cancels;
        p->cancels = list;
        pthread_mutex_unlock(&p->lock);
    }
}

static const redisReply *field_of(const redisReply *kv, const char *name)
{
    for (size_t i = 0; i + 1 < kv->elements; i += 2)
        if (kv->element[i]->type == REDIS_REPLY_STRING && strcmp(kv->element[i]->str, name) == 0)
            return kv->element[i + 1];
    return NULL;
}

/* Entries of XREAD: [[key, [[id, [f, v, ...]], ...]]]. Updates last_id. */
static void handle_entries(ing_pending_t *p, const redisReply *r, char *last_id, size_t idsz)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 1)
        return;
    const redisReply *stream = r->element[0];
    if (stream->type != REDIS_REPLY_ARRAY || stream->elements < 2)
        return;
    const redisReply *entries = stream->element[1];
    for (size_t i = 0; i < entries->elements; i++) {
        const redisReply *e = entries->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 2)
            continue;
        snprintf(last_id, idsz, "%s", e->element[0]->str);
        const redisReply *job = field_of(e->element[1], "job");
        const redisReply *kind = field_of(e->element[1], "kind");
        const redisReply *data = field_of(e->element[1], "data");
        const redisReply *stored = field_of(e->element[1], "stored_us"); /* a worker's stamp */
        if (!job || !kind || !data || job->type != REDIS_REPLY_STRING)
            continue;
        long long su =
            stored && stored->type == REDIS_REPLY_STRING ? strtoll(stored->str, NULL, 10) : 0;
        if (kind->type == REDIS_REPLY_STRING && data->type == REDIS_REPLY_STRING)
            deliver(p, job->str, kind->str, data->str, data->len, su > 0 ? su : 0);
    }
}

/* Answers calls whose deadline passed: the durable result if it is there, else -32003. */
static void expire(ing_pending_t *p, redisContext **ctx)
{
    for (;;) {
        char job_id[ING_JOB_ID_LEN];
        int64_t now = util_mono_ms();
        pthread_mutex_lock(&p->lock);
        if (p->nheap == 0 || p->heap[0]->deadline_mono > now) {
            pthread_mutex_unlock(&p->lock);
            return;
        }
        memcpy(job_id, p->heap[0]->job_id, sizeof(job_id));
        pthread_mutex_unlock(&p->lock);

        redisReply *r = *ctx ? redisCommand(*ctx, "GET " NAMES_KEY_RESULT "%s", job_id) : NULL;
        if (!r && *ctx) {
            redisFree(*ctx);
            *ctx = NULL;
        }
        pthread_mutex_lock(&p->lock);
        /* The call whose deadline passed (several calls may wait on one job id). */
        ing_call_t *c = p->nheap > 0 && p->heap[0]->deadline_mono <= now &&
                                strcmp(p->heap[0]->job_id, job_id) == 0
                            ? p->heap[0]
                            : NULL;
        if (c) {
            char *resp;
            ing_call_outcome_t outcome = ING_CALL_TIMEOUT;
            if (r && r->type == REDIS_REPLY_STRING)
                resp = ing_pending_record_response(c, r->str, r->len, &outcome, &c->stamps);
            else
                resp = error_response(c->id_json, RPC_REPLY_TIMEOUT, "Agent reply timeout");
            complete_locked(p, c, resp, outcome, !(r && r->type == REDIS_REPLY_STRING));
        }
        pthread_mutex_unlock(&p->lock);
        if (r)
            freeReplyObject(r);
    }
}

static void *reader_thread(void *arg)
{
    ing_pending_t *p = arg;
    redisContext *ctx = NULL;
    char last_id[64] = "$";
    char err[256];
    int logged_down = 0;
    while (!atomic_load(&p->stop)) {
        if (!ctx) {
            ctx = kv_connect(p->kvt, p->redis_timeout_ms, err, sizeof(err));
            if (!ctx) {
                atomic_store(&p->healthy, 0);
                if (!logged_down++)
                    log_event(LOG_ERROR, "reply reader: redis unreachable", "error", err,
                              (char *)NULL);
                expire(p, &ctx);
                keepalive_tick(p);
                usleep(200 * 1000);
                continue;
            }
            if (strcmp(last_id, "$") == 0) {
                /* Start after what is there now, by id, so a reconnect misses nothing. */
                redisReply *r =
                    redisCommand(ctx, "XADD %s MAXLEN ~ 100000 * kind hello", p->reply_key);
                if (r && r->type == REDIS_REPLY_STRING)
                    snprintf(last_id, sizeof(last_id), "%s", r->str);
                if (r)
                    freeReplyObject(r);
                redisReply *e = redisCommand(ctx, "EXPIRE %s 3600", p->reply_key);
                if (e)
                    freeReplyObject(e);
            }
            if (logged_down)
                log_event(LOG_INFO, "reply reader: redis reachable again", (char *)NULL);
            logged_down = 0;
            atomic_store(&p->healthy, 1);
        }
        redisReply *r = redisCommand(ctx, "XREAD COUNT 512 BLOCK %d STREAMS %s %s", READ_BLOCK_MS,
                                     p->reply_key, last_id);
        if (!r || r->type == REDIS_REPLY_ERROR) {
            /* Lost, or an error such as -MOVED or -UNBLOCKED (the server stopped serving
             * the stream: a failover): read again, from last_id, on a new connection. */
            if (r) {
                log_event(LOG_WARN, "reply reader: reconnecting", "error", r->str, (char *)NULL);
                freeReplyObject(r);
            }
            redisFree(ctx);
            ctx = NULL;
            atomic_store(&p->down_since_mono, util_mono_ms());
            atomic_store(&p->healthy, 0);
            continue;
        }
        handle_entries(p, r, last_id, sizeof(last_id));
        freeReplyObject(r);
        expire(p, &ctx);
        keepalive_tick(p);
        publish_cancels(p, &ctx);
        trim_tick(p);
    }
    redisFree(ctx);
    return NULL;
}

ing_pending_t *ing_pending_new(kv_target_t *kvt, int redis_timeout_ms, const char *reply_key,
                               int keepalive_ms)
{
    ing_pending_t *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->woken, NULL);
    pthread_cond_init(&p->hooked, NULL);
    p->kvt = kvt;
    p->reply_key = strdup(reply_key);
    p->keepalive_ms = keepalive_ms > 0 ? keepalive_ms : 1000;
    p->redis_timeout_ms =
        redis_timeout_ms < 2 * READ_BLOCK_MS ? 2 * READ_BLOCK_MS : redis_timeout_ms;
    atomic_init(&p->stop, 0);
    atomic_init(&p->healthy, 0);
    atomic_init(&p->down_since_mono, 0);
    if (!p->reply_key || pthread_create(&p->thread, NULL, reader_thread, p)) {
        free(p->reply_key);
        pthread_cond_destroy(&p->woken);
        pthread_cond_destroy(&p->hooked);
        pthread_mutex_destroy(&p->lock);
        free(p);
        return NULL;
    }
    return p;
}

void ing_pending_free(ing_pending_t *p)
{
    if (!p)
        return;
    atomic_store(&p->stop, 1);
    pthread_join(p->thread, NULL);
    ing_pending_fail_all(p, "server shutting down");
    while (p->cancels) {
        cancel_req_t *c = p->cancels;
        p->cancels = c->next;
        log_event(LOG_WARN, "cancellation not published: shutting down", "job_id", c->job_id,
                  "trace_id", c->trace.trace_id[0] ? c->trace.trace_id : NULL, (char *)NULL);
        free(c);
    }
    free(p->heap);
    free(p->reply_key);
    pthread_cond_destroy(&p->woken);
    pthread_cond_destroy(&p->hooked);
    pthread_mutex_destroy(&p->lock);
    free(p);
}
