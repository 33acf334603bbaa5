/*
 * mcpask.c - asking the client mid-call, the MCP layer's half (mcpask.h).
 */
#include "mcpask.h"

#include "answer.h"
#include "era.h"
#include "err.h"
#include "log.h"
#include "owner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RELATED_TASK "io.modelcontextprotocol/related-task"

cJSON *ing_mcpask_caps(const cJSON *caps)
{
    static const char *const kept[] = {"elicitation", "sampling", "roots"};
    cJSON *out = cJSON_CreateObject();
    for (size_t i = 0; out && i < sizeof(kept) / sizeof(kept[0]); i++) {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(caps, kept[i]);
        if (cJSON_IsObject(c))
            cJSON_AddItemToObject(out, kept[i], cJSON_Duplicate(c, 1));
    }
    char *js = out ? cJSON_PrintUnformatted(out) : NULL;
    if (js && strlen(js) > ING_MCPASK_CAPS_MAX) { /* declared, without the details */
        cJSON *c;
        cJSON_ArrayForEach(c, out)
        {
            cJSON_Delete(c->child);
            c->child = NULL;
        }
    }
    cJSON_free(js);
    return out;
}

cJSON *ing_mcpask_envelope_client(const ing_mcp_t *m, const rpc_msg_t *msg)
{
    cJSON *caps;
    if (m->modern) {
        caps = ing_mcpask_caps(
            cJSON_GetObjectItemCaseSensitive(ing_era_meta(msg), ING_MCPASK_META_CAPS));
    } else {
        cJSON *kept = m->has_session && m->session.caps[0] ? cJSON_Parse(m->session.caps) : NULL;
        caps = ing_mcpask_caps(kept);
        cJSON_Delete(kept);
    }
    cJSON *client = caps ? cJSON_CreateObject() : NULL;
    if (!client) {
        cJSON_Delete(caps);
        return NULL;
    }
    const char *v = m->has_session && m->session.version[0] ? m->session.version : m->version;
    cJSON_AddStringToObject(client, "protocol_version", v ? v : "");
    cJSON_AddItemToObject(client, "capabilities", caps);
    return client;
}

ing_input_t ing_mcpask_hook_legacy(ing_call_t *call, const char *job_id, const cJSON *data,
                                   cJSON **msgs)
{
    *msgs = NULL;
    const ing_call_t *owner = call->group ? call->group : call;
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(data, "n");
    const cJSON *reqs = cJSON_GetObjectItemCaseSensitive(data, "requests");
    if (!owner->sse_ok || !cJSON_IsNumber(n) || !cJSON_IsObject(reqs))
        return ING_INPUT_UNREACHABLE;
    cJSON *arr = cJSON_CreateArray();
    const cJSON *r;
    cJSON_ArrayForEach(r, reqs)
    {
        const char *method = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "method"));
        const cJSON *params = cJSON_GetObjectItemCaseSensitive(r, "params");
        char id[ING_JOB_ID_LEN + 120];
        snprintf(id, sizeof(id), ING_MCPASK_ID_PREFIX "%lld/%.64s/%s", (long long)n->valuedouble,
                 r->string, job_id);
        cJSON *req = cJSON_CreateObject();
        cJSON_AddStringToObject(req, "jsonrpc", "2.0");
        cJSON_AddStringToObject(req, "id", id);
        cJSON_AddStringToObject(req, "method", method ? method : "");
        cJSON *p = cJSON_IsObject(params) ? cJSON_Duplicate(params, 1) : cJSON_CreateObject();
        if (call->task_result) { /* 2025-11-25 tasks: the request belongs to the task */
            cJSON *meta = cJSON_GetObjectItemCaseSensitive(p, "_meta");
            if (!cJSON_IsObject(meta)) {
                cJSON_DeleteItemFromObjectCaseSensitive(p, "_meta");
                meta = cJSON_AddObjectToObject(p, "_meta");
            }
            cJSON_DeleteItemFromObjectCaseSensitive(meta, RELATED_TASK);
            cJSON_AddStringToObject(cJSON_AddObjectToObject(meta, RELATED_TASK), "taskId", job_id);
        }
        cJSON_AddItemToObject(req, "params", p);
        cJSON_AddItemToArray(arr, req);
    }
    *msgs = arr;
    return ING_INPUT_POST;
}

int ing_mcpask_is_answer(const cJSON *id)
{
    return cJSON_IsString(id) &&
           strncmp(id->valuestring, ING_MCPASK_ID_PREFIX, strlen(ING_MCPASK_ID_PREFIX)) == 0;
}

/* "mcpq-in/<n>/<key>/<job_id>" into its parts. 0, or -1 when it is not one of ours. */
static int parse_id(const char *id, long long *n, char *key, size_t key_size, char *job_id,
                    size_t job_size)
{
    const char *s = id + strlen(ING_MCPASK_ID_PREFIX);
    char *end;
    *n = strtoll(s, &end, 10);
    if (end == s || *end != '/' || *n < 1)
        return -1;
    s = end + 1;
    const char *slash = strchr(s, '/');
    size_t klen = slash ? (size_t)(slash - s) : 0;
    if (!slash || klen == 0 || klen >= key_size || klen > 64 || !slash[1] ||
        strlen(slash + 1) >= job_size)
        return -1;
    for (size_t i = 0; i < klen; i++) {
        char c = s[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-'))
            return -1;
    }
    memcpy(key, s, klen);
    key[klen] = '\0';
    snprintf(job_id, job_size, "%s", slash + 1);
    return 0;
}

/* The answer a JSON-RPC response gives: {"result"} or {"error": {code, message[, data]}}. */
static cJSON *answer_of(const cJSON *item)
{
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(item, "result");
    if (res) {
        cJSON *a = cJSON_CreateObject();
        cJSON_AddItemToObject(a, "result", cJSON_Duplicate(res, 1));
        return a;
    }
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(item, "error");
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(err, "code");
    const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(err, "message"));
    cJSON *a = ing_answer_error(cJSON_IsNumber(code) ? (int)code->valuedouble : -32603,
                                msg ? msg : "the client answered with an error");
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(err, "data");
    if (a && data)
        cJSON_AddItemToObject(cJSON_GetObjectItemCaseSensitive(a, "error"), "data",
                              cJSON_Duplicate(data, 1));
    return a;
}

