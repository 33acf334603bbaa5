/*
 * Tests ingress/core/rstate.c without Redis (a configured key): a state made for a question
 * checks for the same caller and request, and nothing else passes: a changed payload or
 * signature, another key, tenant, owner, session, method or arguments, an expired state, an
 * oversized one and garbage, a signed payload that is not an object or lacks its job, n or
 * expiry, and no key at all (unavailable). tests/handlers/test_mrtr.c covers the fleet key kept
 * in Redis.
 */
#include "check.h"
#include "err.h"
#include "rstate.h"
#include "util.h"

#include <openssl/hmac.h>
#include <string.h>

#define KEY "0123456789abcdef0123456789abcdef"
#define NOW 1800000000000LL

static ing_rstate_claims_t claims(const char *params)
{
    ing_rstate_claims_t c = {.job_id = "j_0123456789abcdef",
                             .n = 2,
                             .tenant = "acme",
                             .owner = "key:k1",
                             .session = NULL,
                             .method = "tools/call",
                             .expires_ms = NOW + 60000};
    cJSON *p = cJSON_Parse(params);
    CHECK(p != NULL);
    CHECK_INT_EQ(ing_rstate_digest(c.method, p, c.digest), 0);
    cJSON_Delete(p);
    return c;
}

static int check(ing_rstate_t *rs, const char *state, ing_rstate_claims_t *c, int64_t now)
{
    char job[ING_RSTATE_JOB_MAX], why[128];
    return ing_rstate_check(rs, state, now, c, job, why, sizeof(why));
}

static void test_roundtrip(ing_rstate_t *rs)
{
    ing_rstate_claims_t c =
        claims("{\"name\":\"t\",\"arguments\":{\"a\":1,\"b\":[1,{\"y\":2,\"x\":1}]}}");
    char state[ING_RSTATE_MAX], job[ING_RSTATE_JOB_MAX], why[128];
    CHECK_INT_EQ(ing_rstate_make(rs, &c, state, sizeof(state)), 0);
    CHECK(strncmp(state, "v1.", 3) == 0);
    CHECK(strlen(state) < ING_RSTATE_MAX);
    /* the client reorders the arguments' members: the same request */
    ing_rstate_claims_t e =
        claims("{\"arguments\":{\"b\":[1,{\"x\":1,\"y\":2}],\"a\":1},\"name\":\"t\"}");
    e.job_id = NULL;
    e.n = 0;
    CHECK_INT_EQ(ing_rstate_check(rs, state, NOW, &e, job, why, sizeof(why)), 0);
    CHECK_STR_EQ(e.job_id, "j_0123456789abcdef");
    CHECK_STR_EQ(job, "j_0123456789abcdef");
    CHECK_INT_EQ(e.n, 2);
    CHECK_INT_EQ(e.expires_ms, NOW + 60000);
    /* no secret in the payload: the owner string is only a digest */
    char payload[ING_RSTATE_MAX];
    size_t len = 0;
    const char *dot = strchr(state + 3, '.');
    CHECK(util_b64_decode(state + 3, (size_t)(dot - state - 3), UTIL_B64_URL | UTIL_B64_NOPAD,
                          (unsigned char *)payload, sizeof(payload) - 1, &len) == 0);
    payload[len] = '\0';
    CHECK(strstr(payload, "key:k1") == NULL);
    CHECK_CONTAINS(payload, "\"j\":\"j_0123456789abcdef\"");
    TEST_PASS("a state checks for the same caller and request, members in any order");
}

static void test_refused(ing_rstate_t *rs)
{
    ing_rstate_claims_t c = claims("{\"name\":\"t\",\"arguments\":{\"a\":1}}");
    char state[ING_RSTATE_MAX];
    CHECK_INT_EQ(ing_rstate_make(rs, &c, state, sizeof(state)), 0);
    ing_rstate_claims_t e = c;
    CHECK_INT_EQ(check(rs, state, &e, NOW), 0);
    e = c;
    e.tenant = "other";
    CHECK_INT_EQ(check(rs, state, &e, NOW), MCPQ_EINVAL);
    e = c;
    e.owner = "key:k2";
    CHECK_INT_EQ(check(rs, state, &e, NOW), MCPQ_EINVAL);
    e = c;
    e.session = "s_1";
    CHECK_INT_EQ(check(rs, state, &e, NOW), MCPQ_EINVAL);
    e = c;
    e.method = "prompts/get";
    CHECK_INT_EQ(check(rs, state, &e, NOW), MCPQ_EINVAL);
    e = claims("{\"name\":\"t\",\"arguments\":{\"a\":2}}");
    CHECK_INT_EQ(check(rs, state, &e, NOW), MCPQ_EINVAL);
    e = claims("{\"name\":\"u\",\"arguments\":{\"a\":1}}");
    CHECK_INT_EQ(check(rs, state, &e, NOW), MCPQ_EINVAL);
    e = c;
    CHECK_INT_EQ(check(rs, state, &e, NOW + 60000), MCPQ_EINVAL); /* expired */
    /* another key */
    ing_rstate_t *other = ing_rstate_new(KEY "x", strlen(KEY) + 1, NULL);
    e = c;
    CHECK_INT_EQ(check(other, state, &e, NOW), MCPQ_EINVAL);
    ing_rstate_free(other);
    TEST_PASS("another tenant, owner, session, method, arguments, key, or expired: refused");
}

