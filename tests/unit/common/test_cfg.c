/* Tests common/cfg.c: normalization, secrets from the environment, every semantic check,
 * error paths, JSON syntax errors, files, and the configs the project ships and tests with. */
#include "check.h"
#include "cfg.h"
#include "cfgkinds.h"
#include "err.h"
#include "util.h"

#include <fcntl.h>
#include <unistd.h>

static char err[1024];

/* Config text written with single quotes for readability: 'a' becomes "a". */
static cJSON *load_q(const char *text)
{
    static char buf[16384];
    size_t n = strlen(text);
    CHECK(n < sizeof(buf));
    for (size_t i = 0; i <= n; i++)
        buf[i] = text[i] == '\'' ? '"' : text[i];
    err[0] = '\0';
    return cfg_load_string(buf, n, err, sizeof(err));
}

static cJSON *must_load(const char *text, int line)
{
    cJSON *doc = load_q(text);
    if (!doc)
        fprintf(stderr, "%s:%d: config should load: %s\n", __FILE__, line, err);
    CHECK(doc != NULL);
    return doc;
}

#define LOAD(text) must_load(text, __LINE__)

/* Loading fails with exactly msg. */
#define FAILS(text, msg)                                                                           \
    do {                                                                                           \
        cJSON *d_ = load_q(text);                                                                  \
        CHECK(d_ == NULL);                                                                         \
        CHECK_STR_EQ(err, msg);                                                                    \
    } while (0)

/* Loading fails with a message containing needle. */
#define FAILS_C(text, needle)                                                                      \
    do {                                                                                           \
        cJSON *d_ = load_q(text);                                                                  \
        CHECK(d_ == NULL);                                                                         \
        CHECK_CONTAINS(err, needle);                                                               \
    } while (0)

/* One tenant "acme" (with what T_EXTRA adds), one server, and the tools in TOOLS. */
#define CFG(T_EXTRA, SERVERS_EXTRA, TOOLS)                                                         \
    "{'tenants':[{'id':'acme','api_keys':[{'id':'k1','key':'dev-acme-key'}]" T_EXTRA "}],"         \
    "'servers':[{'tenant':'acme','name':'default','description':'d'}" SERVERS_EXTRA "],"           \
    "'tools':[" TOOLS "]}"

/* A version without timeout_ms, for tests that set their own (a member given twice is
 * refused). */
#define VERSION_BARE(V, EXTRA)                                                                     \
    "{'version':'" V "','description':'Echo','inputSchema':{'type':'object','properties':"         \
    "{'text':{'type':'string'}},'required':['text']},'executor':{'type':'builtin',"                \
    "'name':'echo'}" EXTRA "}"
#define VERSION(V, EXTRA) VERSION_BARE(V, ",'timeout_ms':60000" EXTRA)

#define TOOL(NAME, VERSIONS, EXTRA)                                                                \
    "{'tenant':'acme','server':'default','name':'" NAME "'" EXTRA ",'versions':[" VERSIONS "]}"

static const char *const minimal = CFG("", "", TOOL("echo", VERSION("1", ""), ""));

static const cJSON *at(const cJSON *doc, const char *a, int i, const char *key)
{
    const cJSON *v = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, a), i);
    return key ? cJSON_GetObjectItemCaseSensitive(v, key) : v;
}

static const char *str_at(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void test_normalization(void)
{
    char hex[65];
    cJSON *doc = LOAD(minimal);
    const cJSON *t = at(doc, "tenants", 0, NULL), *key = at(t, "api_keys", 0, NULL);
    util_sha256_hex("dev-acme-key", 12, hex);
    CHECK_INT_EQ(cJSON_GetArraySize(key), 2);
    CHECK_STR_EQ(str_at(key, "id"), "k1");
    CHECK_STR_EQ(str_at(key, "sha256"), hex);
    CHECK(!cJSON_GetObjectItemCaseSensitive(key, "key"));
    CHECK_STR_EQ(str_at(t, "default_server"), "default");
    const cJSON *tool = at(doc, "tools", 0, NULL);
    CHECK_STR_EQ(str_at(tool, "published"), "1");
    CHECK_STR_EQ(str_at(at(tool, "versions", 0, NULL), "mode"), "sync");
    char *text = cJSON_PrintUnformatted(doc);
    CHECK(strstr(text, "dev-acme-key") == NULL); /* no plaintext key in what Redis stores */
    cJSON_free(text);
    cJSON_Delete(doc);

    /* servers and tools are always arrays */
    doc = LOAD("{'tenants':[{'id':'solo'}]}");
    CHECK(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(doc, "servers")));
    CHECK(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(doc, "tools")));
    CHECK_STR_EQ(str_at(at(doc, "tenants", 0, NULL), "default_server"), "default");
    cJSON_Delete(doc);

    /* an explicit default_server naming an existing server is kept */
    doc = LOAD("{'tenants':[{'id':'a','default_server':'main'}],"
               "'servers':[{'tenant':'a','name':'main'}]}");
    CHECK_STR_EQ(str_at(at(doc, "tenants", 0, NULL), "default_server"), "main");
    cJSON_Delete(doc);

    /* published defaults to the last version; explicit values are kept */
    doc = LOAD(CFG("", "",
                   TOOL("a", VERSION("1", "") "," VERSION("2", ",'mode':'task'"), "") "," TOOL(
                       "b", VERSION("1", "") "," VERSION("2", ""),
                       ",'published':'1'") "," TOOL("c", VERSION("1", ""), ",'published':null")));
    CHECK_STR_EQ(str_at(at(doc, "tools", 0, NULL), "published"), "2");
    CHECK_STR_EQ(str_at(at(at(doc, "tools", 0, NULL), "versions", 1, NULL), "mode"), "task");
    CHECK_STR_EQ(str_at(at(doc, "tools", 1, NULL), "published"), "1");
    CHECK(cJSON_IsNull(at(doc, "tools", 2, "published")));
    cJSON_Delete(doc);

    /* a key given by its hash is kept as it is */
    util_sha256_hex("globex-key-1", 12, hex);
    char cfg[512];
    snprintf(cfg, sizeof(cfg),
             "{'tenants':[{'id':'globex','api_keys':[{'id':'g','sha256':'%s'}]}]}", hex);
    doc = LOAD(cfg);
    CHECK_STR_EQ(str_at(at(at(doc, "tenants", 0, NULL), "api_keys", 0, NULL), "sha256"), hex);
    cJSON_Delete(doc);
    TEST_PASS("normalization");
}

