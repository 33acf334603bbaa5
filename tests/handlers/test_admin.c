/*
 * Tests ingress/api/admin.c through ing_admin_api with synthetic requests
 * (tests/handlers/harness.h): the API off, the operator token (401, then 429), Origin (403),
 * every route's success path (tenants, API keys, apps, servers, tools and their versions,
 * config export and apply, the config file's events, webhook deliveries) and its errors (400 naming
 * the JSON path, 404, 405 with Allow, 409, 412 on If-Match, 415). Writes are checked where a client
 * sees them: after hx_reload(), through ing_mcp_post with the key the API made. Also the config
 * file's load behind them (ing_regstore_seed): replicas racing to apply one change apply it once.
 */
#include "check.h"
#include "harness.h"
#include "names.h"

#include "admin.h"
#include "cfg.h"
#include "cfgwatch.h"
#include "regstore.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char config[] =
    "{\"tenants\": ["
    "  {\"id\": \"t\", \"api_keys\": [{\"id\": \"k\", \"key\": \"" HX_API_KEY "\"}]}],"
    " \"servers\": [{\"tenant\": \"t\", \"name\": \"default\"}],"
    " \"tools\": ["
    "  {\"tenant\": \"t\", \"server\": \"default\", \"name\": \"echo\", \"published\": \"1\","
    "   \"versions\": [{\"version\": \"1\", \"inputSchema\": {\"type\": \"object\"},"
    "    \"executor\": {\"type\": \"builtin\", \"name\": \"echo\"}}]}]}";

#define VERSION(v)                                                                                 \
    "{\"version\":\"" v "\",\"description\":\"d" v "\",\"inputSchema\":{\"type\":\"object\"},"     \
    "\"executor\":{\"type\":\"builtin\",\"name\":\"echo\"}}"

static hx_t h;

/* One admin request: expects status and, when text is not NULL, the error containing it. */
static void expect(const char *method, const char *url, const char *body, const char *if_match,
                   int status, const char *text)
{
    hx_admin_expect(&h, method, url, body, if_match, status, text);
}

/* The names of tools/list of the tenant whose API key is key, comma-joined into out. */
static void listed(const char *key, char *out, size_t size)
{
    char auth[160];
    snprintf(auth, sizeof(auth), "Bearer %s", key);
    const char *hdrs[] = {"Authorization", auth, NULL};
    hx_ex_t e;
    hx_mcp(&h, &e, NULL, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", hdrs);
    CHECK_INT_EQ(e.resp.status, 200);
    out[0] = '\0';
    const cJSON *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(hx_rpc_result(&e), "tools"))
    {
        size_t n = strlen(out);
        snprintf(out + n, size - n, "%s%s", n ? "," : "",
                 cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "name")));
    }
    hx_ex_free(&e);
}

/* Without MCPQ_ADMIN_TOKEN the API is off: 404 whatever the request carries. */
static void test_off(void)
{
    const char *token = h.set.admin_token;
    h.set.admin_token = NULL;
    expect("GET", "/admin/v1/tenants", NULL, NULL, 404, "the admin API is off");
    h.set.admin_token = token;
    expect("GET", "/admin/v1/tenants", NULL, NULL, 200, NULL);
}

static void test_auth(void)
{
    hx_ex_t e;
    hx_ex_init(&h, &e, "GET", "/admin/v1/tenants", NULL, 0, NULL);
    ing_admin_api(&e.req, "/admin/v1/tenants", "GET", &e.resp);
    CHECK_INT_EQ(e.resp.status, 401);
    CHECK_STR_EQ(e.resp.www_auth, "Bearer realm=\"mcpq-admin\"");
    hx_ex_parse(&e);
    CHECK_CONTAINS(hx_str(&e, "error"), "Authorization: Bearer <MCPQ_ADMIN_TOKEN>");
    hx_ex_free(&e);
    /* a tenant's API key is not the operator token */
    hx_ex_init(&h, &e, "GET", "/admin/v1/tenants", NULL, 1, NULL);
    ing_admin_api(&e.req, "/admin/v1/tenants", "GET", &e.resp);
    CHECK_INT_EQ(e.resp.status, 401);
    CHECK(e.resp.www_auth[0] != '\0');
    hx_ex_free(&e);
    /* an Origin not allowed: 403 even with the token */
    const char *hdrs[] = {"Authorization", "Bearer " HX_ADMIN_TOKEN, "Origin",
                          "https://evil.example", NULL};
    hx_ex_init(&h, &e, "GET", "/admin/v1/tenants", NULL, 0, hdrs);
    ing_admin_api(&e.req, "/admin/v1/tenants", "GET", &e.resp);
    CHECK_INT_EQ(e.resp.status, 403);
    hx_ex_parse(&e);
    CHECK_STR_EQ(hx_str(&e, "error"), "Origin or Host not allowed");
    hx_ex_free(&e);
}

/* Failed tokens count against the client address (MCPQ_AUTH_FAIL_PER_MIN, 20): then 429
 * with Retry-After, even for the right token from that address. Another address is not
 * affected. */
