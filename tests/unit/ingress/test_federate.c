/*
 * test_federate.c - ingress/core/federate.c's tool documents: prefix, copied fields, executor,
 * skipped names (invalid, too long, colliding with the config's tools, duplicates) and
 * unusable schemas.
 */
#include "check.h"
#include "federate.h"

#include <stdlib.h>
#include <string.h>

static const char *s(const cJSON *o, const char *k)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
}

int main(void)
{
    cJSON *server = cJSON_Parse(
        "{\"tenant\":\"t\",\"name\":\"fed\",\"federate\":{\"url\":\"http://u/mcp\","
        "\"prefix\":\"up_\",\"headers\":{\"Authorization\":\"Bearer x\"},\"timeout_ms\":5000}}");
    cJSON *config_tools = cJSON_Parse("[{\"tenant\":\"t\",\"name\":\"up_taken\"},"
                                      "{\"tenant\":\"other\",\"name\":\"up_free\"}]");
    cJSON *up =
        cJSON_Parse("[{\"name\":\"echo\",\"title\":\"Echo\",\"description\":\"d\","
                    "\"inputSchema\":{\"type\":\"object\"},\"outputSchema\":{\"type\":\"object\"},"
                    "\"annotations\":{\"readOnlyHint\":true},\"icons\":[]},"
                    "{\"name\":\"bad name\",\"inputSchema\":{\"type\":\"object\"}},"
                    "{\"name\":\"taken\",\"inputSchema\":{\"type\":\"object\"}},"
                    "{\"name\":\"free\",\"inputSchema\":{\"type\":\"object\"}},"
                    "{\"name\":\"echo\",\"inputSchema\":{\"type\":\"object\"}},"
                    "{\"name\":\"noschema\"},"
                    "{\"name\":\"a123456789a123456789a123456789a123456789a12345678\","
                    "\"inputSchema\":{\"type\":\"object\"}}]");
    cJSON *tools = ing_federate_tools(server, up, config_tools);
    CHECK(tools != NULL);
    CHECK_INT_EQ(cJSON_GetArraySize(tools), 2);
    const cJSON *t = cJSON_GetArrayItem(tools, 0);
    CHECK_STR_EQ(s(t, "tenant"), "t");
    CHECK_STR_EQ(s(t, "server"), "fed");
    CHECK_STR_EQ(s(t, "name"), "up_echo");
    CHECK_STR_EQ(s(t, "published"), "1");
    const cJSON *v = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(t, "versions"), 0);
    CHECK_STR_EQ(s(v, "version"), "1");
    CHECK_STR_EQ(s(v, "title"), "Echo");
    CHECK_STR_EQ(s(v, "description"), "d");
    CHECK_STR_EQ(s(v, "mode"), "sync");
    CHECK(cJSON_GetObjectItemCaseSensitive(v, "outputSchema") != NULL);
    CHECK(cJSON_GetObjectItemCaseSensitive(v, "annotations") != NULL);
    CHECK(cJSON_GetObjectItemCaseSensitive(v, "icons") == NULL);
    CHECK_INT_EQ((int)cJSON_GetObjectItemCaseSensitive(v, "timeout_ms")->valuedouble, 5000);
    const cJSON *ex = cJSON_GetObjectItemCaseSensitive(v, "executor");
    CHECK_STR_EQ(s(ex, "type"), "mcp");
    CHECK_STR_EQ(s(ex, "url"), "http://u/mcp");
    CHECK_STR_EQ(s(ex, "tool"), "echo");
    CHECK_STR_EQ(s(cJSON_GetObjectItemCaseSensitive(ex, "headers"), "Authorization"), "Bearer x");
    CHECK_STR_EQ(s(cJSON_GetArrayItem(tools, 1), "name"), "up_free");
    cJSON_Delete(tools);
    TEST_PASS("federated tools: prefix, fields, executor; bad, long, taken, duplicate skipped");

    /* the default prefix is "<server>_" */
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(server, "federate"),
                                            "prefix");
    tools = ing_federate_tools(server, up, NULL);
    CHECK_STR_EQ(s(cJSON_GetArrayItem(tools, 0), "name"), "fed_echo");
    cJSON_Delete(tools);
    TEST_PASS("federated tools: the default prefix");
    cJSON_Delete(server);
    cJSON_Delete(config_tools);
    cJSON_Delete(up);
    return 0;
}
