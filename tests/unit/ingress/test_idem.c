/*
 * Tests the parts of ingress/core/idem.c that need no Redis: which keys are accepted, the
 * canonical fingerprint of arguments (member order does not matter, values do) and the scope
 * (tenant, server, tool and key each matter). tests/integration/test_idem.c runs the claim
 * against a real Redis across two replicas.
 */
#include "check.h"
#include "err.h"
#include "idem.h"

#include <string.h>

static void test_key(void)
{
    const char *key;
    cJSON *a = cJSON_Parse("{\"x\":1}");
    CHECK_INT_EQ(ing_idem_key(a, &key), 0);
    CHECK(key == NULL);
    cJSON_Delete(a);
    a = cJSON_Parse("{\"idempotency_key\":\"k-1\"}");
    CHECK_INT_EQ(ing_idem_key(a, &key), 1);
    CHECK_STR_EQ(key, "k-1");
    cJSON_Delete(a);
    const char *bad[] = {"{\"idempotency_key\":\"\"}", "{\"idempotency_key\":7}",
                         "{\"idempotency_key\":null}", "{\"idempotency_key\":[\"k\"]}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        a = cJSON_Parse(bad[i]);
        CHECK_INT_EQ(ing_idem_key(a, &key), MCPQ_EINVAL);
        cJSON_Delete(a);
    }
    char json[400] = "{\"idempotency_key\":\"";
    size_t n = strlen(json);
    memset(json + n, 'k', 256);
    strcpy(json + n + 256, "\"}");
    a = cJSON_Parse(json);
    CHECK_INT_EQ(ing_idem_key(a, &key), MCPQ_EINVAL); /* 256 bytes */
    cJSON_Delete(a);
    strcpy(json + n + 255, "\"}");
    a = cJSON_Parse(json);
    CHECK_INT_EQ(ing_idem_key(a, &key), 1); /* 255 bytes */
    cJSON_Delete(a);
    TEST_PASS("idempotency_key: absent, or a string of 1..255 bytes");
}

static void fp(const char *json, char out[65])
{
    cJSON *v = cJSON_Parse(json);
    CHECK(v != NULL);
    CHECK_INT_EQ(ing_idem_fingerprint(v, out), 0);
    cJSON_Delete(v);
}

static void test_fingerprint(void)
{
    char a[65], b[65], c[65];
    fp("{\"a\":1,\"b\":{\"y\":[1,2,{\"q\":true,\"p\":null}],\"x\":\"s\"}}", a);
    fp("{\"b\":{\"x\":\"s\",\"y\":[1,2,{\"p\":null,\"q\":true}]},\"a\":1}", b);
    CHECK_STR_EQ(a, b);
    CHECK_INT_EQ((int)strlen(a), 64);
    fp("{\"a\":1,\"b\":{\"y\":[2,1,{\"q\":true,\"p\":null}],\"x\":\"s\"}}", c); /* array order */
    CHECK(strcmp(a, c) != 0);
    fp("{\"a\":\"1\"}", b);
    fp("{\"a\":1}", c);
    CHECK(strcmp(b, c) != 0); /* types matter */
    fp("{\"a:1\":2}", b);
    fp("{\"a\":\"1:2\"}", c);
    CHECK(strcmp(b, c) != 0); /* names are quoted, no ambiguity */
    fp("{}", b);
    fp("[]", c);
    CHECK(strcmp(b, c) != 0);
    TEST_PASS("fingerprints ignore member order and nothing else");
}

static void test_scope(void)
{
    char s[6][33];
    ing_idem_scope("t", "default", "echo", "k", s[0]);
    ing_idem_scope("t", "default", "echo", "k", s[1]);
    ing_idem_scope("u", "default", "echo", "k", s[2]);
    ing_idem_scope("t", "default", "echo2", "k", s[3]);
    ing_idem_scope("t", "default", "echo", "k2", s[4]);
    ing_idem_scope("t", "defaultecho", "", "k", s[5]); /* no ambiguity across fields */
    CHECK_STR_EQ(s[0], s[1]);
    CHECK_INT_EQ((int)strlen(s[0]), 32);
    for (int i = 2; i < 6; i++)
        CHECK(strcmp(s[0], s[i]) != 0);
    TEST_PASS("the scope is the tenant, the server, the tool and the key");
}

int main(void)
{
    test_key();
    test_fingerprint();
    test_scope();
    return 0;
}
