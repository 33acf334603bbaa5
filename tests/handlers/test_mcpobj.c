/*
 * Tests ingress/mcp/mcpobj.c: resources/read of static resources and templates, prompts/get
 * of static prompts and completion/complete over static completions, in every protocol
 * version (sessions up to 2025-11-25, stateless 2026-07-28 with its headers); unknown uris,
 * prompts and refs, missing and wrong arguments and bad params get the spec's errors; an
 * object with an executor is answered by a job on a worker (tests/handlers/harness.h).
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
#define ECHO "\"executor\":{\"type\":\"builtin\",\"name\":\"echo\"}"

/* clang-format off */
static const char config[] =
    "{\"tenants\": [{\"id\": \"t\", \"api_keys\": [{\"id\": \"k\", \"key\": \"" HX_API_KEY "\"},"
    "   {\"id\": \"k2\", \"key\": \"" KEY2 "\"}]}],"
    " \"servers\": [{\"tenant\": \"t\", \"name\": \"default\"}],"
    " \"tools\": ["
    OBJ("resource", "readme", "",
        "\"uri\":\"file:///README\",\"mimeType\":\"text/plain\","
        "\"text\":\"hello\",\"ttl_ms\":60000,\"cache_scope\":\"public\"") ","
    OBJ("resource", "logo", "",
        "\"uri\":\"file:///logo.png\",\"mimeType\":\"image/png\",\"blob\":\"iVBORw0KGgo=\"") ","
    OBJ("resource", "secret", ",\"access\":{\"keys\":[\"k2\"]}",
        "\"uri\":\"file:///secret\",\"text\":\"s3cret\"") ","
    OBJ("resource", "live", "", "\"uri\":\"file:///live\"," ECHO) ","
    OBJ("resource_template", "logs", "",
        "\"uriTemplate\":\"file:///logs/{day}.txt\",\"text\":\"log of {day} ({other})\","
        "\"completions\":{\"day\":[\"2026-11-27\",\"2026-11-28\",\"2025-01-01\"]}") ","
    OBJ("prompt", "greet", "",
        "\"description\":\"Say hi\",\"arguments\":[{\"name\":\"who\",\"required\":true},"
        "{\"name\":\"mood\"}],\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\","
        "\"text\":\"Hello {{who}}{{mood}}! {{unknown}}\"}},{\"role\":\"assistant\",\"content\":{"
        "\"type\":\"resource\",\"resource\":{\"uri\":\"file:///{{who}}\",\"text\":\"{{who}}\"}}}],"
        "\"completions\":{\"who\":[\"world\",\"wanda\",\"bob\"]}") ","
    OBJ("prompt", "dyn", "", "\"arguments\":[{\"name\":\"q\"},{\"name\":\"tone\"}],"
        "\"completions\":{\"tone\":[\"calm\",\"curt\",\"warm\"]}," ECHO) ","
    OBJ("prompt", "big", "", "\"arguments\":[{\"name\":\"a\"}],\"messages\":[{\"role\":\"user\","
        "\"content\":{\"type\":\"text\",\"text\":\"{{a}}{{a}}{{a}}{{a}}{{a}}\"}}]") "]}";
/* clang-format on */

static hx_t h;
static char sid[HX_NERAS][80];

static void req(hx_ex_t *e, int era, const char *method, const char *name, const char *params,
                const char *const hdrs[])
{
    hx_era_rpc(&h, e, NULL, hx_eras[era], era < HX_NERAS - 1 ? sid[era] : NULL, method, name,
               params, hdrs);
    CHECK(!e->parked);
    if (e->resp.status != 200)
        fprintf(stderr, "%s %s: %s\n", hx_eras[era], params, e->resp.body ? e->resp.body : "");
    CHECK_INT_EQ(e->resp.status, 200);
}

/* The result's member at a dotted path of e's answer, printed compactly (caller frees). */
static char *printed(const hx_ex_t *e, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(hx_rpc_result(e), key);
    CHECK(v != NULL);
    return cJSON_PrintUnformatted(v);
}

static void expect_member(const hx_ex_t *e, const char *key, const char *json)
{
    char *s = printed(e, key);
    CHECK_STR_EQ(s, json);
    free(s);
}

