/*
 * Tests per-tool authorization (ingress/core/access.c) where callers meet it: tools/list
 * filtered for each API key and app, a hidden tool called answered exactly as an unknown one,
 * the server-level rule, the system server's list_tools, and MCP Tasks of a hidden tool
 * (tests/handlers/harness.h).
 */
#include "check.h"
#include "harness.h"

#include "batch.h"
#include "frontdoor.h"
#include "mcptasks.h"
#include "names.h"
#include "toolcall.h"
#include "rpc.h"
#include "sig.h"
#include "tasksapi.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NONE_KEY "none-key-0123456789"
#define CRM_KEY "crm-key-0123456789"
#define APP_SECRET "billing-secret-0123456789abcdef0123456789"

static const char config[] =
    "{\"tenants\": [{\"id\": \"t\", \"api_keys\": ["
    "   {\"id\": \"k\", \"key\": \"" HX_API_KEY "\", \"scopes\": [\"tools\"]},"
    "   {\"id\": \"k-none\", \"key\": \"" NONE_KEY "\"},"
    "   {\"id\": \"k-crm\", \"key\": \"" CRM_KEY "\", \"scopes\": [\"tools\", \"crm:write\"]}],"
    "  \"apps\": [{\"app_id\": \"billing\", \"secret\": \"" APP_SECRET "\","
    "   \"scopes\": [\"tools\"]}]}],"
    " \"servers\": [{\"tenant\": \"t\", \"name\": \"default\"},"
    "  {\"tenant\": \"t\", \"name\": \"crm\", \"access\": {\"scopes\": [\"crm:write\"]}}],"
    " \"tools\": ["
    "  {\"tenant\": \"t\", \"server\": \"default\", \"name\": \"open\", \"published\": \"1\","
    "   \"versions\": [{\"version\": \"1\", \"inputSchema\": {\"type\": \"object\"},"
    "    \"executor\": {\"type\": \"builtin\", \"name\": \"echo\"}}]},"
    "  {\"tenant\": \"t\", \"server\": \"default\", \"name\": \"needs_tools\","
    "   \"access\": {\"scopes\": [\"tools\"]}, \"published\": \"1\","
    "   \"versions\": [{\"version\": \"1\", \"inputSchema\": {\"type\": \"object\"},"
    "    \"executor\": {\"type\": \"builtin\", \"name\": \"echo\"}}]},"
    "  {\"tenant\": \"t\", \"server\": \"default\", \"name\": \"ci_only\","
    "   \"access\": {\"keys\": [\"k-crm\"]}, \"published\": \"1\","
    "   \"versions\": [{\"version\": \"1\", \"mode\": \"task\", \"inputSchema\": {\"type\": "
    "\"object\"},"
    "    \"executor\": {\"type\": \"builtin\", \"name\": \"echo\"}}]},"
    "  {\"tenant\": \"t\", \"server\": \"default\", \"name\": \"app_only\","
    "   \"access\": {\"apps\": [\"billing\"]}, \"published\": \"1\","
    "   \"versions\": [{\"version\": \"1\", \"inputSchema\": {\"type\": \"object\"},"
    "    \"executor\": {\"type\": \"builtin\", \"name\": \"echo\"}}]},"
    "  {\"tenant\": \"t\", \"server\": \"crm\", \"name\": \"crm_write\", \"published\": \"1\","
    "   \"versions\": [{\"version\": \"1\", \"inputSchema\": {\"type\": \"object\"},"
    "    \"executor\": {\"type\": \"builtin\", \"name\": \"echo\"}}]}]}";

static hx_t h;

/* Authorization: Bearer key, as headers for hx_mcp. */
#define AS(key)                                                                                    \
    (const char *const[])                                                                          \
    {                                                                                              \
        "Authorization", "Bearer " key, NULL                                                       \
    }