static void test_tampered(ing_rstate_t *rs)
{
    ing_rstate_claims_t c = claims("{\"name\":\"t\"}");
    char state[ING_RSTATE_MAX], forged[ING_RSTATE_MAX];
    CHECK_INT_EQ(ing_rstate_make(rs, &c, state, sizeof(state)), 0);
    /* each character of the payload and of the signature changed in turn */
    for (size_t i = 3; state[i]; i++) {
        if (state[i] == '.')
            continue;
        snprintf(forged, sizeof(forged), "%s", state);
        forged[i] = forged[i] == 'A' ? 'B' : 'A';
        ing_rstate_claims_t e = c;
        CHECK_INT_EQ(check(rs, forged, &e, NOW), MCPQ_EINVAL);
    }
    /* a payload of another job, re-encoded, under the old signature */
    ing_rstate_claims_t d = c;
    d.job_id = "j_other";
    char state2[ING_RSTATE_MAX];
    CHECK_INT_EQ(ing_rstate_make(rs, &d, state2, sizeof(state2)), 0);
    const char *sig1 = strrchr(state, '.');
    const char *sig2 = strrchr(state2, '.');
    snprintf(forged, sizeof(forged), "%.*s%s", (int)(sig2 - state2), state2, sig1);
    ing_rstate_claims_t e = c;
    CHECK_INT_EQ(check(rs, forged, &e, NOW), MCPQ_EINVAL);
    TEST_PASS("a changed payload or signature is refused");
}

static void test_garbage_and_size(ing_rstate_t *rs)
{
    const char *bad[] = {"",       "v1",          "v1.",         "v1..", "v2.e30.AAAA",
                         "v1.e30", "v1.!!!.AAAA", "v1.e30.AAAA", "hello"};
    ing_rstate_claims_t c = claims("{\"name\":\"t\"}");
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ing_rstate_claims_t e = c;
        CHECK_INT_EQ(check(rs, bad[i], &e, NOW), MCPQ_EINVAL);
    }
    ing_rstate_claims_t e = c;
    CHECK_INT_EQ(check(rs, NULL, &e, NOW), MCPQ_EINVAL);
    static char big[4096];
    memset(big, 'A', sizeof(big) - 1);
    memcpy(big, "v1.", 3);
    e = c;
    CHECK_INT_EQ(check(rs, big, &e, NOW), MCPQ_EINVAL);
    /* a state that would pass 1 KiB is never made */
    static char sess[900];
    memset(sess, 's', sizeof(sess) - 1);
    c.session = sess;
    char state[ING_RSTATE_MAX * 2];
    CHECK_INT_EQ(ing_rstate_make(rs, &c, state, sizeof(state)), MCPQ_ETOOBIG);
    c.session = NULL;
    c.job_id = "bad id!";
    CHECK_INT_EQ(ing_rstate_make(rs, &c, state, sizeof(state)), MCPQ_EINVAL);
    c.job_id = "j_0123456789abcdef0123456789abcdef012345"; /* 40: longer than a job id */
    CHECK_INT_EQ(ing_rstate_make(rs, &c, state, sizeof(state)), MCPQ_EINVAL);
    TEST_PASS("garbage and oversized states are refused; none over 1 KiB is made");
}

static void test_digest(void)
{
    char a[33], b[33];
    cJSON *p = cJSON_Parse("{\"uri\":\"file:///a\"}");
    CHECK_INT_EQ(ing_rstate_digest("resources/read", p, a), 0);
    cJSON_Delete(p);
    p = cJSON_Parse("{\"uri\":\"file:///b\"}");
    CHECK_INT_EQ(ing_rstate_digest("resources/read", p, b), 0);
    cJSON_Delete(p);
    CHECK(strcmp(a, b) != 0);
    p = cJSON_Parse("{\"name\":\"file:///a\"}");
    CHECK_INT_EQ(ing_rstate_digest("prompts/get", p, b), 0);
    cJSON_Delete(p);
    CHECK(strcmp(a, b) != 0);
    /* requestState, inputResponses and _meta are not part of the request */
    p = cJSON_Parse("{\"name\":\"t\",\"arguments\":{}}");
    CHECK_INT_EQ(ing_rstate_digest("tools/call", p, a), 0);
    cJSON_Delete(p);
    p = cJSON_Parse("{\"name\":\"t\",\"arguments\":{},\"requestState\":\"x\","
                    "\"inputResponses\":{\"k\":{}},\"_meta\":{\"a\":1}}");
    CHECK_INT_EQ(ing_rstate_digest("tools/call", p, b), 0);
    cJSON_Delete(p);
    CHECK_STR_EQ(a, b);
    TEST_PASS("the digest covers the uri or name and arguments, not the retry's own fields");
}

