/*
 * mrtr.c - 2026-07-28 multi round-trip requests (mrtr.h).
 */
#include "mrtr.h"

#include "answer.h"
#include "era.h"
#include "err.h"
#include "log.h"
#include "owner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the hook of one call needs, copied at arming (call->input_arg; one block, freed with
 * free()). */
typedef struct hook_arg {
    ing_rstate_t *rs;
    kv_pool_t *kv;
    long long input_timeout_ms;
    char id_json[300];
    char tenant[128];
    char owner[ING_OWNER_MAX];
    char session[80];
    int has_session;
    char method[32];
    char digest[33];
    int elicitation, sampling, roots; /* what the client declared on the request */
} hook_arg_t;

/* The capability a request's method needs, or NULL for a method nobody may be asked. */
static const char *needed_capability(const char *method)
{
    if (!method)
        return NULL;
    if (strcmp(method, "elicitation/create") == 0)
        return "elicitation";
    if (strcmp(method, "sampling/createMessage") == 0)
        return "sampling";
    if (strcmp(method, "roots/list") == 0)
        return "roots";
    return NULL;
}

static int declared(const hook_arg_t *a, const char *cap)
{
    return cap && ((strcmp(cap, "elicitation") == 0 && a->elicitation) ||
                   (strcmp(cap, "sampling") == 0 && a->sampling) ||
                   (strcmp(cap, "roots") == 0 && a->roots));
}

int ing_mrtr_arm(const ing_mcp_t *m, const rpc_msg_t *msg, ing_call_t *call)
{
    ing_ctx_t *ctx = m->req->ctx;
    hook_arg_t *a = calloc(1, sizeof(*a));
    const char *tenant = m->tenant ? m->tenant->id : "";
    if (!a || strlen(tenant) >= sizeof(a->tenant) || strlen(msg->method) >= sizeof(a->method) ||
        ing_rstate_digest(msg->method, msg->params, a->digest) < 0) {
        free(a);
        call->on_input = NULL;
        return MCPQ_ENOMEM;
    }
    a->rs = ctx->rstate;
    a->kv = ctx->kv;
    a->input_timeout_ms = ctx->set->input_timeout_ms;
    snprintf(a->id_json, sizeof(a->id_json), "%s", call->id_json);
    snprintf(a->tenant, sizeof(a->tenant), "%s", tenant);
    (void)ing_owner_of(m->who, a->owner, sizeof(a->owner)); /* "" when none */
    a->has_session = m->has_session;
    if (m->has_session)
        snprintf(a->session, sizeof(a->session), "%s", m->session.id);
    snprintf(a->method, sizeof(a->method), "%s", msg->method);
    const cJSON *caps = cJSON_GetObjectItemCaseSensitive(ing_era_meta(msg), ING_META_CLIENT_CAPS);
    a->elicitation = cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(caps, "elicitation"));
    a->sampling = cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(caps, "sampling"));
    a->roots = cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(caps, "roots"));
    free(call->input_arg);
    call->input_arg = a;
    call->on_input = ing_mrtr_hook;
    return 0;
}

/* The claims of a's caller and request for job's question n. */
static ing_rstate_claims_t arg_claims(const hook_arg_t *a, const char *job, long long n,
                                      int64_t expires_ms)
{
    ing_rstate_claims_t c = {.job_id = job,
                             .n = n,
                             .tenant = a->tenant,
                             .owner = a->owner,
                             .session = a->has_session ? a->session : NULL,
                             .method = a->method,
                             .expires_ms = expires_ms};
    memcpy(c.digest, a->digest, sizeof(c.digest));
    return c;
}

/* The InputRequiredResult (a new object) asking requests (consumed) with state. */
static cJSON *input_required(cJSON *requests, const char *state)
{
    cJSON *result = cJSON_CreateObject();
    cJSON_AddStringToObject(result, "resultType", "input_required");
    cJSON_AddItemToObject(result, "inputRequests", requests);
    cJSON_AddStringToObject(result, "requestState", state);
    ing_mcpreq_modern_result(result);
    return result;
}

/* The requests of reqs the client of a declared (a new object); the others are answered for
 * the tool at once with the -32601 error (docs/internals.md, "Asking the client"). */
