/* Tests worker/executors/mcpmethod.c: the mcp executor's requests per method, the results it
 * passes on and an mcpq/catalog read page by page. */
#include "check.h"
#include "envelope.h"
#include "err.h"
#include "mcpmethod.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void envelope(wrk_envelope_t *env, const char *method, const char *args, const char *ex)
{
    char rec[1024], err[256] = "";
    snprintf(rec, sizeof(rec),
             "{\"v\":1,\"job_id\":\"j1\",\"tenant\":\"t\",\"tool\":\"x\",\"method\":\"%s\","
             "\"arguments\":%s,\"executor\":%s}",
             method, args, ex);
    int rc = wrk_envelope_parse(env, rec, strlen(rec), err, sizeof(err));
    if (rc != 0)
        fprintf(stderr, "%s\n", err);
    CHECK_INT_EQ(rc, 0);
}

static char *request(const wrk_envelope_t *env, const char **method, const char **name)
{
    wrk_mcpmethod_req_t req;
    CHECK_INT_EQ(wrk_mcpmethod_request(env, &req), 0);
    *method = req.method;
    *name = req.name;
    char *s = cJSON_PrintUnformatted(req.params);
    cJSON_Delete(req.params);
    return s;
}

static void test_requests(void)
{
    static const struct {
        const char *method, *args, *ex, *params, *name;
    } cases[] = {
        {"tools/call", "{\"a\":1}", "{\"type\":\"mcp\",\"tool\":\"up\"}",
         "{\"name\":\"up\",\"arguments\":{\"a\":1}}", "up"},
        {"resources/read", "{\"uri\":\"file:///x\",\"variables\":{\"v\":\"x\"}}",
         "{\"type\":\"mcp\"}", "{\"uri\":\"file:///x\"}", "file:///x"},
        {"prompts/get", "{\"name\":\"fed_p\",\"arguments\":{\"who\":\"ann\"}}",
         "{\"type\":\"mcp\",\"prompt\":\"greet\"}",
         "{\"name\":\"greet\",\"arguments\":{\"who\":\"ann\"}}", "greet"},
        {"completion/complete",
         "{\"ref\":{\"type\":\"ref/prompt\",\"name\":\"fed_p\"},\"argument\":{\"name\":\"who\","
         "\"value\":\"a\"},\"context\":{\"arguments\":{}}}",
         "{\"type\":\"mcp\",\"prompt\":\"greet\"}",
         "{\"ref\":{\"type\":\"ref/prompt\",\"name\":\"greet\"},\"argument\":{\"name\":\"who\","
         "\"value\":\"a\"},\"context\":{\"arguments\":{}}}",
         NULL},
        {"completion/complete",
         "{\"ref\":{\"type\":\"ref/resource\",\"uri\":\"f:///{p}\"},\"argument\":{\"name\":\"p\","
         "\"value\":\"a\"}}",
         "{\"type\":\"mcp\"}",
         "{\"ref\":{\"type\":\"ref/resource\",\"uri\":\"f:///{p}\"},\"argument\":{\"name\":\"p\","
         "\"value\":\"a\"}}",
         NULL},
        {"resources/subscribe", "{\"uri\":\"u:1\"}", "{\"type\":\"mcp\"}", "{\"uri\":\"u:1\"}",
         NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        wrk_envelope_t env;
        const char *method = NULL, *name = NULL;
        envelope(&env, cases[i].method, cases[i].args, cases[i].ex);
        CHECK(wrk_mcpmethod_config_error(&env) == NULL);
        char *s = request(&env, &method, &name);
        CHECK_STR_EQ(s, cases[i].params);
        CHECK_STR_EQ(method, cases[i].method);
        if (cases[i].name)
            CHECK_STR_EQ(name, cases[i].name);
        else
            CHECK(name == NULL);
        free(s);
        wrk_envelope_cleanup(&env);
    }
    TEST_PASS("each method's request: the executor's tool or prompt name, the job's params");
}

static void test_config(void)
{
    wrk_envelope_t env;
    envelope(&env, "tools/call", "{}", "{\"type\":\"mcp\"}");
    CHECK_STR_EQ(wrk_mcpmethod_config_error(&env), "executor.tool must name the upstream tool");
    wrk_envelope_cleanup(&env);
    envelope(&env, "prompts/get", "{\"name\":\"p\"}", "{\"type\":\"mcp\",\"tool\":\"t\"}");
    CHECK_STR_EQ(wrk_mcpmethod_config_error(&env), "executor.prompt must name the upstream prompt");
    wrk_envelope_cleanup(&env);
    envelope(&env, "completion/complete",
             "{\"ref\":{\"type\":\"ref/prompt\",\"name\":\"p\"},\"argument\":{}}",
             "{\"type\":\"mcp\"}");
    CHECK(wrk_mcpmethod_config_error(&env) != NULL);
    wrk_envelope_cleanup(&env);
    envelope(&env, "resources/read", "{\"uri\":\"u:1\"}", "{\"type\":\"mcp\"}");
    CHECK(wrk_mcpmethod_config_error(&env) == NULL);
    wrk_envelope_cleanup(&env);
    TEST_PASS("a method whose executor config lacks its upstream name is refused clearly");
}

static void test_results(void)
{
    cJSON *ok = cJSON_Parse("{\"contents\":[{\"uri\":\"u\",\"text\":\"t\"}],"
                            "\"resultType\":\"complete\"}");
    cJSON *r = wrk_mcpmethod_result(KINDS_METHOD_READ, ok);
    char *s = cJSON_PrintUnformatted(r);
    CHECK_STR_EQ(s, "{\"contents\":[{\"uri\":\"u\",\"text\":\"t\"}]}");
    free(s);
    cJSON_Delete(r);
    CHECK(wrk_mcpmethod_result(KINDS_METHOD_PROMPT, ok) == NULL);
    CHECK(wrk_mcpmethod_result(KINDS_METHOD_COMPLETE, ok) == NULL);
    r = wrk_mcpmethod_result(KINDS_METHOD_SUBSCRIBE, ok);
    s = cJSON_PrintUnformatted(r);
    CHECK_STR_EQ(s, "{}");
    free(s);
    cJSON_Delete(r);
    cJSON_Delete(ok);
    cJSON *c = cJSON_Parse("{\"completion\":{\"values\":[\"a\"]}}");
    r = wrk_mcpmethod_result(KINDS_METHOD_COMPLETE, c);
    CHECK(r != NULL);
    cJSON_Delete(r);
    cJSON_Delete(c);
    CHECK(wrk_mcpmethod_result(KINDS_METHOD_READ, NULL) == NULL);
    TEST_PASS("an upstream's result passes on only with its method's shape");
}

static void test_catalog(void)
{
    /* A legacy initialize result announcing tools and prompts (not resources). */
    cJSON *init = cJSON_Parse("{\"protocolVersion\":\"2025-06-18\",\"serverInfo\":{\"name\":"
                              "\"up\",\"version\":\"1\"},\"capabilities\":{\"tools\":{},"
                              "\"prompts\":{\"listChanged\":true}}}");
    cJSON *info = wrk_mcpmethod_info(init, "2025-06-18");
    cJSON_Delete(init);
    wrk_mcpmethod_catalog_t cat;
    wrk_mcpmethod_req_t req;
    CHECK_INT_EQ(wrk_mcpmethod_catalog_start(&cat, info), 1);
    CHECK_INT_EQ(wrk_mcpmethod_catalog_request(&cat, &req), 0);
    CHECK_STR_EQ(req.method, "tools/list");
    char *s = cJSON_PrintUnformatted(req.params);
    CHECK_STR_EQ(s, "{}");
    free(s);
    cJSON_Delete(req.params);

    cJSON *p1 = cJSON_Parse("{\"tools\":[{\"name\":\"a\"}],\"nextCursor\":\"c2\"}");
    CHECK_INT_EQ(wrk_mcpmethod_catalog_page(&cat, p1), 1);
    CHECK_INT_EQ(wrk_mcpmethod_catalog_request(&cat, &req), 0);
    CHECK_STR_EQ(req.method, "tools/list");
    s = cJSON_PrintUnformatted(req.params);
    CHECK_STR_EQ(s, "{\"cursor\":\"c2\"}");
    free(s);
    cJSON_Delete(req.params);
    cJSON *p2 = cJSON_Parse("{\"tools\":[{\"name\":\"b\"}]}");
    CHECK_INT_EQ(wrk_mcpmethod_catalog_page(&cat, p2), 1); /* resources skipped: prompts next */
    CHECK_INT_EQ(wrk_mcpmethod_catalog_request(&cat, &req), 0);
    CHECK_STR_EQ(req.method, "prompts/list");
    cJSON_Delete(req.params);
    cJSON *bad = cJSON_Parse("{\"tools\":[]}");
    CHECK_INT_EQ(wrk_mcpmethod_catalog_page(&cat, bad), MCPQ_EINVAL);
    cJSON *p3 = cJSON_Parse("{\"prompts\":[{\"name\":\"p\"}],\"nextCursor\":\"\"}");
    CHECK_INT_EQ(wrk_mcpmethod_catalog_page(&cat, p3), 0);
    cJSON *r = wrk_mcpmethod_catalog_take(&cat);
    s = cJSON_PrintUnformatted(r);
    CHECK_STR_EQ(s, "{\"protocolVersion\":\"2025-06-18\",\"serverInfo\":{\"name\":\"up\","
                    "\"version\":\"1\"},\"capabilities\":{\"tools\":{},\"prompts\":{"
                    "\"listChanged\":true}},\"tools\":[{\"name\":\"a\"},{\"name\":\"b\"}],"
                    "\"prompts\":[{\"name\":\"p\"}]}");
    free(s);
    cJSON_Delete(r);
    wrk_mcpmethod_catalog_cleanup(&cat);

    /* An upstream whose cursor never ends: at most WRK_MCPMETHOD_MAX_PAGES pages of a list. */
    cJSON *tools_only = cJSON_Parse("{\"capabilities\":{\"tools\":{}}}");
    cJSON *info2 = wrk_mcpmethod_info(tools_only, "2026-07-28");
    CHECK_INT_EQ(wrk_mcpmethod_catalog_start(&cat, info2), 1);
    int pages = 0, rc;
    while ((rc = wrk_mcpmethod_catalog_page(&cat, p1)) == 1)
        pages++;
    CHECK_INT_EQ(rc, 0);
    CHECK_INT_EQ(pages + 1, WRK_MCPMETHOD_MAX_PAGES);
    wrk_mcpmethod_catalog_cleanup(&cat);

    /* A 2026-07-28 discover result: serverInfo from _meta; nothing announced, nothing read. */
    cJSON *disc = cJSON_Parse("{\"supportedVersions\":[\"2026-07-28\"],\"capabilities\":{},"
                              "\"_meta\":{\"io.modelcontextprotocol/serverInfo\":{\"name\":"
                              "\"m\",\"version\":\"2\"}}}");
    cJSON *info3 = wrk_mcpmethod_info(disc, "2026-07-28");
    CHECK_INT_EQ(wrk_mcpmethod_catalog_start(&cat, info3), 0);
    r = wrk_mcpmethod_catalog_take(&cat);
    s = cJSON_PrintUnformatted(r);
    CHECK_STR_EQ(s, "{\"protocolVersion\":\"2026-07-28\",\"serverInfo\":{\"name\":\"m\","
                    "\"version\":\"2\"},\"capabilities\":{}}");
    free(s);
    cJSON_Delete(r);
    wrk_mcpmethod_catalog_cleanup(&cat);
    cJSON_Delete(disc);
    cJSON_Delete(info3);
    cJSON_Delete(tools_only);
    cJSON_Delete(info2);
    cJSON_Delete(p1);
    cJSON_Delete(p2);
    cJSON_Delete(p3);
    cJSON_Delete(bad);
    cJSON_Delete(info);
    TEST_PASS(
        "mcpq/catalog: every page of each announced list, bounded, with the handshake's info");
}

int main(void)
{
    test_requests();
    test_config();
    test_results();
    test_catalog();
    return 0;
}
