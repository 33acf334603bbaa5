#include "ask.h"

#include "err.h"
#include "log.h"
#include "names.h"
#include "rscript.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ASK_MSG_MAX 256

struct wrk_ask_q {
    wrk_ask_t *a;
    wrk_job_t *job;
    long long n;
    cJSON *reqs;    /* the requests sent to the client (the declared ones), NULL when none */
    cJSON *answers; /* what is known already: the undeclared keys' errors, then the client's */
    int stored;     /* sent to Redis (else every key is answered locally) */
    int done;       /* the callback is due (its timer runs at 0 ms) */
    wrk_ask_fn cb;
    void *arg;
    int64_t expires_ms; /* epoch ms */
    long long wait_ms;  /* what the timeout message says */
    wrk_loop_timer_t timer;
    wrk_ask_q_t *prev, *next;
};

struct wrk_ask {
    const mcpq_settings_t *s;
    wrk_loop_t *loop;
    const char *worker_id;
    kv_lazy_t redis;
    wrk_ask_q_t *open;
};

wrk_ask_t *wrk_ask_new(const mcpq_settings_t *s, kv_target_t *kvt, wrk_loop_t *loop,
                       const char *worker_id)
{
    wrk_ask_t *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    a->s = s;
    a->loop = loop;
    a->worker_id = worker_id;
    a->redis.kvt = kvt;
    a->redis.timeout_ms = (int)s->redis_timeout_ms;
    a->redis.what = "ask";
    return a;
}

void wrk_ask_free(wrk_ask_t *a)
{
    if (!a)
        return;
    kv_lazy_close(&a->redis);
    free(a);
}

/* ---- pure helpers ---- */

static int method_known(const char *m)
{
    return strcmp(m, "elicitation/create") == 0 || strcmp(m, "sampling/createMessage") == 0 ||
           strcmp(m, "roots/list") == 0;
}

int wrk_ask_check(const cJSON *requests, long long max_bytes, char *errstr, size_t errstr_size)
{
    if (!cJSON_IsObject(requests) || !requests->child) {
        snprintf(errstr, errstr_size, "the question must be a non-empty object of requests");
        return MCPQ_EINVAL;
    }
    for (const cJSON *r = requests->child; r; r = r->next) {
        const char *key = r->string ? r->string : "";
        if (!util_id_ok(key, strlen(key), WRK_ASK_KEY_MAX, ".")) {
            snprintf(errstr, errstr_size,
                     "request key \"%.64s\" must be 1 to 64 characters of [A-Za-z0-9_.-]", key);
            return MCPQ_EINVAL;
        }
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(r, "method");
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(r, "params");
        if (!cJSON_IsObject(r) || !cJSON_IsString(m) || !method_known(m->valuestring)) {
            snprintf(errstr, errstr_size,
                     "request \"%s\": method must be elicitation/create, sampling/createMessage "
                     "or roots/list",
                     key);
            return MCPQ_EINVAL;
        }
        if (p && !cJSON_IsObject(p)) {
            snprintf(errstr, errstr_size, "request \"%s\": params must be an object", key);
            return MCPQ_EINVAL;
        }
        for (const cJSON *o = requests->child; o != r; o = o->next)
            if (strcmp(o->string, key) == 0) {
                snprintf(errstr, errstr_size, "request key \"%s\" appears twice", key);
                return MCPQ_EINVAL;
            }
        for (const cJSON *f = r->child; f; f = f->next)
            if (strcmp(f->string, "method") != 0 && strcmp(f->string, "params") != 0) {
                snprintf(errstr, errstr_size, "request \"%s\": unknown member \"%.32s\"", key,
                         f->string);
                return MCPQ_EINVAL;
            }
    }
    char *s = cJSON_PrintUnformatted(requests);
    if (!s)
        return MCPQ_ENOMEM;
    size_t len = strlen(s);
    free(s);
    if ((long long)len > max_bytes) {
        snprintf(errstr, errstr_size, "the question is %zu bytes of JSON, over the %lld allowed",
                 len, max_bytes);
        return MCPQ_ETOOBIG;
    }
    return 0;
}

