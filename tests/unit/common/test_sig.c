/* Tests common/sig.c: header checks, the canonical string of SPEC section 3 and the
 * signature check, against a vector computed independently (Python hmac/hashlib). */
#include "check.h"
#include "err.h"
#include "sig.h"

#include <stdlib.h>
#include <string.h>

static const char body[] = "{\"a\":1}";
static const char want_canonical[] =
    "POST\n/mcp?probe=1\n1700000000\nabcDEF12_-\n"
    "015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862";
static const char want_sig[] = "1cac2e2f2991169d3076f283b957775427068e3a3bb3fbb1227dc93984774f31";

static void test_canonical_and_verify(void)
{
    char *c = sig_canonical("POST", "/mcp?probe=1", "1700000000", "abcDEF12_-", body, strlen(body));
    CHECK(c != NULL);
    CHECK_STR_EQ(c, want_canonical);
    CHECK_INT_EQ(sig_verify("acme-app-secret", 15, c, want_sig), 1);
    CHECK_INT_EQ(sig_verify("acme-app-secreT", 15, c, want_sig), 0);
    CHECK_INT_EQ(sig_verify("acme-app-secret", 15, c, "1cac"), 0);
    char bad[65];
    memcpy(bad, want_sig, sizeof(bad));
    bad[63] = bad[63] == '1' ? '2' : '1';
    CHECK_INT_EQ(sig_verify("acme-app-secret", 15, c, bad), 0);
    free(c);
    /* The body is hashed: one byte more, another canonical string. */
    c = sig_canonical("POST", "/mcp?probe=1", "1700000000", "abcDEF12_-", "{\"a\":1} ", 8);
    CHECK(c != NULL);
    CHECK_INT_EQ(sig_verify("acme-app-secret", 15, c, want_sig), 0);
    free(c);
    /* An empty body is the SHA-256 of nothing. */
    c = sig_canonical("DELETE", "/mcp", "1", "nonce-01", NULL, 0);
    CHECK(c != NULL);
    CHECK_CONTAINS(c, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    free(c);
    CHECK(sig_canonical(NULL, "/mcp", "1", "nonce-01", NULL, 0) == NULL);
    TEST_PASS("canonical string and constant-time verification");
}

static void test_headers(void)
{
    sig_headers_t h;
    const char *why = NULL;
    CHECK_INT_EQ(sig_headers_parse("acme-app", "1700000000", "abcDEF12_-", want_sig, &h, &why), 0);
    CHECK_STR_EQ(h.app_id, "acme-app");
    CHECK(h.ts == 1700000000LL);
    struct {
        const char *app, *ts, *nonce, *sig, *why;
    } bad[] = {
        {NULL, "1", "abcdefgh", want_sig, "needs X-App-Id"},
        {"a", NULL, "abcdefgh", want_sig, "needs X-App-Id"},
        {"a", "1", NULL, want_sig, "needs X-App-Id"},
        {"a", "1", "abcdefgh", NULL, "needs X-App-Id"},
        {"", "1", "abcdefgh", want_sig, "X-App-Id must"},
        {"a b", "1", "abcdefgh", want_sig, "X-App-Id must"},
        {"a\r\n", "1", "abcdefgh", want_sig, "X-App-Id must"},
        {"a", "", "abcdefgh", want_sig, "X-Timestamp must"},
        {"a", "-5", "abcdefgh", want_sig, "X-Timestamp must"},
        {"a", "1e9", "abcdefgh", want_sig, "X-Timestamp must"},
        {"a", "1234567890123", "abcdefgh", want_sig, "X-Timestamp must"},
        {"a", "1", "short", want_sig, "X-Nonce must"},
        {"a", "1", "has space", want_sig, "X-Nonce must"},
        {"a", "1", "x123456789012345678901234567890123456789012345678901234567890123456", want_sig,
         "X-Nonce must"},
        {"a", "1", "abcdefgh", "ABCDEF", "X-Signature must"},
        {"a", "1", "abcdefgh", "1CAC2E2F2991169D3076F283B957775427068E3A3BB3FBB1227DC93984774F31",
         "X-Signature must"},
        {"a", "1", "abcdefgh", "1cac2e2f2991169d3076f283b957775427068e3a3bb3fbb1227dc93984774f3100",
         "X-Signature must"},
    };
    char app[200];
    memset(app, 'a', sizeof(app) - 1);
    app[sizeof(app) - 1] = '\0';
    CHECK_INT_EQ(sig_headers_parse(app, "1", "abcdefgh", want_sig, &h, &why), MCPQ_EINVAL);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        why = NULL;
        CHECK_INT_EQ(sig_headers_parse(bad[i].app, bad[i].ts, bad[i].nonce, bad[i].sig, &h, &why),
                     MCPQ_EINVAL);
        CHECK(why != NULL);
        CHECK_CONTAINS(why, bad[i].why);
    }
    TEST_PASS("header checks name the header and never echo it");
}

static void test_window(void)
{
    CHECK_INT_EQ(sig_ts_fresh(1000, 1000), 1);
    CHECK_INT_EQ(sig_ts_fresh(1000 - 300, 1000), 1);
    CHECK_INT_EQ(sig_ts_fresh(1000 + 300, 1000), 1);
    CHECK_INT_EQ(sig_ts_fresh(1000 - 301, 1000), 0);
    CHECK_INT_EQ(sig_ts_fresh(1000 + 301, 1000), 0);
    TEST_PASS("timestamp window of 300 s both ways");
}

int main(void)
{
    test_canonical_and_verify();
    test_headers();
    test_window();
    return 0;
}
