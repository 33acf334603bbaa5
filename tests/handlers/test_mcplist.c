/*
 * Tests ingress/mcp/mcplist.c (and the capabilities mcp.c announces): tools/list,
 * resources/list, resources/templates/list and prompts/list of a server holding every kind,
 * in every protocol version (sessions up to 2025-11-25, stateless 2026-07-28 with its
 * headers): each list holds its kind only, in name order, paged with a cursor, filtered by
 * access rules, with ttlMs/cacheScope in 2026-07-28; a prompt is no tool
 * (tests/handlers/harness.h).
 */
#include "check.h"
#include "harness.h"

#include "rpc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY2 "key2-0123456789abc"
#define AS_KEY2 HX_BEARER(KEY2)
#define OBJ HX_KIND_OBJ

/* clang-format off */
static const char config[] =
    "{\"tenants\": [{\"id\": \"t\", \"api_keys\": [{\"id\": \"k\", \"key\": \"" HX_API_KEY "\"},"
    "   {\"id\": \"k2\", \"key\": \"" KEY2 "\"}]}],"
    " \"servers\": [{\"tenant\": \"t\", \"name\": \"default\"},"
    "  {\"tenant\": \"t\", \"name\": \"empty\"}],"
    " \"tools\": ["
    "  {\"tenant\": \"t\", \"server\": \"default\", \"name\": \"echo\","
    "   \"versions\": [{\"version\": \"1\", \"inputSchema\": {\"type\": \"object\"},"
    "    \"executor\": {\"type\": \"builtin\", \"name\": \"echo\"}}]},"
    OBJ("resource", "readme", "", "\"uri\":\"file:///README\",\"text\":\"hi\"") ","
    OBJ("resource", "config", "",
        "\"uri\":\"file:///config\",\"mimeType\":\"application/json\",\"text\":\"{}\"") ","
    OBJ("resource", "secret", ",\"access\":{\"keys\":[\"k2\"]}",
        "\"uri\":\"file:///secret\",\"text\":\"s\"") ","
    OBJ("resource", "zz", "", "\"uri\":\"file:///zz\",\"blob\":\"AAAA\"") ","
    OBJ("resource", "offline", ",\"published\":null", "\"uri\":\"file:///off\",\"text\":\"o\"") ","
    OBJ("resource_template", "logs", "", "\"uriTemplate\":\"file:///logs/{day}\",\"text\":\"x\"") ","
    OBJ("prompt", "greet", "",
        "\"description\":\"Say hi\",\"arguments\":[{\"name\":\"who\",\"required\":true}],"
        "\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\",\"text\":\"hi {{who}}\"}}]")
    "]}";
/* clang-format on */

static hx_t h;
static char sid[HX_NERAS][80]; /* a session per legacy version */

/* The "name"s of the array key of e's result, comma-separated, into out. */
static const char *names_of(const hx_ex_t *e, const char *key, char *out, size_t n)
{
    const cJSON *t;
    size_t len = 0;
    out[0] = '\0';
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(hx_rpc_result(e), key))
    {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "name"));
        len += (size_t)snprintf(out + len, n - len, "%s%s", len ? "," : "", name ? name : "?");
    }
    return out;
}

/* Every page of method in version era as the caller of hdrs: the names of all pages, and the
 * number of pages. */