/* The tool names of a tools/list answer, comma-separated, into out. */
static const char *names_of(const hx_ex_t *e, char *out, size_t n)
{
    const cJSON *t;
    size_t len = 0;
    out[0] = '\0';
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(hx_rpc_result(e), "tools"))
    {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "name"));
        len += (size_t)snprintf(out + len, n - len, "%s%s", len ? "," : "", name ? name : "?");
    }
    return out;
}

static void list_as(const char *server, const char *const hdrs[], const char *want)
{
    hx_ex_t e;
    char got[512];
    hx_mcp(&h, &e, server, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", hdrs);
    CHECK_INT_EQ(e.resp.status, 200);
    CHECK_INT_EQ(hx_rpc_code(&e), 0);
    CHECK_STR_EQ(names_of(&e, got, sizeof(got)), want);
    hx_ex_free(&e);
}

/* The X-App-Id/X-Timestamp/X-Nonce/X-Signature headers of app billing for POST /mcp[/server]
 * with body, into hdrs (strings in buf). */
static void signed_as_app(const char *server, const char *body, const char *hdrs[9],
                          char buf[3][80])
{
    static unsigned counter;
    char uri[64], *canonical;
    snprintf(uri, sizeof(uri), "/mcp%s%s", server ? "/" : "", server ? server : "");
    snprintf(buf[0], 80, "%lld", (long long)time(NULL));
    snprintf(buf[1], 80, "nonce-access-%u-%lld", counter++, (long long)util_mono_ms());
    canonical = sig_canonical("POST", uri, buf[0], buf[1], body, strlen(body));
    CHECK(canonical != NULL);
    util_hmac_sha256_hex(APP_SECRET, strlen(APP_SECRET), canonical, strlen(canonical), buf[2]);
    free(canonical);
    const char *v[] = {"X-App-Id", "billing",     "X-Timestamp", buf[0], "X-Nonce",
                       buf[1],     "X-Signature", buf[2],        NULL};
    memcpy(hdrs, v, sizeof(v));
}

static void test_list(void)
{
    list_as(NULL, AS(HX_API_KEY), "needs_tools,open");
    list_as(NULL, AS(NONE_KEY), "open");
    list_as(NULL, AS(CRM_KEY), "ci_only,needs_tools,open");
    /* the server-level rule: every tool of crm needs crm:write */
    list_as("crm", AS(HX_API_KEY), "");
    list_as("crm", AS(CRM_KEY), "crm_write");
    /* an app: by its app id and its scopes */
    static const char body[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}";
    const char *hdrs[9];
    char buf[3][80], got[512];
    signed_as_app(NULL, body, hdrs, buf);
    hx_ex_t e;
    hx_mcp(&h, &e, NULL, body, hdrs);
    CHECK_INT_EQ(e.resp.status, 200);
    CHECK_STR_EQ(names_of(&e, got, sizeof(got)), "app_only,needs_tools,open");
    hx_ex_free(&e);
    TEST_PASS("tools/list shows each key and app only the tools it may see");
}

/* tools/call of name as hdrs: the answer's status and body with name replaced by "X". */
static char *call_masked(const char *server, const char *name, const char *const hdrs[],
                         int *status)
{
    char body[512];
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"%s\","
             "\"arguments\":{}}}",
             name);
    hx_ex_t e;
    hx_mcp(&h, &e, server, body, hdrs);
    CHECK(!e.parked);
    *status = e.resp.status;
    CHECK(e.resp.www_auth[0] == '\0');
    char *out = strdup(e.resp.body ? e.resp.body : "");
    for (char *p; (p = strstr(out, name));)
        memmove(p + 1, p + strlen(name), strlen(p + strlen(name)) + 1), *p = 'X';
    hx_ex_free(&e);
    return out;
}

