/* Tests common/jsonrpc.c: strict body checks, classification and serialization. */
#include "check.h"
#include "jsonrpc.h"

#include <stdlib.h>
#include <string.h>

static int parses(const char *body)
{
    const char *why = NULL;
    cJSON *j = rpc_parse(body, strlen(body), &why);
    int ok = j != NULL;
    cJSON_Delete(j);
    return ok;
}

static void test_parse(void)
{
    CHECK(parses("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}"));
    CHECK(parses("  [1,2]  \n"));
    CHECK(!parses(""));
    CHECK(!parses("{"));
    CHECK(!parses("{\"a\":1} x"));
    CHECK(!parses("{\"a\":\"\xff\"}"));         /* invalid UTF-8 */
    CHECK(!parses("{\"a\":\"\xed\xa0\x80\"}")); /* UTF-16 surrogate encoded in UTF-8 */
    CHECK(!parses("{\"a\":\"\xc0\xaf\"}"));     /* overlong */
    CHECK(parses("{\"a\":\"\xe4\xbd\xa0\xe5\xa5\xbd\"}"));
    CHECK(!parses("{\"a\":\"tab\there\"}")); /* raw control character in a string */
    CHECK(parses("{\"a\":\"esc\\\"aped\\\\\"}"));
    const char nul[] = "{\"a\":1}\0";
    const char *why = NULL;
    CHECK(rpc_parse(nul, sizeof(nul) - 1, &why) == NULL);
    CHECK_STR_EQ(why, "NUL byte in body");
    /* Nesting deeper than RPC_MAX_DEPTH is refused before cJSON sees it. */
    char deep[400];
    memset(deep, '[', 100);
    memset(deep + 100, ']', 100);
    deep[200] = '\0';
    CHECK(!parses(deep));
    memset(deep, '[', 10);
    memset(deep + 10, ']', 10);
    deep[20] = '\0';
    CHECK(parses(deep));
    TEST_PASS("parse");
}

static rpc_kind_t kind_of(const char *body, const char **why)
{
    const char *w = NULL;
    cJSON *j = rpc_parse(body, strlen(body), &w);
    CHECK(j != NULL);
    rpc_msg_t m;
    rpc_classify(j, &m);
    if (why)
        *why = m.why;
    rpc_kind_t k = m.kind;
    cJSON_Delete(j);
    return k;
}

static void test_classify(void)
{
    const char *why;
    CHECK_INT_EQ(kind_of("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", NULL), RPC_REQUEST);
    CHECK_INT_EQ(kind_of("{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"x\",\"params\":{}}", NULL),
                 RPC_REQUEST);
    CHECK_INT_EQ(kind_of("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", NULL),
                 RPC_NOTIFICATION);
    CHECK_INT_EQ(kind_of("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", NULL), RPC_RESPONSE);
    CHECK_INT_EQ(kind_of("{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}", &why), RPC_INVALID);
    CHECK_CONTAINS(why, "jsonrpc");
    CHECK_INT_EQ(kind_of("{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}", &why), RPC_INVALID);
    CHECK_CONTAINS(why, "id");
    CHECK_INT_EQ(kind_of("{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}", &why),
                 RPC_INVALID);
    CHECK_INT_EQ(kind_of("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":5}", &why), RPC_INVALID);
    CHECK_CONTAINS(why, "method");
    CHECK_INT_EQ(kind_of("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":3}", &why),
                 RPC_INVALID);
    CHECK_CONTAINS(why, "params");
    CHECK_INT_EQ(kind_of("[1]", &why), RPC_INVALID);
    TEST_PASS("classify");
}

static void test_serialize(void)
{
    cJSON *id = cJSON_CreateNumber(7);
    char *s = rpc_result_str(id, "{}");
    CHECK_STR_EQ(s, "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}");
    free(s);
    s = rpc_error_str(NULL, RPC_PARSE_ERROR, "Parse error", NULL);
    CHECK_STR_EQ(s, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":"
                    "\"Parse error\"}}");
    free(s);
    cJSON_Delete(id);
    id = cJSON_CreateString("a\"b");
    char buf[64];
    CHECK_STR_EQ(rpc_id_str(id, buf, sizeof(buf)), "\"a\\\"b\"");
    cJSON_Delete(id);
    TEST_PASS("serialize");
}

int main(void)
{
    test_parse();
    test_classify();
    test_serialize();
    return 0;
}