static void test_env_secrets(void)
{
    char hex[65];
    setenv("MCPQ_TEST_KEY", "key-from-env", 1);
    setenv("MCPQ_TEST_EMPTY", "", 1);
    unsetenv("MCPQ_TEST_UNSET");
    setenv("MCPQ_TEST_APP_SECRET", "app-secret-from-env", 1);
    setenv("MCPQ_TEST_WHSEC", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", 1);
    setenv("MCPQ_TEST_BAD_WHSEC", "not-a-whsec", 1);

    cJSON *doc = LOAD("{'tenants':[{'id':'a','api_keys':[{'id':'k','key_env':'MCPQ_TEST_KEY'}],"
                      "'apps':[{'app_id':'app1','secret_env':'MCPQ_TEST_APP_SECRET'},"
                      "{'app_id':'app2','secret':'literal','secret_env':'MCPQ_TEST_UNSET'},"
                      "{'app_id':'app3','secret':'literal','secret_env':'MCPQ_TEST_APP_SECRET'}],"
                      "'webhooks':[{'id':'w','url':'http://127.0.0.1:9/h',"
                      "'secret_env':'MCPQ_TEST_WHSEC','events':['task.completed']}]}]}");
    const cJSON *t = at(doc, "tenants", 0, NULL);
    util_sha256_hex("key-from-env", 12, hex);
    CHECK_STR_EQ(str_at(at(t, "api_keys", 0, NULL), "sha256"), hex);
    CHECK(!cJSON_GetObjectItemCaseSensitive(at(t, "api_keys", 0, NULL), "key_env"));
    CHECK_STR_EQ(str_at(at(t, "apps", 0, NULL), "secret"), "app-secret-from-env");
    CHECK(!cJSON_GetObjectItemCaseSensitive(at(t, "apps", 0, NULL), "secret_env"));
    CHECK_STR_EQ(str_at(at(t, "apps", 1, NULL), "secret"), "literal");             /* fallback */
    CHECK_STR_EQ(str_at(at(t, "apps", 2, NULL), "secret"), "app-secret-from-env"); /* env wins */
    CHECK_STR_EQ(str_at(at(t, "webhooks", 0, NULL), "secret"),
                 "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
    CHECK(!cJSON_GetObjectItemCaseSensitive(at(t, "webhooks", 0, NULL), "secret_env"));
    cJSON_Delete(doc);

    FAILS("{'tenants':[{'id':'a','api_keys':[{'id':'k','key_env':'MCPQ_TEST_UNSET'}]}]}",
          "$.tenants[0].api_keys[0].key_env: environment variable \"MCPQ_TEST_UNSET\" is not "
          "set or empty");
    FAILS("{'tenants':[{'id':'a','api_keys':[{'id':'k','key':'x'},{'id':'k2',"
          "'key_env':'MCPQ_TEST_EMPTY'}]}]}",
          "$.tenants[0].api_keys[1].key_env: environment variable \"MCPQ_TEST_EMPTY\" is not "
          "set or empty");
    FAILS("{'tenants':[{'id':'a','apps':[{'app_id':'x','secret_env':'MCPQ_TEST_UNSET'}]}]}",
          "$.tenants[0].apps[0].secret_env: environment variable \"MCPQ_TEST_UNSET\" is not set "
          "or empty");
    FAILS("{'tenants':[{'id':'a','webhooks':[{'id':'w','url':'http://h/x',"
          "'secret_env':'MCPQ_TEST_BAD_WHSEC','events':['task.running']}]}]}",
          "$.tenants[0].webhooks[0].secret_env: must be \"whsec_\" followed by the base64 of 24 "
          "to 64 bytes");
    FAILS("{'tenants':[{'id':'a','webhooks':[{'id':'w','url':'http://h/x',"
          "'secret_env':'MCPQ_TEST_UNSET','events':['task.running']}]}]}",
          "$.tenants[0].webhooks[0].secret_env: environment variable \"MCPQ_TEST_UNSET\" is not "
          "set or empty");

    /* executor secrets are resolved the same way */
    doc = LOAD(CFG("", "",
                   TOOL("h",
                        "{'version':'1','inputSchema':{'type':'object'},'executor':{'type':'http',"
                        "'url':'http://127.0.0.1:1/x','secret_env':'MCPQ_TEST_WHSEC'}}",
                        "")));
    const cJSON *ex = at(at(at(doc, "tools", 0, NULL), "versions", 0, NULL), "executor", 0, NULL);
    ex = cJSON_GetObjectItemCaseSensitive(at(at(doc, "tools", 0, NULL), "versions", 0, NULL),
                                          "executor");
    CHECK_STR_EQ(str_at(ex, "secret"), "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
    CHECK(!cJSON_GetObjectItemCaseSensitive(ex, "secret_env"));
    cJSON_Delete(doc);
    FAILS(CFG("", "",
              TOOL("h",
                   "{'version':'1','inputSchema':{'type':'object'},'executor':{'type':'agent',"
                   "'url':'http://127.0.0.1:1/x','secret_env':'MCPQ_TEST_UNSET'}}",
                   "")),
          "$.tools[0].versions[0].executor.secret_env: environment variable \"MCPQ_TEST_UNSET\" "
          "is not set or empty");
    TEST_PASS("key_env and secret_env");

    /* the admin API's placeholder is never loaded as a secret (cfgsecret.h) */
    FAILS("{'tenants':[{'id':'a','apps':[{'app_id':'x','secret':'(hidden)'}]}]}",
          "$.tenants[0].apps[0].secret: \"(hidden)\" is the placeholder of a redacted export, "
          "not a value: give the value (PUT /admin/v1/config keeps the stored one in its place)");
    FAILS(CFG("", "",
              TOOL("h",
                   "{'version':'1','inputSchema':{'type':'object'},'executor':{'type':'exec',"
                   "'argv':['true'],'env':{'PW':'(hidden)'}}}",
                   "")),
          "$.tools[0].versions[0].executor.env.PW: \"(hidden)\" is the placeholder of a redacted "
          "export, not a value: give the value (PUT /admin/v1/config keeps the stored one in its "
          "place)");
    TEST_PASS("\"(hidden)\" as a secret, header or env value is refused");
}

/* A rotation: previous_secret (literal or previous_secret_env) and its expiry. */
static void test_previous_secrets(void)
{
    setenv("MCPQ_TEST_OLD_APP", "old-app-secret-from-env", 1);
    setenv("MCPQ_TEST_OLD_WHSEC", "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYX", 1);
    unsetenv("MCPQ_TEST_UNSET");
    cJSON *doc = LOAD("{'tenants':[{'id':'a','apps':[{'app_id':'app1','secret':'new',"
                      "'previous_secret_env':'MCPQ_TEST_OLD_APP',"
                      "'previous_secret_expires':'2030-01-02T03:04:05.678Z'},"
                      "{'app_id':'app2','secret':'new','previous_secret':'old'}],"
                      "'webhooks':[{'id':'w','url':'http://127.0.0.1:9/h',"
                      "'secret':'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',"
                      "'previous_secret_env':'MCPQ_TEST_OLD_WHSEC',"
                      "'previous_secret_expires':'2030-01-02T03:04:05Z',"
                      "'events':['task.completed']}]}]}");
    const cJSON *t = at(doc, "tenants", 0, NULL);
    CHECK_STR_EQ(str_at(at(t, "apps", 0, NULL), "previous_secret"), "old-app-secret-from-env");
    CHECK(!cJSON_GetObjectItemCaseSensitive(at(t, "apps", 0, NULL), "previous_secret_env"));
    CHECK_STR_EQ(str_at(at(t, "apps", 0, NULL), "previous_secret_expires"),
                 "2030-01-02T03:04:05.678Z");
    CHECK_STR_EQ(str_at(at(t, "apps", 1, NULL), "previous_secret"), "old");
    CHECK_STR_EQ(str_at(at(t, "webhooks", 0, NULL), "previous_secret"),
                 "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYX");
    cJSON_Delete(doc);
    FAILS("{'tenants':[{'id':'a','apps':[{'app_id':'x','secret':'s',"
          "'previous_secret_env':'MCPQ_TEST_UNSET'}]}]}",
          "$.tenants[0].apps[0].previous_secret_env: environment variable \"MCPQ_TEST_UNSET\" is "
          "not set or empty");
    FAILS("{'tenants':[{'id':'a','apps':[{'app_id':'x','secret':'s',"
          "'previous_secret_expires':'2030-01-02T03:04:05Z'}]}]}",
          "$.tenants[0].apps[0].previous_secret_expires: there is no previous_secret");
    FAILS("{'tenants':[{'id':'a','apps':[{'app_id':'x','secret':'s','previous_secret':'o',"
          "'previous_secret_expires':'2030-02-30T03:04:05Z'}]}]}",
          "$.tenants[0].apps[0].previous_secret_expires: not a UTC time (2026-01-31T12:00:00Z)");
    FAILS_C("{'tenants':[{'id':'a','apps':[{'app_id':'x','secret':'s','previous_secret':'o',"
            "'previous_secret_expires':'tomorrow'}]}]}",
            "$.tenants[0].apps[0].previous_secret_expires");
    FAILS("{'tenants':[{'id':'a','webhooks':[{'id':'w','url':'http://h/x',"
          "'secret':'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw','previous_secret':'whsec_AAAA',"
          "'events':['task.running']}]}]}",
          "$.tenants[0].webhooks[0].previous_secret: must be \"whsec_\" followed by the base64 of "
          "24 to 64 bytes");
    TEST_PASS("previous_secret, previous_secret_env and previous_secret_expires");
}

static void test_secret_formats(void)
{
    FAILS("{'tenants':[{'id':'a','webhooks':[{'id':'w','url':'http://h/x',"
          "'secret':'whsec_AAAA','events':['task.running']}]}]}",
          "$.tenants[0].webhooks[0].secret: must be \"whsec_\" followed by the base64 of 24 to 64 "
          "bytes");
    FAILS("{'tenants':[{'id':'a','webhooks':[{'id':'w','url':'http://h/x',"
          "'secret':'secret','events':['task.running']}]}]}",
          "$.tenants[0].webhooks[0].secret: does not match the pattern "
          "\"^whsec_[A-Za-z0-9+/]+={0,2}$\"");
    FAILS("{'tenants':[{'id':'a','webhooks':[{'id':'w','url':'ftp://h/x',"
          "'secret':'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw','events':['task.running']}]}]}",
          "$.tenants[0].webhooks[0].url: does not match the pattern \"^https?://[^\\s/?#]+\\S*$\"");
    FAILS("{'tenants':[{'id':'a','webhooks':[{'id':'w','url':'http://h/x',"
          "'secret':'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw','events':['task.done']}]}]}",
          "$.tenants[0].webhooks[0].events[0]: must be one of \"task.running\", "
          "\"task.input_required\", \"task.completed\", \"task.terminated\", "
          "\"task.cancelled\", \"tool.changed\"");
    FAILS("{'tenants':[{'id':'a','webhooks':[{'id':'w','url':'http://h/x',"
          "'secret':'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw','events':[]}]}]}",
          "$.tenants[0].webhooks[0].events: must have at least 1 item");
    /* exactly one of key, key_env, sha256 */
    FAILS("{'tenants':[{'id':'a','api_keys':[{'id':'k'}]}]}",
          "$.tenants[0].api_keys[0]: does not match any alternative: (1) missing required "
          "property \"key\"; (2) missing required property \"key_env\"; (3) missing required "
          "property \"sha256\"");
    FAILS("{'tenants':[{'id':'a','api_keys':[{'id':'k','key':'x','sha256':'"
          "0000000000000000000000000000000000000000000000000000000000000000'}]}]}",
          "$.tenants[0].api_keys[0]: must match exactly one alternative, but matches 1 (key) and "
          "3 (sha256)");
    FAILS("{'tenants':[{'id':'a','api_keys':[{'id':'k','sha256':'ABC'}]}]}",
          "$.tenants[0].api_keys[0].sha256: does not match the pattern \"^[0-9a-f]{64}$\"");
    FAILS("{'tenants':[{'id':'a','apps':[{'app_id':'x'}]}]}",
          "$.tenants[0].apps[0]: does not match any alternative: (1) missing required property "
          "\"secret\"; (2) missing required property \"secret_env\"");
    TEST_PASS("secret formats");
}

static void test_semantic_errors(void)
{
    FAILS("{'tenants':[{'id':'a'},{'id':'b'},{'id':'a'}]}",
          "$.tenants[2].id: duplicate tenant id \"a\" (also $.tenants[0])");
    FAILS(CFG("", ",{'tenant':'acme','name':'default'}", ""),
          "$.servers[1].name: duplicate server \"default\" of tenant \"acme\" (also $.servers[0])");
    FAILS(CFG("", ",{'tenant':'nope','name':'x'}", ""),
          "$.servers[1].tenant: unknown tenant \"nope\"");
    FAILS(CFG("", ",{'tenant':'acme','name':'system'}", ""),
          "$.servers[1].name: \"system\" is the built-in server");
    FAILS(CFG(",'default_server':'main'", "", ""),
          "$.tenants[0].default_server: tenant \"acme\" has no server \"main\"");
    FAILS(CFG("", "",
              "{'tenant':'nope','server':'default','name':'t','versions':[" VERSION("1", "") "]}"),
          "$.tools[0].tenant: unknown tenant \"nope\"");
    FAILS(CFG("", "",
              "{'tenant':'acme','server':'ops','name':'t','versions':[" VERSION("1", "") "]}"),
          "$.tools[0].server: tenant \"acme\" has no server \"ops\"");
    /* tool names are unique within the tenant, across its servers */
    FAILS(CFG("", ",{'tenant':'acme','name':'ops'}",
              TOOL("echo", VERSION("1", ""), "") ",{'tenant':'acme','server':'ops','name':'echo',"
                                                 "'versions':[" VERSION("1", "") "]}"),
          "$.tools[1].name: duplicate tool name \"echo\" in tenant \"acme\" (also $.tools[0])");
    /* ... but not across tenants */
    cJSON *doc =
        LOAD("{'tenants':[{'id':'a'},{'id':'b'}],'servers':[{'tenant':'a','name':"
             "'default'},{'tenant':'b','name':'default'}],'tools':["
             "{'tenant':'a','server':'default','name':'echo','versions':[" VERSION(
                 "1", "") "]},"
                          "{'tenant':'b','server':'default','name':'echo','versions':[" VERSION(
                              "1", "") "]}]}");
    cJSON_Delete(doc);
    FAILS(CFG("", "", TOOL("echo", VERSION("1", "") "," VERSION("2", "") "," VERSION("1", ""), "")),
          "$.tools[0].versions[2].version: duplicate version \"1\" (also $.tools[0].versions[0])");
    FAILS(CFG("", "", TOOL("echo", VERSION("1", ""), ",'published':'3'")),
          "$.tools[0].published: tool \"echo\" has no version \"3\"");
    FAILS(
        "{'tenants':[{'id':'a','api_keys':[{'id':'k','key':'x'},{'id':'k','key':'y'}]}]}",
        "$.tenants[0].api_keys[1].id: duplicate api key id \"k\" (also $.tenants[0].api_keys[0])");
    FAILS("{'tenants':[{'id':'a','apps':[{'app_id':'p','secret':'s'}]},"
          "{'id':'b','apps':[{'app_id':'p','secret':'t'}]}]}",
          "$.tenants[1].apps[0].app_id: duplicate app id \"p\" (also $.tenants[0].apps[0])");
    FAILS(
        "{'tenants':[{'id':'a','webhooks':[{'id':'w','url':'http://h/x','secret':"
        "'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw','events':['task.running']},{'id':'w','url':"
        "'http://h/y','secret':'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw','events':["
        "'task.running']}]}]}",
        "$.tenants[0].webhooks[1].id: duplicate webhook id \"w\" (also $.tenants[0].webhooks[0])");
    /* the same key for two tenants, literally or once as its hash */
    FAILS("{'tenants':[{'id':'a','api_keys':[{'id':'k','key':'shared'}]},"
          "{'id':'b','api_keys':[{'id':'k','key':'shared'}]}]}",
          "$.tenants[1].api_keys[0]: the same key is already used by $.tenants[0].api_keys[0]");
    char hex[65], cfg[512];
    util_sha256_hex("shared", 6, hex);
    snprintf(cfg, sizeof(cfg),
             "{'tenants':[{'id':'a','api_keys':[{'id':'k','sha256':'%s'}]},"
             "{'id':'b','api_keys':[{'id':'x','key':'other'},{'id':'k','key':'shared'}]}]}",
             hex);
    FAILS(cfg,
          "$.tenants[1].api_keys[1]: the same key is already used by $.tenants[0].api_keys[0]");
    /* fake mode needs its result, and the result must be a CallToolResult */
    FAILS(CFG("", "", TOOL("f", VERSION("1", ",'fake':{'enabled':true}"), "")),
          "$.tools[0].versions[0].fake: missing required property \"result\" (fake mode is "
          "enabled)");
    FAILS(CFG("", "",
              TOOL("f", VERSION("1", ",'fake':{'enabled':true,'result':{'content':[{}]}}"), "")),
          "$.tools[0].versions[0].fake.result.content[0]: missing required property \"type\"");
    doc = LOAD(CFG("", "", TOOL("f", VERSION("1", ",'fake':{'enabled':false}"), "")));
    cJSON_Delete(doc);
    /* a tool schema sch_validate could not use */
    FAILS(CFG("", "",
              TOOL("t",
                   "{'version':'1','inputSchema':{'type':'object','properties':{'a':{'type':"
                   "'int'}}},'executor':{'type':'builtin','name':'echo'}}",
                   "")),
          "$.tools[0].versions[0].inputSchema.properties.a: invalid schema: \"type\" names an "
          "unknown type");
    FAILS(CFG("", "",
              TOOL("t",
                   "{'version':'1','inputSchema':{'type':'object'},'outputSchema':{'type':"
                   "'object','properties':{'s':{'pattern':'(?<=x)'}}},'executor':{'type':"
                   "'builtin','name':'echo'}}",
                   "")),
          "$.tools[0].versions[0].outputSchema.properties.s: invalid schema: pattern \"(?<=x)\" "
          "is not supported (POSIX ERE subset)");
    /* JSON Schema 2020-12: an unimplemented keyword is refused by name, unknown ones pass */
    FAILS(CFG("", "",
              TOOL("t",
                   "{'version':'1','inputSchema':{'type':'object','properties':{'a':{'items':"
                   "{'$dynamicRef':'#n'}}}},'executor':{'type':'builtin','name':'echo'}}",
                   "")),
          "$.tools[0].versions[0].inputSchema.properties.a.items.$dynamicRef: invalid schema: "
          "this keyword is not supported by mcpq (docs/tools.md, \"Input schemas\")");
    doc = LOAD(CFG("", "",
                   TOOL("t",
                        "{'version':'1','inputSchema':{'type':'object','x-order':['a'],"
                        "'prefixItems':[true],'dependentRequired':{'a':['b']},'properties':{'a':"
                        "{'$ref':'#/$defs/a'}},'$defs':{'a':{'multipleOf':0.5}}},'executor':"
                        "{'type':'builtin','name':'echo'}}",
                        "")));
    cJSON_Delete(doc);
    /* exec env_pass: worker variables by name, never MCPQ_* */
    doc = LOAD(CFG("", "",
                   TOOL("e",
                        "{'version':'1','inputSchema':{'type':'object'},'executor':{'type':"
                        "'exec','argv':['/bin/true'],'env_pass':['AWS_REGION','http_proxy']}}",
                        "")));
    cJSON_Delete(doc);
    FAILS_C(CFG("", "",
                TOOL("e",
                     "{'version':'1','inputSchema':{'type':'object'},'executor':{'type':"
                     "'exec','argv':['/bin/true'],'env_pass':['MCPQ_JOB_SIGNING_KEY']}}",
                     "")),
            "env_pass");
    FAILS_C(CFG("", "",
                TOOL("e",
                     "{'version':'1','inputSchema':{'type':'object'},'executor':{'type':"
                     "'exec','argv':['/bin/true'],'env_pass':['A=B']}}",
                     "")),
            "env_pass");
    TEST_PASS("semantic checks");
}

static void test_rate_limits(void)
{
    cJSON *doc = LOAD("{'tenants':[{'id':'a','rate_limits':{'api_key':{'per_second':2.5,'burst':5},"
                      "'app':{'per_second':0}},'api_keys':[{'id':'k','key':'rk',"
                      "'rate_limit':{'per_second':10}}],'apps':[{'app_id':'p','secret':'s',"
                      "'rate_limit':{'per_second':1,'burst':1}}]}]}");
    const cJSON *t = at(doc, "tenants", 0, NULL);
    const cJSON *key = at(t, "api_keys", 0, NULL);
    /* the normalized key keeps its rate_limit next to id and sha256 */
    CHECK_INT_EQ(cJSON_GetArraySize(key), 3);
    const cJSON *kl = cJSON_GetObjectItemCaseSensitive(key, "rate_limit");
    CHECK(cJSON_GetObjectItemCaseSensitive(kl, "per_second")->valuedouble == 10.0);
    const cJSON *tl = cJSON_GetObjectItemCaseSensitive(t, "rate_limits");
    const cJSON *ak = cJSON_GetObjectItemCaseSensitive(tl, "api_key");
    CHECK(cJSON_GetObjectItemCaseSensitive(ak, "burst")->valuedouble == 5.0);
    cJSON_Delete(doc);
    FAILS("{'tenants':[{'id':'a','rate_limits':{'key':{'per_second':1}}}]}",
          "$.tenants[0].rate_limits: unknown property \"key\"");
    FAILS("{'tenants':[{'id':'a','rate_limits':{'api_key':{'burst':3}}}]}",
          "$.tenants[0].rate_limits.api_key: missing required property \"per_second\"");
    FAILS("{'tenants':[{'id':'a','rate_limits':{'app':{'per_second':-1}}}]}",
          "$.tenants[0].rate_limits.app.per_second: must be >= 0");
    FAILS("{'tenants':[{'id':'a','api_keys':[{'id':'k','key':'x','rate_limit':{'per_second':1,"
          "'burst':0}}]}]}",
          "$.tenants[0].api_keys[0].rate_limit.burst: must be >= 1");
    FAILS("{'tenants':[{'id':'a','apps':[{'app_id':'p','secret':'s','rate_limit':{'per_second':"
          "'5'}}]}]}",
          "$.tenants[0].apps[0].rate_limit.per_second: expected number, got string");
    TEST_PASS("rate limits: kept through normalization, malformed ones refused with their path");
}

static void test_robots_and_quotas(void)
{
    cJSON *doc = LOAD("{'tenants':[{'id':'a','robots':['robot-a','pool.b:c_1'],'quotas':"
                      "{'notification_streams':2,'sessions':0,'tasks':3,'file_bytes':1000}},"
                      "{'id':'b','robots':[]},{'id':'c'}]}");
    const cJSON *t = at(doc, "tenants", 0, NULL);
    CHECK_INT_EQ(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(t, "robots")), 2);
    CHECK_STR_EQ(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(t, "robots"), 1)->valuestring,
                 "pool.b:c_1");
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(t, "quotas");
    CHECK(cJSON_GetObjectItemCaseSensitive(q, "tasks")->valuedouble == 3.0);
    CHECK(cJSON_GetObjectItemCaseSensitive(q, "sessions")->valuedouble == 0.0);
    cJSON_Delete(doc);
    /* a robot belongs to one tenant: the error names both */
    FAILS("{'tenants':[{'id':'a','robots':['r1','robot-a']},{'id':'b'},"
          "{'id':'c','robots':['robot-a']}]}",
          "$.tenants[2].robots[0]: robot \"robot-a\" is declared by tenant \"a\" "
          "($.tenants[0].robots[1]) and by tenant \"c\"; a robot belongs to one tenant");
    FAILS("{'tenants':[{'id':'a','robots':['r1','r1']}]}",
          "$.tenants[0].robots: must not contain duplicates (items 0 and 1 are equal)");
    FAILS("{'tenants':[{'id':'a','robots':['_any']}]}",
          "$.tenants[0].robots[0]: \"_any\" is the queue of tasks without a RobotId and cannot "
          "be declared");
    FAILS_C("{'tenants':[{'id':'a','robots':['has space']}]}", "$.tenants[0].robots[0]");
    FAILS_C("{'tenants':[{'id':'a','robots':['']}]}", "$.tenants[0].robots[0]");
    FAILS("{'tenants':[{'id':'a','robots':'r1'}]}",
          "$.tenants[0].robots: expected array, got string");
    FAILS("{'tenants':[{'id':'a','quotas':{'streams':1}}]}",
          "$.tenants[0].quotas: unknown property \"streams\"");
    FAILS("{'tenants':[{'id':'a','quotas':{'tasks':-1}}]}",
          "$.tenants[0].quotas.tasks: must be >= 0");
    FAILS_C("{'tenants':[{'id':'a','quotas':{'sessions':2.5}}]}", "$.tenants[0].quotas.sessions");
    TEST_PASS("robots and quotas: kept; a robot two tenants declare, \"_any\", malformed ids "
              "and quotas refused with their path");
}

static void test_schema_errors(void)
{
    /* A member given twice: cJSON keeps both, other readers take the last one. */
    FAILS("{'tenants':[{'id':'t'}],'tenants':[{'id':'u'}]}", "$: duplicate member \"tenants\"");
    FAILS("{'tenants':[{'id':'t','apps':[{'app_id':'a','secret':'s','secret_env':'A',"
          "'secret_env':'B'}]}]}",
          "$.tenants[0].apps[0]: duplicate member \"secret_env\"");
    FAILS("{}", "$: missing required property \"tenants\"");
    FAILS("[]", "$: expected object, got array");
    FAILS("{'tenants':[]}", "$.tenants: must have at least 1 item");
    FAILS("{'tenants':[{'id':'a','api_keyz':[]}]}", "$.tenants[0]: unknown property \"api_keyz\"");
    FAILS("{'tenants':[{'id':'a:b'}]}",
          "$.tenants[0].id: does not match the pattern \"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$\"");
    FAILS(CFG("", "", TOOL("9lives", VERSION("1", ""), "")),
          "$.tools[0].name: does not match the pattern \"^[A-Za-z][A-Za-z0-9_.-]*$\"");
    FAILS(CFG("", "",
              TOOL("a123456789012345678901234567890123456789012345678901", VERSION("1", ""), "")),
          "$.tools[0].name: must be at most 50 characters long");
    cJSON *doc = LOAD(CFG(
        "", "", TOOL("a12345678901234567890123456789012345678901234567_.", VERSION("1", ""), "")));
    cJSON_Delete(doc);
    FAILS(CFG("", "", TOOL("t", VERSION_BARE("1", ",'timeout_ms':99"), "")),
          "$.tools[0].versions[0].timeout_ms: must be >= 100");
    FAILS(CFG("", "", TOOL("t", VERSION_BARE("1", ",'timeout_ms':86400001"), "")),
          "$.tools[0].versions[0].timeout_ms: must be <= 86400000");
    FAILS(CFG("", "", TOOL("t", VERSION("1", ",'mode':'async'"), "")),
          "$.tools[0].versions[0].mode: must be one of \"sync\", \"task\"");
    FAILS(CFG("", "", TOOL("t", "", "")), "$.tools[0].versions: must have at least 1 item");
    FAILS(CFG("", "",
              TOOL("t",
                   "{'version':'1','inputSchema':{'type':'string'},'executor':{'type':'builtin','"
                   "name':'echo'}}",
                   "")),
          "$.tools[0].versions[0].inputSchema.type: must be \"object\"");
    FAILS(CFG("", "", TOOL("t", "{'version':'1','executor':{'type':'builtin','name':'echo'}}", "")),
          "$.tools[0].versions[0]: missing required property \"inputSchema\"");
    /* executors: the branch named by "type" reports */
    const char *head = "{'version':'1','inputSchema':{'type':'object'},'executor':";
    char cfg[1024];
    static const char *const cases[][2] = {
        {"{'type':'exec'}", "$.tools[0].versions[0].executor: missing required property \"argv\""},
        {"{'type':'exec','argv':[]}",
         "$.tools[0].versions[0].executor.argv: must have at least 1 item"},
        {"{'type':'exec','argv':['/bin/sh',1]}",
         "$.tools[0].versions[0].executor.argv[1]: expected string, got integer"},
        {"{'type':'exec','argv':['x'],'url':'http://x'}",
         "$.tools[0].versions[0].executor: unknown property \"url\""},
        {"{'type':'builtin','name':'cat'}",
         "$.tools[0].versions[0].executor.name: must be one of \"echo\", \"sleep\", \"fail\", "
         "\"confirm\", \"test_elicitation\", \"test_sampling\", "
         "\"test_elicitation_sep1034_defaults\", \"test_elicitation_sep1330_enums\""},
        {"{'type':'exec','argv':['x'],'interactive':'yes'}",
         "$.tools[0].versions[0].executor.interactive: expected boolean, got string"},
        {"{'type':'http'}", "$.tools[0].versions[0].executor: missing required property \"url\""},
        {"{'type':'http','url':'http://x','headers':{'X-A':1}}",
         "$.tools[0].versions[0].executor.headers.X-A: expected string, got integer"},
        {"{'type':'mcp','url':'http://x'}",
         "$.tools[0].versions[0].executor: missing required property \"tool\""},
        {"{'type':'mcp','tool':'x'}",
         "$.tools[0].versions[0].executor: does not match any alternative: (1) missing required "
         "property \"url\"; (2) missing required property \"command\""},
        {"{'type':'mcp','tool':'x','url':'http://x','command':'npx'}",
         "$.tools[0].versions[0].executor: must match exactly one alternative, but matches 1 (an "
         "HTTP upstream: url) and 2 (a stdio upstream: command)"},
        {"{'type':'mcp','tool':'x','command':'npx','env':{'TOKEN':'literal'}}",
         "$.tools[0].versions[0].executor.env.TOKEN: an mcp executor's env values are "
         "references read on the worker, {\"env\": \"WORKER_VAR\"} or {\"file\": \"/path\"}, "
         "never literal values, which the registry would store"},
        {"{'type':'mcp','tool':'x','command':'npx','env':{'PW':{'env':'MCPQ_REDIS_PASSWORD'}}}",
         "$.tools[0].versions[0].executor.env.PW: MCPQ_REDIS_PASSWORD is a setting of mcpq itself; "
         "its keys and passwords are never passed to an upstream (name another variable of the "
         "worker)"},
        {"{'type':'mcp','tool':'x','command':'npx','env':{'TOKEN':{'env':'A','file':'/f'}}}",
         "$.tools[0].versions[0].executor.env.TOKEN: must have at most 1 property"},
        {"{'type':'mcp','tool':'x','command':'npx','env':{'TOKEN':{'file':'relative'}}}",
         "$.tools[0].versions[0].executor.env.TOKEN.file: does not match the pattern \"^/\""},
        {"{'type':'mcp','tool':'x','command':'npx','limits':{'processes':17}}",
         "$.tools[0].versions[0].executor.limits.processes: must be <= 16"},
        {"{'type':'mcp','tool':'x','command':'npx','limits':{'threads':2}}",
         "$.tools[0].versions[0].executor.limits: unknown property \"threads\""},
        {"{'type':'agent','url':'http://x','secret':'plain'}",
         "$.tools[0].versions[0].executor.secret: does not match the pattern "
         "\"^whsec_[A-Za-z0-9+/]+={0,2}$\""},
        {"{'type':'rpc'}",
         "$.tools[0].versions[0].executor.type: must be one of \"builtin\", \"http\", \"exec\", "
         "\"mcp\", \"agent\""},
        {"{'name':'echo'}", "$.tools[0].versions[0].executor: missing required property \"type\""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        snprintf(cfg, sizeof(cfg), CFG("", "", TOOL("t", "%s%s}", "")), head, cases[i][0]);
        FAILS(cfg, cases[i][1]);
    }
    doc = LOAD(CFG(
        "", "",
        TOOL("t",
             "{'version':'1','inputSchema':{'type':'object'},'executor':{'type':"
             "'exec','argv':['/bin/sh','-c','true'],'env':{'A':'1'},'cwd':'/tmp'}}",
             "") "," TOOL("m",
                          "{'version':'1','inputSchema':{'type':'object'},'executor':"
                          "{'type':'mcp','url':'https://up.example/mcp','tool':'x',"
                          "'headers':{'Authorization':'Bearer t'}}}",
                          "") "," TOOL("s",
                                       "{'version':'1','inputSchema':{'type':'object'},'executor':"
                                       "{'type':'mcp','command':'npx','args':['-y','srv'],'tool':"
                                       "'x','env':{'TOKEN':{'env':'W_TOKEN'},'KEY':{'file':'/k'}},"
                                       "'cwd':'/srv','limits':{'processes':2,'concurrency':4,"
                                       "'idle_ms':1000,'start_timeout_ms':5000,"
                                       "'restart_backoff_ms':0}}}",
                                       "")));
    cJSON_Delete(doc);
    TEST_PASS("schema errors");
}

static void test_syntax_errors(void)
{
    const char *t1 = "{\n  \"tenants\": [\n    {\"id\": }\n  ]\n}\n";
    CHECK(cfg_load_string(t1, strlen(t1), err, sizeof(err)) == NULL);
    CHECK_STR_EQ(err, "line 3, column 12: invalid JSON");
    const char *t2 = "{\"tenants\": [{\"id\": \"a\"}]} x";
    CHECK(cfg_load_string(t2, strlen(t2), err, sizeof(err)) == NULL);
    CHECK_STR_EQ(err, "line 1, column 28: unexpected text after the JSON document");
    const char *t3 = "{\"tenants\": [{\"id\": \"\xff\"}]}";
    CHECK(cfg_load_string(t3, strlen(t3), err, sizeof(err)) == NULL);
    CHECK_STR_EQ(err, "line 1, column 22: invalid UTF-8");
    const char t4[] = "{\"tenants\": [{\"id\": \"a\"}]}\0{}";
    CHECK(cfg_load_string(t4, sizeof(t4) - 1, err, sizeof(err)) == NULL);
    CHECK_STR_EQ(err, "line 1, column 27: NUL byte in the text");
    const char *t5 = "{\"tenants\": [{\"id\": \"a\"";
    CHECK(cfg_load_string(t5, strlen(t5), err, sizeof(err)) == NULL);
    CHECK_CONTAINS(err, "line 1, column ");
    CHECK(cfg_load_string("", 0, err, sizeof(err)) == NULL);
    CHECK_STR_EQ(err, "line 1, column 1: invalid JSON");
    CHECK(cfg_load_string(NULL, 5, err, sizeof(err)) == NULL);
    /* a string that is not NUL-terminated is read for len bytes only */
    const char *t6 = "{\"tenants\": [{\"id\": \"a\"}]}GARBAGE";
    cJSON *doc = cfg_load_string(t6, strlen(t6) - 7, err, sizeof(err));
    CHECK(doc != NULL);
    cJSON_Delete(doc);
    CHECK(cfg_load_string(t1, strlen(t1), NULL, 0) == NULL); /* no errstr is fine */
    TEST_PASS("syntax errors");
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    CHECK_INT_EQ(fwrite(text, 1, strlen(text), f), strlen(text));
    CHECK_INT_EQ(fclose(f), 0);
}

static void test_files(void)
{
    char dir[] = "/tmp/mcpq-test-config-XXXXXX", path[128];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof(path), "%s/mcpq.json", dir);
    write_file(path, "{\"tenants\": [{\"id\": \"a\", \"default_server\": \"x\"}]}");
    CHECK(cfg_load_file(path, err, sizeof(err)) == NULL);
    char want[256];
    snprintf(want, sizeof(want),
             "%s: $.tenants[0].default_server: tenant \"a\" has no server \"x\"", path);
    CHECK_STR_EQ(err, want);
    write_file(path, "{\n\"tenants\": [}");
    CHECK(cfg_load_file(path, err, sizeof(err)) == NULL);
    snprintf(want, sizeof(want), "%s: line 2, column 13: invalid JSON", path);
    CHECK_STR_EQ(err, want);
    write_file(path, "{\"tenants\": [{\"id\": \"a\"}]}\n");
    cJSON *doc = cfg_load_file(path, err, sizeof(err));
    CHECK(doc != NULL);
    cJSON_Delete(doc);

    /* a file past the bound is refused without reading it all into a parser */
    int fd = open(path, O_WRONLY | O_TRUNC);
    CHECK(fd >= 0);
    CHECK_INT_EQ(ftruncate(fd, (off_t)CFG_MAX_BYTES + 1), 0);
    close(fd);
    CHECK(cfg_load_file(path, err, sizeof(err)) == NULL);
    CHECK_CONTAINS(err, "larger than 16777216 bytes");
    unlink(path);

    snprintf(path, sizeof(path), "%s/missing.json", dir);
    CHECK(cfg_load_file(path, err, sizeof(err)) == NULL);
    snprintf(want, sizeof(want), "%s: cannot open: No such file or directory", path);
    CHECK_STR_EQ(err, want);
    CHECK(cfg_load_file(dir, err, sizeof(err)) == NULL);
    CHECK_CONTAINS(err, "cannot read: Is a directory");
    CHECK(cfg_load_file(NULL, err, sizeof(err)) == NULL);
    CHECK_INT_EQ(rmdir(dir), 0);
    TEST_PASS("files");
}

/* App secrets of at least 32 bytes (MCPQ_APP_SECRET_MIN_BYTES), literal or from the
 * environment, current or previous; the message names the app, never the secret. */
static void test_app_secret_minimum(void)
{
    setenv("MCPQ_TEST_SHORT", "0123456789012345678901234567890", 1); /* 31 bytes */
    setenv("MCPQ_TEST_LONG", "01234567890123456789012345678901", 1); /* 32 bytes */
    cJSON *doc =
        LOAD("{'tenants':[{'id':'a','apps':[{'app_id':'ok1','secret_env':'MCPQ_TEST_LONG'},"
             "{'app_id':'ok2','secret':'01234567890123456789012345678901',"
             "'previous_secret':'01234567890123456789012345678901'}]}]}");
    CHECK_INT_EQ(cfg_check_app_secrets(doc, 32, err, sizeof(err)), 0);
    cJSON_Delete(doc);
    static const char *const bad[][2] = {
        {"{'tenants':[{'id':'a'},{'id':'b','apps':[{'app_id':'ok','secret_env':'MCPQ_TEST_LONG'},"
         "{'app_id':'b-app','secret':'0123456789012345678901234567890'}]}]}",
         "$.tenants[1].apps[1]: the secret of app \"b-app\" is 31 bytes; app secrets must be at "
         "least 32 bytes"},
        {"{'tenants':[{'id':'a','apps':[{'app_id':'env-app','secret_env':'MCPQ_TEST_SHORT'}]}]}",
         "$.tenants[0].apps[0]: the secret of app \"env-app\" is 31 bytes"},
        {"{'tenants':[{'id':'a','apps':[{'app_id':'x','secret_env':'MCPQ_TEST_LONG',"
         "'previous_secret':'short'}]}]}",
         "$.tenants[0].apps[0]: the previous_secret of app \"x\" is 5 bytes"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        doc = LOAD(bad[i][0]);
        CHECK_INT_EQ(cfg_check_app_secrets(doc, 32, err, sizeof(err)), MCPQ_EINVAL);
        CHECK_CONTAINS(err, bad[i][1]);
        CHECK_CONTAINS(err, "MCPQ_APP_SECRET_MIN_BYTES");
        CHECK(strstr(err, "0123456789") == NULL);
        CHECK_INT_EQ(cfg_check_app_secrets(doc, 5, err, sizeof(err)), 0); /* a lower minimum */
        cJSON_Delete(doc);
    }
    TEST_PASS("app secrets under 32 bytes are refused, naming the app");
}

/* The shape of the acceptance suite's config (lib/config.mjs buildConfig). */
static void test_acceptance_config(void)
{
    char hex[65];
    cJSON *doc = cfg_load_file("tests/unit/common/data/acceptance-config.json", err, sizeof(err));
    if (!doc)
        fprintf(stderr, "%s\n", err);
    CHECK(doc != NULL);
    CHECK_INT_EQ(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "tenants")), 2);
    CHECK_INT_EQ(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "servers")), 3);
    CHECK_INT_EQ(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "tools")), 22);
    const cJSON *acme = at(doc, "tenants", 0, NULL), *globex = at(doc, "tenants", 1, NULL);
    util_sha256_hex("acme-key-1", 10, hex);
    CHECK_STR_EQ(str_at(at(acme, "api_keys", 0, NULL), "sha256"), hex);
    util_sha256_hex("globex-key-1", 12, hex);
    CHECK_STR_EQ(str_at(at(globex, "api_keys", 0, NULL), "sha256"), hex);
    CHECK_STR_EQ(str_at(at(acme, "apps", 0, NULL), "secret"), "acme-app-secret");
    /* Its app secret is 15 bytes: only a lowered MCPQ_APP_SECRET_MIN_BYTES (scripts/mcpq-local
     * sets 1) lets an ingress load it. */
    CHECK_INT_EQ(cfg_check_app_secrets(doc, CFG_APP_SECRET_MIN, err, sizeof(err)), MCPQ_EINVAL);
    CHECK_CONTAINS(err, "the secret of app \"acme-app\" is 15 bytes");
    CHECK_INT_EQ(cfg_check_app_secrets(doc, 1, err, sizeof(err)), 0);
    const cJSON *tool;
    int versioned = 0;
    cJSON_ArrayForEach(tool, cJSON_GetObjectItemCaseSensitive(doc, "tools"))
    {
        if (strcmp(str_at(tool, "name"), "versioned") == 0) {
            versioned = 1;
            CHECK_STR_EQ(str_at(tool, "published"), "2");
        }
    }
    CHECK(versioned);
    char *text = cJSON_PrintUnformatted(doc);
    CHECK(strstr(text, "acme-key-1") == NULL);
    cJSON_free(text);
    cJSON_Delete(doc);
    TEST_PASS("acceptance config");
}