static void test_auth_limit(void)
{
    struct sockaddr_in sin = {.sin_family = AF_INET};
    inet_pton(AF_INET, "10.9.8.7", &sin.sin_addr);
    const char *wrong[] = {"Authorization", "Bearer not-the-token", NULL};
    const char *right[] = {"Authorization", "Bearer " HX_ADMIN_TOKEN, NULL};
    hx_ex_t e;
    int status = 0, i;
    for (i = 0; i < 40 && status != 429; i++) {
        hx_ex_init(&h, &e, "GET", "/admin/v1/tenants", NULL, 0, wrong);
        e.synth.client = (const struct sockaddr *)&sin;
        ing_admin_api(&e.req, "/admin/v1/tenants", "GET", &e.resp);
        status = e.resp.status;
        CHECK(status == 401 || status == 429);
        if (status == 429)
            CHECK(e.resp.retry_after_s > 0);
        hx_ex_free(&e);
    }
    CHECK_INT_EQ(status, 429);
    CHECK_INT_EQ(i, 21);
    hx_ex_init(&h, &e, "GET", "/admin/v1/tenants", NULL, 0, right);
    e.synth.client = (const struct sockaddr *)&sin;
    ing_admin_api(&e.req, "/admin/v1/tenants", "GET", &e.resp);
    CHECK_INT_EQ(e.resp.status, 429);
    hx_ex_parse(&e);
    CHECK_CONTAINS(hx_str(&e, "error"), "too many failed authentications");
    hx_ex_free(&e);
    expect("GET", "/admin/v1/tenants", NULL, NULL, 200, NULL); /* from 127.0.0.1 */
}

static void test_paths(void)
{
    expect("GET", "/admin/v2/tenants", NULL, NULL, 404, "the API is under /admin/v1");
    expect("GET", "/admin/v1", NULL, NULL, 404, "no such admin resource");
    expect("GET", "/admin/v1/bogus", NULL, NULL, 404, "no such admin resource");
    expect("GET", "/admin/v1/tenants/t/bogus", NULL, NULL, 404, "no such admin resource");
    hx_ex_t e;
    CHECK_INT_EQ(hx_admin(&h, &e, "PUT", "/admin/v1/tenants", "{}", NULL), 405);
    CHECK_STR_EQ(e.resp.allow, "GET, POST");
    CHECK_CONTAINS(hx_str(&e, "error"), "method PUT not allowed here");
    hx_ex_free(&e);
    /* HEAD is answered as GET */
    CHECK_INT_EQ(hx_admin(&h, &e, "HEAD", "/admin/v1/tenants/t", NULL, NULL), 200);
    CHECK_STR_EQ(hx_str(&e, "id"), "t");
    hx_ex_free(&e);
}

static void test_bodies(void)
{
    expect("POST", "/admin/v1/tenants", "{\"id\":", NULL, 400, "the body is not accepted JSON");
    expect("POST", "/admin/v1/tenants", "{\"id\":\"a\",\"id\":\"b\"}", NULL, 400,
           "duplicate member name");
    expect("POST", "/admin/v1/tenants", "[1]", NULL, 400, "the body must be a JSON object");
    expect("POST", "/admin/v1/tenants", "{\"id\":\"x\",\"nope\":1}", NULL, 400,
           "$.nope: unknown or read-only member");
    expect("POST", "/admin/v1/tenants", "{\"id\":\"bad id\"}", NULL, 400, "$.id");
    expect("POST", "/admin/v1/tenants", "{}", NULL, 400, "$");
    expect("POST", "/admin/v1/tenants", "{\"id\":\"q\",\"quotas\":{\"tasks\":\"many\"}}", NULL, 400,
           "$.quotas.tasks");
    hx_ex_t e;
    const char *hdrs[] = {"Authorization", "Bearer " HX_ADMIN_TOKEN, "Content-Type", "text/plain",
                          NULL};
    hx_ex_init(&h, &e, "POST", "/admin/v1/tenants", "{\"id\":\"x\"}", 0, hdrs);
    ing_admin_api(&e.req, "/admin/v1/tenants", "POST", &e.resp);
    CHECK_INT_EQ(e.resp.status, 415);
    hx_ex_free(&e);
}

static char acme_key[128];

static void test_tenants(void)
{
    hx_ex_t e;
    CHECK_INT_EQ(hx_admin(&h, &e, "POST", "/admin/v1/tenants", "{\"id\":\"acme\"}", NULL), 201);
    CHECK_STR_EQ(hx_str(&e, "id"), "acme");
    CHECK_STR_EQ(hx_str(&e, "default_server"), "default");
    char e0[32];
    snprintf(e0, sizeof(e0), "%s", hx_str(&e, "etag"));
    CHECK(strlen(e0) == 20);
    CHECK_STR_EQ(e.resp.etag, e0);
    hx_ex_free(&e);
    expect("POST", "/admin/v1/tenants", "{\"id\":\"acme\"}", NULL, 409,
           "tenant \"acme\" exists already");
    expect("GET", "/admin/v1/tenants/nope", NULL, NULL, 404, "no tenant \"nope\"");
    expect("GET", "/admin/v1/tenants/nope/servers", NULL, NULL, 404, "no tenant \"nope\"");
    expect("POST", "/admin/v1/tenants/acme", "{}", NULL, 405, NULL);

    /* the default server came with it */
    CHECK_INT_EQ(hx_admin(&h, &e, "GET", "/admin/v1/tenants/acme/servers", NULL, NULL), 200);
    CHECK_STR_EQ(hx_str(&e, "servers.0.name"), "default");
    hx_ex_free(&e);

    /* If-Match: a stale etag is 412 and changes nothing; the current one writes */
    const char *patch = "{\"rate_limits\":{\"api_key\":{\"per_second\":1000}}}";
    expect("PATCH", "/admin/v1/tenants/acme", patch, "\"00000000000000000000\"", 412,
           "If-Match: the object changed since it was read");
    char quoted[40];
    snprintf(quoted, sizeof(quoted), "\"%s\"", e0);
    CHECK_INT_EQ(hx_admin(&h, &e, "PATCH", "/admin/v1/tenants/acme", patch, quoted), 200);
    CHECK(strcmp(hx_str(&e, "etag"), e0) != 0);
    hx_ex_free(&e);
    expect("PATCH", "/admin/v1/tenants/acme", "{\"rate_limits\":null}", quoted, 412, NULL);
    expect("PATCH", "/admin/v1/tenants/acme", "{\"rate_limits\":null}", "*", 200, NULL);
    expect("PATCH", "/admin/v1/tenants/acme", "{\"id\":\"renamed\"}", NULL, 400,
           "$.id: unknown or read-only member");

    /* listing: filter, order, pages */
    CHECK_INT_EQ(hx_admin(&h, &e, "GET", "/admin/v1/tenants?filter=name = \"acme\"", NULL, NULL),
                 200);
    CHECK_INT_EQ(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(e.json, "tenants")), 1);
    hx_ex_free(&e);
    CHECK_INT_EQ(hx_admin(&h, &e, "GET", "/admin/v1/tenants?pageSize=1&orderBy=name", NULL, NULL),
                 200);
    CHECK_STR_EQ(hx_str(&e, "tenants.0.id"), "acme");
    CHECK(hx_str(&e, "nextPageToken") != NULL);
    hx_ex_free(&e);
    expect("GET", "/admin/v1/tenants?orderBy=colour", NULL, NULL, 400, "orderBy");
}

