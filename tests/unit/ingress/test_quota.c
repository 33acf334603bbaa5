/* Tests ingress/core/quota.c: a tenant's caps from its config or the settings, and the answer's
 * wording (docs/api.md, "Tenant quotas"). */
#include "check.h"
#include "quota.h"

int main(void)
{
    mcpq_settings_t set = {.tenant_max_streams = 1000,
                           .tenant_max_sessions = 10000,
                           .tenant_max_tasks = 100000,
                           .tenant_max_file_bytes = 10737418240LL};
    cJSON *doc = cJSON_Parse("{\"id\":\"a\",\"quotas\":{\"notification_streams\":2,\"sessions\":0,"
                             "\"file_bytes\":1125899906842624}}");
    ing_tenant_t t = {.id = "a", .default_server = "default", .doc = doc};
    ing_tenant_t plain = {.id = "b", .default_server = "default", .doc = NULL};
    CHECK_INT_EQ(ing_quota_limit(&t, ING_QUOTA_STREAMS, &set), 2);
    CHECK_INT_EQ(ing_quota_limit(&t, ING_QUOTA_SESSIONS, &set), 0);   /* 0: no limit, kept */
    CHECK_INT_EQ(ing_quota_limit(&t, ING_QUOTA_TASKS, &set), 100000); /* not set: the setting */
    CHECK_INT_EQ(ing_quota_limit(&t, ING_QUOTA_FILE_BYTES, &set), 1125899906842624LL);
    CHECK_INT_EQ(ing_quota_limit(&plain, ING_QUOTA_SESSIONS, &set), 10000);
    CHECK_INT_EQ(ing_quota_limit(&plain, ING_QUOTA_FILE_BYTES, &set), 10737418240LL);
    TEST_PASS("a tenant's quotas member wins, 0 included; the setting otherwise");

    char msg[160];
    ing_quota_message(ING_QUOTA_SESSIONS, 100, msg, sizeof(msg));
    CHECK_STR_EQ(msg, "tenant limit reached: 100 live sessions (quotas.sessions)");
    ing_quota_message(ING_QUOTA_STREAMS, 2, msg, sizeof(msg));
    CHECK_STR_EQ(msg, "tenant limit reached: 2 notification streams open on this replica "
                      "(quotas.notification_streams)");
    ing_quota_message(ING_QUOTA_TASKS, 3, msg, sizeof(msg));
    CHECK_STR_EQ(msg, "tenant limit reached: 3 tasks in retention (quotas.tasks)");
    ing_quota_message(ING_QUOTA_FILE_BYTES, 1000, msg, sizeof(msg));
    CHECK_STR_EQ(msg, "tenant limit reached: 1000 bytes of stored and presigned files "
                      "(quotas.file_bytes)");
    cJSON *data = ing_quota_data(ING_QUOTA_TASKS, 3);
    char *text = cJSON_PrintUnformatted(data);
    CHECK_STR_EQ(text, "{\"quota\":\"quotas.tasks\",\"limit\":3}");
    cJSON_free(text);
    cJSON_Delete(data);
    cJSON_Delete(doc);
    TEST_PASS("messages name the limit and the config member; data names the quota");
    return 0;
}
