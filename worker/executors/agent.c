#include "agent.h"
#include "ask.h"
#include "rscript.h"
#include "names.h"

#include "err.h"
#include "httpexec.h"
#include "job.h"
#include "log.h"
#include "output.h"
#include "kv.h"
#include "util.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AGENT_WAIT_SLACK_MS 5000 /* the wait key outlives the deadline by this much */
#define AGENT_KEY_MAX (sizeof(WRK_AGENTREPLY_PREFIX) + WRK_ID_MAX + 16)
#define AGENT_NAME_MAX 300

typedef struct agent_call {
    wrk_agent_t *a;
    wrk_job_t *job;
    char message_id[WRK_ID_MAX + 1];
    char channel_id[WRK_ID_MAX + 1];
    char agent[AGENT_NAME_MAX]; /* host[:port] of the url, for the log only */
    char *body;                 /* the chat_message, alive as long as the transfer */
    size_t body_len;
    wrk_httpexec_req_t *xfer;
    int waiting; /* on a->waiting: answered 202 */
    int rounds;  /* questions the agent asked its caller (input_requests) */
    struct agent_call *prev, *next;
} agent_call_t;

struct wrk_agent {
    const mcpq_settings_t *s;
    kv_lazy_t redis;
    agent_call_t *waiting;
};

wrk_agent_t *wrk_agent_new(const mcpq_settings_t *s, kv_target_t *kvt)
{
    wrk_agent_t *a = calloc(1, sizeof(*a));
    if (a) {
        a->s = s;
        a->redis.kvt = kvt;
        a->redis.timeout_ms = (int)s->redis_timeout_ms;
        a->redis.what = "agent";
    }
    return a;
}

void wrk_agent_free(wrk_agent_t *a)
{
    if (!a)
        return;
    kv_lazy_close(&a->redis);
    free(a);
}

/* ---- pure helpers ---- */

cJSON *wrk_agent_chat_message(const wrk_envelope_t *env, const char *message_id,
                              const char *channel_id, cJSON *turns)
{
    cJSON *m = cJSON_CreateObject();
    if (!m) {
        cJSON_Delete(turns);
        return NULL;
    }
    cJSON_AddStringToObject(m, "type", "chat_message");
    cJSON_AddStringToObject(m, "message_id", message_id);
    cJSON_AddStringToObject(m, "channel_id", channel_id);
    cJSON_AddStringToObject(m, "tenant", env->tenant);
    cJSON_AddStringToObject(m, "tool", env->tool);
    cJSON_AddItemToObject(
        m, "arguments", env->arguments ? cJSON_Duplicate(env->arguments, 1) : cJSON_CreateObject());
    const cJSON *att = cJSON_GetObjectItemCaseSensitive(env->root, "attachments");
    cJSON_AddItemToObject(m, "attachments",
                          cJSON_IsArray(att) ? cJSON_Duplicate(att, 1) : cJSON_CreateArray());
    cJSON_AddItemToObject(m, "turns", turns ? turns : cJSON_CreateArray());
    cJSON_AddNumberToObject(m, "deadline_ms", (double)env->deadline_ms);
    if (!cJSON_GetObjectItemCaseSensitive(m, "deadline_ms") ||
        !cJSON_GetObjectItemCaseSensitive(m, "turns")) {
        cJSON_Delete(m);
        return NULL;
    }
    return m;
}

static int block_valid(const cJSON *b)
{
    return cJSON_IsObject(b) && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(b, "type"));
}

cJSON *wrk_agent_reply_result(const cJSON *reply, const char *message_id, char *why,
                              size_t why_size)
{
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(reply, "type"));
    if (!cJSON_IsObject(reply) || !type || strcmp(type, "agent_reply") != 0) {
        snprintf(why, why_size, "the answer is not an agent_reply");
        return NULL;
    }
    const cJSON *irt = cJSON_GetObjectItemCaseSensitive(reply, "in_reply_to");
    if (irt && !cJSON_IsNull(irt) &&
        !(cJSON_IsString(irt) && strcmp(irt->valuestring, message_id) == 0)) {
        snprintf(why, why_size, "the agent_reply answers another message (in_reply_to)");
        return NULL;
    }
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(reply, "content");
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(reply, "text");
    const cJSON *is_error = cJSON_GetObjectItemCaseSensitive(reply, "isError");
    cJSON *out = NULL;
    if (content && !cJSON_IsNull(content)) {
        if (!cJSON_IsArray(content)) {
            snprintf(why, why_size, "agent_reply.content must be an array of content blocks");
            return NULL;
        }
        for (const cJSON *b = content->child; b; b = b->next)
            if (!block_valid(b)) {
                snprintf(why, why_size, "agent_reply.content holds a block without a type");
                return NULL;
            }
        out = cJSON_CreateObject();
        if (out)
            cJSON_AddItemToObject(out, "content", cJSON_Duplicate(content, 1));
    } else if (cJSON_IsString(text)) {
        out = wrk_output_text(text->valuestring, strlen(text->valuestring), 0);
    } else {
        snprintf(why, why_size, "agent_reply has neither text nor content");
        return NULL;
    }
    if (!out)
        return NULL;
    cJSON_DeleteItemFromObjectCaseSensitive(out, "isError");
    cJSON_AddBoolToObject(out, "isError", cJSON_IsTrue(is_error));
    return out;
}