static void test_keys(void)
{
    hx_ex_t e;
    CHECK_INT_EQ(
        hx_admin(&h, &e, "POST", "/admin/v1/tenants/acme/apiKeys", "{\"id\":\"k1\"}", NULL), 201);
    const char *key = hx_str(&e, "key");
    CHECK(key && strncmp(key, "mcpq_", 5) == 0);
    snprintf(acme_key, sizeof(acme_key), "%s", key);
    hx_ex_free(&e);
    CHECK_INT_EQ(hx_admin(&h, &e, "GET", "/admin/v1/tenants/acme/apiKeys/k1", NULL, NULL), 200);
    CHECK_STR_EQ(hx_str(&e, "id"), "k1");
    CHECK(hx_str(&e, "key") == NULL); /* shown once */
    hx_ex_free(&e);
    expect("POST", "/admin/v1/tenants/acme/apiKeys", "{\"id\":\"k1\"}", NULL, 409,
           "$.id: API key \"k1\" exists already");
    expect("POST", "/admin/v1/tenants/acme/apiKeys", "{\"id\":\"k9\",\"key_env\":\"X\"}", NULL, 400,
           "the admin API takes literal secrets");
    /* a key's scopes and rate_limit change; its hash does not */
    expect("PATCH", "/admin/v1/tenants/acme/apiKeys/k1", "{\"sha256\":\"00\"}", NULL, 400,
           "$.sha256: unknown or read-only member");
    expect("PUT", "/admin/v1/tenants/acme/apiKeys/k1", "{}", NULL, 405, NULL);
    expect("POST", "/admin/v1/tenants/acme/apiKeys/k1:rotateSecret", NULL, NULL, 404, NULL);
    expect("GET", "/admin/v1/tenants/acme/apiKeys/nope", NULL, NULL, 404,
           "tenant \"acme\" has no API key \"nope\"");

    /* the new key works once the registry is reloaded; deleted, it does not */
    hx_reload(&h);
    char names[256];
    listed(acme_key, names, sizeof(names));
    CHECK_STR_EQ(names, "");
    CHECK_INT_EQ(
        hx_admin(&h, &e, "POST", "/admin/v1/tenants/acme/apiKeys", "{\"id\":\"k2\"}", NULL), 201);
    char k2[128];
    snprintf(k2, sizeof(k2), "Bearer %s", hx_str(&e, "key"));
    hx_ex_free(&e);
    expect("DELETE", "/admin/v1/tenants/acme/apiKeys/k2", NULL, NULL, 204, NULL);
    expect("GET", "/admin/v1/tenants/acme/apiKeys/k2", NULL, NULL, 404, NULL);
    hx_reload(&h);
    const char *hdrs[] = {"Authorization", k2, NULL};
    hx_mcp(&h, &e, NULL, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", hdrs);
    CHECK_INT_EQ(e.resp.status, 401);
    hx_ex_free(&e);
}

static void test_apps(void)
{
    hx_ex_t e;
    CHECK_INT_EQ(
        hx_admin(&h, &e, "POST", "/admin/v1/tenants/acme/apps", "{\"app_id\":\"acme-app\"}", NULL),
        201);
    char secret[128];
    snprintf(secret, sizeof(secret), "%s", hx_str(&e, "secret"));
    CHECK(strlen(secret) == 64);
    hx_ex_free(&e);
    CHECK_INT_EQ(
        hx_admin(&h, &e, "POST", "/admin/v1/tenants/acme/apps/acme-app:rotateSecret", NULL, NULL),
        200);
    CHECK(hx_str(&e, "secret") && strcmp(hx_str(&e, "secret"), secret) != 0);
    hx_ex_free(&e);
    expect("POST", "/admin/v1/tenants/acme/apps/acme-app:rotateSecret", "{\"grace_s\":-1}", NULL,
           400, "$.grace_s: must be an integer");
    expect("GET", "/admin/v1/tenants/acme/apps/acme-app:rotateSecret", NULL, NULL, 405, NULL);
    expect("POST", "/admin/v1/tenants/acme/apps/acme-app:frob", NULL, NULL, 404, NULL);
    expect("POST", "/admin/v1/tenants/t/apps", "{\"app_id\":\"acme-app\"}", NULL, 409,
           "app ids are unique across tenants");
    expect("PATCH", "/admin/v1/tenants/acme/apps/acme-app", "{\"signature_version\":3}", NULL, 400,
           "$.signature_version");
    expect("PATCH", "/admin/v1/tenants/acme/apps/acme-app", "{\"signature_version\":2}", NULL, 200,
           NULL);
    expect("DELETE", "/admin/v1/tenants/acme/apps/acme-app", NULL, NULL, 204, NULL);
    expect("GET", "/admin/v1/tenants/acme/apps/acme-app", NULL, NULL, 404, NULL);
}

static void test_servers(void)
{
    hx_ex_t e;
    CHECK_INT_EQ(hx_admin(&h, &e, "POST", "/admin/v1/tenants/acme/servers",
                          "{\"name\":\"other\",\"description\":\"more tools\"}", NULL),
                 201);
    CHECK_STR_EQ(hx_str(&e, "name"), "other");
    hx_ex_free(&e);
    expect("POST", "/admin/v1/tenants/acme/servers", "{\"name\":\"other\"}", NULL, 409,
           "$.name: server \"other\" exists already");
    /* the built-in "system" server: every kind of change is 403 (docs/api.md), never applied */
#define SYSTEM_403 "\"system\" is the built-in server and cannot be changed"
    expect("POST", "/admin/v1/tenants/acme/servers", "{\"name\":\"system\"}", NULL, 403,
           "$.name: " SYSTEM_403);
    expect("PATCH", "/admin/v1/tenants/acme/servers/system", "{\"description\":\"x\"}", NULL, 403,
           SYSTEM_403);
    expect("DELETE", "/admin/v1/tenants/acme/servers/system", NULL, NULL, 403, SYSTEM_403);
    expect("POST", "/admin/v1/tenants/acme/tools",
           "{\"name\":\"sys_tool\",\"server\":\"system\",\"version\":" VERSION("1") "}", NULL, 403,
           "$.server: " SYSTEM_403);
    expect("POST", "/admin/v1/tenants", "{\"id\":\"sys-t\",\"default_server\":\"system\"}", NULL,
           403, "$.default_server: " SYSTEM_403);
    expect("GET", "/admin/v1/tenants/sys-t", NULL, NULL, 404, NULL);
    expect("PATCH", "/admin/v1/tenants/acme", "{\"default_server\":\"system\"}", NULL, 403,
           "$.default_server: " SYSTEM_403);
    expect("PUT", "/admin/v1/config", "{\"servers\":[{\"tenant\":\"acme\",\"name\":\"system\"}]}",
           NULL, 403, "$.servers[0].name: " SYSTEM_403);
    expect("PUT", "/admin/v1/config",
           "{\"tools\":[{\"tenant\":\"acme\",\"server\":\"system\",\"name\":\"sys_tool\","
           "\"versions\":[" VERSION("1") "]}]}",
           NULL, 403, "$.tools[0].server: " SYSTEM_403);
    expect("PUT", "/admin/v1/config",
           "{\"tenants\":[{\"id\":\"acme\",\"default_server\":\"system\"}]}", NULL, 403,
           "$.tenants[0].default_server: " SYSTEM_403);
    expect("GET", "/admin/v1/tenants/acme/tools/sys_tool", NULL, NULL, 404, NULL);
#undef SYSTEM_403
    expect("DELETE", "/admin/v1/tenants/acme/servers/default", NULL, NULL, 409, "default_server");
    expect("GET", "/admin/v1/tenants/acme/servers/nope", NULL, NULL, 404,
           "tenant \"acme\" has no server \"nope\"");
    CHECK_INT_EQ(hx_admin(&h, &e, "PATCH", "/admin/v1/tenants/acme/servers/other",
                          "{\"description\":\"changed\"}", NULL),
                 200);
    CHECK_STR_EQ(hx_str(&e, "description"), "changed");
    hx_ex_free(&e);
}

static void test_tools(void)
{
    hx_ex_t e;
    CHECK_INT_EQ(hx_admin(&h, &e, "POST", "/admin/v1/tenants/acme/tools",
                          "{\"name\":\"calc\",\"version\":" VERSION("1") "}", NULL),
                 201);
    CHECK(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(e.json, "published")));
    hx_ex_free(&e);
    expect("POST", "/admin/v1/tenants/acme/tools",
           "{\"name\":\"calc\",\"server\":\"other\",\"version\":" VERSION("1") "}", NULL, 409,
           "tenant \"acme\" has a tool \"calc\" already");
    expect("POST", "/admin/v1/tenants/acme/tools",
           "{\"name\":\"1calc\",\"version\":" VERSION("1") "}", NULL, 400, "$.name");
    expect("POST", "/admin/v1/tenants/acme/tools", "{\"name\":\"x\"}", NULL, 400,
           "$.version: required");
    expect("POST", "/admin/v1/tenants/acme/tools",
           "{\"name\":\"x\",\"server\":\"nope\",\"version\":" VERSION("1") "}", NULL, 400,
           "$.server: tenant \"acme\" has no server \"nope\"");
    expect("POST", "/admin/v1/tenants/acme/tools",
           "{\"name\":\"x\",\"publish\":1,\"version\":" VERSION("1") "}", NULL, 400,
           "$.publish: expected a boolean");
    expect("POST", "/admin/v1/tenants/acme/tools",
           "{\"name\":\"x\",\"version\":{\"version\":\"1\",\"executor\":{\"type\":\"builtin\","
           "\"name\":\"echo\"},\"inputSchema\":{\"type\":\"object\",\"properties\":{\"bad_\":"
           "{}}}}}",
           NULL, 400, "$.inputSchema.properties: parameter name \"bad_\"");
    expect("GET", "/admin/v1/tenants/acme/tools/nope", NULL, NULL, 404,
           "tenant \"acme\" has no tool \"nope\"");
    CHECK_INT_EQ(hx_admin(&h, &e, "PUT", "/admin/v1/tenants/acme/tools/calc", "{}", NULL), 405);
    CHECK_STR_EQ(e.resp.allow, "GET, PATCH");
    hx_ex_free(&e);
    CHECK_INT_EQ(hx_admin(&h, &e, "GET", "/admin/v1/tenants/acme/tools", NULL, NULL), 200);
    CHECK_STR_EQ(hx_str(&e, "tools.0.name"), "calc");
    hx_ex_free(&e);
    expect("GET", "/admin/v1/tenants/acme/tools?pageSize=x", NULL, NULL, 400, "pageSize");
    /* A custom method only where docs/openapi.json has one: elsewhere 404, not ignored. */
    expect("GET", "/admin/v1/tenants/acme/tools:x", NULL, NULL, 404, "no such admin resource");
    expect("GET", "/admin/v1/tenants/acme:x", NULL, NULL, 404, "no such admin resource");
    expect("GET", "/admin/v1/tenants/acme/deliveries:x", NULL, NULL, 404, "no such admin resource");
    expect("GET", "/admin/v1/tenants/acme/tools/calc:x", NULL, NULL, 404, "tools take :rename");
    CHECK_INT_EQ(hx_admin(&h, &e, "GET", "/admin/v1/tenants/acme/tools/calc:rename", NULL, NULL),
                 405);
    CHECK_STR_EQ(e.resp.allow, "POST");
    hx_ex_free(&e);

    /* rename */
    CHECK_INT_EQ(hx_admin(&h, &e, "POST", "/admin/v1/tenants/acme/tools/calc:rename",
                          "{\"name\":\"calc2\"}", NULL),
                 200);
    CHECK_STR_EQ(hx_str(&e, "name"), "calc2");
    hx_ex_free(&e);
    expect("GET", "/admin/v1/tenants/acme/tools/calc", NULL, NULL, 404, NULL);
}

