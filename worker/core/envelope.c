#include "envelope.h"

#include "err.h"
#include "jv.h"
#include "log.h"
#include "utf8.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define MAX_SAFE_INT 9007199254740991.0 /* 2^53 - 1: JSON numbers above lose precision */

/* 1..max of [A-Za-z0-9_.:-]. */
static int id_chars_valid(const char *s, size_t max)
{
    return util_id_ok(s, strnlen(s, max + 1), max, ".:");
}

int wrk_envelope_method(const char *s, kinds_method_t *out)
{
    int m = s ? kinds_method(s) : KINDS_METHOD_CALL;
    if (m < 0)
        return MCPQ_EINVAL;
    *out = (kinds_method_t)m;
    return 0;
}

int wrk_envelope_id_valid(const char *s)
{
    return s && id_chars_valid(s, WRK_ID_MAX);
}

static int reply_valid(const char *s)
{
    size_t pl = strlen(WRK_REPLY_PREFIX);
    return strncmp(s, WRK_REPLY_PREFIX, pl) == 0 && strlen(s) <= WRK_REPLY_MAX &&
           id_chars_valid(s + pl, WRK_REPLY_MAX);
}

/* A printable name of 1..WRK_NAME_MAX bytes (UTF-8 was checked on the whole record). */
static int name_valid(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > WRK_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return 0;
    return 1;
}

/* W3C trace context version 00 shape: 2-32-16-2 lowercase hex digits. */
static int traceparent_valid(const char *s)
{
    static const int parts[] = {2, 32, 16, 2};
    for (int p = 0; p < 4; p++) {
        for (int i = 0; i < parts[p]; i++, s++)
            if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
                return 0;
        if (p < 3 && *s++ != '-')
            return 0;
    }
    return *s == '\0';
}

static const char *get_string(const cJSON *obj, const char *name, int *bad)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (!it || cJSON_IsNull(it))
        return NULL;
    if (!cJSON_IsString(it)) {
        *bad = 1;
        return NULL;
    }
    return it->valuestring;
}

/* An optional non-negative integer member; 0 when absent; -1 when not one. */
static int get_int(const cJSON *obj, const char *name, int64_t *out)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, name);
    *out = 0;
    if (!it || cJSON_IsNull(it))
        return 0;
    if (!cJSON_IsNumber(it))
        return -1;
    double d = it->valuedouble;
    if (!isfinite(d) || d < 0 || d > MAX_SAFE_INT || d != floor(d))
        return -1;
    *out = (int64_t)d;
    return 0;
}

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        snprintf(errstr, errstr_size, __VA_ARGS__);                                                \
        return MCPQ_EINVAL;                                                                        \
    } while (0)

/* The record as a JSON object in env->root: UTF-8, one JSON document, no trailing bytes. */
static int parse_document(wrk_envelope_t *env, const char *buf, size_t len, char *errstr,
                          size_t errstr_size)
{
    if (!buf || len == 0)
        FAIL("empty record");
    if (!wrk_utf8_valid(buf, len))
        FAIL("record is not UTF-8 text");
    const char *end = NULL;
    env->root = cJSON_ParseWithLengthOpts(buf, len, &end, 0);
    if (!env->root)
        FAIL("record is not JSON");
    for (; end < buf + len; end++)
        if (*end != ' ' && *end != '\t' && *end != '\n' && *end != '\r')
            FAIL("trailing bytes after the JSON document");
    if (!cJSON_IsObject(env->root))
        FAIL("record is not a JSON object");
    return 0;
}

/* job_id and reply_to, the two fields needed to answer anyone (set when valid even if the
 * parse fails later), then the version. */
static int parse_answer_to(wrk_envelope_t *env, char *errstr, size_t errstr_size)
{
    const cJSON *root = env->root;
    int bad = 0;
    const char *id = get_string(root, "job_id", &bad);
    if (id && wrk_envelope_id_valid(id))
        env->job_id = id;
    const char *reply = get_string(root, "reply_to", &bad);
    if (reply && reply_valid(reply))
        env->reply_to = reply;
    if (!env->job_id)
        FAIL("job_id missing or not 1..%d characters of [A-Za-z0-9_.:-]", WRK_ID_MAX);
    if (bad || (reply && !env->reply_to))
        FAIL("reply_to is not a stream key under %s", WRK_REPLY_PREFIX);

    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "v");
    if (!cJSON_IsNumber(v) || v->valuedouble != 1.0)
        FAIL("unsupported envelope version (want \"v\": 1)");
    return 0;
}

