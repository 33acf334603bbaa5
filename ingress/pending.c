#include "pending.h"

#include "err.h"
#include "jsonrpc.h"
#include "log.h"
#include "redis.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NBUCKETS 16384
#define READ_BLOCK_MS 50

struct ing_pending {
    pthread_mutex_t lock;
    ing_call_t *buckets[NBUCKETS];
    ing_call_t **heap; /* min-heap on deadline_mono */
    size_t nheap, capheap;
    size_t count;
    char *redis_url;
    int redis_timeout_ms;
    char *reply_key;
    pthread_t thread;
    atomic_int stop;
    atomic_int healthy;
};

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
    p->count--;
}

/* Takes ownership of response. */
static void complete_locked(ing_pending_t *p, ing_call_t *call, char *response, int timed_out)
{
    unlink_locked(p, call);
    call->response = response;
    call->timed_out = timed_out;
    call->done = 1;
    if (call->parked)
        MHD_resume_connection(call->conn);
}

void ing_pending_add(ing_pending_t *p, ing_call_t *call)
{
    call->done = 0;
    call->parked = 0;
    call->response = NULL;
    pthread_mutex_lock(&p->lock);
    size_t b = bucket_of(call->job_id);
    call->next = p->buckets[b];
    p->buckets[b] = call;
    if (heap_push(p, call) < 0) {
        /* Cannot track its deadline: answer at once rather than risk a hang. */
        p->buckets[b] = call->next;
        call->done = 1;
        call->response = NULL;
    } else {
        call->in_table = 1;
        p->count++;
    }
    pthread_mutex_unlock(&p->lock);
}

int ing_pending_park(ing_pending_t *p, ing_call_t *call)
{
    int done;
    pthread_mutex_lock(&p->lock);
    done = call->done;
    if (!done) {
        MHD_suspend_connection(call->conn);
        call->parked = 1;
    }
    pthread_mutex_unlock(&p->lock);
    return done;
}

void ing_pending_remove(ing_pending_t *p, ing_call_t *call)
{
    pthread_mutex_lock(&p->lock);
    if (call->in_table)
        unlink_locked(p, call);
    pthread_mutex_unlock(&p->lock);
}

static char *error_response(const char *id_json, int code, const char *message)
{
    cJSON *id = cJSON_Parse(id_json);
    char *s = rpc_error_str(id, code, message, NULL);
    cJSON_Delete(id);
    return s;
}

void ing_pending_fail(ing_pending_t *p, const char *job_id, int code, const char *message)
{
    pthread_mutex_lock(&p->lock);
    ing_call_t *c = find_locked(p, job_id);
    if (c)
        complete_locked(p, c, error_response(c->id_json, code, message), 0);
    pthread_mutex_unlock(&p->lock);
}

void ing_pending_fail_all(ing_pending_t *p, const char *message)
{
    pthread_mutex_lock(&p->lock);
    while (p->nheap > 0) {
        ing_call_t *c = p->heap[0];
        complete_locked(p, c, error_response(c->id_json, RPC_INTERNAL_ERROR, message), 0);
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

/* The JSON-RPC response for a result record (docs/internals.md). */
static char *response_for_record(const char *id_json, const char *record, size_t len)
{
    cJSON *rec = cJSON_ParseWithLength(record, len);
    const char *status = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(rec, "status"));
    const cJSON *result = cJSON_GetObjectItemCaseSensitive(rec, "result");
    char *out = NULL;
    if (status && strcmp(status, "ok") == 0 && cJSON_IsObject(result)) {
        char *rs = cJSON_PrintUnformatted(result);
        if (rs) {
            size_t n = strlen(id_json) + strlen(rs) + 48;
            out = malloc(n);
            if (out)
                snprintf(out, n, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}", id_json, rs);
            cJSON_free(rs);
        }
    } else if (status && strcmp(status, "timeout") == 0) {
        out = error_response(id_json, RPC_REPLY_TIMEOUT, "Agent reply timeout");
    } else {
        const cJSON *err = cJSON_GetObjectItemCaseSensitive(rec, "error");
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(err, "code");
        const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(err, "message"));
        out = error_response(id_json, cJSON_IsNumber(code) ? (int)code->valuedouble
                                                           : RPC_INTERNAL_ERROR,
                             msg ? msg : "the worker could not run the tool");
    }
    cJSON_Delete(rec);
    return out;
}

static void deliver(ing_pending_t *p, const char *job_id, const char *record, size_t len)
{
    pthread_mutex_lock(&p->lock);
    ing_call_t *c = find_locked(p, job_id);
    if (c)
        complete_locked(p, c, response_for_record(c->id_json, record, len), 0);
    pthread_mutex_unlock(&p->lock);
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
        if (!job || !kind || !data || job->type != REDIS_REPLY_STRING)
            continue;
        if (strcmp(kind->str, "result") == 0)
            deliver(p, job->str, data->str, data->len);
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

        redisReply *r = *ctx ? redisCommand(*ctx, "GET mcpq:result:%s", job_id) : NULL;
        if (!r && *ctx) {
            redisFree(*ctx);
            *ctx = NULL;
        }
        pthread_mutex_lock(&p->lock);
        ing_call_t *c = find_locked(p, job_id);
        if (c) {
            char *resp;
            if (r && r->type == REDIS_REPLY_STRING)
                resp = response_for_record(c->id_json, r->str, r->len);
            else
                resp = error_response(c->id_json, RPC_REPLY_TIMEOUT, "Agent reply timeout");
            complete_locked(p, c, resp, !(r && r->type == REDIS_REPLY_STRING));
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
            ctx = kv_connect(p->redis_url, p->redis_timeout_ms, err, sizeof(err));
            if (!ctx) {
                atomic_store(&p->healthy, 0);
                if (!logged_down++)
                    log_event(LOG_ERROR, "reply reader: redis unreachable", "error", err,
                              (char *)NULL);
                expire(p, &ctx);
                usleep(200 * 1000);
                continue;
            }
            if (strcmp(last_id, "$") == 0) {
                /* Start after what is there now, by id, so a reconnect misses nothing. */
                redisReply *r = redisCommand(ctx, "XADD %s MAXLEN ~ 100000 * kind hello",
                                             p->reply_key);
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
        if (!r) {
            redisFree(ctx);
            ctx = NULL;
            atomic_store(&p->healthy, 0);
            continue;
        }
        handle_entries(p, r, last_id, sizeof(last_id));
        freeReplyObject(r);
        expire(p, &ctx);
    }
    redisFree(ctx);
    return NULL;
}

ing_pending_t *ing_pending_new(const char *redis_url, int redis_timeout_ms, const char *reply_key)
{
    ing_pending_t *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    pthread_mutex_init(&p->lock, NULL);
    p->redis_url = strdup(redis_url);
    p->reply_key = strdup(reply_key);
    p->redis_timeout_ms = redis_timeout_ms < 2 * READ_BLOCK_MS ? 2 * READ_BLOCK_MS
                                                               : redis_timeout_ms;
    atomic_init(&p->stop, 0);
    atomic_init(&p->healthy, 0);
    if (!p->redis_url || !p->reply_key || pthread_create(&p->thread, NULL, reader_thread, p)) {
        free(p->redis_url);
        free(p->reply_key);
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
    free(p->heap);
    free(p->redis_url);
    free(p->reply_key);
    pthread_mutex_destroy(&p->lock);
    free(p);
}