static void test_versions(void)
{
    const char *base = "/admin/v1/tenants/acme/tools/calc2/versions";
    char url[200];
    hx_ex_t e;
    CHECK_INT_EQ(hx_admin(&h, &e, "POST", base,
                          "{\"version\":\"2\",\"from_version\":\"1\",\"description\":\"two\"}",
                          NULL),
                 201);
    CHECK_STR_EQ(hx_str(&e, "description"), "two");
    hx_ex_free(&e);
    expect("POST", base, "{\"version\":\"2\",\"from_version\":\"1\"}", NULL, 409,
           "$.version: tool \"calc2\" has a version \"2\" already");
    expect("POST", base, "{\"version\":\"3\",\"from_version\":\"9\"}", NULL, 400,
           "$.from_version: the tool has no version \"9\"");
    expect("PUT", base, "{}", NULL, 405, NULL);
    /* a stdio mcp executor's env holds references read on the worker, never values */
    expect("POST", base,
           "{\"version\":\"3\",\"from_version\":\"1\",\"executor\":{\"type\":\"mcp\","
           "\"command\":\"npx\",\"tool\":\"echo\",\"env\":{\"TOKEN\":\"plain\"}}}",
           NULL, 400,
           "$.executor.env.TOKEN: an mcp executor's env values are references read on the worker");
    expect("POST", base,
           "{\"version\":\"3\",\"from_version\":\"1\",\"executor\":{\"type\":\"mcp\","
           "\"command\":\"npx\",\"url\":\"http://up.example/mcp\",\"tool\":\"echo\"}}",
           NULL, 400, "must match exactly one alternative");
    CHECK_INT_EQ(hx_admin(&h, &e, "POST", base,
                          "{\"version\":\"3\",\"from_version\":\"1\",\"executor\":{\"type\":"
                          "\"mcp\",\"command\":\"npx\",\"args\":[\"-y\",\"srv\"],\"tool\":"
                          "\"echo\",\"env\":{\"TOKEN\":{\"env\":\"W_TOKEN\"}},\"limits\":{"
                          "\"processes\":2}}}",
                          NULL),
                 201);
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
                     cJSON_GetObjectItemCaseSensitive(
                         cJSON_GetObjectItemCaseSensitive(
                             cJSON_GetObjectItemCaseSensitive(e.json, "executor"), "env"),
                         "TOKEN"),
                     "env")),
                 "W_TOKEN");
    hx_ex_free(&e);
    snprintf(url, sizeof(url), "%s/3", base);
    expect("DELETE", url, NULL, NULL, 204, NULL);
    expect("GET", "/admin/v1/tenants/acme/tools/nope/versions", NULL, NULL, 404, NULL);
    snprintf(url, sizeof(url), "%s/9", base);
    expect("GET", url, NULL, NULL, 404, "tool \"calc2\" has no version \"9\"");
    snprintf(url, sizeof(url), "%s/2:frob", base);
    expect("POST", url, NULL, NULL, 404, "versions take :publish and :offline");

    /* not published: offline is 409; publish shows it to clients */
    snprintf(url, sizeof(url), "%s/2:offline", base);
    expect("POST", url, NULL, NULL, 409, "is not published");
    snprintf(url, sizeof(url), "%s/2:publish", base);
    expect("POST", url, NULL, NULL, 200, NULL);
    hx_reload(&h);
    char names[256];
    listed(acme_key, names, sizeof(names));
    CHECK_STR_EQ(names, "calc2");
    snprintf(url, sizeof(url), "%s/2", base);
    expect("DELETE", url, NULL, NULL, 409, "is published: offline it first");
    expect("PATCH", url, "{\"description\":\"x\"}", NULL, 409, NULL);
    snprintf(url, sizeof(url), "%s/1", base);
    CHECK_INT_EQ(hx_admin(&h, &e, "PATCH", url, "{\"description\":\"one\"}", NULL), 200);
    CHECK_STR_EQ(hx_str(&e, "description"), "one");
    char quoted[40];
    snprintf(quoted, sizeof(quoted), "\"%s\"", hx_str(&e, "etag"));
    hx_ex_free(&e);
    expect("DELETE", url, NULL, "\"00000000000000000000\"", 412, NULL);
    expect("DELETE", url, NULL, quoted, 204, NULL);
    expect("GET", url, NULL, NULL, 404, NULL);
    snprintf(url, sizeof(url), "%s/2:offline", base);
    expect("POST", url, NULL, NULL, 200, NULL);
    hx_reload(&h);
    listed(acme_key, names, sizeof(names));
    CHECK_STR_EQ(names, "");
}