/* "client": what the caller can be asked (an object whose capabilities, when present, are
 * objects); absent leaves env->client NULL. */
static int parse_client(wrk_envelope_t *env, char *errstr, size_t errstr_size)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(env->root, "client");
    if (!c || cJSON_IsNull(c))
        return 0;
    if (!cJSON_IsObject(c))
        FAIL("client is not an object");
    const cJSON *pv = cJSON_GetObjectItemCaseSensitive(c, "protocol_version");
    if (pv && !cJSON_IsString(pv))
        FAIL("client.protocol_version is not a string");
    const cJSON *caps = cJSON_GetObjectItemCaseSensitive(c, "capabilities");
    if (caps && !cJSON_IsObject(caps))
        FAIL("client.capabilities is not an object");
    for (const cJSON *it = caps ? caps->child : NULL; it; it = it->next)
        if (!cJSON_IsObject(it))
            FAIL("client.capabilities.%.32s is not an object", it->string);
    env->client = c;
    return 0;
}

/* tenant, tool, tool_version, mode, task_id, traceparent, request_id, owner, session_id and
 * client. */
static int parse_strings(wrk_envelope_t *env, char *errstr, size_t errstr_size)
{
    const cJSON *root = env->root;
    int bad = 0;
    env->tenant = get_string(root, "tenant", &bad);
    if (bad || !env->tenant || !name_valid(env->tenant))
        FAIL("tenant missing or invalid");
    env->tool = get_string(root, "tool", &bad);
    if (bad || !env->tool || !name_valid(env->tool))
        FAIL("tool missing or invalid");
    env->tool_version = get_string(root, "tool_version", &bad);
    if (bad)
        FAIL("tool_version is not a string");
    env->mode = get_string(root, "mode", &bad);
    if (bad)
        FAIL("mode is not a string");
    const char *tid = get_string(root, "task_id", &bad);
    if (bad)
        FAIL("task_id is not a string");
    if (tid && wrk_envelope_id_valid(tid))
        env->task_id = tid;
    const char *tp = get_string(root, "traceparent", &bad);
    if (bad)
        FAIL("traceparent is not a string");
    if (tp && traceparent_valid(tp))
        env->traceparent = tp;
    const char *rid = get_string(root, "request_id", &bad);
    if (bad)
        FAIL("request_id is not a string");
    env->request_id = log_request_id_valid(rid) ? rid : NULL;
    env->owner = get_string(root, "owner", &bad);
    if (bad || (env->owner && strlen(env->owner) > WRK_OWNER_MAX))
        FAIL("owner is not a string of at most %d bytes", WRK_OWNER_MAX);
    env->session_id = get_string(root, "session_id", &bad);
    if (bad || (env->session_id && strlen(env->session_id) > WRK_NAME_MAX))
        FAIL("session_id is not a string of at most %d bytes", WRK_NAME_MAX);
    return parse_client(env, errstr, errstr_size);
}

