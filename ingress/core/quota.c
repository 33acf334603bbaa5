#include "quota.h"

#include <stdio.h>

/* Per quota: its member of the config's "quotas" and what it counts, as the message says. */
static const struct {
    const char *member;
    const char *what;
} quotas[ING_QUOTA_COUNT] = {
    [ING_QUOTA_STREAMS] = {"notification_streams", "notification streams open on this replica"},
    [ING_QUOTA_SESSIONS] = {"sessions", "live sessions"},
    [ING_QUOTA_TASKS] = {"tasks", "tasks in retention"},
    [ING_QUOTA_FILE_BYTES] = {"file_bytes", "bytes of stored and presigned files"},
};

static long long setting(ing_quota_t q, const mcpq_settings_t *set)
{
    switch (q) {
    case ING_QUOTA_STREAMS:
        return set->tenant_max_streams;
    case ING_QUOTA_SESSIONS:
        return set->tenant_max_sessions;
    case ING_QUOTA_TASKS:
        return set->tenant_max_tasks;
    default:
        return set->tenant_max_file_bytes;
    }
}

long long ing_quota_limit(const ing_tenant_t *t, ing_quota_t q, const mcpq_settings_t *set)
{
    const cJSON *quotas_doc = t ? cJSON_GetObjectItemCaseSensitive(t->doc, "quotas") : NULL;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(quotas_doc, quotas[q].member);
    /* the config schema holds each to an integer of 0 .. 2^50 */
    if (cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble <= (double)(1LL << 50))
        return (long long)v->valuedouble;
    return setting(q, set);
}

void ing_quota_message(ing_quota_t q, long long limit, char *out, size_t size)
{
    snprintf(out, size, "tenant limit reached: %lld %s (quotas.%s)", limit, quotas[q].what,
             quotas[q].member);
}

cJSON *ing_quota_data(ing_quota_t q, long long limit)
{
    char name[40];
    cJSON *data = cJSON_CreateObject();
    snprintf(name, sizeof(name), "quotas.%s", quotas[q].member);
    cJSON_AddStringToObject(data, "quota", name);
    cJSON_AddNumberToObject(data, "limit", (double)limit);
    return data;
}