/* A tenant that takes opaque tokens through its own introspection endpoint. */
#define INTROSPECTING(ID)                                                                          \
    "{\"id\":\"" ID "\",\"oauth\":{\"issuers\":[\"https://idp.example.com/" ID "\"],"              \
    "\"introspection\":{\"endpoint\":\"https://idp.example.com/" ID "/i\",\"client_id\":\"c\","    \
    "\"client_secret\":\"s\"}}}"

static void test_config(void)
{
    hx_ex_t e;
    CHECK_INT_EQ(hx_admin(&h, &e, "GET", "/admin/v1/config", NULL, NULL), 200);
    CHECK(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(e.json, "tenants")));
    char *text = cJSON_PrintUnformatted(e.json);
    CHECK(strstr(text, HX_API_KEY) == NULL); /* no secret in the export */
    hx_ex_free(&e);
    /* the redacted export applied back changes nothing */
    CHECK_INT_EQ(hx_admin(&h, &e, "PUT", "/admin/v1/config", text, NULL), 200);
    free(text);
    CHECK(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(e.json, "revision")));
    CHECK_INT_EQ((int)cJSON_GetObjectItemCaseSensitive(e.json, "created")->valuedouble, 0);
    CHECK_INT_EQ((int)cJSON_GetObjectItemCaseSensitive(e.json, "updated")->valuedouble, 0);
    CHECK_INT_EQ((int)cJSON_GetObjectItemCaseSensitive(e.json, "deleted")->valuedouble, 0);
    hx_ex_free(&e);
    /* a new tenant applied (without prune nothing goes) */
    CHECK_INT_EQ(hx_admin(&h, &e, "PUT", "/admin/v1/config",
                          "{\"tenants\":[{\"id\":\"fresh\",\"api_keys\":[{\"id\":\"f\","
                          "\"key\":\"fresh-key-0123456789\"}]}],\"servers\":[{\"tenant\":"
                          "\"fresh\",\"name\":\"default\"}]}",
                          NULL),
                 200);
    CHECK((int)cJSON_GetObjectItemCaseSensitive(e.json, "created")->valuedouble >= 1);
    CHECK_INT_EQ((int)cJSON_GetObjectItemCaseSensitive(e.json, "deleted")->valuedouble, 0);
    CHECK(cJSON_GetObjectItemCaseSensitive(e.json, "warnings") == NULL);
    hx_ex_free(&e);
    /* two tenants that introspect opaque tokens, both with a server "both": applied, with a
     * warning for each place opaque tokens are ambiguous (docs/authorization.md) */
    CHECK_INT_EQ(hx_admin(&h, &e, "PUT", "/admin/v1/config",
                          "{\"tenants\":[" INTROSPECTING("ia") "," INTROSPECTING(
                              "ib") "],"
                                    "\"servers\":[{\"tenant\":\"ia\",\"name\":\"both\"},"
                                    "{\"tenant\":\"ib\",\"name\":\"both\"}]}",
                          NULL),
                 200);
    const cJSON *warnings = cJSON_GetObjectItemCaseSensitive(e.json, "warnings");
    CHECK_INT_EQ(cJSON_GetArraySize(warnings), 2);
    CHECK_CONTAINS(cJSON_GetStringValue(cJSON_GetArrayItem(warnings, 0)),
                   "opaque tokens are ambiguous at /mcp and /v1: 2 tenants");
    CHECK_CONTAINS(cJSON_GetStringValue(cJSON_GetArrayItem(warnings, 1)),
                   "opaque tokens are ambiguous at /mcp/both: 2 tenants");
    hx_ex_free(&e);
    expect("DELETE", "/admin/v1/tenants/ia", NULL, NULL, 204, NULL);
    expect("DELETE", "/admin/v1/tenants/ib", NULL, NULL, 204, NULL);
    expect("GET", "/admin/v1/tenants/fresh", NULL, NULL, 200, NULL);
    expect("GET", "/admin/v1/tenants/acme", NULL, NULL, 200, NULL);
    expect("PUT", "/admin/v1/config", "{\"tenants\":5}", NULL, 400, "tenants");
    expect("PUT", "/admin/v1/config", "{", NULL, 400, "the body is not accepted JSON");
    CHECK_INT_EQ(hx_admin(&h, &e, "POST", "/admin/v1/config", "{}", NULL), 405);
    CHECK_STR_EQ(e.resp.allow, "GET, PUT");
    hx_ex_free(&e);
    expect("GET", "/admin/v1/config:export", NULL, NULL, 404, NULL);
}