static cJSON *declared_requests(const hook_arg_t *a, const char *job_id, long long n,
                                const cJSON *reqs)
{
    cJSON *keep = cJSON_CreateObject(), *refused = cJSON_CreateObject();
    const cJSON *r;
    cJSON_ArrayForEach(r, reqs)
    {
        const char *cap =
            needed_capability(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "method")));
        if (declared(a, cap)) {
            cJSON_AddItemToObject(keep, r->string, cJSON_Duplicate(r, 1));
            continue;
        }
        char msg[160];
        snprintf(msg, sizeof(msg), "the client did not declare the %s capability",
                 cap ? cap : "needed");
        cJSON_AddItemToObject(refused, r->string, ing_answer_error(RPC_METHOD_NOT_FOUND, msg));
    }
    if (cJSON_GetArraySize(refused) > 0) {
        ing_answer_who_t who = {a->tenant, a->owner, a->has_session ? a->session : NULL};
        char err[256] = "";
        if (ing_answer_submit(a->kv, job_id, n, &who, refused, NULL, NULL, err, sizeof(err)) !=
            ING_ANSWER_OK)
            log_event(LOG_WARN, "could not refuse a request the client did not declare", "job_id",
                      job_id, "error", err, (char *)NULL);
    }
    cJSON_Delete(refused);
    return keep;
}

/* The JSON-RPC response carrying result (consumed) for id_json, as a one-element array. */
static cJSON *one_response(const char *id_json, cJSON *result)
{
    cJSON *resp = cJSON_CreateObject();
    cJSON_AddStringToObject(resp, "jsonrpc", "2.0");
    cJSON *id = cJSON_Parse(id_json);
    cJSON_AddItemToObject(resp, "id", id ? id : cJSON_CreateNull());
    cJSON_AddItemToObject(resp, "result", result);
    cJSON *arr = cJSON_CreateArray();
    cJSON_AddItemToArray(arr, resp);
    return arr;
}

ing_input_t ing_mrtr_hook(ing_call_t *call, const char *job_id, const cJSON *data, cJSON **msgs)
{
    const hook_arg_t *a = call->input_arg;
    const cJSON *jn = cJSON_GetObjectItemCaseSensitive(data, "n");
    const cJSON *reqs = cJSON_GetObjectItemCaseSensitive(data, "requests");
    const cJSON *je = cJSON_GetObjectItemCaseSensitive(data, "expires_ms");
    *msgs = NULL;
    if (!a || !cJSON_IsNumber(jn) || !cJSON_IsObject(reqs))
        return ING_INPUT_UNREACHABLE;
    long long n = (long long)jn->valuedouble;
    int64_t expires = cJSON_IsNumber(je) && je->valuedouble > 0
                          ? (int64_t)je->valuedouble
                          : util_now_ms() + a->input_timeout_ms;
    cJSON *keep = declared_requests(a, job_id, n, reqs);
    if (cJSON_GetArraySize(keep) == 0) { /* nothing to ask: the call keeps waiting */
        cJSON_Delete(keep);
        *msgs = cJSON_CreateArray();
        return ING_INPUT_POST;
    }
    ing_rstate_claims_t c = arg_claims(a, job_id, n, expires);
    char state[ING_RSTATE_MAX];
    int rc = ing_rstate_make(a->rs, &c, state, sizeof(state));
    if (rc < 0) {
        log_event(LOG_WARN, "cannot make the requestState of a question", "job_id", job_id, "error",
                  rc == MCPQ_EUNAVAIL ? "Redis unavailable" : "state too large", (char *)NULL);
        cJSON_Delete(keep);
        return ING_INPUT_UNREACHABLE;
    }
    *msgs = one_response(a->id_json, input_required(keep, state));
    return ING_INPUT_ANSWER;
}

static void bad_params(ing_resp_t *resp, const cJSON *id, const char *msg)
{
    ing_mcpreq_resp_error(resp, 200, id, RPC_INVALID_PARAMS, msg, NULL);
}

/* -32603 "<what> (Redis) unavailable; try again". */
static void unavailable(ing_resp_t *resp, const cJSON *id, const char *what)
{
    char msg[160];
    snprintf(msg, sizeof(msg), "%s (Redis) unavailable; try again", what);
    ing_mcpreq_resp_error(resp, 200, id, RPC_INTERNAL_ERROR, msg, NULL);
}

/* The caller of m as answer.h sees it; owner (ING_OWNER_MAX bytes) receives its owner string
 * ("" for none), which the result points to. */
static ing_answer_who_t caller(const ing_mcp_t *m, char *owner)
{
    owner[0] = '\0';
    (void)ing_owner_of(m->who, owner, ING_OWNER_MAX);
    return (ing_answer_who_t){m->tenant->id, owner, m->has_session ? m->session.id : NULL};
}