static void expect_as_unknown(const char *server, const char *name, const char *const hdrs[])
{
    int s_hidden, s_unknown;
    char *hidden = call_masked(server, name, hdrs, &s_hidden);
    char *unknown = call_masked(server, "no_such_tool_here", hdrs, &s_unknown);
    CHECK_INT_EQ(s_hidden, s_unknown);
    CHECK_STR_EQ(hidden, unknown);
    CHECK_CONTAINS(hidden, "Unknown tool: X");
    free(hidden);
    free(unknown);
}

static void test_call_hidden(void)
{
    expect_as_unknown(NULL, "ci_only", AS(HX_API_KEY));    /* not named in keys */
    expect_as_unknown(NULL, "app_only", AS(CRM_KEY));      /* not named in apps */
    expect_as_unknown(NULL, "needs_tools", AS(NONE_KEY));  /* lacks a permission */
    expect_as_unknown("crm", "crm_write", AS(HX_API_KEY)); /* the server's rule */
    /* the same call by a caller it is for goes to a worker (it parks waiting for one) */
    hx_ex_t e;
    hx_mcp(&h, &e, "crm",
           "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":"
           "\"crm_write\",\"arguments\":{\"text\":\"hi\"}}}",
           AS(CRM_KEY));
    CHECK(e.parked);
    hx_ex_free(&e);
    TEST_PASS("a hidden tool called is answered exactly as an unknown tool");
}

static void test_system_list_tools(void)
{
    hx_ex_t e;
    char got[512];
    size_t len = 0;
    hx_mcp(&h, &e, "system",
           "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":"
           "\"list_tools\",\"arguments\":{}}}",
           AS(HX_API_KEY));
    CHECK_INT_EQ(hx_rpc_code(&e), 0);
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(hx_rpc_result(&e), "structuredContent");
    const cJSON *t;
    got[0] = '\0';
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(sc, "tools"))
    {
        len += (size_t)snprintf(got + len, sizeof(got) - len, "%s%s", len ? "," : "",
                                cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "name")));
    }
    CHECK_STR_EQ(got, "needs_tools,open");
    hx_ex_free(&e);
    TEST_PASS("the system server's list_tools leaves out the tools the caller may not see");
}

/* A REST request (tasksapi.h) as hdrs: its status; with want, the body must contain it. */
static int rest(const char *method, const char *url, const char *const hdrs[], const char *want)
{
    hx_ex_t e;
    hx_ex_init(&h, &e, method, url, NULL, 1, hdrs);
    ing_tasksapi_route(&e.req, url, method, &e.resp);
    int status = e.resp.status;
    if (want)
        CHECK_CONTAINS(e.resp.body, want);
    hx_ex_free(&e);
    return status;
}