/* GET /admin/v1/config/events: what ing_cfgwatch_record wrote, newest first. */
static void test_config_events(void)
{
    hx_ex_t e;
    CHECK_INT_EQ(hx_admin(&h, &e, "GET", "/admin/v1/config/events", NULL, NULL), 200);
    CHECK_INT_EQ(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(e.json, "events")), 0);
    hx_ex_free(&e);
    struct timeval tv = {5, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", h.fx.redis_port, tv);
    CHECK(c != NULL && !c->err);
    ing_cfgwatch_t w;
    ing_cfgwatch_init(&w, &h.set);
    snprintf(w.seen, sizeof(w.seen), "%064d", 7);
    ing_regstore_summary_t sum = {.created = 2, .rev = 41};
    CHECK_INT_EQ(ing_cfgwatch_record(&w, c, "replica-1", "applied", NULL, &sum), 0);
    redisReply *r = hx_redis(&h, "RPUSH %s %s", NAMES_KEY_CONFIG_EVENTS, "not json");
    freeReplyObject(r);
    CHECK_INT_EQ(ing_cfgwatch_record(&w, c, "replica-2", "refused", "bad: $.tools", NULL), 0);
    CHECK_INT_EQ(hx_admin(&h, &e, "GET", "/admin/v1/config/events", NULL, NULL), 200);
    CHECK_INT_EQ(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(e.json, "events")), 2);
    CHECK_STR_EQ(hx_str(&e, "events.0.result"), "refused");
    CHECK_STR_EQ(hx_str(&e, "events.0.instance"), "replica-2");
    CHECK_STR_EQ(hx_str(&e, "events.0.error"), "bad: $.tools");
    CHECK_STR_EQ(hx_str(&e, "events.1.result"), "applied");
    CHECK_STR_EQ(hx_str(&e, "events.1.sha256"), w.seen);
    const cJSON *ev = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(e.json, "events"), 1);
    CHECK_INT_EQ(cJSON_GetObjectItemCaseSensitive(ev, "revision")->valuedouble, 41);
    CHECK_INT_EQ(cJSON_GetObjectItemCaseSensitive(ev, "created")->valuedouble, 2);
    hx_ex_free(&e);
    /* only the last ING_CFGWATCH_EVENTS are kept */
    for (int i = 0; i < ING_CFGWATCH_EVENTS + 5; i++)
        CHECK_INT_EQ(ing_cfgwatch_record(&w, c, "replica-3", "refused", "again", NULL), 0);
    r = hx_redis(&h, "LLEN %s", NAMES_KEY_CONFIG_EVENTS);
    CHECK_INT_EQ(r->integer, ING_CFGWATCH_EVENTS);
    freeReplyObject(r);
    redisFree(c);
    CHECK_INT_EQ(hx_admin(&h, &e, "POST", "/admin/v1/config/events", "{}", NULL), 405);
    CHECK_STR_EQ(e.resp.allow, "GET");
    hx_ex_free(&e);
    expect("GET", "/admin/v1/config/events/x", NULL, NULL, 404, NULL);
}