/* The answer for a valid state whose question is gone: -32603, data.reason input_lost. */
static void input_lost(ing_resp_t *resp, const cJSON *id)
{
    cJSON *data = cJSON_CreateObject();
    cJSON_AddStringToObject(data, "reason", "input_lost");
    ing_mcpreq_resp_error(resp, 200, id, RPC_INTERNAL_ERROR, ING_MRTR_LOST, data);
    cJSON_Delete(data);
}

/* Checks inputResponses (NULL: none): an object of objects, at most max_bytes of JSON. NULL
 * when it holds, else the message for the client. */
static const char *responses_problem(const cJSON *ir, long long max_bytes)
{
    if (!ir)
        return NULL;
    if (!cJSON_IsObject(ir))
        return "params.inputResponses must be an object (InputResponses)";
    const cJSON *v;
    cJSON_ArrayForEach(v, ir)
    {
        if (!cJSON_IsObject(v))
            return "each member of params.inputResponses must be the client's result (an object)";
    }
    char *js = cJSON_PrintUnformatted(ir);
    int big = !js || (long long)strlen(js) > max_bytes;
    cJSON_free(js);
    return big ? "params.inputResponses is larger than the gateway accepts (MCPQ_INPUT_MAX_BYTES)"
               : NULL;
}

int ing_mrtr_retry_check(ing_mcp_t *m, const rpc_msg_t *msg, ing_mrtr_retry_t *r, ing_resp_t *resp)
{
    ing_ctx_t *ctx = m->req->ctx;
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(msg->params, "requestState");
    const cJSON *ir = cJSON_GetObjectItemCaseSensitive(msg->params, "inputResponses");
    if (!m->modern || (!st && !ir)) /* older eras have no such params: ignored */
        return 0;
    const char *problem = responses_problem(ir, ctx->set->input_max_bytes);
    if (!problem && !st)
        problem = "params.inputResponses needs the params.requestState of the InputRequiredResult "
                  "it answers";
    if (!problem && !cJSON_IsString(st))
        problem = "params.requestState must be the string the InputRequiredResult gave";
    if (problem) {
        bad_params(resp, msg->id, problem);
        return 1;
    }
    memset(r, 0, sizeof(*r));
    r->responses = ir;
    ing_rstate_claims_t *c = &r->claims;
    char owner[ING_OWNER_MAX], why[128] = "";
    ing_answer_who_t who = caller(m, owner);
    c->tenant = who.tenant;
    c->owner = who.owner;
    c->session = who.session;
    c->method = msg->method;
    int rc = ing_rstate_digest(msg->method, msg->params, c->digest);
    if (rc == 0)
        rc = ing_rstate_check(ctx->rstate, st->valuestring, util_now_ms(), c, r->job, why,
                              sizeof(why));
    c->owner = NULL; /* owner is this function's: the caller has no use for it */
    if (rc == MCPQ_EINVAL) {
        log_event(LOG_INFO, "requestState refused", "why", why, (char *)NULL);
        bad_params(resp, msg->id, ING_MRTR_BAD_STATE);
        return 1;
    }
    if (rc < 0) {
        unavailable(resp, msg->id, "requestState key");
        return 1;
    }
    return 2;
}

/* The answers the responses give to the question's open requests (unknown keys and keys
 * answered already are ignored, as the specification says): a new object. */
static cJSON *answers_for(const cJSON *responses, const cJSON *open)
{
    cJSON *answers = cJSON_CreateObject();
    const cJSON *v;
    cJSON_ArrayForEach(v, responses)
    {
        if (!cJSON_GetObjectItemCaseSensitive(open, v->string))
            continue;
        cJSON *a = cJSON_CreateObject();
        cJSON_AddItemToObject(a, "result", cJSON_Duplicate(v, 1));
        cJSON_AddItemToObject(answers, v->string, a);
    }
    return answers;
}

/* Submits r's responses as the caller of m for job's question; reply_to moves the job's
 * later entries here. The ing_answer_submit code; *open_out the requests still open. */
static int submit(ing_mcp_t *m, const ing_mrtr_retry_t *r, cJSON **open_out, char *err,
                  size_t err_size)
{
    ing_ctx_t *ctx = m->req->ctx;
    char owner[ING_OWNER_MAX];
    ing_answer_who_t who = caller(m, owner);
    /* First the question's open requests (nothing stored), so responses to other keys can be
     * left out; then the answers, with this replica's stream as reply_to. */
    cJSON *none = cJSON_CreateObject(), *open = NULL;
    int rc =
        ing_answer_submit(ctx->kv, r->job, r->claims.n, &who, none, NULL, &open, err, err_size);
    cJSON_Delete(none);
    if (rc != ING_ANSWER_OK) {
        cJSON_Delete(open);
        return rc;
    }
    cJSON *answers = answers_for(r->responses, open);
    cJSON_Delete(open);
    rc = ing_answer_submit(ctx->kv, r->job, r->claims.n, &who, answers, ctx->reply_key, open_out,
                           err, err_size);
    cJSON_Delete(answers);
    return rc;
}

