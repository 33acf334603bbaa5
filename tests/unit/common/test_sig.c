/* Tests common/sig.c: header checks, the canonical string of docs/signatures.md and the
 * signature check, against a vector computed independently (Python hmac/hashlib). */
#include "check.h"
#include "names.h"
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

/* Version 2, against a vector computed independently (Python hmac/hashlib). */
static const char v2_body[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
                              "\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"hi\"}}}";
static const char v2_list[] = "host;mcp-method;mcp-name;mcp-protocol-version";
static const char v2_want[] =
    "POST\n/mcp\n1700000000\nabcDEF12_-\n"
    "e9e2a35e3c2fb5d2a0116fe668c1b4894739d7561475f1f67ab09f1dba1f22ec\n"
    "host;mcp-method;mcp-name;mcp-protocol-version\nhost:gw.example.com\nmcp-method:tools/call\n"
    "mcp-name:echo\nmcp-protocol-version:" NAMES_PROTO_MODERN;
static const char v2_secret[] = "acme-app-secret-0123456789abcdef0123";
static const char v2_sig[] = "4200cc47484a66fd5bfa9d5369cd657bb9879792a4b31a6b2390280bf60607fb";

static int v2(const char *list, const sig_header_t *h, size_t n, char **out, const char **why)
{
    return sig_canonical_v2("POST", "/mcp", "1700000000", "abcDEF12_-", v2_body, strlen(v2_body),
                            list, h, n, out, why);
}

static void test_v2(void)
{
    /* As received: any case, any order, blanks around values, unsigned other headers. */
    sig_header_t h[] = {
        {"Content-Type", "application/json"},
        {"MCP-Protocol-Version", NAMES_PROTO_MODERN},
        {"Mcp-Name", "  echo\t"},
        {"Host", "gw.example.com"},
        {"Mcp-Method", "tools/call"},
        {"Accept", "application/json"},
    };
    size_t n = sizeof(h) / sizeof(h[0]);
    char *c = NULL;
    const char *why = NULL;
    CHECK_INT_EQ(v2(v2_list, h, n, &c, &why), 0);
    CHECK_STR_EQ(c, v2_want);
    CHECK_INT_EQ(sig_verify(v2_secret, strlen(v2_secret), c, v2_sig), 1);
    free(c);
    /* Another value of a signed header, another string. */
    h[2].value = "add";
    CHECK_INT_EQ(v2(v2_list, h, n, &c, &why), 0);
    CHECK_INT_EQ(sig_verify(v2_secret, strlen(v2_secret), c, v2_sig), 0);
    free(c);
    h[2].value = "echo";
    /* Signing more than the covered headers is allowed. */
    CHECK_INT_EQ(v2("accept;host;mcp-method;mcp-name;mcp-protocol-version", h, n, &c, &why), 0);
    CHECK_CONTAINS(c, "\naccept:application/json\nhost:gw.example.com\n");
    free(c);

    /* A covered header the list leaves out (as an attacker adding one would): refused. */
    static const char *const added[] = {"Mcp-Session-Id", "mcp-param-region", "MCP-PARAM-X"};
    for (size_t i = 0; i < sizeof(added) / sizeof(added[0]); i++) {
        sig_header_t more[8];
        memcpy(more, h, sizeof(h));
        more[n] = (sig_header_t){added[i], "x"};
        why = NULL;
        CHECK_INT_EQ(v2(v2_list, more, n + 1, &c, &why), MCPQ_EINVAL);
        CHECK(c == NULL);
        CHECK_CONTAINS(why, "not in X-Signed-Headers");
    }
    /* A signed header twice, a listed one missing, a line break in a value. */
    sig_header_t twice[] = {{"Host", "a"}, {"host", "b"}};
    CHECK_INT_EQ(v2("host", twice, 2, &c, &why), MCPQ_EINVAL);
    CHECK_CONTAINS(why, "more than once");
    CHECK_INT_EQ(v2("host;mcp-method;mcp-name;mcp-protocol-version;x-extra", h, n, &c, &why),
                 MCPQ_EINVAL);
    CHECK_CONTAINS(why, "does not carry");
    sig_header_t nl[] = {{"Host", "a\r\nb"}};
    CHECK_INT_EQ(v2("host", nl, 1, &c, &why), MCPQ_EINVAL);
    CHECK_CONTAINS(why, "line break");
    /* The list's own shape. */
    static const char *const bad_lists[] = {
        NULL,
        "",
        "mcp-method",
        "Host",
        "mcp-method;host",
        "host;host",
        "host;",
        ";host",
        "host;;mcp-name",
        "host; mcp-name",
        "host;x y",
        "host:x",
        "host;x-signature",
    };
    for (size_t i = 0; i < sizeof(bad_lists) / sizeof(bad_lists[0]); i++) {
        why = NULL;
        CHECK_INT_EQ(v2(bad_lists[i], h, n, &c, &why), MCPQ_EINVAL);
        CHECK(why != NULL && c == NULL);
    }
    char longlist[SIG_SIGNED_LIST_MAX + 8];
    memset(longlist, 'a', sizeof(longlist) - 1);
    longlist[sizeof(longlist) - 1] = '\0';
    CHECK_INT_EQ(v2(longlist, h, n, &c, &why), MCPQ_EINVAL);

    int ver = 0;
    CHECK_INT_EQ(sig_version_parse(NULL, &ver), 0);
    CHECK_INT_EQ(ver, 1);
    CHECK_INT_EQ(sig_version_parse("1", &ver), 0);
    CHECK_INT_EQ(ver, 1);
    CHECK_INT_EQ(sig_version_parse("2", &ver), 0);
    CHECK_INT_EQ(ver, 2);
    CHECK_INT_EQ(sig_version_parse("3", &ver), MCPQ_EINVAL);
    CHECK_INT_EQ(sig_version_parse("02", &ver), MCPQ_EINVAL);
    CHECK_INT_EQ(sig_version_parse("", &ver), MCPQ_EINVAL);
    CHECK(sig_header_covered("HOST") && sig_header_covered("mcp-session-id") &&
          sig_header_covered("Mcp-Param-A") && sig_header_covered("mcp-protocol-version"));
    CHECK(!sig_header_covered("Mcp-Param") && !sig_header_covered("Accept") &&
          !sig_header_covered("X-Mcp-Name") && !sig_header_covered(NULL));
    TEST_PASS("v2: Host and the headers that change a request's meaning are signed; an added "
              "one fails");
}

int main(void)
{
    test_canonical_and_verify();
    test_v2();
    test_headers();
    test_window();
    return 0;
}
