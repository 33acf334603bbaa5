/* Tests common/util.c: base64 (both alphabets, the padding rules), listen addresses, random
 * ids, HMAC-SHA256. */
#include "check.h"
#include "err.h"
#include "util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <pthread.h>
#include <string.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define B64URL(s, out, size, len)                                                                  \
    util_b64_decode(s, strlen(s), UTIL_B64_URL | UTIL_B64_NOPAD, out, size, len)

static void roundtrip(const char *in, const char *want)
{
    size_t n = strlen(in), len = 0;
    char enc[64];
    unsigned char dec[64];
    CHECK_INT_EQ(UTIL_B64URL_LEN(n), strlen(want));
    util_b64url_encode((const unsigned char *)in, n, enc);
    CHECK_STR_EQ(enc, want);
    CHECK_INT_EQ(B64URL(enc, dec, sizeof(dec), &len), 0);
    CHECK_INT_EQ(len, n);
    CHECK(memcmp(dec, in, n) == 0);
}

/* util_deadline_realtime: timeout_ms ahead of the wall clock, nanoseconds normalized. */
static void test_deadline(void)
{
    for (int ms = 0; ms < 3000; ms += 137) {
        int64_t before = util_now_ms();
        struct timespec t = util_deadline_realtime(ms);
        int64_t after = util_now_ms();
        int64_t at = (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
        CHECK(t.tv_nsec >= 0 && t.tv_nsec < 1000000000L);
        CHECK(at >= before + ms && at <= after + ms);
    }
    TEST_PASS("util_deadline_realtime");
}

/* util_now_us / util_mono_us: the millisecond clocks times 1000, give or take the call. */
static void test_clocks_us(void)
{
    int64_t ms = util_now_ms(), us = util_now_us(), ms2 = util_now_ms();
    CHECK(us >= ms * 1000 && us < (ms2 + 1) * 1000);
    int64_t mm = util_mono_ms(), mu = util_mono_us(), mm2 = util_mono_ms();
    CHECK(mu >= mm * 1000 && mu < (mm2 + 1) * 1000);
    int64_t a = util_mono_us(), b = util_mono_us();
    CHECK(b >= a);
    TEST_PASS("util_now_us, util_mono_us");
}

/* util_id_ok: 1..max of [A-Za-z0-9_-], by length (an id in a path is not NUL-terminated). */
static void test_id_ok(void)
{
    CHECK(util_id_ok("f0c1e2-A_b", 10, 128, ""));
    CHECK(util_id_ok("abc/def", 3, 3, "")); /* only the first len bytes count */
    CHECK(!util_id_ok("", 0, 128, ""));
    CHECK(!util_id_ok("abcd", 4, 3, ""));
    const char *bad[] = {"a/b", "a.b", "a b", "a%2e", "\xc3\xa9", "a\nb"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECK(!util_id_ok(bad[i], strlen(bad[i]), 128, ""));
    CHECK(!util_id_ok("a\0b", 3, 128, ".:")); /* a NUL is never one of extra's characters */
    CHECK(util_id_ok("c_1.a:b", 7, 128, ".:"));
    CHECK(!util_id_ok("c_1.a:b", 7, 128, ""));
    TEST_PASS("util_id_ok: ids of [A-Za-z0-9_-] and the extra characters, up to max bytes");
}

/* util_word_in and util_word_add: space-separated permission and scope lists. */
static void test_words(void)
{
    CHECK(util_word_in("a  tools:read b", "tools:read", 10));
    CHECK(!util_word_in("tools:readwrite", "tools:read", 10)); /* whole words only */
    CHECK(!util_word_in(NULL, "a", 1));
    CHECK(!util_word_in("a b", "", 0));
    char out[12] = "";
    CHECK_INT_EQ(util_word_add(out, sizeof(out), "mcp:a", 5), 0);
    CHECK_INT_EQ(util_word_add(out, sizeof(out), "mcp:a", 5), 0); /* once */
    CHECK_STR_EQ(out, "mcp:a");
    CHECK_INT_EQ(util_word_add(out, sizeof(out), "mcp:b", 5), 0);
    CHECK_STR_EQ(out, "mcp:a mcp:b");
    CHECK_INT_EQ(util_word_add(out, sizeof(out), "c", 1), -1); /* would not fit: left out */
    CHECK_STR_EQ(out, "mcp:a mcp:b");
    TEST_PASS("util_word_in and util_word_add: whole words, once, never cut");
}

/* util_errf: the message in err (truncated to its size), always MCPQ_EINVAL. */
static void test_errf(void)
{
    char err[8] = "x";
    CHECK_INT_EQ(util_errf(err, sizeof(err), "bad %s %d", "value", 42), MCPQ_EINVAL);
    CHECK_STR_EQ(err, "bad val");
    CHECK_INT_EQ(util_errf(err, 0, "ignored"), MCPQ_EINVAL);
    CHECK_STR_EQ(err, "bad val");
    TEST_PASS("util_errf");
}

/* util_random_hex: lowercase hex of the length asked, never the same id twice in a run longer
 * than its pool, over 64 bytes refused; and a process forked after the parent drew ids (its
 * pool half used) draws other ids than the parent's next ones. */
static void test_random_hex(void)
{
    enum { N = 300 };
    static char ids[N][33];
    for (int i = 0; i < N; i++) {
        CHECK_INT_EQ(util_random_hex(ids[i], 16), 0);
        CHECK_INT_EQ((long long)strlen(ids[i]), 32);
        CHECK_INT_EQ((long long)strspn(ids[i], "0123456789abcdef"), 32);
        for (int j = 0; j < i; j++)
            CHECK(strcmp(ids[i], ids[j]) != 0);
    }
    char big[130];
    CHECK_INT_EQ(util_random_hex(big, 64), 0);
    CHECK_INT_EQ((long long)strlen(big), 128);
    CHECK_INT_EQ(util_random_hex(big, 65), MCPQ_EINVAL);

    int fd[2];
    CHECK_INT_EQ(pipe(fd), 0);
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        char id[33] = "";
        util_random_hex(id, 16);
        ssize_t w = write(fd[1], id, 32);
        _exit(w == 32 ? 0 : 1);
    }
    char mine[33], theirs[33] = "";
    CHECK_INT_EQ(util_random_hex(mine, 16), 0);
    CHECK_INT_EQ((long long)read(fd[0], theirs, 32), 32);
    int status = 0;
    CHECK_INT_EQ(waitpid(child, &status, 0), child);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(strcmp(mine, theirs) != 0);
    close(fd[0]);
    close(fd[1]);
    TEST_PASS("random hex ids, across a fork");
}

/* util_hmac_sha256_hex: RFC 4231 test cases 1 and 2, keys alternating (each thread keeps its
 * last key), a key longer than the kept one, an empty key and message, and another thread. */
static const char hmac_case2[] = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843";

static void hmac_check(const void *key, size_t keylen, const char *msg, size_t len)
{
    unsigned char md[32];
    unsigned int n = 0;
    char want[65], got[65];
    HMAC(EVP_sha256(), key, (int)keylen, (const unsigned char *)msg, len, md, &n);
    util_hex(md, n, want);
    util_hmac_sha256_hex(key, keylen, msg, len, got);
    CHECK_STR_EQ(got, want);
}

static void *hmac_thread(void *arg)
{
    char got[65];
    (void)arg;
    util_hmac_sha256_hex("Jefe", 4, "what do ya want for nothing?", 28, got);
    return strcmp(got, hmac_case2) == 0 ? (void *)1 : NULL;
}

static void test_hmac(void)
{
    unsigned char k1[20];
    memset(k1, 0x0b, sizeof(k1));
    char got[65];
    for (int i = 0; i < 3; i++) {
        util_hmac_sha256_hex(k1, sizeof(k1), "Hi There", 8, got);
        CHECK_STR_EQ(got, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
        util_hmac_sha256_hex("Jefe", 4, "what do ya want for nothing?", 28, got);
        CHECK_STR_EQ(got, hmac_case2);
        util_hmac_sha256_hex("Jefe", 4, "what do ya want for nothing?", 28, got);
        CHECK_STR_EQ(got, hmac_case2);
        hmac_check("Jeff", 4, "what do ya want for nothing?", 28); /* same length, other key */
    }
    static char big[3000];
    memset(big, 'k', sizeof(big));
    for (int i = 0; i < 2; i++) {
        hmac_check(big, sizeof(big), "m", 1);
        hmac_check(big, 1024, "m", 1);
        hmac_check(big, 1023, "m", 1);
        hmac_check("", 0, "", 0);
        hmac_check("Jefe", 4, big, sizeof(big));
    }
    pthread_t th;
    void *ok = NULL;
    CHECK_INT_EQ(pthread_create(&th, NULL, hmac_thread, NULL), 0);
    CHECK_INT_EQ(pthread_join(th, &ok), 0);
    CHECK(ok != NULL);
    TEST_PASS("HMAC-SHA256: RFC 4231 vectors, alternating and long keys, threads");
}

int main(void)
{
    test_hmac();
    test_random_hex();
    test_deadline();
    test_clocks_us();
    test_errf();
    test_id_ok();
    test_words();
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
    CHECK_INT_EQ(B64URL("Zm9v=", out, sizeof(out), &len), MCPQ_EINVAL);
    CHECK_INT_EQ(B64URL("Zm+v", out, sizeof(out), &len), MCPQ_EINVAL);
    CHECK_INT_EQ(B64URL("Zm9 v", out, sizeof(out), &len), MCPQ_EINVAL);
    CHECK_INT_EQ(B64URL("Z", out, sizeof(out), &len), MCPQ_EINVAL);
    CHECK_INT_EQ(B64URL("Zh", out, sizeof(out), &len), MCPQ_EINVAL);  /* bits left */
    CHECK_INT_EQ(B64URL("Zm9", out, sizeof(out), &len), MCPQ_EINVAL); /* bits left */
    CHECK_INT_EQ(B64URL("Zm9vYmFy", out, 5, &len), MCPQ_EINVAL);      /* too long */
    CHECK_INT_EQ(B64URL("Zm9vYmFy", out, 6, &len), 0);
    CHECK_INT_EQ(len, 6);
    TEST_PASS("b64url decode is strict");

    /* Standard alphabet with its padding rules: required, refused, optional. */
    static const struct {
        const char *in;
        int flags;
        int rc;
        const char *want;
    } std[] = {
        {"Zm9vYg==", UTIL_B64_PAD, 0, "foob"},
        {"Zm9vYmE=", UTIL_B64_PAD, 0, "fooba"},
        {"Zm9vYg", UTIL_B64_PAD, MCPQ_EINVAL, NULL},     /* padding missing */
        {"Zm9vYg==", UTIL_B64_NOPAD, MCPQ_EINVAL, NULL}, /* padding refused */
        {"Zm9vYg", 0, 0, "foob"},                        /* optional: absent */
        {"Zm9vYg==", 0, 0, "foob"},                      /* optional: present */
        {"Zm9vYg=", 0, MCPQ_EINVAL, NULL},               /* present but short */
        {"====", 0, MCPQ_EINVAL, NULL},                  /* padding only */
        {"========", 0, MCPQ_EINVAL, NULL},
        {"=", 0, MCPQ_EINVAL, NULL},
        {"==", UTIL_B64_PAD, MCPQ_EINVAL, NULL},
        {"A===", 0, MCPQ_EINVAL, NULL},     /* three '=' */
        {"Zm9v====", 0, MCPQ_EINVAL, NULL}, /* a whole quantum of '=' */
        {"Zm=v", 0, MCPQ_EINVAL, NULL},     /* '=' inside */
        {"Zg==Zg==", 0, MCPQ_EINVAL, NULL}, /* padding, then more */
        {"Zh==", 0, MCPQ_EINVAL, NULL},     /* non-zero unused bits */
        {"+/+/", 0, 0, "\xfb\xff\xbf"},
        {"-_-_", 0, MCPQ_EINVAL, NULL}, /* url alphabet in standard */
        {"Zm9v\n", 0, MCPQ_EINVAL, NULL},
    };
    for (size_t i = 0; i < sizeof(std) / sizeof(std[0]); i++) {
        /* The output sits between guards: nothing may be written outside [0, size). */
        struct {
            unsigned char lo[8], out[6], hi[8];
        } g;
        memset(&g, 0xa5, sizeof(g));
        len = 99;
        int rc =
            util_b64_decode(std[i].in, strlen(std[i].in), std[i].flags, g.out, sizeof(g.out), &len);
        CHECK_INT_EQ(rc, std[i].rc);
        if (std[i].want) {
            CHECK_INT_EQ(len, strlen(std[i].want));
            CHECK(memcmp(g.out, std[i].want, len) == 0);
        }
        for (size_t k = 0; k < 8; k++)
            CHECK(g.lo[k] == 0xa5 && g.hi[k] == 0xa5);
    }
    TEST_PASS("base64 decode: standard alphabet, padding required, refused or optional");

    util_listen_t l;
    const struct sockaddr_in *sa = (const struct sockaddr_in *)&l.addr;
    const struct sockaddr_in6 *sa6 = (const struct sockaddr_in6 *)&l.addr;
    char lf[64];
    CHECK_INT_EQ(util_parse_listen("127.0.0.1:8080", &l), 0);
    CHECK_INT_EQ(l.addr.ss_family, AF_INET);
    CHECK_INT_EQ(l.len, sizeof(struct sockaddr_in));
    CHECK_INT_EQ(ntohs(sa->sin_port), 8080);
    CHECK_INT_EQ(ntohl(sa->sin_addr.s_addr), 0x7f000001);
    CHECK_INT_EQ(l.dual_stack, 0);
    util_listen_format((const struct sockaddr *)&l.addr, lf, sizeof(lf));
    CHECK_STR_EQ(lf, "127.0.0.1:8080");
    CHECK_INT_EQ(util_parse_listen("localhost:1", &l), 0);
    CHECK_INT_EQ(ntohl(sa->sin_addr.s_addr), 0x7f000001);
    CHECK_INT_EQ(util_parse_listen(":9464", &l), 0);
    CHECK_INT_EQ(l.addr.ss_family, AF_INET); /* today's meaning: every IPv4 interface */
    CHECK_INT_EQ(ntohl(sa->sin_addr.s_addr), INADDR_ANY);
    CHECK_INT_EQ(ntohs(sa->sin_port), 9464);
    CHECK_INT_EQ(util_parse_listen("*:9464", &l), 0);
    CHECK_INT_EQ(l.addr.ss_family, AF_INET);
    CHECK_INT_EQ(ntohl(sa->sin_addr.s_addr), INADDR_ANY);
    CHECK_INT_EQ(util_parse_listen("0.0.0.0:0", &l), 0);
    CHECK_INT_EQ(util_parse_listen("8080", &l), MCPQ_EINVAL);
    CHECK_INT_EQ(util_parse_listen("127.0.0.1:65536", &l), MCPQ_EINVAL);
    CHECK_INT_EQ(util_parse_listen("127.0.0.1:", &l), MCPQ_EINVAL);
    CHECK_INT_EQ(util_parse_listen("127.1:80", &l), MCPQ_EINVAL);
    CHECK_INT_EQ(util_parse_listen("example.com:80", &l), MCPQ_EINVAL);
    TEST_PASS("listen addresses: host:port, localhost, any interface; others refused");

    CHECK_INT_EQ(util_parse_listen("[::1]:8080", &l), 0);
    CHECK_INT_EQ(l.addr.ss_family, AF_INET6);
    CHECK_INT_EQ(l.len, sizeof(struct sockaddr_in6));
    CHECK(IN6_IS_ADDR_LOOPBACK(&sa6->sin6_addr));
    CHECK_INT_EQ(ntohs(sa6->sin6_port), 8080);
    CHECK_INT_EQ(l.dual_stack, 0);
    util_listen_format((const struct sockaddr *)&l.addr, lf, sizeof(lf));
    CHECK_STR_EQ(lf, "[::1]:8080");
    CHECK_INT_EQ(util_parse_listen("[::]:8080", &l), 0); /* every interface, IPv4 too */
    CHECK_INT_EQ(l.addr.ss_family, AF_INET6);
    CHECK(IN6_IS_ADDR_UNSPECIFIED(&sa6->sin6_addr));
    CHECK_INT_EQ(l.dual_stack, 1);
    util_listen_format((const struct sockaddr *)&l.addr, lf, sizeof(lf));
    CHECK_STR_EQ(lf, "[::]:8080");
    CHECK_INT_EQ(util_parse_listen("[2001:db8::5]:0", &l), 0);
    CHECK_INT_EQ(sa6->sin6_addr.s6_addr[0], 0x20);
    CHECK_INT_EQ(sa6->sin6_addr.s6_addr[15], 5);
    CHECK_INT_EQ(l.dual_stack, 0);
    CHECK_INT_EQ(util_parse_listen("[::ffff:127.0.0.1]:80", &l), 0);
    CHECK_INT_EQ(l.addr.ss_family, AF_INET6);
    CHECK_INT_EQ(util_parse_listen("[fe80::1%lo]:80", &l), 0); /* a scope by interface name */
    CHECK(sa6->sin6_scope_id != 0);
    static const char *const bad_v6[] = {
        "::1:8080",       "[::1]",       "[::1]:",         "[::1]8080", "[]:8080", "[::1:8080",
        "[127.0.0.1]:80", "[::1]:65536", "[localhost]:80", "[::1]:-1",  "[::g]:80"};
    for (size_t i = 0; i < sizeof(bad_v6) / sizeof(bad_v6[0]); i++)
        CHECK_INT_EQ(util_parse_listen(bad_v6[i], &l), MCPQ_EINVAL);
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    util_listen_format((const struct sockaddr *)&un, lf, sizeof(lf));
    CHECK_STR_EQ(lf, "?");
    TEST_PASS("listen addresses: [v6]:port, [::] dual stack, scoped; unbracketed v6 refused");
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
