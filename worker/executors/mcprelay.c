#include "mcprelay.h"

#include "err.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MCPRELAY_KEY_MAX 64

struct wrk_mcprelay {
    wrk_job_t *job;
    const wrk_mcprelay_api_t *api;
    wrk_mcprelay_reply_fn reply;
    wrk_mcprelay_inputs_fn inputs;
    void *arg;
    int open;   /* a question of ours is open */
    int mrtr;   /* the open question is an InputRequiredResult's */
    cJSON *cur; /* legacy: the upstream request being asked (its id and method) */
    char key[MCPRELAY_KEY_MAX + 1];
    cJSON *keys;       /* mrtr: our key -> the upstream's key */
    cJSON *methods;    /* mrtr: our key -> the request's method */
    cJSON *queue;      /* legacy: requests waiting for their turn (copies) */
    cJSON *outbox;     /* responses for the upstream, sent by the timer */
    cJSON *done;       /* mrtr: the InputResponses to hand over by the timer */
    char failure[400]; /* mrtr: or why the question failed */
    int has_done;
    long seq;
    wrk_loop_timer_t timer;
};

static int key_valid(const char *s)
{
    size_t n = strlen(s);
    if (n < 1 || n > MCPRELAY_KEY_MAX)
        return 0;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
              *p == '_' || *p == '.' || *p == '-'))
            return 0;
    return 1;
}

static int method_relayed(const char *m)
{
    return m && (strcmp(m, "elicitation/create") == 0 || strcmp(m, "sampling/createMessage") == 0 ||
                 strcmp(m, "roots/list") == 0);
}

static void on_timer(wrk_loop_timer_t *t, void *arg);

wrk_mcprelay_t *wrk_mcprelay_new(wrk_job_t *job, const wrk_mcprelay_api_t *api,
                                 wrk_mcprelay_reply_fn reply, wrk_mcprelay_inputs_fn inputs,
                                 void *arg)
{
    wrk_mcprelay_t *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    a->job = job;
    a->api = api;
    a->reply = reply;
    a->inputs = inputs;
    a->arg = arg;
    if (!(a->queue = cJSON_CreateArray()) || !(a->outbox = cJSON_CreateArray())) {
        cJSON_Delete(a->queue);
        free(a);
        return NULL;
    }
    wrk_loop_timer_init(&a->timer, on_timer, a);
    return a;
}

void wrk_mcprelay_free(wrk_mcprelay_t *a)
{
    if (!a)
        return;
    if (a->open)
        a->api->abandon(a->job);
    wrk_loop_timer_stop(a->job->rt->loop, &a->timer);
    cJSON_Delete(a->cur);
    cJSON_Delete(a->keys);
    cJSON_Delete(a->methods);
    cJSON_Delete(a->queue);
    cJSON_Delete(a->outbox);
    cJSON_Delete(a->done);
    free(a);
}

int wrk_mcprelay_open(const wrk_mcprelay_t *a)
{
    return a && a->open;
}

static void soon(wrk_mcprelay_t *a)
{
    if (wrk_loop_timer_start(a->job->rt->loop, &a->timer, 0) < 0)
        log_event(LOG_WARN, "cannot arm the timer of an upstream question's answer", "job_id",
                  a->job->env.job_id, (char *)NULL);
}

/* Queues the response to the upstream request req (its id): result (owned) or an error. */
static void respond(wrk_mcprelay_t *a, const cJSON *req, cJSON *result, int code, const char *msg)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "jsonrpc", "2.0");
    cJSON_AddItemToObject(o, "id", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(req, "id"), 1));
    if (result) {
        cJSON_AddItemToObject(o, "result", result);
    } else {
        cJSON *e = cJSON_AddObjectToObject(o, "error");
        cJSON_AddNumberToObject(e, "code", code);
        cJSON_AddStringToObject(e, "message", msg);
    }
    cJSON_AddItemToArray(a->outbox, o);
    soon(a);
}