/* One replica's load of a changed config file (refresh.c): its own connection, started with
 * the others at once. */
typedef struct seeder {
    int port, applied, rc;
    const cJSON *cfg;
    pthread_barrier_t *go;
} seeder_t;

static void *seed_thread(void *arg)
{
    seeder_t *s = arg;
    struct timeval tv = {5, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", s->port, tv);
    char err[256];
    ing_regstore_summary_t sum;
    pthread_barrier_wait(s->go);
    s->rc =
        c && !c->err ? ing_regstore_seed(c, s->cfg, 0, &s->applied, &sum, err, sizeof(err)) : -1;
    if (c)
        redisFree(c);
    return NULL;
}

static long long registry_rev(void)
{
    redisReply *r = hx_redis(&h, "GET %s", NAMES_KEY_REGISTRY_REV);
    long long rev = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : -1;
    freeReplyObject(r);
    return rev;
}

/* Replicas seeing one change of the config file at once: exactly one applies it, the revision
 * moves once; the same file again changes nothing; a file whose documents the registry already
 * holds writes only its mark, which does not move the revision. */
static void test_config_seed(void)
{
    enum { N = 6 };
    char err[512];
#define SEEDED(key)                                                                                \
    "{\"tenants\":[{\"id\":\"seeded\",\"api_keys\":[{\"id\":\"s\",\"key\":\"" key "\"}]}],"        \
    "\"servers\":[{\"tenant\":\"seeded\",\"name\":\"default\"}]}"
    const char *text = SEEDED("seeded-key-0123456789");
    for (int round = 0; round < 5; round++) {
        char doc[1024];
        snprintf(doc, sizeof(doc), SEEDED("seeded-key-0123456789-%d"), round);
        cJSON *cfg = cfg_load_string(doc, strlen(doc), err, sizeof(err));
        if (!cfg)
            fprintf(stderr, "%s\n", err);
        CHECK(cfg != NULL);
        long long rev0 = registry_rev();
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, N);
        seeder_t s[N];
        pthread_t th[N];
        for (int i = 0; i < N; i++) {
            s[i] = (seeder_t){.port = h.fx.redis_port, .cfg = cfg, .go = &go};
            CHECK_INT_EQ(pthread_create(&th[i], NULL, seed_thread, &s[i]), 0);
        }
        int applied = 0;
        for (int i = 0; i < N; i++) {
            pthread_join(th[i], NULL);
            CHECK_INT_EQ(s[i].rc, 0);
            applied += s[i].applied;
        }
        pthread_barrier_destroy(&go);
        CHECK_INT_EQ(applied, 1);
        CHECK_INT_EQ(registry_rev(), rev0 + 1);
        cJSON_Delete(cfg);
    }
    /* the documents as the file has them already (written by --apply): only the mark is new */
    cJSON *cfg = cfg_load_string(text, strlen(text), err, sizeof(err));
    CHECK(cfg != NULL);
    struct timeval tv = {5, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", h.fx.redis_port, tv);
    CHECK(c != NULL && !c->err);
    ing_regstore_summary_t sum;
    CHECK_INT_EQ(ing_regstore_apply(c, cfg, 0, &sum, err, sizeof(err)), 0);
    long long rev0 = registry_rev();
    int applied = 0;
    CHECK_INT_EQ(ing_regstore_seed(c, cfg, 0, &applied, &sum, err, sizeof(err)), 0);
    CHECK_INT_EQ(applied, 1);
    CHECK_INT_EQ(sum.rev, rev0);
    CHECK_INT_EQ(registry_rev(), rev0);
    CHECK_INT_EQ(ing_regstore_seed(c, cfg, 0, &applied, &sum, err, sizeof(err)), 0);
    CHECK_INT_EQ(applied, 0);
    CHECK_INT_EQ(registry_rev(), rev0);
    redisFree(c);
    cJSON_Delete(cfg);
}

static void test_deliveries(void)
{
    hx_ex_t e;
    CHECK_INT_EQ(hx_admin(&h, &e, "GET", "/admin/v1/tenants/t/deliveries", NULL, NULL), 200);
    CHECK_INT_EQ(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(e.json, "deliveries")), 0);
    hx_ex_free(&e);
    expect("GET", "/admin/v1/tenants/t/deliveries?limit=0", NULL, NULL, 400, "limit");
    expect("POST", "/admin/v1/tenants/t/deliveries", NULL, NULL, 405, NULL);
    expect("POST", "/admin/v1/tenants/t/deliveries/msg_0123456789abcdef_1:redeliver", NULL, NULL,
           404, "no such delivery");
    expect("GET", "/admin/v1/tenants/t/deliveries/msg_0123456789abcdef_1:redeliver", NULL, NULL,
           405, NULL);
    expect("GET", "/admin/v1/tenants/t/deliveries/msg_0123456789abcdef_1", NULL, NULL, 404,
           "deliveries take :redeliver");
}

