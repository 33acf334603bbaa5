/* Tests common/rpc.c: strict body checks, classification and serialization. */
#include "check.h"
#include "rpc.h"

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

/* Duplicate member names, the value count and non-finite ids (the hostile-input rules). */
static void test_hostile(void)
{
    const char *why = NULL;
    const char *dup = "{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"ping\"}";
    CHECK(rpc_parse(dup, strlen(dup), &why) == NULL);
    CHECK_STR_EQ(why, "duplicate member name in a JSON object");
    const char *nested_dup = "{\"params\":{\"arguments\":{\"a\":1,\"b\":2,\"a\":3}}}";
    CHECK(rpc_parse(nested_dup, strlen(nested_dup), &why) == NULL);
    CHECK(parses("{\"a\":{\"x\":1},\"b\":{\"x\":1}}")); /* same name, other objects */
    /* RPC_MAX_VALUES values pass (the outer array counts as one), one more does not. */
    size_t n = RPC_MAX_VALUES - 1;
    char *big = malloc(2 * n + 2);
    CHECK(big != NULL);
    big[0] = '[';
    for (size_t i = 0; i < n; i++) {
        big[1 + 2 * i] = '0';
        big[2 + 2 * i] = i + 1 < n ? ',' : ']';
    }
    big[2 * n + 1] = '\0';
    cJSON *v = rpc_parse(big, strlen(big), &why);
    CHECK(v != NULL);
    cJSON_Delete(v);
    big[2 * n] = ',';
    char *more = malloc(2 * n + 4);
    CHECK(more != NULL);
    memcpy(more, big, 2 * n + 1);
    memcpy(more + 2 * n + 1, "0]", 3);
    CHECK(rpc_parse(more, strlen(more), &why) == NULL);
    CHECK_CONTAINS(why, "too many JSON values");
    free(big);
    free(more);
    /* An id that parses to infinity is not an id: -32600, and nothing prints "inf". */
    const char *inf = "{\"jsonrpc\":\"2.0\",\"id\":1e400,\"method\":\"ping\"}";
    cJSON *root = rpc_parse(inf, strlen(inf), &why);
    CHECK(root != NULL);
    rpc_msg_t msg;
    rpc_classify(root, &msg);
    CHECK_INT_EQ(msg.kind, RPC_INVALID);
    CHECK_STR_EQ(msg.why, "\"id\" must be a finite number");
    CHECK(msg.id == NULL);
    cJSON_Delete(root);
    /* rpc_id_valid, which progressToken is held to as well: 258 bytes as JSON at most */
    char s256[257], esc[120];
    memset(s256, 'a', 256);
    s256[256] = '\0';
    memset(esc, '\x01', 119);
    esc[119] = '\0';
    cJSON *ok = cJSON_CreateString(s256), *bad = cJSON_CreateString(esc);
    cJSON *num = cJSON_CreateNumber(7), *obj = cJSON_CreateObject();
    CHECK(rpc_id_valid(ok) && rpc_id_valid(num));
    CHECK(!rpc_id_valid(bad) && !rpc_id_valid(obj) && !rpc_id_valid(NULL));
    s256[0] = '"'; /* one escape more: 259 bytes */
    cJSON_SetValuestring(ok, s256);
    CHECK(!rpc_id_valid(ok));
    cJSON_Delete(ok);
    cJSON_Delete(bad);
    cJSON_Delete(num);
    cJSON_Delete(obj);
    TEST_PASS("duplicate names, value count and non-finite ids are refused");
}

/* Regression (issue 17, finding 9): cJSON turns "\u0000" into the end of a C string and an
 * invalid "\u12G4" into a NUL too, so a tool name, an id or an argument checked here was not
 * the one a tool got. Escapes JSON does not allow, U+0000 and lone surrogates are refused. */
static void test_escapes(void)
{
    static const char *const bad[] = {
        "{\"method\":\"tools/call\\u0000x\"}", /* U+0000 */
        "{\"a\":\"\\u0000\"}",
        "{\"a\\u0000b\":1}",          /* in a member name */
        "{\"a\":\"\\u12G4\"}",        /* not hex */
        "{\"a\":\"\\u12\"}",          /* short */
        "{\"a\":\"\\uD800\"}",        /* lone high surrogate */
        "{\"a\":\"\\uD800\\u0041\"}", /* high surrogate, then no low one */
        "{\"a\":\"\\uDBFFx\\uDC00\"}",
        "{\"a\":\"\\uDC00\"}",        /* lone low surrogate */
        "{\"a\":\"\\uDFFF\\uD800\"}", /* reversed pair */
        "{\"a\":\"\\x41\"}",          /* escapes JSON does not have */
        "{\"a\":\"\\a\"}",
        "{\"a\":\"\\'\"}",
        "{\"a\":\"\\", /* ends inside an escape */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *why = NULL;
        if (rpc_parse(bad[i], strlen(bad[i]), &why) != NULL) {
            fprintf(stderr, "accepted: %s\n", bad[i]);
            exit(1);
        }
        CHECK(why != NULL);
    }
    const char *why = NULL;
    CHECK(rpc_parse(bad[0], strlen(bad[0]), &why) == NULL);
    CHECK_CONTAINS(why, "NUL");
    /* What JSON allows still parses, and a surrogate pair is one character. */
    CHECK(parses("{\"a\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"}"));
    CHECK(parses("{\"a\":\"\\u0041\\u00e9\\u4F60\\u0001\"}"));
    const char *pair = "{\"a\":\"\\uD83D\\uDE00\"}";
    cJSON *j = rpc_parse(pair, strlen(pair), &why);
    CHECK(j != NULL);
    CHECK_STR_EQ(cJSON_GetObjectItem(j, "a")->valuestring, "\xf0\x9f\x98\x80");
    cJSON_Delete(j);
    TEST_PASS("escapes: \\u0000, invalid \\u and lone surrogates refused");
}

int main(void)
{
    test_parse();
    test_escapes();
    test_classify();
    test_serialize();
    test_hostile();
    return 0;
}