static void expect_error(int era, const char *method, const char *name, const char *params,
                         int code, const char *msg)
{
    hx_ex_t e;
    req(&e, era, method, name, params, NULL);
    CHECK_INT_EQ(hx_rpc_code(&e), code);
    CHECK_STR_EQ(hx_rpc_message(&e), msg);
    hx_ex_free(&e);
}

static void test_read(void)
{
    for (int era = 0; era < HX_NERAS; era++) {
        int modern = era == HX_NERAS - 1;
        hx_ex_t e;
        req(&e, era, "resources/read", "file:///README", "{\"uri\":\"file:///README\"}", NULL);
        expect_member(&e, "contents",
                      "[{\"uri\":\"file:///README\",\"mimeType\":\"text/plain\",\"text\":"
                      "\"hello\"}]");
        const cJSON *r = hx_rpc_result(&e);
        CHECK_INT_EQ(cJSON_HasObjectItem(r, "ttlMs"), modern);
        if (modern) { /* the version's ttl_ms and cache_scope */
            CHECK_INT_EQ(cJSON_GetObjectItemCaseSensitive(r, "ttlMs")->valuedouble, 60000);
            CHECK_STR_EQ(hx_str(&e, "result.cacheScope"), "public");
            CHECK_STR_EQ(hx_str(&e, "result.resultType"), "complete");
        }
        hx_ex_free(&e);
        req(&e, era, "resources/read", "file:///logo.png", "{\"uri\":\"file:///logo.png\"}", NULL);
        expect_member(&e, "contents",
                      "[{\"uri\":\"file:///logo.png\",\"mimeType\":\"image/png\",\"blob\":"
                      "\"iVBORw0KGgo=\"}]");
        if (modern) { /* defaults: immediately stale, private */
            CHECK_INT_EQ(cJSON_GetObjectItemCaseSensitive(hx_rpc_result(&e), "ttlMs")->valuedouble,
                         0);
            CHECK_STR_EQ(hx_str(&e, "result.cacheScope"), "private");
        }
        hx_ex_free(&e);
        /* a template: {var} replaced in the text; an unknown {name} stays */
        req(&e, era, "resources/read", "file:///logs/mon.txt", "{\"uri\":\"file:///logs/mon.txt\"}",
            NULL);
        expect_member(&e, "contents",
                      "[{\"uri\":\"file:///logs/mon.txt\",\"text\":\"log of mon ({other})\"}]");
        hx_ex_free(&e);
        /* unknown uri: -32002 up to 2025-11-25, -32602 in 2026-07-28, data.uri */
        req(&e, era, "resources/read", "file:///nope", "{\"uri\":\"file:///nope\"}", NULL);
        CHECK_INT_EQ(hx_rpc_code(&e), modern ? RPC_INVALID_PARAMS : RPC_RESOURCE_NOT_FOUND);
        CHECK_STR_EQ(hx_rpc_message(&e), "Resource not found");
        CHECK_STR_EQ(hx_str(&e, "error.data.uri"), "file:///nope");
        hx_ex_free(&e);
        /* a resource the caller may not see is not found; its key reads it */
        req(&e, era, "resources/read", "file:///secret", "{\"uri\":\"file:///secret\"}", NULL);
        CHECK_STR_EQ(hx_rpc_message(&e), "Resource not found");
        hx_ex_free(&e);
        req(&e, era, "resources/read", "file:///secret", "{\"uri\":\"file:///secret\"}", AS_KEY2);
        CHECK_INT_EQ(hx_rpc_code(&e), 0);
        hx_ex_free(&e);
        /* a template variable matches no '/' */
        expect_error(era, "resources/read", "file:///logs/a/b.txt",
                     "{\"uri\":\"file:///logs/a/b.txt\"}",
                     modern ? RPC_INVALID_PARAMS : RPC_RESOURCE_NOT_FOUND, "Resource not found");
        /* bad params (in 2026-07-28 Mcp-Name has no uri to mirror: a header mismatch) */
        if (!modern) {
            expect_error(era, "resources/read", NULL, "{\"uri\":1}", RPC_INVALID_PARAMS,
                         "params.uri must be a non-empty string of at most 2048 bytes");
            expect_error(era, "resources/read", NULL, "{}", RPC_INVALID_PARAMS,
                         "params.uri must be a non-empty string of at most 2048 bytes");
        } else {
            hx_era_rpc(&h, &e, NULL, hx_eras[era], NULL, "resources/read", "1", "{\"uri\":1}",
                       NULL);
            CHECK_INT_EQ(e.resp.status, 400);
            CHECK_INT_EQ(hx_rpc_code(&e), RPC_HEADER_MISMATCH);
            hx_ex_free(&e);
        }
        /* the executor-backed resource is a job: the worker's builtin echo answers the job's
         * arguments as text, which becomes the resource's contents (worker/core/mresult.h) */
        hx_era_rpc(&h, &e, NULL, hx_eras[era], modern ? NULL : sid[era], "resources/read",
                   "file:///live", "{\"uri\":\"file:///live\"}", NULL);
        CHECK(e.parked);
        CHECK_INT_EQ(hx_mcp_wait(&h, &e, 20000), 0);
        expect_member(&e, "contents",
                      "[{\"uri\":\"file:///live\",\"text\":\"{\\\"uri\\\":\\\"file:///live\\\","
                      "\\\"variables\\\":{}}\"}]");
        CHECK_INT_EQ(cJSON_HasObjectItem(hx_rpc_result(&e), "cacheScope"), modern);
        hx_ex_free(&e);
    }
    /* an oversize uri */
    char big[2200 + 32], params[2300 + 32];
    memset(big, 'a', 2200);
    memcpy(big, "file:///", 8);
    big[2200] = '\0';
    snprintf(params, sizeof(params), "{\"uri\":\"%s\"}", big);
    expect_error(1, "resources/read", NULL, params, RPC_INVALID_PARAMS,
                 "params.uri must be a non-empty string of at most 2048 bytes");
    /* a NUL byte inside the uri: the parser refuses it before any lookup could cut it */
    hx_ex_t e;
    hx_era_rpc(&h, &e, NULL, hx_eras[1], sid[1], "resources/read", NULL,
               "{\"uri\":\"file:///README\\u0000x\"}", NULL);
    CHECK_INT_EQ(e.resp.status, 400);
    CHECK_INT_EQ(hx_rpc_code(&e), RPC_PARSE_ERROR);
    hx_ex_free(&e);
    TEST_PASS("resources/read: static text and blob, templates, unknown and hidden uris, bad "
              "params, 2026-07-28 ttlMs and cacheScope, executor objects answered by a worker");
}

