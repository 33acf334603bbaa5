/*
 * answer.c - the client's answers to a job's open question (answer.h).
 */
#include "answer.h"
#include "names.h"
#include "rscript.h"
#include "sch.h"

#include "err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ANSWER_MAX_KEYS 64 /* requests one answer may carry (a question has no more) */

cJSON *ing_answer_error(int code, const char *message)
{
    cJSON *a = cJSON_CreateObject();
    cJSON *e = cJSON_AddObjectToObject(a, "error");
    cJSON_AddNumberToObject(e, "code", code);
    cJSON_AddStringToObject(e, "message", message);
    return a;
}

/* The question's fields: n reqs tenant owner session (a reply of HMGET). */
typedef struct {
    long long n;
    cJSON *reqs;
    const char *tenant, *owner, *session;
} question_t;

/* 1 when who may answer q (answer.h: tenant, owner, and the session when q has one). */
static int who_may(const question_t *q, const ing_answer_who_t *who)
{
    if (!who)
        return 1;
    if (!who->tenant || strcmp(q->tenant, who->tenant) != 0 ||
        strcmp(q->owner, who->owner ? who->owner : "") != 0)
        return 0;
    return !q->session[0] || (who->session && strcmp(q->session, who->session) == 0);
}

/* One answer's shape and, for an accepted elicitation, its content against the request's
 * requestedSchema. 0, or -1 with errstr filled. */
static int answer_check(const cJSON *req, const char *key, const cJSON *a, char *errstr,
                        size_t errstr_size)
{
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(a, "result");
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(a, "error");
    if (!cJSON_IsObject(a) || !!res == !!err) {
        snprintf(errstr, errstr_size,
                 "answer %.64s: expected an object with either \"result\" or \"error\"", key);
        return -1;
    }
    if (err) {
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(err, "code");
        if (!cJSON_IsNumber(code) || code->valuedouble != (double)(int)code->valuedouble ||
            !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(err, "message"))) {
            snprintf(errstr, errstr_size,
                     "answer %.64s: error must hold an integer code and a string message", key);
            return -1;
        }
        return 0;
    }
    if (!cJSON_IsObject(res)) {
        snprintf(errstr, errstr_size, "answer %.64s: result must be an object", key);
        return -1;
    }
    const char *method = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "method"));
    const char *action = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(res, "action"));
    if (!method || strcmp(method, "elicitation/create") != 0 || !action ||
        strcmp(action, "accept") != 0)
        return 0;
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(req, "params");
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(params, "requestedSchema");
    if (!schema) /* a URL-mode elicitation: nothing to validate */
        return 0;
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(res, "content");
    cJSON *empty = content ? NULL : cJSON_CreateObject();
    char why[400];
    int rc = sch_validate(schema, content ? content : empty, "content", why, sizeof(why));
    cJSON_Delete(empty);
    if (rc < 0) {
        snprintf(errstr, errstr_size, ING_ANSWER_SCHEMA_MSG "%s", why);
        return -1;
    }
    return 0;
}

/* Reads the question of job_id into q (r keeps its strings). 1 found, 0 gone, or
 * MCPQ_EUNAVAIL. */
static int question_read(kv_pool_t *kv, const char *job_id, redisReply **r, question_t *q,
                         char *errstr, size_t errstr_size)
{
    *r = kv_pool_command(kv, errstr, errstr_size,
                         "HMGET " NAMES_KEY_ASK "%s n reqs tenant owner session", job_id);
    if (!*r)
        return MCPQ_EUNAVAIL;
    if ((*r)->type != REDIS_REPLY_ARRAY || (*r)->elements != 5)
        return 0;
    redisReply **e = (*r)->element;
    for (int i = 0; i < 2; i++)
        if (e[i]->type != REDIS_REPLY_STRING)
            return 0;
    char *end;
    q->n = strtoll(e[0]->str, &end, 10);
    q->reqs = cJSON_ParseWithLength(e[1]->str, e[1]->len);
    q->tenant = e[2]->type == REDIS_REPLY_STRING ? e[2]->str : "";
    q->owner = e[3]->type == REDIS_REPLY_STRING ? e[3]->str : "";
    q->session = e[4]->type == REDIS_REPLY_STRING ? e[4]->str : "";
    return *end == '\0' && q->n > 0 && cJSON_IsObject(q->reqs);
}

/* The requests of reqs named by the script's reply {1, key...} (a new object). */
static cJSON *open_of(const cJSON *reqs, const redisReply *r)
{
    cJSON *open = cJSON_CreateObject();
    for (size_t i = 1; open && i < r->elements; i++) {
        const cJSON *req = r->element[i]->type == REDIS_REPLY_STRING
                               ? cJSON_GetObjectItemCaseSensitive(reqs, r->element[i]->str)
                               : NULL;
        if (req)
            cJSON_AddItemToObject(open, r->element[i]->str, cJSON_Duplicate(req, 1));
    }
    return open;
}