static void test_tasks(void)
{
    static const char *const v1125_crm[] = {"MCP-Protocol-Version", "2025-11-25", "Authorization",
                                            "Bearer " CRM_KEY, NULL};
    static const char *const v1125_k[] = {"MCP-Protocol-Version", "2025-11-25", "Authorization",
                                          "Bearer " HX_API_KEY, NULL};
    hx_ex_t e;
    hx_mcp(&h, &e, NULL,
           "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":"
           "\"ci_only\",\"arguments\":{},\"task\":{\"ttl\":60000}}}",
           v1125_crm);
    CHECK_INT_EQ(hx_rpc_code(&e), 0);
    const cJSON *task = cJSON_GetObjectItemCaseSensitive(hx_rpc_result(&e), "task");
    char id[64], params[128];
    snprintf(id, sizeof(id), "%s",
             cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(task, "taskId")));
    hx_ex_free(&e);
    snprintf(params, sizeof(params), "{\"taskId\":\"%s\"}", id);
    static const char *const methods[] = {"tasks/get", "tasks/cancel", "tasks/result"};
    for (size_t i = 0; i < 3; i++) {
        char body[300];
        snprintf(body, sizeof(body),
                 "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"%s\",\"params\":%s}", methods[i],
                 params);
        hx_mcp(&h, &e, NULL, body, v1125_k);
        CHECK(!e.parked);
        CHECK_INT_EQ(hx_rpc_code(&e), RPC_INVALID_PARAMS);
        CHECK_CONTAINS(hx_rpc_message(&e), "Task not found");
        hx_ex_free(&e);
    }
    /* tasks/list: the task shows to its caller, not to a key that may not see its tool */
    static const char list[] = "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tasks/list\"}";
    hx_mcp(&h, &e, NULL, list, v1125_k);
    CHECK_INT_EQ(hx_rpc_code(&e), 0);
    CHECK(strstr(e.resp.body, id) == NULL);
    hx_ex_free(&e);
    hx_mcp(&h, &e, NULL, list, v1125_crm);
    CHECK_INT_EQ(hx_rpc_code(&e), 0);
    CHECK_CONTAINS(e.resp.body, id);
    hx_ex_free(&e);
    /* the system server's task tools alike */
    char body[300];
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"workerSysGetTaskStatus\",\"arguments\":{\"TaskId\":\"%s\"}}}",
             id);
    hx_mcp(&h, &e, "system", body, AS(HX_API_KEY));
    CHECK_CONTAINS(e.resp.body, "task.notFound");
    hx_ex_free(&e);
    hx_mcp(&h, &e, "system", body, AS(CRM_KEY));
    CHECK(strstr(e.resp.body, "task.notFound") == NULL);
    hx_ex_free(&e);
    /* the REST API alike (tasksapi.c) */
    char url[128];
    snprintf(url, sizeof(url), "/v1/tasks/%s", id);
    CHECK_INT_EQ(rest("GET", url, AS(HX_API_KEY), NULL), 404);
    CHECK_INT_EQ(rest("GET", url, AS(CRM_KEY), id), 200);
    snprintf(url, sizeof(url), "/v1/tasks/%s/cancel", id);
    CHECK_INT_EQ(rest("POST", url, AS(HX_API_KEY), NULL), 404);
    CHECK_INT_EQ(rest("GET", "/v1/tasks", AS(CRM_KEY), id), 200);
    hx_ex_init(&h, &e, "GET", "/v1/tasks", NULL, 1, AS(HX_API_KEY));
    ing_tasksapi_route(&e.req, "/v1/tasks", "GET", &e.resp);
    CHECK_INT_EQ(e.resp.status, 200);
    CHECK(strstr(e.resp.body, id) == NULL);
    hx_ex_free(&e);
    TEST_PASS("a task of a hidden tool is not found, and tasks/list leaves it out (MCP, REST)");
}

/* Sets m up for body on /mcp/crm as an OAuth principal built by hand: the front door admits
 * the test's API key, then the caller becomes a token of user alice (client web-client)
 * holding perms, bound to servers (NULL: the whole tenant). The caller drops m->reg. */
static void as_token(ing_mcp_t *m, hx_ex_t *e, const char *body, const char *perms,
                     const char *servers)
{
    memset(m, 0, sizeof(*m));
    hx_ex_init(&h, e, "POST", "/mcp/crm", body, 1, NULL);
    m->req = &e->req;
    CHECK_INT_EQ(ing_frontdoor_enter(&e->req, ING_DOOR_TENANT, &m->door), ING_DOOR_IN);
    m->reg = m->door.reg;
    m->tenant = m->door.tenant;
    m->door.who = (ing_principal_t){.tenant = m->tenant,
                                    .kind = 'o',
                                    .id = "alice",
                                    .user = "alice",
                                    .app = "web-client",
                                    .perms = perms,
                                    .token_scopes = "openid tools",
                                    .servers = servers,
                                    .rate = {.per_s = -1}};
    m->who = &m->door.who;
    m->endpoint = "crm";
    m->server = ing_registry_server(m->reg, "t", "crm");
}

/* tools/call of crm_write on /mcp/crm by the OAuth principal of as_token, straight through
 * ing_toolcall_run; batch: as an element of a batch. */