/* deploy/local/mcpq.json, the local stack's config (tracked in git). */
static void test_local_config(void)
{
    const char *path = "deploy/local/mcpq.json";
    CHECK(access(path, F_OK) == 0); /* tracked in git: the local stack needs it */
    cJSON *doc = cfg_load_file(path, err, sizeof(err));
    if (!doc)
        fprintf(stderr, "%s\n", err);
    CHECK(doc != NULL);
    if (cfg_check_app_secrets(doc, CFG_APP_SECRET_MIN, err, sizeof(err)) < 0)
        fprintf(stderr, "%s\n", err);
    CHECK_INT_EQ(cfg_check_app_secrets(doc, CFG_APP_SECRET_MIN, err, sizeof(err)), 0);
    cJSON_Delete(doc);
    TEST_PASS("local config (its app secret is long enough for a production ingress)");
}

#define OAUTH(EXTRA) "{'id':'a','oauth':{'issuers':['https://idp.example.com/r/a']" EXTRA "}}"

static void test_oauth(void)
{
    setenv("CFG_TEST_INTRO_SECRET", "from-env", 1);
    cJSON *doc = LOAD("{'tenants':[{'id':'a','api_keys':[{'id':'k','key':'some-key-12345',"
                      "'scopes':['tools','crm:write']}],'apps':[{'app_id':'billing','secret':"
                      "'0123456789abcdef0123456789abcdef','scopes':['tools']}],"
                      "'oauth':{'issuers':['https://idp.example.com/r/a','http://localhost:8080/x',"
                      "'http://[::1]/y'],'audiences':['api://mcpq'],'claims':{'tenant':'org_id',"
                      "'tenant_value':'org_123','user':'sub','app':'azp'},"
                      "'scopes':{'mcp:tools':['tools'],'mcp:admin':['tools','admin']},"
                      "'scopes_supported':['mcp:tools'],'introspection':{'endpoint':"
                      "'https://idp.example.com/i','client_id':'mcpq','client_secret_env':"
                      "'CFG_TEST_INTRO_SECRET'}}}]}");
    const cJSON *t = at(doc, "tenants", 0, NULL);
    /* the key keeps its scopes through normalization; the secret is resolved */
    const cJSON *k = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(t, "api_keys"), 0);
    CHECK_INT_EQ(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(k, "scopes")), 2);
    CHECK(str_at(k, "key") == NULL);
    const cJSON *intro = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(t, "oauth"), "introspection");
    CHECK_STR_EQ(str_at(intro, "client_secret"), "from-env");
    CHECK(!cJSON_HasObjectItem(intro, "client_secret_env"));
    cJSON_Delete(doc);

    FAILS("{'tenants':[" OAUTH(",'issuers':[]") "]}",
          "$.tenants[0].oauth: duplicate member \"issuers\"");
    FAILS("{'tenants':[{'id':'a','oauth':{'issuers':[]}}]}",
          "$.tenants[0].oauth.issuers: must have at least 1 item");
    FAILS("{'tenants':[{'id':'a','oauth':{'issuers':['https://idp.example.com',"
          "'http://idp.example.com/r']}}]}",
          "$.tenants[0].oauth.issuers[1]: must be https:// (http:// only to localhost, "
          "127.0.0.1 or [::1])");
    FAILS("{'tenants':[" OAUTH(",'jwks_uri':'http://10.0.0.1/jwks'") "]}",
          "$.tenants[0].oauth.jwks_uri: must be https:// (http:// only to localhost, 127.0.0.1 "
          "or [::1])");
    FAILS("{'tenants':[{'id':'a','oauth':{'issuers':['https://a.example','https://b.example'],"
          "'jwks_uri':'https://a.example/jwks'}}]}",
          "$.tenants[0].oauth.jwks_uri: allowed only with exactly one issuer (it has 2)");
    FAILS("{'tenants':[" OAUTH(",'claims':{'tenant_value':'x'}") "]}",
          "$.tenants[0].oauth.claims.tenant_value: needs claims.tenant (the claim it is compared "
          "with)");
    FAILS("{'tenants':[" OAUTH(",'scopes_supported':['mcp:tools','offline_access']") "]}",
          "$.tenants[0].oauth.scopes_supported[1]: \"offline_access\" is never advertised "
          "(refresh tokens are the authorization server's business)");
    FAILS("{'tenants':[" OAUTH(",'introspection':{'endpoint':'https://i.example','client_id':"
                               "'c','client_secret_env':'CFG_TEST_UNSET_VAR'}") "]}",
          "$.tenants[0].oauth.introspection.client_secret_env: environment variable "
          "\"CFG_TEST_UNSET_VAR\" is not set or empty");
    FAILS_C("{'tenants':[" OAUTH(",'scopes':{'a b':['x']}") "]}", "$.tenants[0].oauth.scopes");
    FAILS_C("{'tenants':[" OAUTH(",'claims':{'role':'x'}") "]}",
            "$.tenants[0].oauth.claims: unknown property \"role\"");
    /* two tenants trusting one issuer must each name their tenant claim */
    FAILS("{'tenants':[" OAUTH("") ",{'id':'b','oauth':{'issuers':['https://idp.example.com/r/b',"
                                   "'https://idp.example.com/r/a'],'claims':{'tenant':'org'}}}]}",
          "$.tenants[1].oauth.issuers[1]: issuer \"https://idp.example.com/r/a\" is trusted by "
          "tenant \"a\" ($.tenants[0]) too; tenants sharing an issuer must each set "
          "oauth.claims.tenant (a does not)");
    doc = LOAD(
        "{'tenants':[" OAUTH(",'claims':{'tenant':'org'}") ",{'id':'b','oauth':{'issuers':"
                                                           "['https://idp.example.com/r/"
                                                           "a'],'claims':{'tenant':'org'}}}]}");
    cJSON_Delete(doc);
    /* ... and agree on where its keys and introspection answers come from: one tenant may not
     * point another's issuer at keys or an introspection endpoint of its own */