/* The outcome of one response (its why filled otherwise). */
typedef enum { ONE_OK = 0, ONE_GONE, ONE_INVALID, ONE_UNAVAIL } one_t;

static one_t submit_one(ing_mcp_t *m, const cJSON *item, char *why, size_t why_size)
{
    long long n;
    char key[80], job_id[ING_JOB_ID_LEN], owner[ING_OWNER_MAX] = "";
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(item, "id");
    if (parse_id(id->valuestring, &n, key, sizeof(key), job_id, sizeof(job_id)) < 0) {
        snprintf(why, why_size, "no question of this gateway has the id %.80s", id->valuestring);
        return ONE_GONE;
    }
    (void)ing_owner_of(m->who, owner, sizeof(owner)); /* "" when none: as the call recorded */
    ing_answer_who_t who = {.tenant = m->tenant->id,
                            .owner = owner,
                            .session = ing_req_header(m->req, "Mcp-Session-Id")};
    cJSON *answers = cJSON_CreateObject();
    cJSON_AddItemToObject(answers, key, answer_of(item));
    kv_pool_t *kv = m->req->ctx->kv;
    int rc = ing_answer_submit(kv, job_id, n, &who, answers, NULL, NULL, why, why_size);
    if (rc == ING_ANSWER_INVALID && strstr(why, "no request ") == why) {
        rc = ING_ANSWER_GONE; /* a key the question does not have: no such request */
    } else if (rc == ING_ANSWER_INVALID) {
        /* The tool is told instead of waiting for an answer the client will not correct. */
        char ignored[128];
        cJSON_Delete(answers);
        answers = cJSON_CreateObject();
        cJSON_AddItemToObject(answers, key, ing_answer_error(ING_ANSWER_SCHEMA_CODE, why));
        if (ing_answer_submit(kv, job_id, n, &who, answers, NULL, NULL, ignored, sizeof(ignored)) <
            0)
            log_event(LOG_WARN, "could not give the tool its invalid answer's error", "job_id",
                      job_id, (char *)NULL);
    }
    cJSON_Delete(answers);
    log_event(rc == ING_ANSWER_OK ? LOG_INFO : LOG_WARN, "client answer", "job_id", job_id, "key",
              key, "outcome",
              rc == ING_ANSWER_OK        ? "taken"
              : rc == ING_ANSWER_GONE    ? "gone"
              : rc == ING_ANSWER_INVALID ? "invalid"
                                         : "redis unavailable",
              (char *)NULL);
    if (rc == ING_ANSWER_GONE)
        snprintf(why, why_size,
                 "no open question matches this response (it was answered, its call ended, or "
                 "its worker stopped while it waited for your answer; call the tool again)");
    return rc == ING_ANSWER_OK        ? ONE_OK
           : rc == ING_ANSWER_GONE    ? ONE_GONE
           : rc == ING_ANSWER_INVALID ? ONE_INVALID
                                      : ONE_UNAVAIL;
}

/* 1 when item is a response to one of mcpq's requests. */
static int is_ours(const cJSON *item)
{
    rpc_msg_t msg;
    rpc_classify(item, &msg);
    return msg.kind == RPC_RESPONSE && ing_mcpask_is_answer(msg.id);
}

void ing_mcpask_answer_one(ing_mcp_t *m, const cJSON *item)
{
    char why[512];
    if (is_ours(item))
        (void)submit_one(m, item, why, sizeof(why));
}

void ing_mcpask_post(ing_mcp_t *m, const cJSON *root, ing_resp_t *resp)
{
    const mcpq_settings_t *set = m->req->ctx->set;
    if ((long long)m->req->body.len > set->input_max_bytes) {
        char buf[120];
        snprintf(buf, sizeof(buf), "an answer is at most %lld bytes (MCPQ_INPUT_MAX_BYTES)",
                 set->input_max_bytes);
        ing_mcpreq_resp_error(resp, 413, NULL, RPC_INVALID_REQUEST, buf, NULL);
        return;
    }
    one_t worst = ONE_OK;
    char why[512] = "", first[512] = "";
    const cJSON *item;
    int one = !cJSON_IsArray(root);
    for (item = one ? root : root->child; item; item = one ? NULL : item->next) {
        if (!is_ours(item))
            continue; /* another response: accepted, as before */
        one_t o = submit_one(m, item, why, sizeof(why));
        if (o > worst) {
            worst = o;
            snprintf(first, sizeof(first), "%s", why);
        }
    }
    if (worst == ONE_OK) {
        resp->status = 202;
        return;
    }
    if (worst == ONE_UNAVAIL) {
        ing_mcpreq_resp_error(resp, 503, NULL, RPC_INTERNAL_ERROR,
                              "answer store (Redis) unavailable; try again", NULL);
        resp->retry_after_s = 1;
        return;
    }
    cJSON *data = cJSON_CreateObject();
    cJSON_AddStringToObject(data, "reason", worst == ONE_GONE ? "input_lost" : "invalid_answer");
    ing_mcpreq_resp_error(resp, 400, NULL,
                          worst == ONE_GONE ? RPC_INTERNAL_ERROR : ING_ANSWER_SCHEMA_CODE, first,
                          data);
    cJSON_Delete(data);
}
