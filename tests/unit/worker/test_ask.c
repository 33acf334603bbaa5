/* Tests worker/core/ask.c's pure helpers: the question's shape and size, the capability a
 * request needs, the error answer. (Questions through Redis: tests/integration/test_ask.c.) */
#include "ask.h"
#include "check.h"
#include "err.h"

#include <stdlib.h>
#include <string.h>

static int check(const char *json, long long max, char *err, size_t size)
{
    cJSON *q = cJSON_Parse(json);
    CHECK(q != NULL);
    err[0] = '\0';
    int rc = wrk_ask_check(q, max, err, size);
    cJSON_Delete(q);
    return rc;
}

static void test_check(void)
{
    char err[256];
    CHECK_INT_EQ(check("{\"q1\":{\"method\":\"elicitation/create\",\"params\":{}}}", 1 << 20, err,
                       sizeof(err)),
                 0);
    CHECK_INT_EQ(check("{\"a.b-c_9\":{\"method\":\"roots/list\"},"
                       "\"s\":{\"method\":\"sampling/createMessage\",\"params\":{}}}",
                       1 << 20, err, sizeof(err)),
                 0);
    CHECK_INT_EQ(check("{}", 1 << 20, err, sizeof(err)), MCPQ_EINVAL);
    CHECK_CONTAINS(err, "non-empty object");
    CHECK_INT_EQ(check("[]", 1 << 20, err, sizeof(err)), MCPQ_EINVAL);
    CHECK_INT_EQ(check("{\"a b\":{\"method\":\"roots/list\"}}", 1 << 20, err, sizeof(err)),
                 MCPQ_EINVAL);
    CHECK_CONTAINS(err, "request key \"a b\"");
    char longkey[200];
    snprintf(longkey, sizeof(longkey), "{\"%065d\":{\"method\":\"roots/list\"}}", 0);
    CHECK_INT_EQ(check(longkey, 1 << 20, err, sizeof(err)), MCPQ_EINVAL);
    CHECK_INT_EQ(check("{\"q\":{\"method\":\"tools/call\"}}", 1 << 20, err, sizeof(err)),
                 MCPQ_EINVAL);
    CHECK_CONTAINS(err, "method must be");
    CHECK_INT_EQ(check("{\"q\":\"x\"}", 1 << 20, err, sizeof(err)), MCPQ_EINVAL);
    CHECK_INT_EQ(
        check("{\"q\":{\"method\":\"roots/list\",\"params\":[]}}", 1 << 20, err, sizeof(err)),
        MCPQ_EINVAL);
    CHECK_CONTAINS(err, "params must be an object");
    CHECK_INT_EQ(
        check("{\"q\":{\"method\":\"roots/list\",\"extra\":1}}", 1 << 20, err, sizeof(err)),
        MCPQ_EINVAL);
    CHECK_CONTAINS(err, "unknown member \"extra\"");
    CHECK_INT_EQ(check("{\"q\":{\"method\":\"roots/list\"}}", 20, err, sizeof(err)), MCPQ_ETOOBIG);
    CHECK_CONTAINS(err, "over the 20 allowed");
    TEST_PASS("wrk_ask_check: keys, methods, params, size");
}

static const char *undeclared(const char *client, const char *request)
{
    static char out[64];
    cJSON *c = client ? cJSON_Parse(client) : NULL;
    cJSON *r = cJSON_Parse(request);
    CHECK(r != NULL);
    const char *cap = wrk_ask_undeclared(c, r);
    snprintf(out, sizeof(out), "%s", cap ? cap : "");
    cJSON_Delete(c);
    cJSON_Delete(r);
    return out;
}

static void test_undeclared(void)
{
    const char *form = "{\"method\":\"elicitation/create\",\"params\":{\"message\":\"m\"}}";
    const char *url =
        "{\"method\":\"elicitation/create\",\"params\":{\"mode\":\"url\",\"url\":\"https://x\"}}";
    const char *sampling = "{\"method\":\"sampling/createMessage\",\"params\":{}}";
    const char *roots = "{\"method\":\"roots/list\"}";
    CHECK_STR_EQ(undeclared(NULL, form), "elicitation");
    CHECK_STR_EQ(undeclared("{\"capabilities\":{}}", form), "elicitation");
    CHECK_STR_EQ(undeclared("{\"capabilities\":{\"elicitation\":{}}}", form), "");
    CHECK_STR_EQ(undeclared("{\"capabilities\":{\"elicitation\":{}}}", url),
                 "elicitation url mode");
    CHECK_STR_EQ(undeclared("{\"capabilities\":{\"elicitation\":{\"url\":{}}}}", url), "");
    CHECK_STR_EQ(undeclared("{\"capabilities\":{\"elicitation\":{\"url\":{}}}}", form),
                 "elicitation form mode");
    CHECK_STR_EQ(undeclared("{\"capabilities\":{\"elicitation\":{\"form\":{}}}}", form), "");
    CHECK_STR_EQ(undeclared("{\"capabilities\":{\"elicitation\":{}}}", sampling), "sampling");
    CHECK_STR_EQ(undeclared("{\"capabilities\":{\"sampling\":{}}}", sampling), "");
    CHECK_STR_EQ(undeclared("{\"capabilities\":{\"sampling\":{}}}", roots), "roots");
    CHECK_STR_EQ(undeclared("{\"capabilities\":{\"roots\":{\"listChanged\":true}}}", roots), "");
    TEST_PASS("wrk_ask_undeclared: elicitation (form, url), sampling, roots");
}

static void test_error_answer(void)
{
    cJSON *a = wrk_ask_error_answer(-32001, "late");
    char *s = cJSON_PrintUnformatted(a);
    CHECK_STR_EQ(s, "{\"error\":{\"code\":-32001,\"message\":\"late\"}}");
    free(s);
    cJSON_Delete(a);
    TEST_PASS("wrk_ask_error_answer");
}

int main(void)
{
    test_check();
    test_undeclared();
    test_error_answer();
    return 0;
}
