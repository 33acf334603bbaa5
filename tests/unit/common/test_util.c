/* Tests common/util.c: base64url. */
#include "check.h"
#include "err.h"
#include "util.h"

#include <arpa/inet.h>
#include <netinet/in.h>

static void roundtrip(const char *in, const char *want)
{
    size_t n = strlen(in), len = 0;
    char enc[64];
    unsigned char dec[64];
    CHECK_INT_EQ(UTIL_B64URL_LEN(n), strlen(want));
    util_b64url_encode((const unsigned char *)in, n, enc);
    CHECK_STR_EQ(enc, want);
    CHECK_INT_EQ(util_b64url_decode(enc, dec, sizeof(dec), &len), 0);
    CHECK_INT_EQ(len, n);
    CHECK(memcmp(dec, in, n) == 0);
}

int main(void)
{
    /* RFC 4648 section 10 vectors, unpadded. */
    roundtrip("", "");
    roundtrip("f", "Zg");
    roundtrip("fo", "Zm8");
    roundtrip("foo", "Zm9v");
    roundtrip("foob", "Zm9vYg");
    roundtrip("fooba", "Zm9vYmE");
    roundtrip("foobar", "Zm9vYmFy");
    /* The URL alphabet: - and _ instead of + and /. */
    const unsigned char hi[] = {0xfb, 0xff, 0xbf};
    char enc[8];
    util_b64url_encode(hi, sizeof(hi), enc);
    CHECK_STR_EQ(enc, "-_-_");
    TEST_PASS("b64url encode and decode");

    unsigned char out[8];
    size_t len = 0;
    CHECK_INT_EQ(util_b64url_decode("Zm9v=", out, sizeof(out), &len), MCPQ_EINVAL);
    CHECK_INT_EQ(util_b64url_decode("Zm+v", out, sizeof(out), &len), MCPQ_EINVAL);
    CHECK_INT_EQ(util_b64url_decode("Zm9 v", out, sizeof(out), &len), MCPQ_EINVAL);
    CHECK_INT_EQ(util_b64url_decode("Z", out, sizeof(out), &len), MCPQ_EINVAL);
    CHECK_INT_EQ(util_b64url_decode("Zh", out, sizeof(out), &len), MCPQ_EINVAL);  /* bits left */
    CHECK_INT_EQ(util_b64url_decode("Zm9", out, sizeof(out), &len), MCPQ_EINVAL); /* bits left */
    CHECK_INT_EQ(util_b64url_decode("Zm9vYmFy", out, 5, &len), MCPQ_EINVAL);      /* too long */
    CHECK_INT_EQ(util_b64url_decode("Zm9vYmFy", out, 6, &len), 0);
    CHECK_INT_EQ(len, 6);
    TEST_PASS("b64url decode is strict");

    struct sockaddr_in sa;
    CHECK_INT_EQ(util_parse_listen("127.0.0.1:8080", &sa), 0);
    CHECK_INT_EQ(ntohs(sa.sin_port), 8080);
    CHECK_INT_EQ(ntohl(sa.sin_addr.s_addr), 0x7f000001);
    CHECK_INT_EQ(util_parse_listen("localhost:1", &sa), 0);
    CHECK_INT_EQ(ntohl(sa.sin_addr.s_addr), 0x7f000001);
    CHECK_INT_EQ(util_parse_listen(":9464", &sa), 0);
    CHECK_INT_EQ(ntohl(sa.sin_addr.s_addr), INADDR_ANY);
    CHECK_INT_EQ(util_parse_listen("*:9464", &sa), 0);
    CHECK_INT_EQ(util_parse_listen("0.0.0.0:0", &sa), 0);
    CHECK_INT_EQ(util_parse_listen("8080", &sa), MCPQ_EINVAL);
    CHECK_INT_EQ(util_parse_listen("127.0.0.1:65536", &sa), MCPQ_EINVAL);
    CHECK_INT_EQ(util_parse_listen("127.0.0.1:", &sa), MCPQ_EINVAL);
    CHECK_INT_EQ(util_parse_listen("example.com:80", &sa), MCPQ_EINVAL);
    TEST_PASS("listen addresses: host:port, localhost, any interface; others refused");
    char t[40];
    int64_t ms = 0;
    util_format_utc(1767225600123LL, t, sizeof(t));
    CHECK_STR_EQ(t, "2026-01-01T00:00:00.123Z");
    CHECK_INT_EQ(util_parse_utc(t, &ms), 0);
    CHECK_INT_EQ(ms, 1767225600123LL);
    CHECK_INT_EQ(util_parse_utc("2026-01-01T00:00:00Z", &ms), 0);
    CHECK_INT_EQ(ms, 1767225600000LL);
    CHECK_INT_EQ(util_parse_utc("2026-01-01T00:00:00.5Z", &ms), 0);
    CHECK_INT_EQ(ms, 1767225600500LL);
    CHECK_INT_EQ(util_parse_utc("2026-01-01T00:00:00.123456Z", &ms), 0);
    CHECK_INT_EQ(ms, 1767225600123LL);
    CHECK_INT_EQ(util_parse_utc("2024-02-29T23:59:59Z", &ms), 0);
    static const char *const bad_times[] = {NULL,
                                            "",
                                            "2026-01-01",
                                            "2026-01-01T00:00:00",
                                            "2026-01-01T00:00:00+01:00",
                                            "2026-01-01 00:00:00Z",
                                            "2026-13-01T00:00:00Z",
                                            "2026-04-31T00:00:00Z",
                                            "2025-02-29T00:00:00Z",
                                            "2026-01-01T24:00:00Z",
                                            "2026-01-01T00:60:00Z",
                                            "2026-01-01T00:00:00.Z",
                                            "2026-01-01T00:00:00Zx",
                                            "1969-12-31T23:59:59Z",
                                            "+026-01-01T00:00:00Z"};
    for (size_t i = 0; i < sizeof(bad_times) / sizeof(bad_times[0]); i++)
        CHECK_INT_EQ(util_parse_utc(bad_times[i], &ms), MCPQ_EINVAL);
    TEST_PASS("RFC 3339 UTC times: written with milliseconds, read strictly");
    return 0;
}