/* The key of a legacy request's question, from its id. */
static void key_of(wrk_mcprelay_t *a, const cJSON *id)
{
    if (cJSON_IsString(id) && key_valid(id->valuestring))
        snprintf(a->key, sizeof(a->key), "%s", id->valuestring);
    else if (cJSON_IsNumber(id) && id->valuedouble == (double)(long long)id->valuedouble)
        snprintf(a->key, sizeof(a->key), "%lld", (long long)id->valuedouble);
    else
        snprintf(a->key, sizeof(a->key), "q%ld", ++a->seq);
}

static void on_answer(wrk_job_t *job, const cJSON *answers, void *arg);

/* Asks the next queued legacy request, if no question is open. */
static void ask_next(wrk_mcprelay_t *a)
{
    char why[300];
    while (!a->open && cJSON_GetArraySize(a->queue) > 0) {
        cJSON *req = cJSON_DetachItemFromArray(a->queue, 0);
        key_of(a, cJSON_GetObjectItemCaseSensitive(req, "id"));
        const char *method = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "method"));
        cJSON *q = cJSON_CreateObject();
        cJSON *one = cJSON_AddObjectToObject(q, a->key);
        cJSON_AddStringToObject(one, "method", method);
        const cJSON *params = cJSON_GetObjectItemCaseSensitive(req, "params");
        cJSON_AddItemToObject(one, "params",
                              params ? cJSON_Duplicate(params, 1) : cJSON_CreateObject());
        why[0] = '\0';
        int rc = a->api->open(a->job, q, on_answer, a, why, sizeof(why));
        cJSON_Delete(q);
        if (rc == 0) {
            a->open = 1;
            a->mrtr = 0;
            a->cur = req;
            log_event(LOG_INFO, "relaying the upstream MCP server's request to the client",
                      "job_id", a->job->env.job_id, "method", method, "key", a->key, (char *)NULL);
            return;
        }
        if (rc == MCPQ_ETOOBIG)
            respond(a, req, NULL, -32602, "the request is larger than mcpq relays to its client");
        else if (rc == MCPQ_EINVAL)
            respond(a, req, NULL, -32602, why[0] ? why : "the request is malformed");
        else
            respond(a, req, NULL, -32603, "mcpq could not relay the request to its client");
        cJSON_Delete(req);
    }
}

void wrk_mcprelay_request(wrk_mcprelay_t *a, const cJSON *request)
{
    const char *method = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(request, "method"));
    char msg[200];
    if (method && strcmp(method, "ping") == 0) {
        respond(a, request, cJSON_CreateObject(), 0, NULL);
        return;
    }
    if (!method_relayed(method)) {
        snprintf(msg, sizeof(msg), "mcpq does not relay %.64s to its client",
                 method ? method : "this request");
        respond(a, request, NULL, -32601, msg);
        return;
    }
    if (cJSON_GetArraySize(a->queue) >= WRK_MCPRELAY_QUEUE_MAX) {
        respond(a, request, NULL, -32603, "too many requests wait for the client in this call");
        return;
    }
    cJSON_AddItemToArray(a->queue, cJSON_Duplicate(request, 1));
    ask_next(a);
}

int wrk_mcprelay_inputs(wrk_mcprelay_t *a, const cJSON *input_requests, char *errstr,
                        size_t errstr_size)
{
    if (a->open) {
        snprintf(errstr, errstr_size, "a question is already open");
        return MCPQ_EEXIST;
    }
    if (!cJSON_IsObject(input_requests) || !input_requests->child) {
        snprintf(errstr, errstr_size, "inputRequests is not a non-empty object");
        return MCPQ_EINVAL;
    }
    cJSON *q = cJSON_CreateObject(), *keys = cJSON_CreateObject(), *methods = cJSON_CreateObject();
    long n = 0;
    for (const cJSON *it = input_requests->child; it; it = it->next) {
        const char *method = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "method"));
        if (!method_relayed(method)) {
            snprintf(errstr, errstr_size,
                     "inputRequests.%.64s asks %.64s, which mcpq does not "
                     "relay",
                     it->string, method ? method : "nothing");
            goto bad;
        }
        char key[MCPRELAY_KEY_MAX + 1];
        if (key_valid(it->string) && !cJSON_GetObjectItemCaseSensitive(q, it->string))
            snprintf(key, sizeof(key), "%s", it->string);
        else
            do
                snprintf(key, sizeof(key), "k%ld", ++n);
            while (cJSON_GetObjectItemCaseSensitive(q, key) ||
                   cJSON_GetObjectItemCaseSensitive(input_requests, key));
        cJSON_AddItemToObject(q, key, cJSON_Duplicate(it, 1));
        cJSON_AddStringToObject(keys, key, it->string);
        cJSON_AddStringToObject(methods, key, method);
    }
    if (a->api->open(a->job, q, on_answer, a, errstr, errstr_size) < 0)
        goto bad;
    cJSON_Delete(q);
    cJSON_Delete(a->keys);
    cJSON_Delete(a->methods);
    a->keys = keys;
    a->methods = methods;
    a->open = 1;
    a->mrtr = 1;
    return 0;