cJSON *wrk_agent_turn(const wrk_envelope_t *env, const char *message_id, int64_t at_ms,
                      const cJSON *result)
{
    cJSON *t = cJSON_CreateObject();
    cJSON *in = cJSON_AddObjectToObject(t, "in");
    cJSON *out = cJSON_AddObjectToObject(t, "out");
    if (!in || !out) {
        cJSON_Delete(t);
        return NULL;
    }
    cJSON_AddStringToObject(in, "message_id", message_id);
    cJSON_AddStringToObject(in, "tool", env->tool);
    cJSON_AddItemToObject(in, "arguments",
                          env->arguments ? cJSON_Duplicate(env->arguments, 1)
                                         : cJSON_CreateObject());
    cJSON_AddNumberToObject(in, "at_ms", (double)at_ms);
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(result, "content");
    cJSON_AddItemToObject(
        out, "content", cJSON_IsArray(content) ? cJSON_Duplicate(content, 1) : cJSON_CreateArray());
    cJSON_AddBoolToObject(out, "isError",
                          cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(result, "isError")));
    return t;
}

/* ---- Redis ---- */

static redisContext *agent_redis(wrk_agent_t *a)
{
    return kv_lazy_get(&a->redis);
}

/* Drops a context whose command failed (hiredis marks it broken). */
static void agent_redis_broken(wrk_agent_t *a)
{
    kv_lazy_broken(&a->redis, NULL);
}

/* Reads the next pipelined reply; NULL (context dropped) when the connection failed. */
static redisReply *agent_reply_get(wrk_agent_t *a)
{
    void *r = NULL;
    if (redisGetReply(a->redis.ctx, &r) != REDIS_OK || !r) {
        agent_redis_broken(a);
        return NULL;
    }
    /* A demoted master (-READONLY): dropped like a lost connection (docs/redis.md). */
    if (kv_ctx_failover(a->redis.kvt, a->redis.ctx, r)) {
        freeReplyObject(r);
        agent_redis_broken(a);
        return NULL;
    }
    return r;
}

/* The channel's earlier turns (a cJSON array) and the wait key set: 0, or MCPQ_EUNAVAIL. */
static int agent_prepare(agent_call_t *c, cJSON **turns)
{
    wrk_agent_t *a = c->a;
    wrk_job_t *job = c->job;
    *turns = NULL;
    redisContext *ctx = agent_redis(a);
    if (!ctx)
        return MCPQ_EUNAVAIL;
    char tkey[AGENT_KEY_MAX + 8], ckey[AGENT_KEY_MAX], wkey[AGENT_KEY_MAX], px[24];
    snprintf(tkey, sizeof(tkey), WRK_CHAN_PREFIX "%s" NAMES_SUFFIX_TURNS, c->channel_id);
    snprintf(ckey, sizeof(ckey), WRK_CHAN_PREFIX "%s", c->channel_id);
    snprintf(wkey, sizeof(wkey), WRK_AGENTWAIT_PREFIX "%s", c->message_id);
    snprintf(px, sizeof(px), "%lld", (long long)(wrk_job_remaining_ms(job) + AGENT_WAIT_SLACK_MS));
    cJSON *w = cJSON_CreateObject();
    cJSON_AddStringToObject(w, "channel_id", c->channel_id);
    cJSON_AddStringToObject(w, "tenant", job->env.tenant);
    char *wjson = cJSON_PrintUnformatted(w);
    cJSON_Delete(w);
    if (!wjson)
        return MCPQ_ENOMEM;
    const char *hget[] = {"HGET", ckey, "tenant"};
    const char *lrange[] = {"LRANGE", tkey, "0", "-1"};
    const char *set[] = {"SET", wkey, wjson, "PX", px};
    redisAppendCommandArgv(ctx, 3, hget, NULL);
    redisAppendCommandArgv(ctx, 4, lrange, NULL);
    redisAppendCommandArgv(ctx, 5, set, NULL);
    free(wjson);
    redisReply *r1 = agent_reply_get(a);
    redisReply *r2 = r1 ? agent_reply_get(a) : NULL;
    redisReply *r3 = r2 ? agent_reply_get(a) : NULL;
    int rc = 0;
    if (!r3 || r3->type == REDIS_REPLY_ERROR) {
        rc = MCPQ_EUNAVAIL;
        goto out;
    }
    *turns = cJSON_CreateArray();
    /* A channel of another tenant (which the ingress never lets through) gives no turns. */
    int foreign = r1->type == REDIS_REPLY_STRING && strcmp(r1->str, job->env.tenant) != 0;
    if (*turns && !foreign && r2->type == REDIS_REPLY_ARRAY)
        for (size_t i = 0; i < r2->elements; i++) {
            const redisReply *e = r2->element[i];
            cJSON *t = e->type == REDIS_REPLY_STRING ? cJSON_ParseWithLength(e->str, e->len) : NULL;
            if (t)
                cJSON_AddItemToArray(*turns, t);
        }
out:
    if (r1)
        freeReplyObject(r1);
    if (r2)
        freeReplyObject(r2);
    if (r3)
        freeReplyObject(r3);
    return rc;
}