static void call_as_token(hx_ex_t *e, const char *perms, int batch)
{
    static const char body[] = "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\","
                               "\"params\":{\"name\":\"crm_write\",\"arguments\":{}}}";
    ing_mcp_t m;
    as_token(&m, e, body, perms, NULL);
    m.version = "2025-06-18";
    m.batch = batch ? ing_batch_new(1) : NULL;
    cJSON *root = cJSON_Parse(body);
    rpc_msg_t msg;
    rpc_classify(root, &msg);
    e->parked = ing_toolcall_run(&m, &msg, &e->resp);
    if (!e->parked)
        hx_ex_parse(e);
    cJSON_Delete(root);
    if (m.batch)
        ing_batch_free(m.batch, NULL);
    ing_registry_unref(m.reg);
}

/* An OAuth token lacking a permission: 403 with the insufficient_scope challenge naming the
 * token's scopes and the missing one (no oauth.scopes map: the permission itself); inside a
 * batch, and for a token a rule does not name, the unknown-tool error. */
static void test_oauth_scope(void)
{
    hx_ex_t e;
    call_as_token(&e, "tools", 0);
    CHECK(!e.parked);
    CHECK_INT_EQ(e.resp.status, 403);
    CHECK_INT_EQ(hx_rpc_code(&e), -32000);
    CHECK_STR_EQ(hx_rpc_message(&e), "the access token lacks a scope this tool requires");
    CHECK_CONTAINS(e.resp.www_auth, "Bearer ");
    CHECK_CONTAINS(e.resp.www_auth, "error=\"insufficient_scope\"");
    CHECK_CONTAINS(e.resp.www_auth, "scope=\"openid tools crm:write\"");
    CHECK_CONTAINS(e.resp.www_auth,
                   "error_description=\"the access token lacks a scope this tool requires\"");
    hx_ex_free(&e);
    call_as_token(&e, "tools", 1);
    CHECK_INT_EQ(e.resp.status, 200);
    CHECK_STR_EQ(hx_rpc_message(&e), "Unknown tool: crm_write");
    CHECK(e.resp.www_auth[0] == '\0');
    hx_ex_free(&e);
    call_as_token(&e, "tools crm:write", 0); /* it holds it: the call goes on */
    CHECK(e.parked);
    hx_ex_free(&e);
    TEST_PASS("an OAuth token lacking a permission: 403 insufficient_scope (unknown tool in a "
              "batch)");
}

/* One admin request: expects status and, when text is not NULL, the answer containing it. */
static void admin(const char *method, const char *url, const char *body, int status,
                  const char *text)
{
    hx_admin_expect(&h, method, url, body, NULL, status, text);
}

#define T "/admin/v1/tenants/t"
#define OAUTH_BODY(SECRET)                                                                         \
    "{\"oauth\":{\"issuers\":[\"https://idp.example.com/r\"],\"claims\":{\"user\":\"email\"},"     \
    "\"scopes\":{\"mcp:tools\":[\"tools\"]},\"scopes_supported\":[\"mcp:tools\"],"                 \
    "\"introspection\":{\"endpoint\":\"https://idp.example.com/i\",\"client_id\":\"mcpq\","        \
    "\"client_secret\":\"" SECRET "\"}}}"

/* The admin API takes, checks (with the config file's JSON paths) and shows the tenant's
 * oauth, key and app scopes and server and tool access; the registry serves what it took. */