/* A state of payload json signed with KEY, as only the fleet could make it. */
static void forge(const char *json, char *out)
{
    unsigned char mac[32];
    unsigned int maclen = 0;
    strcpy(out, "v1.");
    util_b64url_encode((const unsigned char *)json, strlen(json), out + 3);
    CHECK(HMAC(EVP_sha256(), KEY, (int)strlen(KEY), (const unsigned char *)out, strlen(out), mac,
               &maclen) != NULL);
    size_t at = strlen(out);
    out[at] = '.';
    util_b64url_encode(mac, sizeof(mac), out + at + 1);
}

static void test_signed_but_wrong(ing_rstate_t *rs)
{
    ing_rstate_claims_t c = claims("{\"name\":\"t\"}");
    char state[ING_RSTATE_MAX], job[ING_RSTATE_JOB_MAX], why[128];
    forge("{\"j\":\"j_1\",\"n\":1,\"e\":1900000000000}", state);
    ing_rstate_claims_t e = c;
    CHECK_INT_EQ(ing_rstate_check(rs, state, NOW, &e, job, why, sizeof(why)), MCPQ_EINVAL);
    CHECK_STR_EQ(why, "requestState of another caller"); /* the forge is accepted as signed */
    const char *bad[] = {"[1,2]", "\"j\"", "not json"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        forge(bad[i], state);
        e = c;
        CHECK_INT_EQ(ing_rstate_check(rs, state, NOW, &e, job, why, sizeof(why)), MCPQ_EINVAL);
        CHECK_STR_EQ(why, "requestState payload is not an object");
    }
    const char *lacking[] = {"{\"n\":1,\"e\":1900000000000}",
                             "{\"j\":\"j_1\",\"e\":1900000000000}",
                             "{\"j\":\"j_1\",\"n\":0,\"e\":1900000000000}",
                             "{\"j\":\"bad id!\",\"n\":1,\"e\":1900000000000}",
                             "{\"j\":\"j_1\",\"n\":1}",
                             "{\"j\":\"j_1\",\"n\":1,\"e\":\"x\"}"};
    for (size_t i = 0; i < sizeof(lacking) / sizeof(lacking[0]); i++) {
        forge(lacking[i], state);
        e = c;
        CHECK_INT_EQ(ing_rstate_check(rs, state, NOW, &e, job, why, sizeof(why)), MCPQ_EINVAL);
        CHECK_STR_EQ(why, "requestState payload lacks its job or question");
    }
    TEST_PASS("a signed payload that is not an object, or lacks its job or n or expiry: refused");
}

static void test_no_key(ing_rstate_t *rs)
{
    /* no configured key and no Redis to keep the fleet's: nothing is made or accepted */
    ing_rstate_t *none = ing_rstate_new(NULL, 0, NULL);
    CHECK(none != NULL);
    ing_rstate_claims_t c = claims("{\"name\":\"t\"}");
    char state[ING_RSTATE_MAX], job[ING_RSTATE_JOB_MAX], why[128];
    CHECK_INT_EQ(ing_rstate_make(none, &c, state, sizeof(state)), MCPQ_EUNAVAIL);
    CHECK_INT_EQ(ing_rstate_make(rs, &c, state, sizeof(state)), 0);
    ing_rstate_claims_t e = c;
    CHECK_INT_EQ(ing_rstate_check(none, state, NOW, &e, job, why, sizeof(why)), MCPQ_EUNAVAIL);
    CHECK_STR_EQ(why, "the requestState key is unavailable");
    ing_rstate_free(none);
    TEST_PASS("without a key (none configured, no Redis): make and check say unavailable");
}

int main(void)
{
    ing_rstate_t *rs = ing_rstate_new(KEY, strlen(KEY), NULL);
    CHECK(rs != NULL);
    test_roundtrip(rs);
    test_refused(rs);
    test_tampered(rs);
    test_garbage_and_size(rs);
    test_digest();
    test_signed_but_wrong(rs);
    test_no_key(rs);
    ing_rstate_free(rs);
    ing_rstate_free(NULL);
    return 0;
}