/* The stored agent_reply of message_id (parsed), or NULL when none (or Redis is down). */
static cJSON *agent_stored_reply(wrk_agent_t *a, const char *message_id)
{
    redisContext *ctx = agent_redis(a);
    if (!ctx)
        return NULL;
    redisReply *r = redisCommand(ctx, "GET " WRK_AGENTREPLY_PREFIX "%s", message_id);
    if (!r) {
        agent_redis_broken(a);
        return NULL;
    }
    cJSON *reply = r->type == REDIS_REPLY_STRING ? cJSON_ParseWithLength(r->str, r->len) : NULL;
    freeReplyObject(r);
    return reply;
}

/* The call is over: no more replies accepted for it; its turn appended when there is one.
 * Best effort: a failure is logged and the result goes out anyway. */
static void agent_conclude(agent_call_t *c, const cJSON *result, int drop_wait)
{
    wrk_agent_t *a = c->a;
    wrk_job_t *job = c->job;
    redisContext *ctx = agent_redis(a);
    if (!ctx)
        return;
    int n = 0;
    if (drop_wait) {
        redisAppendCommand(ctx, "DEL " WRK_AGENTWAIT_PREFIX "%s", c->message_id);
        n++;
    }
    char tkey[AGENT_KEY_MAX + 8], ckey[AGENT_KEY_MAX], maxn[24], maxb[24], ttl[24], now[24];
    char *tjson = NULL;
    const char *argv[] = {tkey, ckey, NULL, maxn, maxb, ttl, job->env.tenant, now};
    if (result) {
        cJSON *turn = wrk_agent_turn(&job->env, c->message_id, util_now_ms(), result);
        tjson = turn ? cJSON_PrintUnformatted(turn) : NULL;
        cJSON_Delete(turn);
        if (tjson) {
            snprintf(tkey, sizeof(tkey), WRK_CHAN_PREFIX "%s" NAMES_SUFFIX_TURNS, c->channel_id);
            snprintf(ckey, sizeof(ckey), WRK_CHAN_PREFIX "%s", c->channel_id);
            snprintf(maxn, sizeof(maxn), "%lld", a->s->channel_max_turns);
            snprintf(maxb, sizeof(maxb), "%lld", a->s->channel_max_bytes);
            const cJSON *cttl = cJSON_GetObjectItemCaseSensitive(job->env.root, "channel_ttl_ms");
            long long ttl_ms = cJSON_IsNumber(cttl) && cttl->valuedouble >= 1000
                                   ? (long long)cttl->valuedouble
                                   : a->s->channel_ttl_s * 1000;
            snprintf(ttl, sizeof(ttl), "%lld", ttl_ms);
            snprintf(now, sizeof(now), "%lld", (long long)util_now_ms());
            argv[2] = tjson;
            rscript_append(ctx, rscript_get("agent_append"), 2, 8, argv);
            n++;
        }
    }
    for (int i = 0; i < n; i++) {
        redisReply *r = agent_reply_get(a);
        if (!r)
            break;
        /* The script's reply (the last) is NOSCRIPT when this Redis has not loaded it yet:
         * rscript_run loads it and runs it again. */
        char err[256] = "";
        if (tjson && i == n - 1 && rscript_noscript(r)) {
            freeReplyObject(r);
            r = rscript_run(ctx, rscript_get("agent_append"), 2, 8, argv, NULL, err, sizeof(err));
        }
        if (!r || r->type == REDIS_REPLY_ERROR)
            log_event(LOG_WARN, "agent: channel update refused", "job_id", job->env.job_id, "error",
                      r ? r->str : err, (char *)NULL);
        freeReplyObject(r);
    }
    free(tjson);
}