bad:
    cJSON_Delete(q);
    cJSON_Delete(keys);
    cJSON_Delete(methods);
    return MCPQ_EINVAL;
}

/* An answer's error as a sentence. */
static void error_text(const cJSON *ans, char *out, size_t size)
{
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(ans, "error");
    const char *m = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "message"));
    snprintf(out, size, "%.300s", m ? m : "no answer");
}

static void answer_mrtr(wrk_mcprelay_t *a, const cJSON *answers)
{
    cJSON *out = cJSON_CreateObject();
    a->failure[0] = '\0';
    for (const cJSON *k = a->keys ? a->keys->child : NULL; k; k = k->next) {
        const cJSON *ans = cJSON_GetObjectItemCaseSensitive(answers, k->string);
        const cJSON *res = cJSON_GetObjectItemCaseSensitive(ans, "result");
        if (!res) {
            char why[320];
            error_text(ans, why, sizeof(why));
            snprintf(a->failure, sizeof(a->failure),
                     "the tool's upstream MCP server asked the client (%s) and got no answer: %s",
                     cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a->methods, k->string)),
                     why);
            cJSON_Delete(out);
            out = NULL;
            break;
        }
        cJSON_AddItemToObject(out, k->valuestring, cJSON_Duplicate(res, 1));
    }
    cJSON_Delete(a->done);
    a->done = out;
    a->has_done = 1;
    soon(a);
}

static void on_answer(wrk_job_t *job, const cJSON *answers, void *arg)
{
    wrk_mcprelay_t *a = arg;
    (void)job;
    a->open = 0;
    if (a->mrtr) {
        answer_mrtr(a, answers);
        return;
    }
    cJSON *req = a->cur;
    a->cur = NULL;
    const cJSON *ans = cJSON_GetObjectItemCaseSensitive(answers, a->key);
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(ans, "result");
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(ans, "error");
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(err, "code");
    if (res) {
        respond(a, req, cJSON_Duplicate(res, 1), 0, NULL);
    } else {
        char why[320];
        error_text(ans, why, sizeof(why));
        respond(a, req, NULL, cJSON_IsNumber(code) ? (int)code->valuedouble : -32603, why);
    }
    cJSON_Delete(req);
    /* the next queued request is asked from the timer, once this question is closed */
}

/* Hands over what the answers made, outside any callback of the transport or of the ask API,
 * and asks the next queued request. The relay may be freed by inputs (the call ends): nothing
 * is touched after it. */
static void on_timer(wrk_loop_timer_t *t, void *arg)
{
    wrk_mcprelay_t *a = arg;
    (void)t;
    log_ctx_t saved;
    wrk_job_log_enter(a->job, &saved);
    while (cJSON_GetArraySize(a->outbox) > 0) {
        cJSON *r = cJSON_DetachItemFromArray(a->outbox, 0);
        if (a->reply)
            a->reply(r, a->arg);
        else
            cJSON_Delete(r);
    }
    ask_next(a);
    if (a->has_done) {
        cJSON *done = a->done;
        char failure[sizeof(a->failure)];
        snprintf(failure, sizeof(failure), "%s", a->failure);
        a->done = NULL;
        a->has_done = 0;
        if (a->inputs)
            a->inputs(done, done ? NULL : failure, a->arg); /* may free a */
        else
            cJSON_Delete(done);
    }
    wrk_job_log_leave(&saved);
}
