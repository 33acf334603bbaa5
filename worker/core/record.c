#include "record.h"

#include "jv.h"
#include "utf8.h"

#include <stdlib.h>
#include <string.h>

const char *wrk_record_status_name(wrk_status_t status)
{
    switch (status) {
    case WRK_STATUS_OK:
        return "ok";
    case WRK_STATUS_TIMEOUT:
        return "timeout";
    default:
        return "error";
    }
}

char *wrk_record_build(const wrk_record_t *r, size_t *len)
{
    char *out = NULL;
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    int ok = jv_add_int(o, "v", 1) && cJSON_AddStringToObject(o, "job_id", r->job_id) &&
             cJSON_AddStringToObject(o, "tenant", r->tenant ? r->tenant : "") &&
             cJSON_AddStringToObject(o, "tool", r->tool ? r->tool : "") &&
             cJSON_AddStringToObject(o, "status", wrk_record_status_name(r->status));
    if (ok && r->status == WRK_STATUS_OK && r->result) {
        /* A reference: the record borrows the result and does not free it. */
        ok = cJSON_AddItemReferenceToObject(o, "result", (cJSON *)r->result);
    } else if (ok) {
        cJSON *err = cJSON_AddObjectToObject(o, "error");
        ok = err && jv_add_int(err, "code", r->err_code) &&
             cJSON_AddStringToObject(err, "message", r->err_msg ? r->err_msg : "");
        if (ok && r->err_reason) {
            cJSON *data = cJSON_AddObjectToObject(err, "data");
            ok = data && cJSON_AddStringToObject(data, "reason", r->err_reason);
        }
    }
    ok = ok && cJSON_AddStringToObject(o, "worker", r->worker ? r->worker : "") &&
         jv_add_int(o, "attempt", r->attempt > 0 ? r->attempt : 1) &&
         jv_add_int(o, "started_ms", r->started_ms) && jv_add_int(o, "finished_ms", r->finished_ms);
    if (ok && r->finished_us > 0)
        ok = jv_add_int(o, "finished_us", r->finished_us) != NULL;
    if (ok && r->picked_us > 0)
        ok = jv_add_int(o, "picked_us", r->picked_us) != NULL;
    if (ok && r->exec_us > 0)
        ok = jv_add_int(o, "exec_us", r->exec_us) != NULL;
    if (ok && r->never_ran)
        ok = cJSON_AddFalseToObject(o, "ran") != NULL;
    if (ok)
        out = cJSON_PrintUnformatted(o);
    if (out)
        *len = strlen(out);
    cJSON_Delete(o);
    return out;
}

char *wrk_record_cancelled(const char *value, size_t value_len, size_t *len)
{
    char *reason = NULL, *out = NULL;
    cJSON *o = NULL;
    const char *end = NULL;
    /* A value far larger than any reason is not parsed at all. */
    cJSON *v = value && value_len <= 64 * WRK_CANCEL_REASON_MAX
                   ? cJSON_ParseWithLengthOpts(value, value_len, &end, 0)
                   : NULL;
    for (; v && end < value + value_len; end++) {
        if (*end != ' ' && *end != '\t' && *end != '\n' && *end != '\r') {
            cJSON_Delete(v); /* trailing bytes: not a JSON document */
            v = NULL;
        }
    }
    const cJSON *r = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, "reason") : NULL;
    if (cJSON_IsString(r) && r->valuestring[0]) {
        size_t n = strlen(r->valuestring);
        reason = wrk_utf8_sanitize(r->valuestring, n);
        if (!reason)
            goto out;
        n = strlen(reason);
        reason[wrk_utf8_cut(reason, n, WRK_CANCEL_REASON_MAX)] = '\0';
    }
    o = cJSON_CreateObject();
    if (o && cJSON_AddStringToObject(o, "reason", reason ? reason : WRK_CANCEL_REASON_DEFAULT))
        out = cJSON_PrintUnformatted(o);
    if (out)
        *len = strlen(out);
out:
    cJSON_Delete(o);
    free(reason);
    cJSON_Delete(v);
    return out;
}