static int list_all(int era, const char *method, const char *key, const char *const hdrs[],
                    char *out, size_t n)
{
    char cursor[64] = "", params[128];
    int pages = 0;
    out[0] = '\0';
    do {
        hx_ex_t e;
        char got[512];
        snprintf(params, sizeof(params), cursor[0] ? "{\"cursor\":\"%s\"}" : "{}", cursor);
        hx_era_rpc(&h, &e, NULL, hx_eras[era], era < HX_NERAS - 1 ? sid[era] : NULL, method, NULL,
                   params, hdrs);
        CHECK_INT_EQ(e.resp.status, 200);
        CHECK_INT_EQ(hx_rpc_code(&e), 0);
        const cJSON *r = hx_rpc_result(&e);
        if (era == HX_NERAS - 1) { /* 2026-07-28: a cacheable complete result */
            CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "resultType")),
                         "complete");
            CHECK_INT_EQ(cJSON_GetObjectItemCaseSensitive(r, "ttlMs")->valuedouble, 1500);
            CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "cacheScope")),
                         "private");
        } else {
            CHECK(!cJSON_HasObjectItem(r, "ttlMs"));
        }
        snprintf(out + strlen(out), n - strlen(out), "%s%s", out[0] && e.json ? "," : "",
                 names_of(&e, key, got, sizeof(got)));
        const char *next = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "nextCursor"));
        snprintf(cursor, sizeof(cursor), "%s", next ? next : "");
        hx_ex_free(&e);
        pages++;
    } while (cursor[0] && pages < 10);
    return pages;
}

/* The first entry of method's list in version era, printed, is json. */
static void expect_result(int era, const char *method, const char *json)
{
    hx_ex_t e;
    hx_era_rpc(&h, &e, NULL, hx_eras[era], sid[era], method, NULL, "{}", NULL);
    const cJSON *r = hx_rpc_result(&e);
    CHECK(r && r->child);
    char *s = cJSON_PrintUnformatted(cJSON_GetArrayItem(r->child, 0));
    CHECK_STR_EQ(s, json);
    free(s);
    hx_ex_free(&e);
}

static void test_lists(void)
{
    char got[1024];
    for (int era = 0; era < HX_NERAS; era++) {
        /* page size 2: 3 visible resources in 2 pages, name order; offline and hidden left out */
        CHECK_INT_EQ(list_all(era, "resources/list", "resources", NULL, got, sizeof(got)), 2);
        CHECK_STR_EQ(got, "config,readme,zz");
        CHECK_INT_EQ(list_all(era, "resources/list", "resources", AS_KEY2, got, sizeof(got)), 2);
        CHECK_STR_EQ(got, "config,readme,secret,zz");
        CHECK_INT_EQ(
            list_all(era, "resources/templates/list", "resourceTemplates", NULL, got, sizeof(got)),
            1);
        CHECK_STR_EQ(got, "logs");
        CHECK_INT_EQ(list_all(era, "prompts/list", "prompts", NULL, got, sizeof(got)), 1);
        CHECK_STR_EQ(got, "greet");
        /* tools/list holds tools only */
        CHECK_INT_EQ(list_all(era, "tools/list", "tools", NULL, got, sizeof(got)), 1);
        CHECK_STR_EQ(got, "echo");
    }
    /* the entries: each kind's MCP shape */
    expect_result(1, "resources/list",
                  "{\"name\":\"config\",\"uri\":\"file:///config\","
                  "\"mimeType\":\"application/json\",\"size\":2}");
    expect_result(1, "resources/templates/list",
                  "{\"name\":\"logs\",\"uriTemplate\":\"file:///logs/{day}\"}");
    expect_result(2, "prompts/list",
                  "{\"name\":\"greet\",\"description\":\"Say hi\","
                  "\"arguments\":[{\"name\":\"who\",\"required\":true}]}");
    hx_ex_t e;
    /* a server without objects lists nothing */
    hx_era_rpc(&h, &e, "empty", hx_eras[3], NULL, "prompts/list", NULL, "{}", NULL);
    CHECK_INT_EQ(hx_rpc_code(&e), 0);
    CHECK_INT_EQ(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(hx_rpc_result(&e), "prompts")),
                 0);
    hx_ex_free(&e);
    TEST_PASS("every list in every version: its kind only, name order, pages, access, "
              "2026-07-28 ttlMs and cacheScope");
}

