#include "notify.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

const char *const ing_notify_levels[8] = {"debug", "info",     "notice", "warning",
                                          "error", "critical", "alert",  "emergency"};

int ing_notify_level_index(const char *s)
{
    for (int i = 0; s && i < 8; i++)
        if (strcmp(s, ing_notify_levels[i]) == 0)
            return i;
    return -1;
}

/* {"jsonrpc":"2.0","method":method,"params":params}, params consumed. */
static char *notification(const char *method, cJSON *params)
{
    cJSON *n = cJSON_CreateObject();
    if (!n) {
        cJSON_Delete(params);
        return NULL;
    }
    cJSON_AddStringToObject(n, "jsonrpc", "2.0");
    cJSON_AddStringToObject(n, "method", method);
    cJSON_AddItemToObject(n, "params", params);
    char *s = cJSON_PrintUnformatted(n);
    cJSON_Delete(n);
    return s;
}

char *ing_notify_progress(const char *token_json, const char *data, size_t len)
{
    cJSON *d = cJSON_ParseWithLength(data, len);
    cJSON *token = cJSON_Parse(token_json);
    const cJSON *progress = cJSON_GetObjectItemCaseSensitive(d, "progress");
    if (!cJSON_IsObject(d) || !token || !cJSON_IsNumber(progress)) {
        cJSON_Delete(d);
        cJSON_Delete(token);
        return NULL;
    }
    cJSON *params = cJSON_CreateObject();
    cJSON_AddItemToObject(params, "progressToken", token);
    cJSON_AddNumberToObject(params, "progress", progress->valuedouble);
    const cJSON *total = cJSON_GetObjectItemCaseSensitive(d, "total");
    if (cJSON_IsNumber(total))
        cJSON_AddNumberToObject(params, "total", total->valuedouble);
    const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "message"));
    if (msg && *msg)
        cJSON_AddStringToObject(params, "message", msg);
    cJSON_Delete(d);
    return notification("notifications/progress", params);
}

char *ing_notify_log(const char *data, size_t len, int min_level, const char *logger)
{
    if (min_level < 0)
        return NULL;
    cJSON *d = cJSON_ParseWithLength(data, len);
    const char *level = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "level"));
    int idx = ing_notify_level_index(level);
    cJSON *payload = cJSON_DetachItemFromObjectCaseSensitive(d, "data");
    if (idx < min_level || !payload) {
        cJSON_Delete(payload);
        cJSON_Delete(d);
        return NULL;
    }
    cJSON *params = cJSON_CreateObject();
    cJSON_AddStringToObject(params, "level", ing_notify_levels[idx]);
    if (logger && *logger)
        cJSON_AddStringToObject(params, "logger", logger);
    cJSON_AddItemToObject(params, "data", payload);
    cJSON_Delete(d);
    return notification("notifications/message", params);
}