#define SHARED(A, B)                                                                               \
    "{'tenants':[{'id':'a','oauth':{'issuers':['https://idp.example.com/r/a'],"                    \
    "'claims':{'tenant':'org'}" A "}},{'id':'b','oauth':{'issuers':['https://idp.example.com/r/a'" \
    "],'claims':{'tenant':'org'}" B "}}]}"
#define JWKS(U) ",'jwks_uri':'" U "'"
#define INTRO(E, C) ",'introspection':{'endpoint':'" E "','client_id':'" C "','client_secret':'s'}"
    FAILS(SHARED("", JWKS("https://evil.example.com/jwks")),
          "$.tenants[1].oauth.jwks_uri: issuer \"https://idp.example.com/r/a\" is trusted by "
          "tenant \"a\" ($.tenants[0]) too, with another jwks_uri; tenants sharing an issuer must "
          "name the same jwks_uri for it (or none)");
    FAILS(SHARED(JWKS("https://idp.example.com/jwks"), JWKS("https://evil.example.com/jwks")),
          "$.tenants[1].oauth.jwks_uri: issuer \"https://idp.example.com/r/a\" is trusted by "
          "tenant \"a\" ($.tenants[0]) too, with another jwks_uri; tenants sharing an issuer must "
          "name the same jwks_uri for it (or none)");
    FAILS(SHARED(JWKS("https://idp.example.com/jwks"), ""),
          "$.tenants[1].oauth.issuers[0]: issuer \"https://idp.example.com/r/a\" is trusted by "
          "tenant \"a\" ($.tenants[0]) too, with another jwks_uri; tenants sharing an issuer must "
          "name the same jwks_uri for it (or none)");
    FAILS(SHARED("", INTRO("https://evil.example.com/i", "c")),
          "$.tenants[1].oauth.introspection: issuer \"https://idp.example.com/r/a\" is trusted "
          "by tenant \"a\" ($.tenants[0]) too, with another introspection endpoint and "
          "client_id; tenants sharing an issuer must name the same introspection endpoint and "
          "client_id for it (or none)");
    FAILS_C(SHARED(INTRO("https://idp.example.com/i", "c"),
                   INTRO("https://idp.example.com/i", "other")),
            "$.tenants[1].oauth.introspection: issuer");
    FAILS_C(SHARED(INTRO("https://idp.example.com/i", "c"), ""),
            "$.tenants[1].oauth.issuers[0]: issuer \"https://idp.example.com/r/a\" is trusted "
            "by tenant \"a\" ($.tenants[0]) too, with another introspection endpoint");
    /* the same ones (the secrets aside) load; so does an issuer shared as a tenant's second,
     * which its introspection does not cover, when the other's does not either */
    doc = LOAD(SHARED(JWKS("https://idp.example.com/jwks") INTRO("https://idp.example.com/i", "c"),
                      JWKS("https://idp.example.com/jwks") ",'introspection':{'endpoint':'https://"
                                                           "idp.example.com/i','client_id':"
                                                           "'c','client_secret':'other'}"));
    cJSON_Delete(doc);
    doc = LOAD("{'tenants':[{'id':'a','oauth':{'issuers':['https://idp.example.com/r/a'],"
               "'claims':{'tenant':'org'}}},{'id':'b','oauth':{'issuers':['https://b.example',"
               "'https://idp.example.com/r/a'],'claims':{'tenant':'org'}" INTRO(
                   "https://b.example/i", "c") "}}]}");
    cJSON_Delete(doc);