static void test_admin_fields(void)
{
    /* tenant oauth: shown without its introspection secret; "(hidden)" keeps the stored one */
    admin("PATCH", T, OAUTH_BODY("intro-secret-1"), 200,
          "\"client_id\":\"mcpq\",\"client_secret\":\"(hidden)\"");
    admin("GET", T, NULL, 200, "\"issuers\":[\"https://idp.example.com/r\"]");
    admin("PATCH", T, OAUTH_BODY("(hidden)"), 200, "\"scopes_supported\":[\"mcp:tools\"]");
    redisReply *r = hx_redis(&h, "HGET %s %s", NAMES_KEY_REGISTRY, "tenant:t");
    CHECK(r && r->type == REDIS_REPLY_STRING);
    CHECK_CONTAINS(r->str, "\"client_secret\":\"intro-secret-1\"");
    freeReplyObject(r);
    admin("GET", "/admin/v1/config", NULL, 200, "\"client_secret\":\"(hidden)\"");
    admin("PATCH", T, "{\"oauth\":{\"issuers\":[\"http://idp.example.com/r\"]}}", 400,
          "$.tenants[0].oauth.issuers[0]: must be https:// (http:// only to localhost");
    admin("PATCH", T,
          "{\"oauth\":{\"issuers\":[\"https://idp.example.com/r\"],\"scopes_supported\":"
          "[\"offline_access\"]}}",
          400,
          "$.tenants[0].oauth.scopes_supported[0]: \\\"offline_access\\\" is never advertised");
    admin("PATCH", T,
          "{\"oauth\":{\"issuers\":[\"https://idp.example.com/r\"],\"introspection\":{"
          "\"endpoint\":\"https://idp.example.com/i\",\"client_id\":\"c\",\"client_secret_env\":"
          "\"X\"}}}",
          400, "$.oauth.introspection.client_secret_env: the admin API takes literal secrets");

    /* another tenant trusting the same issuer: both must name their tenant claim (409, a
     * conflict with a stored tenant, as for a robot) */
#define U_OAUTH(EXTRA)                                                                             \
    "{\"id\":\"u\",\"oauth\":{\"issuers\":[\"https://idp.example.com/r\"],\"claims\":{"            \
    "\"tenant\":\"org\"}" EXTRA "}}"
#define U_INTRO(CLIENT)                                                                            \
    ",\"introspection\":{\"endpoint\":\"https://idp.example.com/i\",\"client_id\":\"" CLIENT       \
    "\",\"client_secret\":\"u-secret\"}"
    admin("POST", "/admin/v1/tenants", U_OAUTH(U_INTRO("mcpq")), 409,
          "$.oauth.issuers[0]: issuer \\\"https://idp.example.com/r\\\" is trusted by tenant "
          "\\\"t\\\" too; tenants sharing an issuer must each set oauth.claims.tenant (t does "
          "not)");
    admin("PATCH", T,
          "{\"oauth\":{\"issuers\":[\"https://idp.example.com/r\"],\"claims\":{\"tenant\":"
          "\"org\"},\"introspection\":{\"endpoint\":\"https://idp.example.com/i\",\"client_id\":"
          "\"mcpq\",\"client_secret\":\"(hidden)\"}}}",
          200, NULL);
    /* ... and agree on the issuer's keys and introspection: u may not name its own */
    admin("POST", "/admin/v1/tenants", U_OAUTH(",\"jwks_uri\":\"https://evil.example.com/jwks\""),
          409,
          "$.oauth.jwks_uri: issuer \\\"https://idp.example.com/r\\\" is trusted by tenant "
          "\\\"t\\\" too, with another jwks_uri; tenants sharing an issuer must name the same "
          "jwks_uri for it (or none)");
    admin("POST", "/admin/v1/tenants", U_OAUTH(U_INTRO("evil")), 409,
          "$.oauth.introspection: issuer \\\"https://idp.example.com/r\\\" is trusted by "
          "tenant \\\"t\\\" too, with another introspection endpoint and client_id");
    admin("POST", "/admin/v1/tenants", U_OAUTH(""), 409,
          "$.oauth.issuers[0]: issuer \\\"https://idp.example.com/r\\\" is trusted by tenant "
          "\\\"t\\\" too, with another introspection endpoint and client_id");
    admin("POST", "/admin/v1/tenants", U_OAUTH(U_INTRO("mcpq")), 201, NULL);
    /* a PATCH alike */
    admin("PATCH", "/admin/v1/tenants/u",
          "{\"oauth\":{\"issuers\":[\"https://idp.example.com/r\"],\"claims\":{\"tenant\":"
          "\"org\"},\"jwks_uri\":\"https://evil.example.com/jwks\"" U_INTRO("mcpq") "}}",
          409,
          "$.oauth.jwks_uri: issuer \\\"https://idp.example.com/r\\\" is trusted by tenant "
          "\\\"t\\\" too, with another jwks_uri");
    admin("GET", "/admin/v1/tenants/u", NULL, 200, NULL);
    hx_ex_t e;
    hx_admin(&h, &e, "GET", "/admin/v1/tenants/u", NULL, NULL);
    CHECK(strstr(e.resp.body, "evil") == NULL);
    hx_ex_free(&e);
    /* the whole config applied (PUT /admin/v1/config) is checked against the stored tenants */
    admin("PUT", "/admin/v1/config",
          "{\"tenants\":[{\"id\":\"v\",\"oauth\":{\"issuers\":[\"https://idp.example.com/r\"],"
          "\"claims\":{\"tenant\":\"org\"},\"introspection\":{\"endpoint\":"
          "\"https://evil.example.com/i\",\"client_id\":\"mcpq\",\"client_secret\":\"s\"}}}]}",
          409,
          "$.tenants[0].oauth.introspection: issuer \\\"https://idp.example.com/r\\\" is "
          "trusted by tenant ");
    admin("GET", "/admin/v1/tenants/v", NULL, 404, NULL);
    admin("DELETE", "/admin/v1/tenants/u", NULL, 204, NULL);
#undef U_OAUTH
#undef U_INTRO

    /* key and app scopes */
    admin("POST", T "/apiKeys", "{\"id\":\"k-new\",\"scopes\":[\"tools\"]}", 201,
          "\"scopes\":[\"tools\"]");
    admin("PATCH", T "/apiKeys/k-none", "{\"scopes\":[\"tools\",\"crm:write\"]}", 200,
          "\"scopes\":[\"tools\",\"crm:write\"]");
    admin("GET", T "/apiKeys/k-none", NULL, 200, "\"scopes\":[\"tools\",\"crm:write\"]");
    admin("PATCH", T "/apiKeys/k-none", "{\"scopes\":[\"has space\"]}", 400, "$.scopes[0]");
    admin("PATCH", T "/apps/billing", "{\"scopes\":[]}", 200, "\"scopes\":[]");
    admin("GET", T "/apps", NULL, 200, "\"scopes\":[]");

    /* server and tool access */
    admin("PATCH", T "/servers/crm", "{\"access\":{\"keys\":[\"nope\"]}}", 400,
          "access.keys[0]: tenant \\\"t\\\" has no API key \\\"nope\\\"");
    admin("PATCH", T "/servers/crm",
          "{\"access\":{\"scopes\":[\"crm:write\"],\"users\":"
          "[\"alice\"],\"keys\":[\"k-none\"]}}",
          200,
          "\"access\":{\"scopes\":[\"crm:write\"],\"users\":[\"alice\"],\"keys\":[\"k-none\"]}");
    admin("PATCH", T "/tools/open", "{\"access\":{\"groups\":[\"x\"]}}", 400,
          "$.access: unknown property \\\"groups\\\"");
    admin("PATCH", T "/tools/open", "{\"access\":{\"apps\":[\"billing\"]}}", 200,
          "\"access\":{\"apps\":[\"billing\"]}");
    admin("GET", T "/tools/open", NULL, 200, "\"access\":{\"apps\":[\"billing\"]}");
    admin("PATCH", T "/tools/needs_tools", "{\"access\":null}", 200, NULL);
    admin("POST", T "/tools",
          "{\"name\":\"made\",\"publish\":true,\"access\":{\"keys\":[\"k-new\"]},"
          "\"version\":{\"version\":\"1\",\"inputSchema\":{\"type\":\"object\"},"
          "\"executor\":{\"type\":\"builtin\",\"name\":\"echo\"}}}",
          201, "\"access\":{\"keys\":[\"k-new\"]}");
    admin("POST", T "/servers", "{\"name\":\"ops\",\"access\":{\"scopes\":[\"ops\"]}}", 201,
          "\"access\":{\"scopes\":[\"ops\"]}");

    /* the registry serves what was written: k-none now holds crm:write and is named on crm;
     * open is for billing only; needs_tools is open to all */
    hx_reload(&h);
    list_as(NULL, AS(NONE_KEY), "needs_tools");
    list_as("crm", AS(NONE_KEY), "crm_write");
    list_as("crm", AS(CRM_KEY), "");
    TEST_PASS("the admin API takes, checks and shows oauth, scopes and access");
}

