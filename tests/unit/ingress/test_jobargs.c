/* Tests ingress/mcp/jobargs.c: the params a job-backed resources/read, prompts/get and
 * completion/complete accept, and the job's arguments. */
#include "check.h"
#include "jobargs.h"

#include <stdlib.h>
#include <string.h>

static char *build(kinds_method_t m, const char *params, const char *vars)
{
    cJSON *p = cJSON_Parse(params), *v = vars ? cJSON_Parse(vars) : NULL;
    CHECK(p != NULL);
    cJSON *a = ing_jobargs_build(m, p, v);
    char *s = cJSON_PrintUnformatted(a);
    cJSON_Delete(a);
    cJSON_Delete(p);
    cJSON_Delete(v);
    return s;
}

static int check(kinds_method_t m, const char *params, char *why)
{
    cJSON *p = cJSON_Parse(params);
    CHECK(p != NULL);
    int rc = ing_jobargs_check(m, p, why, 256);
    cJSON_Delete(p);
    return rc;
}

static void test_methods(void)
{
    CHECK_INT_EQ(kinds_method("tools/call"), KINDS_METHOD_CALL);
    CHECK_INT_EQ(kinds_method("resources/read"), KINDS_METHOD_READ);
    CHECK_INT_EQ(kinds_method("prompts/get"), KINDS_METHOD_PROMPT);
    CHECK_INT_EQ(kinds_method("completion/complete"), KINDS_METHOD_COMPLETE);
    CHECK_INT_EQ(kinds_method("resources/list"), -1);
    CHECK_INT_EQ(kinds_method(NULL), -1);
    CHECK_STR_EQ(kinds_method_name(KINDS_METHOD_PROMPT), "prompts/get");
    TEST_PASS("the methods a job answers, by name");
}

static void test_check(void)
{
    char why[256];
    CHECK_INT_EQ(check(KINDS_METHOD_READ, "{\"uri\":\"a:b\"}", why), 0);
    CHECK_INT_EQ(check(KINDS_METHOD_READ, "{\"uri\":3}", why), -1);
    CHECK_INT_EQ(check(KINDS_METHOD_SUBSCRIBE, "{\"uri\":\"a:b\"}", why), 0);
    CHECK_INT_EQ(check(KINDS_METHOD_UNSUBSCRIBE, "{}", why), -1);
    CHECK_INT_EQ(kinds_method("resources/subscribe"), KINDS_METHOD_SUBSCRIBE);
    CHECK_INT_EQ(kinds_method("resources/unsubscribe"), KINDS_METHOD_UNSUBSCRIBE);
    CHECK_STR_EQ(why, "params.uri must be a string");
    CHECK_INT_EQ(check(KINDS_METHOD_PROMPT, "{\"name\":\"p\",\"arguments\":null}", why), 0);
    CHECK_INT_EQ(check(KINDS_METHOD_PROMPT, "{\"name\":\"p\",\"arguments\":[]}", why), -1);
    CHECK_STR_EQ(why, "params.arguments must be an object");
    CHECK_INT_EQ(check(KINDS_METHOD_PROMPT, "{}", why), -1);
    CHECK_STR_EQ(why, "params.name must be a string");
    CHECK_INT_EQ(check(KINDS_METHOD_COMPLETE,
                       "{\"ref\":{\"type\":\"ref/prompt\",\"name\":\"p\"},\"argument\":{\"name\":"
                       "\"a\",\"value\":\"\"},\"context\":{\"arguments\":{\"b\":\"1\"}}}",
                       why),
                 0);
    CHECK_INT_EQ(check(KINDS_METHOD_COMPLETE, "{\"ref\":{},\"argument\":{}}", why), -1);
    CHECK_STR_EQ(why, "params.ref must be an object with a string type");
    CHECK_INT_EQ(
        check(KINDS_METHOD_COMPLETE, "{\"ref\":{\"type\":\"x\"},\"argument\":{\"name\":1}}", why),
        -1);
    CHECK_STR_EQ(why, "params.argument must be an object with string name and value");
    CHECK_INT_EQ(check(KINDS_METHOD_COMPLETE,
                       "{\"ref\":{\"type\":\"x\"},\"argument\":{\"name\":\"a\",\"value\":\"\"},"
                       "\"context\":{\"arguments\":7}}",
                       why),
                 -1);
    CHECK_STR_EQ(why, "params.context.arguments must be an object");
    TEST_PASS("params of each method are checked with a message");
}

static void test_build(void)
{
    char *s =
        build(KINDS_METHOD_READ, "{\"uri\":\"n://a/b\",\"_meta\":{\"x\":1}}", "{\"id\":\"b\"}");
    CHECK_STR_EQ(s, "{\"uri\":\"n://a/b\",\"variables\":{\"id\":\"b\"}}");
    free(s);
    s = build(KINDS_METHOD_READ, "{\"uri\":\"n://a\"}", NULL);
    CHECK_STR_EQ(s, "{\"uri\":\"n://a\",\"variables\":{}}");
    free(s);
    s = build(KINDS_METHOD_PROMPT, "{\"name\":\"p\",\"_meta\":{}}", NULL);
    CHECK_STR_EQ(s, "{\"name\":\"p\",\"arguments\":{}}");
    free(s);
    s = build(KINDS_METHOD_COMPLETE,
              "{\"ref\":{\"type\":\"ref/prompt\",\"name\":\"p\"},\"argument\":{\"name\":\"a\","
              "\"value\":\"x\"}}",
              NULL);
    CHECK_STR_EQ(s, "{\"ref\":{\"type\":\"ref/prompt\",\"name\":\"p\"},\"argument\":{\"name\":"
                    "\"a\",\"value\":\"x\"}}");
    free(s);
    s = build(
        KINDS_METHOD_COMPLETE,
        "{\"ref\":{\"type\":\"r\"},\"argument\":{},\"context\":{\"arguments\":{\"b\":\"1\"}}}",
        NULL);
    CHECK_STR_EQ(s, "{\"ref\":{\"type\":\"r\"},\"argument\":{},\"context\":{\"arguments\":{\"b\":"
                    "\"1\"}}}");
    free(s);
    s = build(KINDS_METHOD_SUBSCRIBE, "{\"uri\":\"n://a\",\"_meta\":{\"x\":1}}", "{\"id\":\"a\"}");
    CHECK_STR_EQ(s, "{\"uri\":\"n://a\"}");
    free(s);
    s = build(KINDS_METHOD_UNSUBSCRIBE, "{\"uri\":\"n://a\"}", NULL);
    CHECK_STR_EQ(s, "{\"uri\":\"n://a\"}");
    free(s);
    s = build(KINDS_METHOD_CALL, "{\"name\":\"t\",\"arguments\":{\"a\":1}}", NULL);
    CHECK_STR_EQ(s, "{\"a\":1}");
    free(s);
    TEST_PASS("the job's arguments: params without _meta, a template's variables; a "
              "subscription's uri");
}

int main(void)
{
    test_methods();
    test_check();
    test_build();
    return 0;
}