static void test_get(void)
{
    for (int era = 0; era < HX_NERAS; era++) {
        int modern = era == HX_NERAS - 1;
        hx_ex_t e;
        req(&e, era, "prompts/get", "greet", "{\"name\":\"greet\",\"arguments\":{\"who\":\"Ann\"}}",
            NULL);
        CHECK_INT_EQ(hx_rpc_code(&e), 0);
        CHECK_STR_EQ(hx_str(&e, "result.description"), "Say hi");
        expect_member(&e, "messages",
                      "[{\"role\":\"user\",\"content\":{\"type\":\"text\",\"text\":\"Hello Ann! "
                      "{{unknown}}\"}},{\"role\":\"assistant\",\"content\":{\"type\":\"resource\","
                      "\"resource\":{\"uri\":\"file:///Ann\",\"text\":\"Ann\"}}}]");
        hx_ex_free(&e);
        expect_error(era, "prompts/get", "greet", "{\"name\":\"greet\"}", RPC_INVALID_PARAMS,
                     "Missing required argument \"who\" of prompt \"greet\"");
        expect_error(era, "prompts/get", "greet",
                     "{\"name\":\"greet\",\"arguments\":{\"who\":\"a\",\"x\":\"b\"}}",
                     RPC_INVALID_PARAMS,
                     "params.arguments.x: prompt \"greet\" has no such argument");
        expect_error(era, "prompts/get", "greet", "{\"name\":\"greet\",\"arguments\":{\"who\":3}}",
                     RPC_INVALID_PARAMS,
                     "params.arguments.who: expected a string (prompt \"greet\")");
        expect_error(era, "prompts/get", "greet", "{\"name\":\"greet\",\"arguments\":[1]}",
                     RPC_INVALID_PARAMS, "params.arguments must be an object of strings");
        expect_error(era, "prompts/get", "nope", "{\"name\":\"nope\"}", RPC_INVALID_PARAMS,
                     "Unknown prompt: nope");
        expect_error(era, "prompts/get", "readme", "{\"name\":\"readme\"}", RPC_INVALID_PARAMS,
                     "Unknown prompt: readme"); /* a resource is no prompt */
        if (!modern)
            expect_error(era, "prompts/get", NULL, "{}", RPC_INVALID_PARAMS,
                         "params.name must be a string, the prompt's name");
        /* an executor-backed prompt: the worker's echo of the job's arguments, as a message */
        hx_era_rpc(&h, &e, NULL, hx_eras[era], modern ? NULL : sid[era], "prompts/get", "dyn",
                   "{\"name\":\"dyn\",\"arguments\":{\"q\":\"x\"}}", NULL);
        CHECK(e.parked);
        CHECK_INT_EQ(hx_mcp_wait(&h, &e, 20000), 0);
        expect_member(&e, "messages",
                      "[{\"role\":\"user\",\"content\":{\"type\":\"text\",\"text\":"
                      "\"{\\\"name\\\":\\\"dyn\\\",\\\"arguments\\\":{\\\"q\\\":\\\"x\\\"}}\"}}]");
        hx_ex_free(&e);
    }
    /* a value that would make a message larger than 4 MiB: refused, not built */
    size_t n = 900 * 1024;
    char *params = malloc(n + 64);
    CHECK(params != NULL);
    int k = snprintf(params, n + 64, "{\"name\":\"big\",\"arguments\":{\"a\":\"");
    memset(params + k, 'x', n);
    snprintf(params + k + n, 64, "\"}}");
    expect_error(1, "prompts/get", NULL, params, RPC_INVALID_PARAMS,
                 "a message of prompt \"big\" with these arguments is larger than 4194304 bytes");
    free(params);
    TEST_PASS("prompts/get: {{arg}} replaced in every string, missing, undeclared and non-string "
              "arguments refused, unknown prompts");
}