#undef SHARED
#undef JWKS
#undef INTRO
    FAILS_C("{'tenants':[{'id':'a','api_keys':[{'id':'k','key':'some-key-12345','scopes':"
            "['has space']}]}]}",
            "$.tenants[0].api_keys[0].scopes[0]");
    TEST_PASS("oauth: kept with its secret resolved; bad URLs, claims, offline_access and "
              "shared issuers refused with their JSON path");
}

static void test_access(void)
{
    cJSON *doc =
        LOAD(CFG(",'apps':[{'app_id':'billing','secret':'0123456789abcdef0123456789abcdef'}]",
                 ",{'tenant':'acme','name':'crm','access':{'scopes':['crm:write']}}",
                 TOOL("echo", VERSION("1", ""),
                      ",'access':{'scopes':['tools'],'keys':['k1'],'apps':['billing'],"
                      "'users':['alice']}")));
    CHECK(cJSON_HasObjectItem(at(doc, "tools", 0, NULL), "access"));
    CHECK(cJSON_HasObjectItem(at(doc, "servers", 1, NULL), "access"));
    cJSON_Delete(doc);
    FAILS(CFG("", "", TOOL("echo", VERSION("1", ""), ",'access':{'keys':['k1','k9']}")),
          "$.tools[0].access.keys[1]: tenant \"acme\" has no API key \"k9\"");
    FAILS(CFG("", ",{'tenant':'acme','name':'crm','access':{'apps':['nope']}}", ""),
          "$.servers[1].access.apps[0]: tenant \"acme\" has no app \"nope\" (and takes no OAuth "
          "tokens whose app claim could name it)");
    /* an app of another tenant names nothing here */
    FAILS("{'tenants':[{'id':'a'},{'id':'b','apps':[{'app_id':'x','secret':"
          "'0123456789abcdef0123456789abcdef'}]}],'servers':[{'tenant':'a','name':'default',"
          "'access':{'apps':['x']}}]}",
          "$.servers[0].access.apps[0]: tenant \"a\" has no app \"x\" (and takes no OAuth tokens "
          "whose app claim could name it)");
    /* with OAuth, apps may name a token's client */
    doc = LOAD("{'tenants':[" OAUTH("") "],'servers':[{'tenant':'a','name':'default',"
                                        "'access':{'apps':['web-client']}}]}");
    cJSON_Delete(doc);
    FAILS(CFG("", "", TOOL("echo", VERSION("1", ""), ",'access':{'groups':['x']}")),
          "$.tools[0].access: unknown property \"groups\"");
    FAILS_C(CFG("", "", TOOL("echo", VERSION("1", ""), ",'access':{'scopes':'tools'}")),
            "$.tools[0].access.scopes: expected array");
    TEST_PASS("access: kept on servers and tools; unknown keys and apps, unknown members "
              "refused with their JSON path");
}

