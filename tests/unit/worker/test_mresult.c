/* Tests worker/core/mresult.c: a CallToolResult mapped into each method's result. */
#include "check.h"
#include "envelope.h"
#include "mresult.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parses an envelope for method with arguments args and mime_type mime (NULL: none). */
static void envelope(wrk_envelope_t *env, const char *method, const char *args, const char *mime)
{
    char rec[1024], err[256] = "";
    snprintf(rec, sizeof(rec),
             "{\"v\":1,\"job_id\":\"j1\",\"tenant\":\"t\",\"tool\":\"x\",\"method\":\"%s\","
             "\"arguments\":%s,%s%s%s\"executor\":{\"type\":\"exec\"}}",
             method, args, mime ? "\"mime_type\":\"" : "", mime ? mime : "", mime ? "\"," : "");
    int rc = wrk_envelope_parse(env, rec, strlen(rec), err, sizeof(err));
    if (rc != 0)
        fprintf(stderr, "%s\n", err);
    CHECK_INT_EQ(rc, 0);
}

/* The mapped result of call (JSON) for env as compact JSON (malloc'd), or NULL with msg. */
static char *map(const wrk_envelope_t *env, const char *call, int *code, char *msg)
{
    cJSON *c = cJSON_Parse(call);
    CHECK(c != NULL);
    cJSON *r = wrk_mresult_from_call(env, c, code, msg, 256);
    cJSON_Delete(c);
    char *s = r ? cJSON_PrintUnformatted(r) : NULL;
    cJSON_Delete(r);
    return s;
}

static const char text_call[] =
    "{\"content\":[{\"type\":\"text\",\"text\":\"# Hello\"},"
    "{\"type\":\"image\",\"data\":\"iVBORw0=\",\"mimeType\":\"image/png\"},"
    "{\"type\":\"resource\",\"resource\":{\"uri\":\"other:1\",\"text\":\"x\"}},"
    "{\"type\":\"resource_link\",\"uri\":\"l:1\",\"name\":\"l\"}],\"isError\":false}";

static void test_read(void)
{
    wrk_envelope_t env;
    int code = 0;
    char msg[256] = "";
    envelope(&env, "resources/read", "{\"uri\":\"docs://readme\",\"variables\":{}}",
             "text/markdown");
    char *s = map(&env, text_call, &code, msg);
    CHECK_STR_EQ(s, "{\"contents\":[{\"uri\":\"docs://readme\",\"mimeType\":\"text/markdown\","
                    "\"text\":\"# Hello\"},{\"uri\":\"docs://readme\",\"mimeType\":\"image/png\","
                    "\"blob\":\"iVBORw0=\"},{\"uri\":\"other:1\",\"text\":\"x\"}]}");
    free(s);
    wrk_envelope_cleanup(&env);

    envelope(&env, "resources/read", "{\"uri\":\"docs://readme\"}", NULL);
    s = map(&env, "{\"content\":[{\"type\":\"text\",\"text\":\"plain\"}]}", &code, msg);
    CHECK_STR_EQ(s, "{\"contents\":[{\"uri\":\"docs://readme\",\"text\":\"plain\"}]}");
    free(s);
    wrk_envelope_cleanup(&env);
    TEST_PASS("resources/read: text and image items become contents with the job's uri");
}

static void test_prompt(void)
{
    wrk_envelope_t env;
    int code = 0;
    char msg[256] = "";
    envelope(&env, "prompts/get", "{\"name\":\"p\",\"arguments\":{}}", NULL);
    char *s = map(&env,
                  "{\"content\":[{\"type\":\"text\",\"text\":\"Review this\"},"
                  "{\"type\":\"image\",\"data\":\"AA==\",\"mimeType\":\"image/png\"}]}",
                  &code, msg);
    CHECK_STR_EQ(s, "{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\","
                    "\"text\":\"Review this\"}},{\"role\":\"user\",\"content\":{\"type\":"
                    "\"image\",\"data\":\"AA==\",\"mimeType\":\"image/png\"}}]}");
    free(s);
    wrk_envelope_cleanup(&env);
    TEST_PASS("prompts/get: every content item becomes a user message");
}