/* Runs answer_submit.lua. Returns an ing_answer_rc_t or MCPQ_E*. */
static int store(kv_pool_t *kv, const char *job_id, const question_t *q,
                 const ing_answer_who_t *who, const cJSON *answers, const char *reply_to,
                 cJSON **open_out, char *errstr, size_t errstr_size)
{
    const char *argv[8 + 2 * ANSWER_MAX_KEYS];
    char *bodies[ANSWER_MAX_KEYS] = {0};
    char key[200], n[24];
    int argc = 0, nb = 0, rc = MCPQ_ENOMEM;
    snprintf(key, sizeof(key), NAMES_KEY_ASK "%s", job_id);
    snprintf(n, sizeof(n), "%lld", q->n);
    argv[argc++] = key;
    argv[argc++] = n;
    argv[argc++] = who ? "1" : "0";
    argv[argc++] = who && who->tenant ? who->tenant : "";
    argv[argc++] = who && who->owner ? who->owner : "";
    argv[argc++] = who && who->session ? who->session : "";
    argv[argc++] = reply_to ? reply_to : "";
    argv[argc++] = job_id;
    const cJSON *a;
    cJSON_ArrayForEach(a, answers)
    {
        if (!(bodies[nb] = cJSON_PrintUnformatted(a)))
            goto out;
        argv[argc++] = a->string;
        argv[argc++] = bodies[nb++];
    }
    redisReply *r = rscript_pool_run(kv, rscript_get("answer_submit"), 1, argc, argv, NULL, errstr,
                                     errstr_size);
    if (!r) {
        rc = MCPQ_EUNAVAIL;
        goto out;
    }
    if (r->type == REDIS_REPLY_INTEGER) {
        rc = ING_ANSWER_GONE;
    } else if (r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
               r->element[0]->type == REDIS_REPLY_INTEGER && r->element[0]->integer == 1) {
        rc = ING_ANSWER_OK;
        if (open_out && !(*open_out = open_of(q->reqs, r)))
            rc = MCPQ_ENOMEM;
    } else if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
               r->element[1]->type == REDIS_REPLY_STRING) {
        snprintf(errstr, errstr_size, "no request %.64s in the question", r->element[1]->str);
        rc = ING_ANSWER_INVALID;
    } else {
        snprintf(errstr, errstr_size, "answer_submit: unexpected reply");
        rc = MCPQ_EUNAVAIL;
    }
    freeReplyObject(r);
out:
    for (int i = 0; i < nb; i++)
        cJSON_free(bodies[i]);
    if (rc == MCPQ_ENOMEM)
        snprintf(errstr, errstr_size, "out of memory");
    return rc;
}

int ing_answer_submit(kv_pool_t *kv, const char *job_id, long long n, const ing_answer_who_t *who,
                      const cJSON *answers, const char *reply_to, cJSON **open_out, char *errstr,
                      size_t errstr_size)
{
    if (open_out)
        *open_out = NULL;
    if (!cJSON_IsObject(answers) || cJSON_GetArraySize(answers) > ANSWER_MAX_KEYS) {
        snprintf(errstr, errstr_size, "answers must be an object of at most %d requests",
                 ANSWER_MAX_KEYS);
        return ING_ANSWER_INVALID;
    }
    redisReply *r = NULL;
    question_t q = {0};
    int rc = question_read(kv, job_id, &r, &q, errstr, errstr_size);
    if (rc < 0)
        goto out;
    if (rc == 0 || (n > 0 && q.n != n) || !who_may(&q, who)) {
        snprintf(errstr, errstr_size, "the question is gone");
        rc = ING_ANSWER_GONE;
        goto out;
    }
    const cJSON *a;
    cJSON_ArrayForEach(a, answers)
    {
        const cJSON *req = cJSON_GetObjectItemCaseSensitive(q.reqs, a->string);
        if (!req) {
            snprintf(errstr, errstr_size, "no request %.64s in the question", a->string);
            rc = ING_ANSWER_INVALID;
            goto out;
        }
        if (answer_check(req, a->string, a, errstr, errstr_size) < 0) {
            rc = ING_ANSWER_INVALID;
            goto out;
        }
    }
    rc = store(kv, job_id, &q, who, answers, reply_to, open_out, errstr, errstr_size);
out:
    cJSON_Delete(q.reqs);
    if (r)
        freeReplyObject(r);
    return rc;
}