/* servers[].federate: an HTTP upstream (url, headers) or a stdio one (command, args, env as
 * references, cwd, limits), never both; pin; "federated" on tools. */
static void test_federate_entry(void)
{
#define FED(F)                                                                                     \
    CFG("", ",{'tenant':'acme','name':'up','federate':" F "}", TOOL("echo", VERSION("1", ""), ""))
    cJSON *doc = LOAD(FED("{'url':'https://up.example/mcp','headers':{'A':'b'},'pin':true}"));
    cJSON_Delete(doc);
    doc = LOAD(FED("{'command':'npx','args':['-y','pkg'],'env':{'TOKEN':{'env':'UP_TOKEN'},"
                   "'KEY':{'file':'/run/key'}},'cwd':'/srv','limits':{'processes':2},"
                   "'prefix':'fs_','timeout_ms':5000,'pin':false}"));
    cJSON_Delete(doc);
    FAILS_C(FED("{'url':'https://up.example/mcp','command':'npx'}"), "$.servers[1].federate");
    FAILS_C(FED("{'prefix':'x_'}"), "$.servers[1].federate");
    FAILS_C(FED("{'command':'npx','headers':{'A':'b'}}"), "$.servers[1].federate");
    FAILS_C(FED("{'command':'npx','env':{'TOKEN':'literal-secret'}}"),
            "$.servers[1].federate.env.TOKEN: expected object, got string");
    FAILS_C(FED("{'command':'npx','env':{'TOKEN':{'env':'A','file':'/b'}}}"),
            "$.servers[1].federate.env.TOKEN");
    FAILS_C(FED("{'command':'npx','env':{'K':{'env':'MCPQ_JOB_SIGNING_KEY'}}}"),
            "$.servers[1].federate.env.K: MCPQ_JOB_SIGNING_KEY is a setting of mcpq itself");
    FAILS_C(FED("{'url':'https://up.example/mcp','pin':'yes'}"),
            "$.servers[1].federate.pin: expected boolean, got string");
#undef FED
    doc = LOAD(CFG("", "", TOOL("echo", VERSION("1", ""), ",'federated':true")));
    cJSON_Delete(doc);
    FAILS(CFG("", "", TOOL("echo", VERSION("1", ""), ",'federated':1")),
          "$.tools[0].federated: expected boolean, got integer");
    TEST_PASS("federate: an HTTP or a stdio upstream, never both; env references only; pin; "
              "federated on tools");
}