static void complete(hx_ex_t *e, int era, const char *ref, const char *arg, const char *value)
{
    char params[512];
    snprintf(params, sizeof(params), "{\"ref\":%s,\"argument\":{\"name\":\"%s\",\"value\":\"%s\"}}",
             ref, arg, value);
    req(e, era, "completion/complete", NULL, params, NULL);
}

static void test_complete(void)
{
    static const char prompt[] = "{\"type\":\"ref/prompt\",\"name\":\"greet\"}";
    static const char tpl[] = "{\"type\":\"ref/resource\",\"uri\":\"file:///logs/{day}.txt\"}";
    for (int era = 0; era < HX_NERAS; era++) {
        hx_ex_t e;
        complete(&e, era, prompt, "who", "w");
        expect_member(&e, "completion",
                      "{\"values\":[\"world\",\"wanda\"],\"total\":2,"
                      "\"hasMore\":false}");
        hx_ex_free(&e);
        complete(&e, era, tpl, "day", "2026");
        expect_member(&e, "completion",
                      "{\"values\":[\"2026-11-27\",\"2026-11-28\"],\"total\":2,"
                      "\"hasMore\":false}");
        hx_ex_free(&e);
        complete(&e, era, prompt, "mood", ""); /* no completions for it: none */
        expect_member(&e, "completion", "{\"values\":[],\"total\":0,\"hasMore\":false}");
        hx_ex_free(&e);
        complete(&e, era, "{\"type\":\"ref/prompt\",\"name\":\"nope\"}", "who", "");
        CHECK_INT_EQ(hx_rpc_code(&e), RPC_INVALID_PARAMS);
        CHECK_STR_EQ(hx_rpc_message(&e), "Unknown prompt: nope");
        hx_ex_free(&e);
        complete(&e, era, "{\"type\":\"ref/resource\",\"uri\":\"file:///README\"}", "x", "");
        CHECK_STR_EQ(hx_rpc_message(&e), "Unknown resource template: file:///README");
        hx_ex_free(&e);
        complete(&e, era, "{\"type\":\"ref/tool\",\"name\":\"x\"}", "x", "");
        CHECK_CONTAINS(hx_rpc_message(&e), "params.ref must be");
        hx_ex_free(&e);
        expect_error(era, "completion/complete", NULL,
                     "{\"ref\":{\"type\":\"ref/prompt\","
                     "\"name\":\"greet\"},\"argument\":{\"name\":\"who\"}}",
                     RPC_INVALID_PARAMS,
                     "params.argument must be {\"name\": string, \"value\": string}");
        /* an executor-backed prompt's completion: one value per line of the worker's echo */
        const char *cparams = "{\"ref\":{\"type\":\"ref/prompt\",\"name\":\"dyn\"},\"argument\":{"
                              "\"name\":\"q\",\"value\":\"\"}}";
        hx_era_rpc(&h, &e, NULL, hx_eras[era], era < HX_NERAS - 1 ? sid[era] : NULL,
                   "completion/complete", NULL, cparams, NULL);
        CHECK(e.parked);
        CHECK_INT_EQ(hx_mcp_wait(&h, &e, 20000), 0);
        expect_member(&e, "completion",
                      "{\"values\":[\"{\\\"ref\\\":{\\\"type\\\":\\\"ref/prompt\\\",\\\"name\\\":"
                      "\\\"dyn\\\"},\\\"argument\\\":{\\\"name\\\":\\\"q\\\",\\\"value\\\":"
                      "\\\"\\\"}}\"],\"total\":1,\"hasMore\":false}");
        hx_ex_free(&e);
        /* the same prompt's argument named in its static completions: answered from them,
         * no job */
        complete(&e, era, "{\"type\":\"ref/prompt\",\"name\":\"dyn\"}", "tone", "c");
        expect_member(&e, "completion",
                      "{\"values\":[\"calm\",\"curt\"],\"total\":2,\"hasMore\":false}");
        hx_ex_free(&e);
    }
    TEST_PASS("completion/complete: prefix matches of static completions for prompts and "
              "templates (also of an executor-backed prompt), unknown refs");
}