const char *wrk_ask_undeclared(const cJSON *client, const cJSON *request)
{
    const cJSON *caps = cJSON_GetObjectItemCaseSensitive(client, "capabilities");
    const char *m = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(request, "method"));
    if (!m)
        return "elicitation";
    if (strcmp(m, "sampling/createMessage") == 0)
        return cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(caps, "sampling")) ? NULL
                                                                                  : "sampling";
    if (strcmp(m, "roots/list") == 0)
        return cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(caps, "roots")) ? NULL : "roots";
    const cJSON *el = cJSON_GetObjectItemCaseSensitive(caps, "elicitation");
    if (!cJSON_IsObject(el))
        return "elicitation";
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(request, "params");
    const char *mode = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(params, "mode"));
    int has_form = cJSON_GetObjectItemCaseSensitive(el, "form") != NULL;
    int has_url = cJSON_GetObjectItemCaseSensitive(el, "url") != NULL;
    /* An empty elicitation capability is form mode only (2025-11-25, client capabilities). */
    if (mode && strcmp(mode, "url") == 0)
        return has_url ? NULL : "elicitation url mode";
    return has_form || !has_url ? NULL : "elicitation form mode";
}

cJSON *wrk_ask_error_answer(int code, const char *message)
{
    cJSON *a = cJSON_CreateObject();
    cJSON *e = cJSON_AddObjectToObject(a, "error");
    if (!e || !cJSON_AddNumberToObject(e, "code", code) ||
        !cJSON_AddStringToObject(e, "message", message)) {
        cJSON_Delete(a);
        return NULL;
    }
    return a;
}

cJSON *wrk_ask_responses(const cJSON *answers)
{
    cJSON *out = cJSON_CreateObject();
    for (const cJSON *a = answers ? answers->child : NULL; out && a; a = a->next) {
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(a, "result");
        cJSON_AddItemToObject(out, a->string, cJSON_Duplicate(r ? r : a, 1));
    }
    return out;
}

/* ---- Redis ---- */

/* Runs a script; the reply, or NULL (logged, context dropped when broken). */
static redisReply *ask_run(wrk_ask_t *a, const char *script, int argc, const char *const *argv)
{
    redisContext *ctx = kv_lazy_get(&a->redis);
    if (!ctx)
        return NULL;
    char err[256] = "";
    redisReply *r = rscript_run(ctx, rscript_get(script), 0, argc, argv, NULL, err, sizeof(err));
    if (!r)
        kv_lazy_broken(&a->redis, ctx->err ? NULL : err);
    return r;
}

static void delivery_base(char out[24])
{
    if (util_random_hex(out, 8) < 0)
        snprintf(out, 24, "%016llx", (unsigned long long)util_now_ms());
}

/* ---- questions ---- */

static void q_log_enter(const wrk_job_t *job, log_ctx_t *saved)
{
    const char *t = job->trace.trace_id[0] ? job->trace.trace_id : NULL;
    log_ctx_push(t, t ? job->trace.span_id : NULL, saved);
    log_ctx_set_request(job->env.request_id); /* (job.c's wrk_job_log_enter: ask.c is below it) */
}

static void q_unlink(wrk_ask_q_t *q)
{
    wrk_ask_t *a = q->a;
    if (q->prev)
        q->prev->next = q->next;
    else if (a->open == q)
        a->open = q->next;
    if (q->next)
        q->next->prev = q->prev;
    q->prev = q->next = NULL;
}

static void q_free(wrk_ask_q_t *q)
{
    wrk_loop_timer_stop(q->a->loop, &q->timer);
    q_unlink(q);
    q->job->ask_q = NULL;
    cJSON_Delete(q->answers);
    free(q);
}