#define KOBJ(KIND, NAME, VERSIONS)                                                                 \
    "{'kind':'" KIND "','tenant':'acme','server':'default','name':'" NAME                          \
    "','versions':[" VERSIONS "]}"
#define RES(NAME, URI, EXTRA) KOBJ("resource", NAME, "{'version':'1','uri':'" URI "'" EXTRA "}")

/* Resources, templates and prompts: each kind's version members, and the rules a schema
 * cannot state. */
static void test_kinds(void)
{
    cJSON *doc =
        LOAD(CFG("", "",
                 TOOL("echo", VERSION("1", ""), "") "," RES(
                     "readme", "file:///README.md",
                     ",'mimeType':'text/markdown','text':'# "
                     "hi'") "," KOBJ("resource_template", "logs",
                                     "{'version':'1','"
                                     "uriTemplate':'file:///"
                                     "logs/"
                                     "{day}.txt','text':'log "
                                     "of {day}',"
                                     "'completions':{'day':['"
                                     "2026-11-27','2026-11-28']"
                                     "}}") "," KOBJ("prompt", "greet",
                                                    "{'version'"
                                                    ":'1','"
                                                    "arguments'"
                                                    ":[{'name':"
                                                    "'who','"
                                                    "required':"
                                                    "true}],'"
                                                    "messages':"
                                                    "[{'role':"
                                                    "'user','"
                                                    "content':{"
                                                    "'type':'"
                                                    "text','"
                                                    "text':'"
                                                    "Hello "
                                                    "{{who}}'}}"
                                                    "],'"
                                                    "completion"
                                                    "s':{'who':"
                                                    "['world']}"
                                                    "}") "," RES("logo", "file:///logo.png",
                                                                 ",'blob':'iVBORw0KGgo='")));
    CHECK_STR_EQ(str_at(at(doc, "tools", 1, NULL), "kind"), "resource");
    CHECK_STR_EQ(str_at(at(doc, "tools", 1, NULL), "published"), "1");
    /* a tool's version gets mode "sync"; the other kinds have no mode */
    CHECK(!cJSON_HasObjectItem(cJSON_GetArrayItem(at(doc, "tools", 1, "versions"), 0), "mode"));
    CHECK(cJSON_HasObjectItem(cJSON_GetArrayItem(at(doc, "tools", 0, "versions"), 0), "mode"));
    CHECK_INT_EQ(cfg_kinds_sizes(doc, 12, err, sizeof(err)), 0);
    CHECK_INT_EQ(cfg_kinds_sizes(doc, 11, err, sizeof(err)), MCPQ_EINVAL);
    CHECK_STR_EQ(err, "$.tools[2].versions[0]: static content of 12 bytes; at most 11 "
                      "(MCPQ_RESOURCE_MAX_BYTES); larger content belongs to an executor");
    CHECK_INT_EQ(cfg_kinds_sizes(doc, 3, err, sizeof(err)), MCPQ_EINVAL);
    CHECK_CONTAINS(err, "$.tools[1].versions[0]: static content of 4 bytes");
    CHECK_INT_EQ(cfg_kinds_static_bytes(cJSON_GetArrayItem(at(doc, "tools", 4, "versions"), 0)), 8);
    cJSON_Delete(doc);

    /* one name space per tenant across kinds */
    FAILS(
        CFG("", "", TOOL("echo", VERSION("1", ""), "") "," RES("echo", "file:///e", ",'text':''")),
        "$.tools[1].name: duplicate tool name \"echo\" in tenant \"acme\" (also $.tools[0])");
    /* the kind selects the version members */
    FAILS_C(CFG("", "", KOBJ("resource", "r", "{'version':'1','text':'x'}")),
            "$.tools[0].versions[0]: missing required property \"uri\"");
    FAILS_C(CFG("", "", KOBJ("prompt", "p", "{'version':'1','uri':'a:b','messages':[]}")),
            "$.tools[0].versions[0]");
    FAILS_C(CFG("", "", KOBJ("widget", "w", "{'version':'1'}")), "$.tools[0].kind");
    FAILS_C(CFG("", "", RES("r", "not a uri", ",'text':'x'")), "$.tools[0].versions[0].uri");
    /* content: exactly one of text, blob, executor */
    FAILS(CFG("", "", RES("r", "file:///r", "")),
          "$.tools[0].versions[0]: missing its content: one of \"text\", \"blob\" or \"executor\"");
    FAILS(CFG("", "", RES("r", "file:///r", ",'text':'a','blob':'YQ=='")),
          "$.tools[0].versions[0]: has both \"text\" and \"blob\"; its content is one of them "
          "(static content, or an executor that produces it)");
    FAILS_C(CFG("", "",
                RES("r", "file:///r", ",'text':'a','executor':{'type':'builtin','name':'echo'}")),
            "has both \"text\" and \"executor\"");
    FAILS(CFG("", "", KOBJ("prompt", "p", "{'version':'1'}")),
          "$.tools[0].versions[0]: missing its content: one of \"messages\" or \"executor\"");
    /* blob: strict base64 */
    FAILS(CFG("", "", RES("r", "file:///r", ",'blob':'YQ'")),
          "$.tools[0].versions[0].blob: not standard base64 (RFC 4648 alphabet A-Z a-z 0-9 + /, "
          "padded with '=', no whitespace)");
    FAILS_C(CFG("", "", RES("r", "file:///r", ",'blob':'Y Q=='")), ".blob: not standard base64");
    /* uri unique among a server's published resources, not among versions or servers */
    FAILS(CFG("", "",
              RES("a", "file:///same", ",'text':'1'") "," RES("b", "file:///same", ",'text':'2'")),
          "$.tools[1].versions[0].uri: \"file:///same\" is the uri of a published resource of "
          "server \"default\" already ($.tools[0]); a server's published resources have "
          "distinct uris");
    doc = LOAD(CFG(
        "", ",{'tenant':'acme','name':'ops'}",
        RES("a", "file:///same", ",'text':'1'") ","
                                                "{'kind':'resource','tenant':'acme','server':'ops',"
                                                "'name':'b','versions':[{'version':'1',"
                                                "'uri':'file:///same','text':'2'}]}," KOBJ(
                                                    "resource", "c",
                                                    "{'version':'1','uri':'file:///same','text':"
                                                    "'3'},{'version':'2','uri':'file:///c','text':"
                                                    "'3'}")));
    cJSON_Delete(doc); /* c publishes version 2, another uri; b is on another server */
    FAILS_C(
        CFG("", "",
            RES("a", "file:///same", ",'text':'1'") ","
                                                    "{'kind':'resource','tenant':'acme','server':'"
                                                    "default','name':'c','published':'1',"
                                                    "'versions':[{'version':'1','uri':'file:///"
                                                    "same','text':'3'},{'version':'2',"
                                                    "'uri':'file:///c','text':'3'}]}"),
        "$.tools[1].versions[0].uri: \"file:///same\" is the uri of a published resource");
    /* uriTemplate: level 1 */
    FAILS(CFG("", "",
              KOBJ("resource_template", "t",
                   "{'version':'1','uriTemplate':'x://{+p}',"
                   "'text':'x'}")),
          "$.tools[0].versions[0].uriTemplate: the expression at byte 4 is not {name} with a "
          "name of 1-64 of [A-Za-z0-9_] (mcpq serves RFC 6570 level 1 templates only)");
    FAILS_C(
        CFG("", "",
            KOBJ("resource_template", "t", "{'version':'1','uriTemplate':'x://fixed','text':'x'}")),
        ".uriTemplate: has no {variable}");
    /* prompts: argument names unique, messages shaped as PromptMessage */
    FAILS(CFG("", "",
              KOBJ("prompt", "p",
                   "{'version':'1','arguments':[{'name':'a'},{'name':'b'},{'name':'a'}],"
                   "'messages':[{'role':'user','content':{'type':'text','text':'x'}}]}")),
          "$.tools[0].versions[0].arguments[2].name: duplicate argument \"a\" (also "
          "arguments[0])");
    FAILS_C(CFG("", "",
                KOBJ("prompt", "p",
                     "{'version':'1','messages':[{'role':'system','content':{'type':'text'}}]}")),
            "$.tools[0].versions[0].messages[0].role");
    FAILS_C(CFG("", "", KOBJ("prompt", "p", "{'version':'1','messages':[{'role':'user'}]}")),
            "$.tools[0].versions[0].messages[0]: missing required property \"content\"");
    /* completions name arguments or variables */
    FAILS(CFG("", "",
              KOBJ("prompt", "p",
                   "{'version':'1','arguments':[{'name':'a'}],'completions':{'b':['x']},"
                   "'messages':[{'role':'user','content':{'type':'text','text':'x'}}]}")),
          "$.tools[0].versions[0].completions.b: the prompt has no argument \"b\"");
    FAILS(CFG("", "",
              KOBJ("resource_template", "t",
                   "{'version':'1','uriTemplate':'x://{a}','text':'x','completions':{"
                   "'b':['x']}}")),
          "$.tools[0].versions[0].completions.b: the resource_template has no variable \"b\"");
    FAILS_C(CFG("", "",
                KOBJ("resource_template", "t",
                     "{'version':'1','uriTemplate':'x://{a}','text':'x','completions':{"
                     "'a':[1]}}")),
            "$.tools[0].versions[0].completions.a[0]: expected string");
    TEST_PASS("kinds: resources, templates and prompts checked; names shared across kinds; "
              "uri unique among published resources");
}

