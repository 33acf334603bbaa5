/* Tests common/whsig.c: Standard Webhooks signatures, against the published test vector. */
#include "check.h"
#include "err.h"
#include "whsig.h"

#include <string.h>

static void test_vector(void)
{
    const char *body = "{\"test\": 2432232314}";
    char sig[WHSIG_LEN];
    CHECK_INT_EQ(whsig_sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                            "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body, strlen(body), sig,
                            sizeof(sig)),
                 0);
    CHECK_STR_EQ(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    TEST_PASS("published test vector");
}

static void test_changes(void)
{
    const char *body = "{\"test\": 2432232314}";
    char a[WHSIG_LEN], b[WHSIG_LEN];
    const char *secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    CHECK_INT_EQ(whsig_sign(secret, "msg_1", 1614265330, body, strlen(body), a, sizeof(a)), 0);
    CHECK_INT_EQ(whsig_sign(secret, "msg_1", 1614265331, body, strlen(body), b, sizeof(b)), 0);
    CHECK(strcmp(a, b) != 0);
    CHECK_INT_EQ(whsig_sign(secret, "msg_2", 1614265330, body, strlen(body), b, sizeof(b)), 0);
    CHECK(strcmp(a, b) != 0);
    CHECK_INT_EQ(whsig_sign(secret, "msg_1", 1614265330, "{}", 2, b, sizeof(b)), 0);
    CHECK(strcmp(a, b) != 0);
    CHECK_INT_EQ((int)strlen(a), WHSIG_LEN - 1);
    /* Unpadded base64 keys decode the same as padded ones. */
    CHECK_INT_EQ(whsig_sign("whsec_AAEC", "m", 1, "x", 1, a, sizeof(a)), 0);
    CHECK_INT_EQ(whsig_sign("whsec_AAE=", "m", 1, "x", 1, b, sizeof(b)), 0);
    CHECK(strcmp(a, b) != 0); /* different keys: 00 01 02 vs 00 01 */
    CHECK_INT_EQ(whsig_sign("whsec_AAE", "m", 1, "x", 1, a, sizeof(a)), 0);
    CHECK_STR_EQ(a, b);
    TEST_PASS("id, timestamp, body and key all change the signature");
}

static void test_bad_secrets(void)
{
    char sig[WHSIG_LEN];
    const char *bad[] = {"",
                         "whsec_",
                         "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                         "whsec_!!!!",
                         "whsec_A",
                         "whsec_MfKQ 9r8G",
                         "wHsec_MfKQ9r8G"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECK_INT_EQ(whsig_sign(bad[i], "m", 1, "x", 1, sig, sizeof(sig)), MCPQ_EINVAL);
    CHECK_INT_EQ(whsig_sign(NULL, "m", 1, "x", 1, sig, sizeof(sig)), MCPQ_EINVAL);
    CHECK_INT_EQ(whsig_sign("whsec_AAE=", "m", 1, "x", 1, sig, 10), MCPQ_EINVAL);
    /* A key longer than the limit is refused, not truncated. */
    char big[600] = "whsec_";
    memset(big + 6, 'A', 400);
    big[406] = '\0';
    CHECK_INT_EQ(whsig_sign(big, "m", 1, "x", 1, sig, sizeof(sig)), MCPQ_EINVAL);
    TEST_PASS("malformed secrets are refused");
}

/* During a rotation: one signature per secret in one header, each one verifiable alone. */
static void test_all(void)
{
    const char *body = "{\"test\": 2432232314}";
    const char *secrets[] = {"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_AAECAwQFBgcICQ=="};
    char one[WHSIG_LEN], two[WHSIG_LEN], all[WHSIG_MAX_SECRETS * WHSIG_LEN], want[128];
    CHECK_INT_EQ(whsig_sign(secrets[0], "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body,
                            strlen(body), one, sizeof(one)),
                 0);
    CHECK_INT_EQ(whsig_sign(secrets[1], "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body,
                            strlen(body), two, sizeof(two)),
                 0);
    CHECK_INT_EQ(whsig_sign_all(secrets, 2, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body,
                                strlen(body), all, sizeof(all)),
                 0);
    snprintf(want, sizeof(want), "%s %s", one, two);
    CHECK_STR_EQ(all, want);
    CHECK_CONTAINS(all, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE= v1,");
    CHECK_INT_EQ(whsig_sign_all(secrets, 1, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body,
                                strlen(body), all, sizeof(all)),
                 0);
    CHECK_STR_EQ(all, one);
    CHECK_INT_EQ(whsig_sign_all(secrets, 2, "m", 1, "x", 1, all, 2 * WHSIG_LEN - 1), MCPQ_EINVAL);
    CHECK_INT_EQ(whsig_sign_all(secrets, 0, "m", 1, "x", 1, all, sizeof(all)), MCPQ_EINVAL);
    CHECK_INT_EQ(whsig_sign_all(secrets, 3, "m", 1, "x", 1, all, sizeof(all)), MCPQ_EINVAL);
    const char *bad[] = {secrets[0], "whsec_!!"};
    CHECK_INT_EQ(whsig_sign_all(bad, 2, "m", 1, "x", 1, all, sizeof(all)), MCPQ_EINVAL);
    TEST_PASS("two active secrets: one header with both signatures, space-separated");
}

int main(void)
{
    test_vector();
    test_all();
    test_changes();
    test_bad_secrets();
    return 0;
}