/* ---- calls ---- */

static void call_unlink(agent_call_t *c)
{
    if (!c->waiting)
        return;
    if (c->prev)
        c->prev->next = c->next;
    else
        c->a->waiting = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
    c->waiting = 0;
}

static void call_free(agent_call_t *c)
{
    call_unlink(c);
    free(c->body);
    free(c);
}

/* Ends the call with result (consumed; NULL after a cancel) and frees it. */
static void call_finish(agent_call_t *c, cJSON *result, int drop_wait)
{
    wrk_job_t *job = c->job;
    agent_conclude(c, result, drop_wait);
    call_free(c);
    job->ex_state = NULL;
    wrk_job_finish(job, result);
}

/* The result for a reply the agent sent (in the response or through the ingress). */
static cJSON *reply_to_result(agent_call_t *c, const cJSON *reply)
{
    char why[160];
    cJSON *res = wrk_agent_reply_result(reply, c->message_id, why, sizeof(why));
    if (res)
        return res;
    return wrk_job_error_hidden(c->job, c->agent, "the agent's reply was refused: %s", why);
}

static void agent_http_done(const wrk_httpexec_resp_t *resp, void *arg);

/* The caller's answers to the agent's question: the chat_message again with
 * "input_responses" (wrk_ask_responses), POSTed as the first was. */
static void agent_answered(wrk_job_t *job, const cJSON *answers, void *arg)
{
    agent_call_t *c = arg;
    cJSON *msg = cJSON_ParseWithLength(c->body, c->body_len);
    cJSON_DeleteItemFromObjectCaseSensitive(msg, "input_responses");
    if (msg)
        cJSON_AddItemToObject(msg, "input_responses", wrk_ask_responses(answers));
    char *body = msg ? cJSON_PrintUnformatted(msg) : NULL;
    cJSON_Delete(msg);
    if (!body) {
        call_finish(c, NULL, 1);
        return;
    }
    free(c->body);
    c->body = body;
    c->body_len = strlen(body);
    const char *why = NULL;
    c->xfer = wrk_httpexec_post_job(job, c->body, c->body_len, agent_http_done, c, &why);
    if (!c->xfer)
        call_finish(c, wrk_output_errorf("%s", why ? why : "the agent could not be called"), 1);
}

/* A reply the agent sent: a result, or a question for the caller ("input_requests": an
 * InputRequests map; docs/executors.md "agent"), asked through ask.h. stored: it came through
 * the ingress, whose copy is deleted so that the agent can reply again. */
static void agent_on_reply(agent_call_t *c, const cJSON *reply, int stored)
{
    const cJSON *reqs = cJSON_GetObjectItemCaseSensitive(reply, "input_requests");
    if (!reqs) {
        call_finish(c, reply_to_result(c, reply), 1);
        return;
    }
    if (stored) {
        redisContext *ctx = agent_redis(c->a);
        redisReply *r =
            ctx ? redisCommand(ctx, "DEL " WRK_AGENTREPLY_PREFIX "%s", c->message_id) : NULL;
        if (r)
            freeReplyObject(r);
        else
            agent_redis_broken(c->a);
    }
    char why[300];
    if (++c->rounds > WRK_ASK_ROUNDS_MAX) {
        call_finish(c,
                    wrk_output_errorf("the agent asked its caller more than %d times in one call",
                                      WRK_ASK_ROUNDS_MAX),
                    1);
        return;
    }
    if (wrk_ask_open(c->job, reqs, agent_answered, c, why, sizeof(why)) < 0) {
        call_finish(c, wrk_output_errorf("the agent asked an invalid question: %s", why), 1);
        return;
    }
    call_unlink(c); /* no reply is awaited until the answers went back */
}

