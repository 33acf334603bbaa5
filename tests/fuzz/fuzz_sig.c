/*
 * fuzz_sig.c - libFuzzer driver for HMAC request signing (common/sig.c): header parsing,
 * the canonical string and the signature check.
 *
 * Input layout: fields separated by NUL or newline bytes, in this order: X-App-Id,
 * X-Timestamp, X-Nonce, X-Signature, method, request URI, app secret; whatever follows the
 * seventh separator is the body (any bytes). A field the input ends before is NULL, the way
 * a missing header reaches sig_headers_parse.
 *
 * Checked against independent code: sig_headers_parse accepts exactly the headers sig.h
 * describes (and then points at them, with ts their value); sig_canonical is NULL when an
 * argument is, else exactly METHOD\nURI\nTIMESTAMP\nNONCE\nhex(SHA256(body)), and when the
 * headers parsed and method and URI hold no newline it splits back into those five parts;
 * sig_verify is 1 exactly when the signature equals OpenSSL's HMAC-SHA256 of the canonical
 * string in lowercase hex, and always for that HMAC itself; sig_ts_fresh follows the window.
 */
#include "err.h"
#include "fuzz.h"
#include "sig.h"
#include "util.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <string.h>

enum { F_APP, F_TS, F_NONCE, F_SIG, F_METHOD, F_URI, F_SECRET, F_COUNT };

static int all_chars(const char *s, const char *set)
{
    return strspn(s, set) == strlen(s);
}

/* What sig.h says sig_headers_parse accepts, written independently of sig.c. */
static int headers_valid(char *const f[F_COUNT])
{
    static const char nonce_set[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
    if (!f[F_APP] || !f[F_TS] || !f[F_NONCE] || !f[F_SIG])
        return 0;
    size_t app = strlen(f[F_APP]), ts = strlen(f[F_TS]), nonce = strlen(f[F_NONCE]);
    for (const char *p = f[F_APP]; *p; p++)
        if (*p <= ' ' || *p > '~')
            return 0;
    return app >= 1 && app <= SIG_APP_ID_MAX && ts >= 1 && ts <= 12 &&
           all_chars(f[F_TS], "0123456789") && nonce >= SIG_NONCE_MIN && nonce <= SIG_NONCE_MAX &&
           all_chars(f[F_NONCE], nonce_set) && strlen(f[F_SIG]) == 64 &&
           all_chars(f[F_SIG], "0123456789abcdef");
}

static void check_headers(char *const f[F_COUNT], sig_headers_t *h)
{
    const char *why = NULL;
    int rc = sig_headers_parse(f[F_APP], f[F_TS], f[F_NONCE], f[F_SIG], h, &why);
    int valid = headers_valid(f);
    FUZZ_CHECK(rc == 0 || rc == MCPQ_EINVAL);
    FUZZ_CHECK((rc == 0) == valid);
    if (rc != 0) {
        FUZZ_CHECK(why != NULL && why[0] != '\0');
        return;
    }
    long long ts = 0;
    for (const char *p = f[F_TS]; *p; p++)
        ts = ts * 10 + (*p - '0');
    FUZZ_CHECK(h->app_id == f[F_APP] && h->timestamp == f[F_TS] && h->nonce == f[F_NONCE] &&
               h->signature == f[F_SIG] && h->ts == ts);
    FUZZ_CHECK(sig_ts_fresh(h->ts, h->ts) && sig_ts_fresh(h->ts, h->ts + SIG_WINDOW_S) &&
               sig_ts_fresh(h->ts, h->ts - SIG_WINDOW_S) &&
               !sig_ts_fresh(h->ts, h->ts + SIG_WINDOW_S + 1) &&
               !sig_ts_fresh(h->ts, h->ts - SIG_WINDOW_S - 1));
}

/* The canonical string built independently; NULL when an argument is NULL. */
static char *expected_canonical(char *const f[F_COUNT], const char *body, size_t body_len)
{
    char hex[65];
    if (!f[F_METHOD] || !f[F_URI] || !f[F_TS] || !f[F_NONCE])
        return NULL;
    util_sha256_hex(body, body_len, hex);
    size_t n = strlen(f[F_METHOD]) + strlen(f[F_URI]) + strlen(f[F_TS]) + strlen(f[F_NONCE]) + 70;
    char *s = malloc(n);
    FUZZ_CHECK(s != NULL);
    snprintf(s, n, "%s\n%s\n%s\n%s\n%s", f[F_METHOD], f[F_URI], f[F_TS], f[F_NONCE], hex);
    return s;
}

/* With valid headers and a method and URI without newline, the canonical string has
 * exactly five lines, the inputs in order. */
static void check_unambiguous(const char *canonical, char *const f[F_COUNT])
{
    const char *parts[4] = {f[F_METHOD], f[F_URI], f[F_TS], f[F_NONCE]}, *p = canonical;
    for (int i = 0; i < 4; i++) {
        const char *nl = strchr(p, '\n');
        FUZZ_CHECK(nl != NULL && (size_t)(nl - p) == strlen(parts[i]) &&
                   memcmp(p, parts[i], strlen(parts[i])) == 0);
        p = nl + 1;
    }
    FUZZ_CHECK(strlen(p) == 64 && !strchr(p, '\n'));
}

static void check_verify(const char *secret, const char *canonical, const char *signature)
{
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int mac_len = 0;
    char want[65];
    size_t secret_len = strlen(secret);
    FUZZ_CHECK(HMAC(EVP_sha256(), secret, (int)secret_len, (const unsigned char *)canonical,
                    strlen(canonical), mac, &mac_len) != NULL &&
               mac_len == 32);
    for (unsigned i = 0; i < 32; i++)
        snprintf(want + 2 * i, 3, "%02x", mac[i]);
    FUZZ_CHECK(sig_verify(secret, secret_len, canonical, want) == 1);
    if (signature)
        FUZZ_CHECK(sig_verify(secret, secret_len, canonical, signature) ==
                   (strcmp(signature, want) == 0));
    FUZZ_CHECK(sig_verify(NULL, 0, canonical, want) == 0);
    FUZZ_CHECK(sig_verify(secret, secret_len, NULL, want) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *f[F_COUNT] = {NULL};
    sig_headers_t h;
    /* A NUL-terminated copy, cut into fields in place. */
    char *buf = malloc(size + 1);
    FUZZ_CHECK(buf != NULL);
    memcpy(buf, data, size);
    buf[size] = '\0';
    size_t pos = 0;
    int n = 0;
    const char *body = NULL;
    size_t body_len = 0;
    while (n < F_COUNT) {
        f[n++] = buf + pos;
        size_t end = pos;
        while (end < size && buf[end] != '\0' && buf[end] != '\n')
            end++;
        if (end >= size)
            break;
        buf[end] = '\0';
        pos = end + 1;
        if (n == F_COUNT) {
            body = buf + pos;
            body_len = size - pos;
        }
    }

    check_headers(f, &h);

    char *canonical = sig_canonical(f[F_METHOD], f[F_URI], f[F_TS], f[F_NONCE], body, body_len);
    char *want = expected_canonical(f, body ? body : "", body_len);
    FUZZ_CHECK((canonical == NULL) == (want == NULL));
    if (canonical) {
        FUZZ_CHECK(strcmp(canonical, want) == 0);
        if (headers_valid(f) && !strchr(f[F_METHOD], '\n') && !strchr(f[F_URI], '\n'))
            check_unambiguous(canonical, f);
        check_verify(f[F_SECRET] ? f[F_SECRET] : "", canonical, f[F_SIG]);
    }
    free(want);
    free(canonical);
    free(buf);
    return 0;
}