/* A 2025-11-25 tasks/get of id by the OAuth principal of as_token. */
static void task_get_as_token(hx_ex_t *e, const char *id, const char *perms, const char *servers)
{
    char body[200];
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tasks/get\",\"params\":{\"taskId\":"
             "\"%s\"}}",
             id);
    ing_mcp_t m;
    as_token(&m, e, body, perms, servers);
    m.version = "2025-11-25";
    cJSON *root = cJSON_Parse(body);
    rpc_msg_t msg;
    rpc_classify(root, &msg);
    CHECK_INT_EQ(ing_mcptasks_call(&m, &msg, &e->resp), 0);
    hx_ex_parse(e);
    cJSON_Delete(root);
    ing_registry_unref(m.reg);
}

/* A token bound to one server (aud <base>/mcp/crm) reads no task of another server, even
 * holding tasks:all; unbound, the permission shows another principal's task; without it,
 * only its own (docs/security.md "Ownership model"). */
static void test_token_binding(void)
{
    static const char call[] =
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":"
        "\"open\",\"arguments\":{},\"task\":{\"ttl\":60000}}}";
    const char *hdrs[] = {"MCP-Protocol-Version", "2025-11-25", "Authorization", "Bearer " CRM_KEY,
                          NULL};
    hx_ex_t e;
    hx_mcp(&h, &e, NULL, call, hdrs); /* a task of the default server, by the key k-crm */
    char id[64];
    const cJSON *task = cJSON_GetObjectItemCaseSensitive(hx_rpc_result(&e), "task");
    snprintf(id, sizeof(id), "%s",
             cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(task, "taskId"))
                 ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(task, "taskId"))
                 : "");
    CHECK_INT_EQ((int)strlen(id), 36);
    hx_ex_free(&e);
    static const struct {
        const char *perms, *servers;
        int sees;
    } cases[] = {
        {"tools tasks:all", "crm", 0},         /* bound to crm: not a default task */
        {"tools tasks:all", NULL, 1},          /* the whole tenant, with the permission */
        {"tools tasks:all", "crm default", 1}, /* bound to both */
        {"tools", NULL, 0},                    /* not its own, no permission */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        task_get_as_token(&e, id, cases[i].perms, cases[i].servers);
        if (cases[i].sees) {
            CHECK_INT_EQ(hx_rpc_code(&e), 0);
            CHECK_CONTAINS(e.resp.body, id);
        } else {
            CHECK_INT_EQ(hx_rpc_code(&e), RPC_INVALID_PARAMS);
            CHECK_STR_EQ(hx_rpc_message(&e), "Failed to retrieve task: Task not found");
        }
        hx_ex_free(&e);
    }
    TEST_PASS("a token bound to crm reads no task of another server; tasks:all sees others'");
}

int main(void)
{
    hx_start(&h, config, NULL);
    test_list();
    test_call_hidden();
    test_system_list_tools();
    test_tasks();
    test_oauth_scope();
    test_token_binding();
    test_admin_fields();
    hx_stop(&h);
    return 0;
}