/* Deleting a tenant removes it with its servers and tools. */
static void test_delete_tenant(void)
{
    expect("DELETE", "/admin/v1/tenants/acme/servers/other", NULL, NULL, 204, NULL);
    expect("DELETE", "/admin/v1/tenants/acme", NULL, NULL, 204, NULL);
    expect("GET", "/admin/v1/tenants/acme", NULL, NULL, 404, NULL);
    expect("GET", "/admin/v1/tenants/acme/tools/calc2", NULL, NULL, 404, NULL);
    redisReply *r = hx_redis(&h, "HEXISTS " NAMES_KEY_REGISTRY " tool:acme:calc2");
    CHECK(r && r->type == REDIS_REPLY_INTEGER && r->integer == 0);
    freeReplyObject(r);
    hx_reload(&h);
    hx_ex_t e;
    char auth[160];
    snprintf(auth, sizeof(auth), "Bearer %s", acme_key);
    const char *hdrs[] = {"Authorization", auth, NULL};
    hx_mcp(&h, &e, NULL, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", hdrs);
    CHECK_INT_EQ(e.resp.status, 401);
    hx_ex_free(&e);
}

/* An admin write with the browser's headers of another site is 403 (docs/console.md,
 * "Security"), even with the operator token; the same write from the console's own origin, a
 * read from anywhere and a client that sends no Origin go through. */
static void test_cross_site(void)
{
    static const char *const refused[][4] = {
        {"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"},
        {"Origin", "https://evil.example", "Host", "127.0.0.1:9090"},
        {"Origin", "http://127.0.0.1:9091", "Host", "127.0.0.1:9090"},
        {"Origin", "null", "Host", "127.0.0.1:9090"},
        {"Origin", "http://127.0.0.1:9090", NULL, NULL},
    };
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        const char *hdrs[] = {"Authorization",
                              "Bearer " HX_ADMIN_TOKEN,
                              "Content-Type",
                              "application/json",
                              refused[i][0],
                              refused[i][1],
                              refused[i][2],
                              refused[i][3],
                              NULL};
        hx_ex_t e;
        hx_ex_init(&h, &e, "POST", "/admin/v1/tenants", "{\"id\": \"csrf\"}", 0, hdrs);
        ing_admin_api(&e.req, "/admin/v1/tenants", "POST", &e.resp);
        hx_ex_parse(&e);
        CHECK_INT_EQ(e.resp.status, 403);
        CHECK_CONTAINS(hx_str(&e, "error"), "cross-site write refused");
        hx_ex_free(&e);
    }
    expect("GET", "/admin/v1/tenants/csrf", NULL, NULL, 404, NULL); /* nothing was written */

    static const char *const allowed[][6] = {
        {"Sec-Fetch-Site", "same-origin", "Origin", "http://127.0.0.1:9090", "Host",
         "127.0.0.1:9090"},
        {"Sec-Fetch-Site", "none", NULL, NULL, NULL, NULL},
    };
    const char *methods[] = {"POST", "DELETE"};
    for (size_t i = 0; i < 2; i++) {
        const char *hdrs[] = {"Authorization",
                              "Bearer " HX_ADMIN_TOKEN,
                              "Content-Type",
                              "application/json",
                              allowed[i][0],
                              allowed[i][1],
                              allowed[i][2],
                              allowed[i][3],
                              allowed[i][4],
                              allowed[i][5],
                              NULL};
        const char *url = i == 0 ? "/admin/v1/tenants" : "/admin/v1/tenants/csrf";
        hx_ex_t e;
        hx_ex_init(&h, &e, methods[i], url, i == 0 ? "{\"id\": \"csrf\"}" : NULL, 0, hdrs);
        ing_admin_api(&e.req, url, methods[i], &e.resp);
        CHECK_INT_EQ(e.resp.status, i == 0 ? 201 : 204);
        hx_ex_free(&e);
    }
    /* A read is never refused: it changes nothing, and the browser hides its answer. */
    const char *hdrs[] = {"Authorization", "Bearer " HX_ADMIN_TOKEN, "Sec-Fetch-Site", "cross-site",
                          NULL};
    hx_ex_t e;
    hx_ex_init(&h, &e, "GET", "/admin/v1/tenants", NULL, 0, hdrs);
    ing_admin_api(&e.req, "/admin/v1/tenants", "GET", &e.resp);
    CHECK_INT_EQ(e.resp.status, 200);
    hx_ex_free(&e);
}

/* Without Redis: 503. */
static void test_redis_down(void)
{
    CHECK_INT_EQ(fx_stop_pid(h.fx.redis_pid, 5000), 0);
    h.fx.redis_pid = 0;
    expect("GET", "/admin/v1/tenants", NULL, NULL, 503, "(Redis) unavailable; try again");
}

int main(void)
{
    hx_start(&h, config, NULL);
    test_off();
    test_auth();
    test_paths();
    test_bodies();
    test_tenants();
    test_keys();
    test_apps();
    test_servers();
    test_tools();
    test_versions();
    test_config();
    test_config_events();
    test_config_seed();
    test_deliveries();
    test_delete_tenant();
    test_auth_limit();
    test_cross_site();
    test_redis_down();
    hx_stop(&h);
    return 0;
}
