/* Tests common/cfgsecret.c: which places of a config document are hidden (and nothing else),
 * restoring stored values by object identity whatever the order, and refusing a placeholder. */
#include "cfgsecret.h"
#include "check.h"
#include "err.h"

#include <string.h>

/* A stored registry export: every kind of secret, and look-alikes that are not secrets. */
static const char stored_text[] =
    "{\"tenants\":[{\"id\":\"t\",\"api_keys\":[{\"id\":\"k\",\"sha256\":\"aaaa\"}],"
    "\"apps\":[{\"app_id\":\"a\",\"secret\":\"app-s\",\"previous_secret\":\"app-old-s\"}],"
    "\"webhooks\":[{\"id\":\"w\",\"url\":\"http://x/secret\",\"events\":[\"task.completed\"],"
    "\"secret\":\"wh-s\",\"previous_secret\":\"wh-old-s\"}],"
    "\"oauth\":{\"issuers\":[\"https://idp\"],\"introspection\":{\"endpoint\":"
    "\"https://idp/introspect\",\"client_id\":\"intro-client\",\"client_secret\":\"intro-s\"}}}],"
    "\"servers\":[{\"tenant\":\"t\",\"name\":\"f\",\"federate\":{\"url\":\"http://u\","
    "\"headers\":{\"Authorization\":\"fed-s\"}}}],"
    "\"tools\":[{\"tenant\":\"t\",\"server\":\"f\",\"name\":\"h\",\"versions\":["
    "{\"version\":\"1\",\"description\":\"secret\",\"inputSchema\":{\"type\":\"object\","
    "\"properties\":{\"secret\":{\"type\":\"string\",\"default\":\"keep\"}}},"
    "\"executor\":{\"type\":\"http\",\"url\":\"http://x\",\"secret\":\"x-s\","
    "\"headers\":{\"X-A\":\"hdr-s\"}}},"
    "{\"version\":\"2\",\"inputSchema\":{\"type\":\"object\"},"
    "\"executor\":{\"type\":\"exec\",\"argv\":[\"true\"],\"env\":{\"PW\":\"env-s\"}}}]}]}";

static const char *const secrets[] = {"aaaa",  "app-s", "app-old-s", "wh-s",  "wh-old-s",
                                      "fed-s", "x-s",   "hdr-s",     "env-s", "intro-s"};

static void test_redact(void)
{
    cJSON *doc = cJSON_Parse(stored_text);
    CHECK(doc != NULL);
    cfg_secret_redact(doc);
    char *out = cJSON_PrintUnformatted(doc);
    for (size_t i = 0; i < sizeof(secrets) / sizeof(secrets[0]); i++)
        CHECK(strstr(out, secrets[i]) == NULL);
    CHECK_CONTAINS(out, "\"sha256\":\"(hidden)\"");
    CHECK_CONTAINS(out, "\"PW\":\"(hidden)\"");
    /* not secrets: urls, descriptions, schema members that happen to be named so */
    CHECK_CONTAINS(out, "\"url\":\"http://x/secret\"");
    CHECK_CONTAINS(out, "\"description\":\"secret\"");
    CHECK_CONTAINS(out, "\"default\":\"keep\"");
    CHECK_CONTAINS(out, "\"argv\":[\"true\"]");
    CHECK_CONTAINS(out, "\"client_id\":\"intro-client\",\"client_secret\":\"(hidden)\"");
    cJSON_free(out);
    cJSON_Delete(doc);
    TEST_PASS("redact hides the ten kinds of secret (previous ones of a rotation too) and "
              "nothing else");
}

static void test_restore(void)
{
    cJSON *stored = cJSON_Parse(stored_text), *doc = cJSON_Parse(stored_text);
    char err[512];
    cfg_secret_redact(doc);
    /* Another order than the stored one: restoring goes by identity, not position. */
    cJSON *tools = cJSON_GetObjectItemCaseSensitive(doc, "tools");
    cJSON *versions = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(tools, 0), "versions");
    cJSON_AddItemToArray(versions, cJSON_DetachItemFromArray(versions, 0));
    CHECK_INT_EQ(cfg_secret_restore(doc, stored, err, sizeof(err)), 0);
    char *out = cJSON_PrintUnformatted(doc);
    for (size_t i = 0; i < sizeof(secrets) / sizeof(secrets[0]); i++)
        CHECK_CONTAINS(out, secrets[i]);
    CHECK(strstr(out, CFG_HIDDEN) == NULL);
    cJSON_free(out);
    /* a value given literally stays as given */
    cJSON *app = cJSON_GetArrayItem(
        cJSON_GetObjectItemCaseSensitive(
            cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "tenants"), 0), "apps"),
        0);
    cJSON_ReplaceItemInObjectCaseSensitive(app, "secret", cJSON_CreateString("new-s"));
    CHECK_INT_EQ(cfg_secret_restore(doc, stored, err, sizeof(err)), 0);
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(app, "secret")), "new-s");
    /* a placeholder at a place nothing is stored: the app renamed, a new header */
    cJSON_ReplaceItemInObjectCaseSensitive(app, "secret", cJSON_CreateString(CFG_HIDDEN));
    cJSON_ReplaceItemInObjectCaseSensitive(app, "app_id", cJSON_CreateString("b"));
    CHECK_INT_EQ(cfg_secret_restore(doc, stored, err, sizeof(err)), MCPQ_EINVAL);
    CHECK_STR_EQ(err, "$.tenants[0].apps[0].secret: \"(hidden)\" stands for the stored value, "
                      "but the registry holds none there (a new object, header or variable): "
                      "give the value");
    cJSON_Delete(doc);
    cJSON_Delete(stored);
    TEST_PASS("restore puts each stored value back by identity, and refuses one it has not");
}

static void test_refuse(void)
{
    char err[512];
    cJSON *doc = cJSON_Parse(stored_text);
    CHECK_INT_EQ(cfg_secret_refuse(doc, err, sizeof(err)), 0);
    cJSON *h = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(
            cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "servers"), 0), "federate"),
        "headers");
    cJSON_ReplaceItemInObjectCaseSensitive(h, "Authorization", cJSON_CreateString(CFG_HIDDEN));
    CHECK_INT_EQ(cfg_secret_refuse(doc, err, sizeof(err)), MCPQ_EINVAL);
    CHECK_STR_EQ(err, "$.servers[0].federate.headers.Authorization: \"(hidden)\" is the "
                      "placeholder of a redacted export, not a value: give the value (PUT "
                      "/admin/v1/config keeps the stored one in its place)");
    cJSON_Delete(doc);
    /* anything else, even not a config, is walked without harm */
    doc = cJSON_Parse("[1,{\"tenants\":5},\"x\"]");
    CHECK_INT_EQ(cfg_secret_refuse(doc, err, sizeof(err)), 0);
    cJSON_Delete(doc);
    doc = cJSON_Parse("{\"tenants\":[7,{\"id\":3,\"apps\":[{\"secret\":\"(hidden)\"}]}]}");
    CHECK_INT_EQ(cfg_secret_restore(doc, doc, err, sizeof(err)), MCPQ_EINVAL);
    cJSON_Delete(doc);
    TEST_PASS("refuse names the first placeholder; odd documents are walked safely");
}

int main(void)
{
    test_redact();
    test_restore();
    test_refuse();
    return 0;
}
