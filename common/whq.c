#include "whq.h"

#include "err.h"
#include "rscript.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int whq_event_known(const char *event)
{
    static const char *const known[] = {"task.running",   "task.input_required",
                                        "task.completed", "task.terminated",
                                        "task.cancelled", WHQ_EVENT_TOOL_CHANGED};
    for (size_t i = 0; event && i < sizeof(known) / sizeof(known[0]); i++)
        if (strcmp(event, known[i]) == 0)
            return 1;
    return 0;
}

int whq_event(kv_pool_t *kv, const char *tenant, const char *event, const char *task_id,
              const char *data_json, char *errstr, size_t errstr_size)
{
    int task_event = event && strncmp(event, "task.", 5) == 0;
    if (!kv || !tenant || !*tenant || !task_id || (task_event && !*task_id) || !data_json ||
        !whq_event_known(event)) {
        snprintf(errstr, errstr_size, "whq_event: bad tenant, event or task id");
        return MCPQ_EINVAL;
    }
    cJSON *data = cJSON_Parse(data_json);
    int is_obj = cJSON_IsObject(data);
    cJSON_Delete(data);
    if (!is_obj) {
        snprintf(errstr, errstr_size, "whq_event: data is not a JSON object");
        return MCPQ_EINVAL;
    }
    char base[25];
    if (util_random_hex(base, 12) < 0) {
        snprintf(errstr, errstr_size, "no randomness for the delivery id");
        return MCPQ_EIO;
    }
    const char *argv[] = {tenant, event, task_id, data_json, base};
    redisReply *r =
        rscript_pool_run(kv, rscript_get("whq_event"), 0, 5, argv, NULL, errstr, errstr_size);
    if (!r)
        return MCPQ_EUNAVAIL;
    int rc = MCPQ_EPROTO;
    if (r->type == REDIS_REPLY_INTEGER && r->integer >= 0 && r->integer < (1 << 20))
        rc = (int)r->integer;
    else
        snprintf(errstr, errstr_size, "whq_event: unexpected reply from Redis");
    freeReplyObject(r);
    return rc;
}