/* Answers the retry with a new InputRequiredResult for the requests still open. */
static void ask_again(ing_mcp_t *m, const rpc_msg_t *msg, const ing_mrtr_retry_t *r, cJSON *open,
                      ing_resp_t *resp)
{
    char owner[ING_OWNER_MAX], state[ING_RSTATE_MAX];
    ing_rstate_claims_t c = r->claims;
    c.owner = caller(m, owner).owner;
    c.job_id = r->job;
    if (ing_rstate_make(m->req->ctx->rstate, &c, state, sizeof(state)) < 0) {
        cJSON_Delete(open);
        unavailable(resp, msg->id, "requestState key");
        return;
    }
    ing_mcpreq_resp_result_obj(m, resp, msg->id, input_required(open, state));
}

int ing_mrtr_retry_run(ing_mcp_t *m, const rpc_msg_t *msg, ing_call_t *call,
                       const ing_mrtr_retry_t *r, ing_resp_t *resp)
{
    /* In the table before the answers reach the worker, so its result cannot come first; the
     * question it answers is never handed to it again (the reader may still be handing it to
     * the calls of the job: the first call's InputRequiredResult). */
    call->input_n = r->claims.n;
    if (ing_mcpreq_enqueue(m, call) < 0) {
        ing_mcpreq_resp_error(resp, 200, msg->id, RPC_INTERNAL_ERROR, "internal error; try again",
                              NULL);
        return 0;
    }
    char err[512] = "";
    cJSON *open = NULL;
    int rc = submit(m, r, &open, err, sizeof(err));
    if (rc == ING_ANSWER_OK && cJSON_GetArraySize(open) == 0) {
        cJSON_Delete(open);
        log_event(LOG_INFO, "retry resumed its job", "job_id", r->job, (char *)NULL);
        return ing_mcpreq_park(m, call);
    }
    ing_mcpreq_dequeue(m, call);
    if (rc == ING_ANSWER_OK) { /* the specification's SHOULD: ask again for what is missing */
        ask_again(m, msg, r, open, resp);
        return 0;
    }
    cJSON_Delete(open);
    if (rc == ING_ANSWER_GONE)
        input_lost(resp, msg->id);
    else if (rc == ING_ANSWER_INVALID) /* the question stays open: the client may retry */
        bad_params(resp, msg->id, err);
    else
        unavailable(resp, msg->id, "answer store");
    return 0;
}

int ing_mrtr_task_update(ing_mcp_t *m, const rpc_msg_t *msg, const ing_tasks_t *t, ing_resp_t *resp)
{
    ing_ctx_t *ctx = m->req->ctx;
    const cJSON *ir = cJSON_GetObjectItemCaseSensitive(msg->params, "inputResponses");
    const char *problem = responses_problem(ir, ctx->set->input_max_bytes);
    if (problem) {
        bad_params(resp, msg->id, problem);
        return 1;
    }
    const char *input = ing_tasks_field(t, "input");
    cJSON *open = *input ? cJSON_Parse(input) : NULL;
    cJSON *answers = answers_for(ir, open);
    cJSON_Delete(open);
    if (cJSON_GetArraySize(answers) == 0) { /* nothing outstanding answered: acknowledged */
        cJSON_Delete(answers);
        return 0;
    }
    char owner[ING_OWNER_MAX], err[512] = "";
    ing_answer_who_t who = caller(m, owner);
    long long n = strtoll(ing_tasks_field(t, "input_n"), NULL, 10);
    int rc = ing_answer_submit(ctx->kv, ing_tasks_field(t, "id"), n > 0 ? n : 0, &who, answers,
                               NULL, NULL, err, sizeof(err));
    cJSON_Delete(answers);
    if (rc == ING_ANSWER_INVALID) {
        bad_params(resp, msg->id, err);
        return 1;
    }
    if (rc < 0) {
        unavailable(resp, msg->id, "answer store");
        return 1;
    }
    return 0; /* stored, or the question ended meanwhile: nothing outstanding */
}