/* The mcp executor names the upstream tool only for a tool: a resource or a prompt it serves
 * needs none (a prompt names the upstream prompt). */
#define MCP_EXEC "'executor':{'type':'mcp','url':'https://up.example/mcp'"
static void test_kinds_mcp(void)
{
    cJSON *doc =
        LOAD(CFG("", "",
                 RES("remote", "up://readme", "," MCP_EXEC "}") "," KOBJ(
                     "prompt", "rgreet", "{'version':'1'," MCP_EXEC ",'prompt':'greet'}}")));
    CHECK_STR_EQ(str_at(at(doc, "tools", 1, NULL), "kind"), "prompt");
    cJSON_Delete(doc);
    FAILS(
        CFG("", "", TOOL("t", "{'version':'1','inputSchema':{'type':'object'}," MCP_EXEC "}}", "")),
        "$.tools[0].versions[0].executor: missing required property \"tool\"");
    TEST_PASS("mcp executor: a resource or prompt needs no upstream tool, a tool does");
}

int main(void)
{
    test_kinds_mcp();
    test_kinds();
    test_oauth();
    test_access();
    test_normalization();
    test_env_secrets();
    test_previous_secrets();
    test_app_secret_minimum();
    test_secret_formats();
    test_semantic_errors();
    test_schema_errors();
    test_federate_entry();
    test_rate_limits();
    test_robots_and_quotas();
    test_syntax_errors();
    test_files();
    test_acceptance_config();
    test_local_config();
    return 0;
}
