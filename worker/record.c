#include "record.h"

#include <string.h>

const char *wrk_status_name(wrk_status_t status)
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
    int ok = cJSON_AddNumberToObject(o, "v", 1) &&
             cJSON_AddStringToObject(o, "job_id", r->job_id) &&
             cJSON_AddStringToObject(o, "tenant", r->tenant ? r->tenant : "") &&
             cJSON_AddStringToObject(o, "tool", r->tool ? r->tool : "") &&
             cJSON_AddStringToObject(o, "status", wrk_status_name(r->status));
    if (ok && r->status == WRK_STATUS_OK && r->result) {
        /* A reference: the record borrows the result and does not free it. */
        ok = cJSON_AddItemReferenceToObject(o, "result", (cJSON *)r->result);
    } else if (ok) {
        cJSON *err = cJSON_AddObjectToObject(o, "error");
        ok = err && cJSON_AddNumberToObject(err, "code", r->err_code) &&
             cJSON_AddStringToObject(err, "message", r->err_msg ? r->err_msg : "");
    }
    ok = ok && cJSON_AddStringToObject(o, "worker", r->worker ? r->worker : "") &&
         cJSON_AddNumberToObject(o, "attempt", r->attempt > 0 ? r->attempt : 1) &&
         cJSON_AddNumberToObject(o, "started_ms", (double)r->started_ms) &&
         cJSON_AddNumberToObject(o, "finished_ms", (double)r->finished_ms);
    if (ok)
        out = cJSON_PrintUnformatted(o);
    if (out)
        *len = strlen(out);
    cJSON_Delete(o);
    return out;
}