static void test_complete(void)
{
    wrk_envelope_t env;
    int code = 0;
    char msg[256] = "";
    envelope(&env, "completion/complete",
             "{\"ref\":{\"type\":\"ref/prompt\",\"name\":\"p\"},\"argument\":{\"name\":\"a\","
             "\"value\":\"p\"}}",
             NULL);
    char *s = map(&env,
                  "{\"content\":[{\"type\":\"text\",\"text\":\"python\\r\\nperl\\n\\nphp\\n\"},"
                  "{\"type\":\"text\",\"text\":\"pascal\"}]}",
                  &code, msg);
    CHECK_STR_EQ(s, "{\"completion\":{\"values\":[\"python\",\"perl\",\"php\",\"pascal\"],"
                    "\"total\":4,\"hasMore\":false}}");
    free(s);

    /* More lines than a CompleteResult may carry: the first 100, the total, hasMore. */
    size_t cap = 150 * 8 + 64;
    char *text = malloc(cap), *call = malloc(cap + 64);
    CHECK(text && call);
    size_t n = 0;
    for (int i = 0; i < 150; i++)
        n += (size_t)snprintf(text + n, cap - n, "v%d\\n", i);
    snprintf(call, cap + 64, "{\"content\":[{\"type\":\"text\",\"text\":\"%s\"}]}", text);
    cJSON *c = cJSON_Parse(call);
    cJSON *r = wrk_mresult_from_call(&env, c, &code, msg, sizeof(msg));
    const cJSON *comp = cJSON_GetObjectItemCaseSensitive(r, "completion");
    CHECK_INT_EQ(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(comp, "values")), 100);
    CHECK_INT_EQ(cJSON_GetObjectItemCaseSensitive(comp, "total")->valuedouble, 150);
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(comp, "hasMore")));
    cJSON_Delete(r);
    cJSON_Delete(c);
    free(text);
    free(call);
    wrk_envelope_cleanup(&env);
    TEST_PASS("completion/complete: one value per line, at most 100, with total and hasMore");
}

static void test_errors(void)
{
    wrk_envelope_t env;
    int code = 0;
    char msg[256] = "";
    envelope(&env, "resources/read", "{\"uri\":\"docs://readme\"}", NULL);
    char *s = map(&env,
                  "{\"content\":[{\"type\":\"text\",\"text\":\"no such file\"},"
                  "{\"type\":\"text\",\"text\":\"exit status 2\"}],\"isError\":true}",
                  &code, msg);
    CHECK(s == NULL);
    CHECK_INT_EQ(code, WRK_MRESULT_ERR_CODE);
    CHECK_STR_EQ(msg, "no such file\nexit status 2");
    s = map(&env, "{\"content\":[],\"isError\":true}", &code, msg);
    CHECK(s == NULL);
    CHECK_STR_EQ(msg, "the executor answered an error without text");

    /* A long message is cut to the buffer, at a character boundary. */
    char big[600], call[700];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    snprintf(call, sizeof(call),
             "{\"content\":[{\"type\":\"text\",\"text\":\"%s\"}],"
             "\"isError\":true}",
             big);
    s = map(&env, call, &code, msg);
    CHECK(s == NULL);
    CHECK_INT_EQ(strlen(msg), 255);
    wrk_envelope_cleanup(&env);

    envelope(&env, "mcpq/catalog", "{}", NULL);
    s = map(&env, "{\"content\":[]}", &code, msg);
    CHECK(s == NULL);
    CHECK_CONTAINS(msg, "mcpq/catalog needs the mcp executor");
    wrk_envelope_cleanup(&env);

    envelope(&env, "resources/subscribe", "{\"uri\":\"u:1\"}", NULL);
    s = map(&env, "{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}", &code, msg);
    CHECK_STR_EQ(s, "{}");
    free(s);
    wrk_envelope_cleanup(&env);

    envelope(&env, "tools/call", "{}", NULL);
    s = map(&env, "{\"content\":[],\"isError\":true}", &code, msg);
    CHECK_STR_EQ(s, "{\"content\":[],\"isError\":true}"); /* a tool's error is its answer */
    free(s);
    wrk_envelope_cleanup(&env);
    TEST_PASS("isError becomes the job's error with its text; catalog needs mcp; subscribe {}");
}

int main(void)
{
    test_read();
    test_prompt();
    test_complete();
    test_errors();
    return 0;
}