static void test_bad_cursor(void)
{
    static const char *const bad[] = {"{\"cursor\":\"x1\"}", "{\"cursor\":\"c99\"}",
                                      "{\"cursor\":7}", "{\"cursor\":\"c\"}"};
    for (int era = 0; era < HX_NERAS; era++)
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            hx_ex_t e;
            hx_era_rpc(&h, &e, NULL, hx_eras[era], era < HX_NERAS - 1 ? sid[era] : NULL,
                       "resources/list", NULL, bad[i], NULL);
            CHECK_INT_EQ(hx_rpc_code(&e), RPC_INVALID_PARAMS);
            CHECK_STR_EQ(hx_rpc_message(&e), "invalid cursor");
            hx_ex_free(&e);
        }
    TEST_PASS("a cursor mcpq did not make is -32602");
}

/* The capabilities of initialize (legacy) and server/discover: all kinds when full, else
 * (a server of tools only) tools and logging only. */
static void check_caps(const cJSON *caps, int full)
{
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(caps, "resources");
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(caps, "tools"), "listChanged")));
    CHECK(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(caps, "logging")));
    if (!full) {
        CHECK(res == NULL);
        CHECK(cJSON_GetObjectItemCaseSensitive(caps, "prompts") == NULL);
        CHECK(cJSON_GetObjectItemCaseSensitive(caps, "completions") == NULL);
        return;
    }
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "subscribe")));
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "listChanged")));
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(caps, "prompts"), "listChanged")));
    CHECK(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(caps, "completions")));
}

static void test_capabilities(void)
{
    hx_ex_t e;
    const char *init = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
                       "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{"
                       "\"name\":\"x\",\"version\":\"1\"}}}";
    hx_mcp(&h, &e, NULL, init, NULL);
    check_caps(cJSON_GetObjectItemCaseSensitive(hx_rpc_result(&e), "capabilities"), 1);
    hx_ex_free(&e);
    hx_mcp(&h, &e, "empty", init, NULL);
    check_caps(cJSON_GetObjectItemCaseSensitive(hx_rpc_result(&e), "capabilities"), 0);
    hx_ex_free(&e);
    hx_era_rpc(&h, &e, "empty", hx_eras[3], NULL, "server/discover", NULL, "{}", NULL);
    check_caps(cJSON_GetObjectItemCaseSensitive(hx_rpc_result(&e), "capabilities"), 0);
    hx_ex_free(&e);
    hx_era_rpc(&h, &e, NULL, hx_eras[3], NULL, "server/discover", NULL, "{}", NULL);
    check_caps(cJSON_GetObjectItemCaseSensitive(hx_rpc_result(&e), "capabilities"), 1);
    CHECK_INT_EQ(cJSON_GetObjectItemCaseSensitive(hx_rpc_result(&e), "ttlMs")->valuedouble, 1500);
    CHECK_STR_EQ(
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(hx_rpc_result(&e), "cacheScope")),
        "private");
    hx_ex_free(&e);
    TEST_PASS("initialize and server/discover announce resources, prompts and completions on a "
              "server that has them, tools only on a server of tools only; discover is "
              "cacheable");
}

/* A prompt or resource is not callable: tools/call answers it as an unknown tool. */
static void test_not_a_tool(void)
{
    for (int era = 0; era < HX_NERAS; era++) {
        hx_ex_t e;
        hx_era_rpc(&h, &e, NULL, hx_eras[era], era < HX_NERAS - 1 ? sid[era] : NULL, "tools/call",
                   "greet", "{\"name\":\"greet\",\"arguments\":{}}", NULL);
        CHECK(!e.parked);
        CHECK_INT_EQ(hx_rpc_code(&e), RPC_INVALID_PARAMS);
        CHECK_STR_EQ(hx_rpc_message(&e), "Unknown tool: greet");
        hx_ex_free(&e);
    }
    TEST_PASS("tools/call of a prompt: unknown tool");
}

int main(void)
{
    static const char *const args[] = {"--page-size", "2", "--list-ttl-ms", "1500", NULL};
    hx_start(&h, config, args);
    for (int era = 0; era < HX_NERAS - 1; era++)
        hx_session(&h, NULL, hx_eras[era], NULL, sid[era]);
    test_lists();
    test_bad_cursor();
    test_capabilities();
    test_not_a_tool();
    hx_stop(&h);
    return 0;
}