/* Hands the answers to the tool and forgets the question. */
static void q_deliver(wrk_ask_q_t *q)
{
    wrk_job_t *job = q->job;
    wrk_ask_fn cb = q->cb;
    void *arg = q->arg;
    cJSON *answers = q->answers;
    q->answers = NULL;
    q_free(q);
    log_ctx_t saved;
    q_log_enter(job, &saved);
    cb(job, answers, arg);
    log_ctx_restore(&saved);
    cJSON_Delete(answers);
}

/* Every key of reqs without an answer gets {"error": {code, message}}. */
static void q_fill(wrk_ask_q_t *q, const cJSON *reqs, int code, const char *message)
{
    for (const cJSON *r = reqs ? reqs->child : NULL; r; r = r->next)
        if (!cJSON_GetObjectItemCaseSensitive(q->answers, r->string))
            cJSON_AddItemToObject(q->answers, r->string, wrk_ask_error_answer(code, message));
}

/* Stores answers (a JSON object text from ask_take.lua) into q->answers, the valid ones. */
static void q_merge(wrk_ask_q_t *q, const char *json, size_t len)
{
    cJSON *got = cJSON_ParseWithLength(json, len);
    for (cJSON *it = got ? got->child : NULL, *next; it; it = next) {
        next = it->next;
        int ok = cJSON_IsObject(it) && (cJSON_IsObject(cJSON_GetObjectItem(it, "result")) ||
                                        cJSON_IsObject(cJSON_GetObjectItem(it, "error")));
        if (!ok || cJSON_GetObjectItemCaseSensitive(q->answers, it->string))
            continue;
        cJSON_AddItemToObject(q->answers, it->string, cJSON_DetachItemViaPointer(got, it));
    }
    cJSON_Delete(got);
}

/* A changed reply_to (a 2026-07-28 retry waits on another replica): the job's later entries
 * and its result go there. */
static void q_follow(wrk_ask_q_t *q, const char *reply_to)
{
    wrk_job_t *job = q->job;
    size_t pl = strlen(NAMES_KEY_REPLY);
    if (!reply_to || !*reply_to || strncmp(reply_to, NAMES_KEY_REPLY, pl) != 0 ||
        strlen(reply_to) > WRK_REPLY_MAX ||
        !util_id_ok(reply_to + pl, strlen(reply_to + pl), WRK_REPLY_MAX, ".:"))
        return;
    if (job->nstreams > 0 && strcmp(job->streams[0], reply_to) == 0)
        return;
    char *copy = strdup(reply_to);
    if (!copy)
        return;
    log_event(LOG_INFO, "ask: the call waits on another replica now; following it", "job_id",
              job->env.job_id, "reply_to", reply_to, (char *)NULL);
    free(job->extra_streams[0]);
    job->extra_streams[0] = copy;
    job->streams[0] = copy;
    if (job->nstreams == 0)
        job->nstreams = 1;
}

/* ask_take.lua's ARGV for q in mode, into argv[6] (the strings in buf). */
typedef struct {
    char n[24], ttl[24], base[24];
    const char *argv[6];
} take_args_t;

static void take_args(wrk_ask_q_t *q, const char *mode, take_args_t *t)
{
    snprintf(t->n, sizeof(t->n), "%lld", q->n);
    snprintf(t->ttl, sizeof(t->ttl), "%d", WRK_ASK_TTL_MS);
    delivery_base(t->base);
    const char *argv[] = {q->job->env.job_id, t->n, q->a->worker_id, mode, t->ttl, t->base};
    memcpy(t->argv, argv, sizeof(argv));
}

/* Applies ask_take.lua's reply r (mode as run) to q. 1 when the answers are complete (q->done
 * set), 0 when the question waits on, -1 when r is no answer of the script. */