/* More than 100 matches: the first 100, total and hasMore. */
static void test_complete_many(void)
{
    hx_t h2;
    size_t cap = 200000;
    char *cfg = malloc(cap);
    CHECK(cfg != NULL);
    size_t n = (size_t)snprintf(
        cfg, cap,
        "{\"tenants\":[{\"id\":\"t\",\"api_keys\":[{\"id\":\"k\",\"key\":\"" HX_API_KEY "\"}]}],"
        "\"servers\":[{\"tenant\":\"t\",\"name\":\"default\"}],\"tools\":[{\"kind\":\"prompt\","
        "\"tenant\":\"t\",\"server\":\"default\",\"name\":\"p\",\"versions\":[{\"version\":\"1\","
        "\"arguments\":[{\"name\":\"a\"}],\"messages\":[{\"role\":\"user\",\"content\":{"
        "\"type\":\"text\",\"text\":\"x\"}}],\"completions\":{\"a\":[");
    for (int i = 0; i < 150; i++)
        n += (size_t)snprintf(cfg + n, cap - n, "%s\"v%03d\"", i ? "," : "", i);
    snprintf(cfg + n, cap - n, "]}}]}]}");
    hx_stop(&h);
    hx_start(&h2, cfg, NULL);
    free(cfg);
    hx_ex_t e;
    hx_era_rpc(&h2, &e, NULL, hx_eras[3], NULL, "completion/complete", NULL,
               "{\"ref\":{\"type\":\"ref/prompt\",\"name\":\"p\"},\"argument\":{\"name\":\"a\","
               "\"value\":\"v\"}}",
               NULL);
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(hx_rpc_result(&e), "completion");
    CHECK_INT_EQ(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(c, "values")), 100);
    CHECK_INT_EQ(cJSON_GetObjectItemCaseSensitive(c, "total")->valuedouble, 150);
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "hasMore")));
    CHECK_STR_EQ(hx_str(&e, "result.completion.values.99"), "v099");
    hx_ex_free(&e);
    hx_stop(&h2);
    TEST_PASS("completion/complete: at most 100 values, total and hasMore");
}

int main(void)
{
    hx_start(&h, config, NULL);
    for (int era = 0; era < HX_NERAS - 1; era++)
        hx_session(&h, NULL, hx_eras[era], NULL, sid[era]);
    /* a worker answers the executor-backed objects' jobs */
    const char *const wenv[] = {NULL};
    pid_t w = fx_spawn_worker(&h.fx, "w1", wenv);
    CHECK(w > 0);
    test_read();
    test_get();
    test_complete();
    CHECK_INT_EQ(fx_stop_pid(w, 10000), 0);
    test_complete_many(); /* stops h */
    return 0;
}