static void agent_http_done_in(const wrk_httpexec_resp_t *resp, void *arg)
{
    agent_call_t *c = arg;
    c->xfer = NULL; /* freed by httpexec.c after this returns */
    if (resp->code != CURLE_OK) {
        call_finish(c,
                    resp->too_big
                        ? wrk_output_errorf("output too large: the agent answered more than %zu "
                                            "bytes",
                                            wrk_httpexec_max_output(c->job->rt->http))
                        : wrk_httpexec_failure(c->job, resp, "the agent"),
                    1);
        return;
    }
    if (resp->status == 202) {
        /* The reply may already be stored: the agent can post it before answering 202. */
        cJSON *reply = agent_stored_reply(c->a, c->message_id);
        if (reply) {
            agent_on_reply(c, reply, 1);
            cJSON_Delete(reply);
            return;
        }
        c->waiting = 1;
        c->prev = NULL;
        c->next = c->a->waiting;
        if (c->next)
            c->next->prev = c;
        c->a->waiting = c;
        return;
    }
    if (resp->status < 200 || resp->status > 299) {
        call_finish(
            c, wrk_job_error_hidden(c->job, c->agent, "the agent answered HTTP %ld", resp->status),
            1);
        return;
    }
    cJSON *reply = resp->body ? cJSON_ParseWithLength(resp->body, resp->len) : NULL;
    if (reply)
        agent_on_reply(c, reply, 0);
    else
        call_finish(c,
                    wrk_job_error_hidden(c->job, c->agent,
                                         "the agent answered HTTP %ld without an agent_reply",
                                         resp->status),
                    1);
    cJSON_Delete(reply);
}

/* The agent's answer, logged in the job's trace. */
static void agent_http_done(const wrk_httpexec_resp_t *resp, void *arg)
{
    const agent_call_t *c = arg;
    log_ctx_t saved;
    wrk_job_log_enter(c->job, &saved);
    agent_http_done_in(resp, arg);
    wrk_job_log_leave(&saved);
}

static int agent_start(wrk_job_t *job)
{
    wrk_agent_t *a = job->rt->agent;
    agent_call_t *c = calloc(1, sizeof(*c));
    if (!c)
        return -1;
    c->a = a;
    c->job = job;
    snprintf(c->message_id, sizeof(c->message_id), "%s", job->env.job_id);
    const char *chan =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(job->env.root, "channel_id"));
    if (chan && wrk_envelope_id_valid(chan) && strlen(chan) < sizeof(c->channel_id) - 8)
        snprintf(c->channel_id, sizeof(c->channel_id), "%s", chan);
    else
        snprintf(c->channel_id, sizeof(c->channel_id), "c_%.100s", job->env.job_id);
    const char *url =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(job->env.executor, "url"));
    util_url_host(url ? url : "", c->agent, sizeof(c->agent));

    cJSON *turns = NULL;
    int rc = agent_prepare(c, &turns);
    if (rc < 0) {
        cJSON *res = wrk_job_error_hidden(
            c->job, c->agent, "the conversation store (Redis) is unavailable; try again");
        free(c);
        wrk_job_finish(job, res);
        return 0;
    }
    cJSON *msg = wrk_agent_chat_message(&job->env, c->message_id, c->channel_id, turns);
    c->body = msg ? cJSON_PrintUnformatted(msg) : NULL;
    cJSON_Delete(msg);
    if (!c->body) {
        free(c);
        return -1;
    }
    c->body_len = strlen(c->body);
    const char *why = NULL;
    job->ex_state = c;
    c->xfer = wrk_httpexec_post_job(job, c->body, c->body_len, agent_http_done, c, &why);
    if (!c->xfer) {
        job->ex_state = NULL;
        if (!why) {
            call_free(c);
            return -1;
        }
        call_finish(c, wrk_output_errorf("%s", why), 1);
    }
    return 0;
}

static void agent_cancel(wrk_job_t *job, wrk_cancel_t how)
{
    agent_call_t *c = job->ex_state;
    if (!c)
        return;
    wrk_httpexec_req_cancel(job->rt->http, c->xfer);
    c->xfer = NULL;
    /* On abort the job goes to another worker, which waits under the same message id. */
    call_finish(c, NULL, how != WRK_CANCEL_ABORT);
}

/* A waiting call whose reply is stored takes it. */
static void agent_take(agent_call_t *c)
{
    cJSON *reply = agent_stored_reply(c->a, c->message_id);
    if (!reply)
        return;
    agent_on_reply(c, reply, 1);
    cJSON_Delete(reply);
}

void wrk_agent_reply_ready(wrk_agent_t *a, const char *message_id)
{
    for (agent_call_t *c = a->waiting; c; c = c->next)
        if (strcmp(c->message_id, message_id) == 0) {
            agent_take(c);
            return;
        }
}

void wrk_agent_tick(wrk_agent_t *a)
{
    for (agent_call_t *c = a->waiting, *next; c; c = next) {
        next = c->next;
        agent_take(c);
    }
}

const wrk_executor_t wrk_agent_executor = {
    .type = "agent",
    .start = agent_start,
    .cancel = agent_cancel,
};