static int q_taken(wrk_ask_q_t *q, const char *mode, const cJSON *reqs, const redisReply *r)
{
    if (r->type == REDIS_REPLY_NIL) {
        /* Gone: it expired while this worker did not refresh it (a stall). */
        q_fill(q, reqs, WRK_ASK_ERR_LOST,
               "the question expired before the client answered (the worker did not keep it "
               "alive)");
        q->done = 1;
        return 1;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
        r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_STRING ||
        r->element[2]->type != REDIS_REPLY_STRING) {
        log_event(LOG_WARN, "ask: unexpected answer from ask_take", "job_id", q->job->env.job_id,
                  "error", r->type == REDIS_REPLY_ERROR ? r->str : "", (char *)NULL);
        return -1;
    }
    q_follow(q, r->element[1]->str);
    if (strcmp(r->element[0]->str, "done") != 0)
        return 0;
    q_merge(q, r->element[2]->str, r->element[2]->len);
    if (strcmp(mode, "poll") == 0) /* complete: a key without one was unreadable */
        q_fill(q, reqs, WRK_ASK_ERR_LOST, "the client's answer could not be read");
    q->done = 1;
    return 1;
}

/* Runs ask_take.lua for q in mode and applies it (q_taken); -1 when Redis could not be
 * asked. */
static int q_take(wrk_ask_q_t *q, const char *mode, const cJSON *reqs)
{
    take_args_t t;
    take_args(q, mode, &t);
    redisReply *r = ask_run(q->a, "ask_take", 6, t.argv);
    if (!r)
        return -1;
    int rc = q_taken(q, mode, reqs, r);
    freeReplyObject(r);
    return rc;
}

static void q_drop_reqs(wrk_ask_q_t *q)
{
    cJSON_Delete(q->reqs);
    q->reqs = NULL;
}

/* The question's timer: its answers are due (done), or expires_ms passed. */
static void q_on_timer(wrk_loop_timer_t *t, void *arg)
{
    wrk_ask_q_t *q = arg;
    (void)t;
    if (!q->done && q->stored) {
        /* A last look: answers that came in just now win over the timeout. */
        q_take(q, "close", q->reqs);
        char msg[ASK_MSG_MAX];
        snprintf(msg, sizeof(msg), "the client did not answer within %lld ms", q->wait_ms);
        q_fill(q, q->reqs, WRK_ASK_ERR_TIMEOUT, msg);
        log_event(LOG_INFO, "ask: the client did not answer in time", "job_id", q->job->env.job_id,
                  (char *)NULL);
    }
    q_drop_reqs(q);
    q_deliver(q);
}

/* The input entry's data: {"n", "requests", "expires_ms"}; malloc'd, NULL on ENOMEM. */
static char *entry_data(long long n, const cJSON *reqs, int64_t expires_ms)
{
    cJSON *d = cJSON_CreateObject();
    cJSON_AddNumberToObject(d, "n", (double)n);
    cJSON_AddItemToObject(d, "requests", cJSON_Duplicate(reqs, 1));
    cJSON_AddNumberToObject(d, "expires_ms", (double)expires_ms);
    char *s = cJSON_GetObjectItemCaseSensitive(d, "expires_ms") ? cJSON_PrintUnformatted(d) : NULL;
    cJSON_Delete(d);
    return s;
}

/* ask_open.lua for q's requests reqs. 0, -1 (Redis), or -2 (another question of the job is open:
 * another attempt of it runs, docs/internals.md "Asking the client"). */