/* arguments, the executor object with its type, and the numbers. */
static int parse_job(wrk_envelope_t *env, char *errstr, size_t errstr_size)
{
    const cJSON *root = env->root;
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(root, "arguments");
    if (args && !cJSON_IsNull(args)) {
        if (!cJSON_IsObject(args))
            FAIL("arguments is not an object");
        env->arguments = args;
    }

    const cJSON *ex = cJSON_GetObjectItemCaseSensitive(root, "executor");
    if (!cJSON_IsObject(ex))
        FAIL("executor missing or not an object");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(ex, "type");
    if (!cJSON_IsString(type) || !name_valid(type->valuestring) || strlen(type->valuestring) > 32)
        FAIL("executor.type missing or invalid");
    env->executor = ex;
    env->exec_type = type->valuestring;

    if (get_int(root, "deadline_ms", &env->deadline_ms) < 0)
        FAIL("deadline_ms is not a non-negative integer");
    if (get_int(root, "created_ms", &env->created_ms) < 0)
        FAIL("created_ms is not a non-negative integer");
    if (get_int(root, "sent_us", &env->sent_us) < 0)
        FAIL("sent_us is not a non-negative integer");
    if (get_int(root, "timeout_ms", &env->timeout_ms) < 0)
        FAIL("timeout_ms is not a non-negative integer");
    if (get_int(root, "result_ttl_s", &env->result_ttl_s) < 0 || env->result_ttl_s > 30LL * 86400)
        FAIL("result_ttl_s is not an integer from 0 to 30 days");
    return 0;
}

/* method and mime_type, and what the method needs in arguments. */
static int parse_method(wrk_envelope_t *env, char *errstr, size_t errstr_size)
{
    int bad = 0;
    const char *m = get_string(env->root, "method", &bad);
    if (bad)
        FAIL("method is not a string");
    if (wrk_envelope_method(m, &env->method_id) < 0)
        FAIL("unknown method \"%.64s\" (this worker runs tools/call, resources/read, "
             "prompts/get, completion/complete, resources/subscribe, resources/unsubscribe "
             "and mcpq/catalog)",
             m);
    env->method = kinds_method_name(env->method_id);
    env->mime_type = get_string(env->root, "mime_type", &bad);
    if (bad)
        FAIL("mime_type is not a string");
    const cJSON *a = env->arguments;
    switch (env->method_id) {
    case KINDS_METHOD_READ:
    case KINDS_METHOD_SUBSCRIBE:
    case KINDS_METHOD_UNSUBSCRIBE:
        if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(a, "uri")))
            FAIL("%s needs a string arguments.uri", env->method);
        break;
    case KINDS_METHOD_PROMPT:
        if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(a, "name")))
            FAIL("prompts/get needs a string arguments.name");
        break;
    case KINDS_METHOD_COMPLETE:
        if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(a, "ref")) ||
            !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(a, "argument")))
            FAIL("completion/complete needs objects arguments.ref and arguments.argument");
        break;
    default:
        break;
    }
    return 0;
}

int wrk_envelope_parse(wrk_envelope_t *env, const char *buf, size_t len, char *errstr,
                       size_t errstr_size)
{
    memset(env, 0, sizeof(*env));
    int rc = parse_document(env, buf, len, errstr, errstr_size);
    if (rc == 0)
        rc = parse_answer_to(env, errstr, errstr_size);
    if (rc == 0)
        rc = parse_strings(env, errstr, errstr_size);
    if (rc == 0)
        rc = parse_job(env, errstr, errstr_size);
    if (rc == 0)
        rc = parse_method(env, errstr, errstr_size);
    return rc;
}

void wrk_envelope_cleanup(wrk_envelope_t *env)
{
    if (!env)
        return;
    cJSON_Delete(env->root);
    memset(env, 0, sizeof(*env));
}

char *wrk_envelope_for_executor(const wrk_envelope_t *env, size_t *len)
{
    cJSON *copy = cJSON_CreateObject();
    if (!copy)
        return NULL;
    char *out = NULL;
    for (const cJSON *it = env->root ? env->root->child : NULL; it; it = it->next) {
        if (it->string &&
            (strcmp(it->string, "executor") == 0 || strcmp(it->string, "traceparent") == 0))
            continue;
        /* References: the copy borrows the members and frees none of them; numbers are
         * printed from their digits (jv.h). */
        if (cJSON_IsNumber(it) ? !jv_add_number_ref(copy, it->string, it)
                               : !cJSON_AddItemReferenceToObject(copy, it->string, (cJSON *)it))
            goto out;
    }
    if (env->traceparent && !cJSON_AddStringToObject(copy, "traceparent", env->traceparent))
        goto out;
    out = cJSON_PrintUnformatted(copy);
    if (out)
        *len = strlen(out);
out:
    cJSON_Delete(copy);
    return out;
}