static int q_store(wrk_ask_q_t *q, const cJSON *reqs)
{
    wrk_ask_t *a = q->a;
    wrk_job_t *job = q->job;
    char n[24], exp[24], ttl[24], base[24];
    snprintf(n, sizeof(n), "%lld", q->n);
    snprintf(exp, sizeof(exp), "%lld", (long long)q->expires_ms);
    int64_t left_s = (job->deadline_ms - util_now_ms()) / 1000;
    snprintf(ttl, sizeof(ttl), "%lld",
             (long long)(left_s > 0 ? left_s : 0) + WRK_ASK_ASKED_SLACK_S);
    delivery_base(base);
    char *rjson = cJSON_PrintUnformatted(reqs);
    char *data = entry_data(q->n, reqs, q->expires_ms);
    const char *argv[14 + WRK_JOB_MAX_STREAMS];
    int argc = 0;
    int rc = -1;
    if (!rjson || !data)
        goto out;
    const char *task = job->task && job->env.task_id ? job->env.task_id : "";
    argv[argc++] = job->env.job_id;
    argv[argc++] = n;
    argv[argc++] = a->worker_id;
    argv[argc++] = rjson;
    argv[argc++] = job->env.tenant;
    argv[argc++] = job->env.owner ? job->env.owner : "";
    argv[argc++] = job->env.session_id ? job->env.session_id : "";
    argv[argc++] = job->env.method;
    argv[argc++] = task;
    argv[argc++] = job->nstreams > 0 ? job->streams[0] : "";
    argv[argc++] = exp;
    argv[argc++] = ttl;
    argv[argc++] = data;
    argv[argc++] = base;
    for (size_t i = 0; i < job->nstreams; i++)
        argv[argc++] = job->streams[i];
    redisReply *r = ask_run(a, "ask_open", argc, argv);
    if (r && r->type == REDIS_REPLY_INTEGER && r->integer == 1)
        rc = 0;
    else if (r && r->type == REDIS_REPLY_INTEGER) {
        rc = -2; /* another attempt of this job has a question open */
        log_event(LOG_WARN, "ask: another question of this job is open; refused", "job_id",
                  job->env.job_id, (char *)NULL);
    }
    if (r)
        freeReplyObject(r);
out:
    free(rjson);
    free(data);
    return rc;
}

/* A new question n of job, linked as open, its expiry set: now + MCPQ_INPUT_TIMEOUT_MS, at
 * most the deadline. NULL on ENOMEM. */
static wrk_ask_q_t *q_new(wrk_ask_t *a, wrk_job_t *job, wrk_ask_fn cb, void *arg, int64_t now)
{
    wrk_ask_q_t *q = calloc(1, sizeof(*q));
    if (!q || !(q->answers = cJSON_CreateObject())) {
        free(q);
        return NULL;
    }
    q->a = a;
    q->job = job;
    q->cb = cb;
    q->arg = arg;
    q->n = ++job->ask_n;
    wrk_loop_timer_init(&q->timer, q_on_timer, q);
    q->wait_ms = a->s->input_timeout_ms;
    q->expires_ms = now + q->wait_ms;
    if (q->expires_ms > job->deadline_ms) {
        q->expires_ms = job->deadline_ms;
        q->wait_ms = job->deadline_ms > now ? job->deadline_ms - now : 0;
    }
    q->next = a->open;
    if (a->open)
        a->open->prev = q;
    a->open = q;
    job->ask_q = q;
    return q;
}

/* The requests of the question the client declared (a new object, NULL on ENOMEM); the
 * others are answered in q->answers with -32601 and never sent. */
static cJSON *q_declared(wrk_ask_q_t *q, const cJSON *requests)
{
    cJSON *send = cJSON_CreateObject();
    for (const cJSON *r = requests->child; send && r; r = r->next) {
        const char *cap = wrk_ask_undeclared(q->job->env.client, r);
        if (!cap) {
            cJSON_AddItemToObject(send, r->string, cJSON_Duplicate(r, 1));
            continue;
        }
        char msg[ASK_MSG_MAX];
        snprintf(msg, sizeof(msg), "the client did not declare the %s capability", cap);
        cJSON_AddItemToObject(q->answers, r->string,
                              wrk_ask_error_answer(WRK_ASK_ERR_UNDECLARED, msg));
    }
    return send;
}

int wrk_ask_open(wrk_job_t *job, const cJSON *requests, wrk_ask_fn cb, void *arg, char *errstr,
                 size_t errstr_size)
{
    wrk_ask_t *a = job->rt->ask;
    if (job->ask_q) {
        snprintf(errstr, errstr_size, "a question of this call is still open");
        return MCPQ_EBUSY;
    }
    if (!a || !cb) {
        snprintf(errstr, errstr_size, "this worker cannot ask clients");
        return MCPQ_EINVAL;
    }
    int rc = wrk_ask_check(requests, a->s->input_max_bytes, errstr, errstr_size);
    if (rc < 0)
        return rc;
    int64_t now = util_now_ms(), delay = 0;
    wrk_ask_q_t *q = q_new(a, job, cb, arg, now);
    cJSON *send = q ? q_declared(q, requests) : NULL;
    if (!send)
        goto oom;
    int stored = send->child ? q_store(q, send) : 0;
    if (send->child && stored == 0) {
        q->stored = 1;
        q->reqs = send;
        send = NULL;
        delay = q->expires_ms - now;
        log_event(LOG_INFO, "ask: the tool asks its client", "job_id", job->env.job_id,
                  (char *)NULL);
    } else if (send->child) {
        q_fill(q, send, WRK_ASK_ERR_LOST,
               stored == -2 ? "another attempt of this call has a question open; this one "
                              "cannot ask"
                            : "the question could not be stored (Redis unavailable); try again");
    }
    cJSON_Delete(send);
    q->done = !q->stored;
    if (wrk_loop_timer_start(a->loop, &q->timer, delay) == 0)
        return 0;
    /* Without its timer nobody would end it: undo. */
    if (q->stored)
        q_take(q, "close", q->reqs);
oom:
    if (q) {
        q_drop_reqs(q);
        q_free(q);
        job->ask_n--;
    }
    return MCPQ_ENOMEM;
}

void wrk_ask_abandon(wrk_job_t *job)
{
    wrk_ask_q_t *q = job->ask_q;
    if (!q)
        return;
    if (q->stored && !q->done)
        q_take(q, "close", q->reqs);
    q_drop_reqs(q);
    q_free(q);
}

/* A question that may be answered now: the answers are taken and the callback is due. */
static void q_poll(wrk_ask_q_t *q)
{
    if (q->done || !q->stored)
        return;
    if (q_take(q, "poll", q->reqs) == 1)
        wrk_loop_timer_start(q->a->loop, &q->timer, 0);
}

void wrk_ask_answered(wrk_ask_t *a, const char *job_id)
{
    for (wrk_ask_q_t *q = a->open; q; q = q->next)
        if (strcmp(q->job->env.job_id, job_id) == 0) {
            q_poll(q);
            return;
        }
}

/* Whether q waits for answers in Redis (the tick polls it). */
static int q_waiting(const wrk_ask_q_t *q)
{
    return q->stored && !q->done;
}

void wrk_ask_tick(wrk_ask_t *a)
{
    /* One pipeline for every waiting question: one round trip a second however many. */
    redisContext *ctx = a->open ? kv_lazy_get(&a->redis) : NULL;
    if (!ctx)
        return;
    const rscript_t *script = rscript_get("ask_take");
    size_t sent = 0;
    for (wrk_ask_q_t *q = a->open; q; q = q->next) {
        take_args_t t;
        if (!q_waiting(q))
            continue;
        take_args(q, "poll", &t);
        if (rscript_append(ctx, script, 0, 6, t.argv) != REDIS_OK)
            break;
        sent++;
    }
    /* The replies come in the order sent; the list is unchanged until they are read (no
     * callback runs here: a complete question's timer is set to 0 ms). */
    wrk_ask_q_t *q = a->open;
    int noscript = 0;
    for (size_t i = 0; i < sent; i++, q = q->next) {
        while (!q_waiting(q))
            q = q->next;
        void *r = NULL;
        if (redisGetReply(ctx, &r) != REDIS_OK || !r) {
            kv_lazy_broken(&a->redis, NULL);
            return;
        }
        if (rscript_noscript(r))
            noscript = 1; /* a Redis that does not know the script yet: below */
        else if (q_taken(q, "poll", q->reqs, r) == 1)
            wrk_loop_timer_start(a->loop, &q->timer, 0);
        freeReplyObject(r);
    }
    /* Once every pipelined reply is read: one by one, which loads the script. */
    for (q = a->open; noscript && q; q = q->next)
        q_poll(q);
}
