/*
 * fuzz_sig.c - libFuzzer driver for HMAC request signing (common/sig.c): header parsing,
 * the canonical string and the signature check.
 *
 * Input layout: fields separated by NUL or newline bytes, in this order: X-App-Id,
 * X-Timestamp, X-Nonce, X-Signature, method, request URI, app secret; whatever follows the
 * seventh separator is the body (any bytes). A field the input ends before is NULL, the way
 * a missing header reaches sig_headers_parse.
 *
 * An input that starts with "v2" and a separator also exercises signature version 2: the
 * next field is X-Signed-Headers, then request headers "Name:value" (split at the first ':';
 * a field without one is a header with an empty value) up to an empty field, then the
 * fields above.
 *
 * Checked against independent code: sig_headers_parse accepts exactly the headers sig.h
 * describes (and then points at them, with ts their value); sig_canonical is NULL when an
 * argument is, else exactly METHOD\nURI\nTIMESTAMP\nNONCE\nhex(SHA256(body)), and when the
 * headers parsed and method and URI hold no newline it splits back into those five parts;
 * sig_verify is 1 exactly when the signature equals OpenSSL's HMAC-SHA256 of the canonical
 * string in lowercase hex, and always for that HMAC itself; sig_ts_fresh follows the window.
 * Version 2: sig_canonical_v2 succeeds exactly when the list and the headers follow sig.h
 * (every covered header listed, each listed one present once, no line break in its value),
 * and then yields the version 1 string, "\n", the list and one "\nname:trimmed value" line
 * per listed header; a version 1 signature never verifies the version 2 string.
 */
#include "err.h"
#include "fuzz.h"
#include "sig.h"
#include "util.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <string.h>
#include <strings.h>

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

#define V2_MAX_HEADERS 80

typedef struct v2_input {
    int on;
    const char *list;
    sig_header_t h[V2_MAX_HEADERS];
    size_t n;
} v2_input_t;

/* The field of buf (size bytes, NUL at buf[size]) at *pos, cut in place; NULL when the input
 * ended before it. */
static char *next_field(char *buf, size_t size, size_t *pos)
{
    if (*pos > size)
        return NULL;
    char *f = buf + *pos;
    size_t end = *pos;
    while (end < size && buf[end] != '\0' && buf[end] != '\n')
        end++;
    buf[end] = '\0';
    *pos = end + 1;
    return f;
}

/* Takes the v2 prefix off buf (v->on when there was one), with *pos past it. */
static void parse_v2(char *buf, size_t size, size_t *pos, v2_input_t *v)
{
    memset(v, 0, sizeof(*v));
    if (size < 3 || buf[0] != 'v' || buf[1] != '2' || (buf[2] != '\0' && buf[2] != '\n'))
        return;
    v->on = 1;
    *pos = 3;
    v->list = next_field(buf, size, pos);
    char *f;
    while (v->list && (f = next_field(buf, size, pos)) && *f) {
        char *colon = strchr(f, ':');
        if (colon)
            *colon = '\0';
        if (v->n < V2_MAX_HEADERS)
            v->h[v->n++] = (sig_header_t){f, colon ? colon + 1 : ""};
    }
}

static int covered(const char *name)
{
    static const char *const set[] = {"host", "mcp-session-id", "mcp-protocol-version",
                                      "mcp-method", "mcp-name"};
    for (size_t i = 0; i < 5; i++)
        if (strcasecmp(name, set[i]) == 0)
            return 1;
    return strncasecmp(name, "mcp-param-", 10) == 0;
}

/* Whether sig.h accepts this list and these headers; names[] gets the list's names. */
static int v2_valid(const v2_input_t *v, char names[][SIG_SIGNED_LIST_MAX + 1], size_t *nn)
{
    static const char tchar[] = "abcdefghijklmnopqrstuvwxyz0123456789!#$%&'*+-.^_`|~";
    const char *l = v->list;
    int host = 0;
    *nn = 0;
    if (!l || !*l || strlen(l) > SIG_SIGNED_LIST_MAX)
        return 0;
    while (1) {
        size_t len = strcspn(l, ";");
        if (len == 0 || *nn == SIG_SIGNED_MAX || strspn(l, tchar) < len)
            return 0;
        memcpy(names[*nn], l, len);
        names[*nn][len] = '\0';
        if (*nn && strcmp(names[*nn - 1], names[*nn]) >= 0)
            return 0;
        if (strcmp(names[*nn], "x-signature") == 0)
            return 0;
        host |= strcmp(names[*nn], "host") == 0;
        (*nn)++;
        if (!l[len])
            break;
        l += len + 1;
    }
    if (!host)
        return 0;
    for (size_t i = 0; i < *nn; i++) {
        int seen = 0;
        for (size_t j = 0; j < v->n; j++)
            if (strcasecmp(v->h[j].name, names[i]) == 0) {
                seen++;
                if (strchr(v->h[j].value, '\r'))
                    return 0;
            }
        if (seen != 1)
            return 0;
    }
    for (size_t j = 0; j < v->n; j++) {
        size_t i = 0;
        while (i < *nn && strcasecmp(v->h[j].name, names[i]) != 0)
            i++;
        if (i == *nn && covered(v->h[j].name))
            return 0;
    }
    return 1;
}

static void check_v2(const v2_input_t *v, char *const f[F_COUNT], const char *body, size_t body_len,
                     const char *v1)
{
    static char names[SIG_SIGNED_MAX][SIG_SIGNED_LIST_MAX + 1];
    size_t nn = 0;
    static char unset[] = "unset";
    char *out = unset;
    const char *why = NULL;
    int rc = sig_canonical_v2(f[F_METHOD], f[F_URI], f[F_TS], f[F_NONCE], body, body_len, v->list,
                              v->h, v->n, &out, &why);
    int valid = v1 && v2_valid(v, names, &nn);
    FUZZ_CHECK(rc == 0 || rc == MCPQ_EINVAL);
    FUZZ_CHECK((rc == 0) == valid);
    if (rc != 0) {
        FUZZ_CHECK(out == NULL && why != NULL && why[0] != '\0');
        return;
    }
    /* The expected string, built by hand. */
    size_t size = strlen(v1) + strlen(v->list) + 2;
    for (size_t j = 0; j < v->n; j++)
        size += strlen(v->h[j].name) + strlen(v->h[j].value) + 2;
    char *want = malloc(size);
    FUZZ_CHECK(want != NULL);
    size_t at = (size_t)snprintf(want, size, "%s\n%s", v1, v->list);
    for (size_t i = 0; i < nn; i++) {
        const char *val = NULL;
        for (size_t j = 0; j < v->n; j++)
            if (strcasecmp(v->h[j].name, names[i]) == 0)
                val = v->h[j].value;
        size_t len = strlen(val);
        while (len && (val[len - 1] == ' ' || val[len - 1] == '\t'))
            len--;
        while (len && (*val == ' ' || *val == '\t'))
            val++, len--;
        at += (size_t)snprintf(want + at, size - at, "\n%s:%.*s", names[i], (int)len, val);
    }
    FUZZ_CHECK(strcmp(out, want) == 0);
    /* A version 1 string is a strict prefix followed by a line break: never the same. */
    FUZZ_CHECK(strncmp(out, v1, strlen(v1)) == 0 && out[strlen(v1)] == '\n');
    char sig1[65];
    util_hmac_sha256_hex("k", 1, v1, strlen(v1), sig1);
    FUZZ_CHECK(sig_verify("k", 1, out, sig1) == 0);
    free(want);
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *f[F_COUNT] = {NULL};
    sig_headers_t h;
    v2_input_t v2;
    /* A NUL-terminated copy, cut into fields in place. */
    char *buf = malloc(size + 1);
    FUZZ_CHECK(buf != NULL);
    memcpy(buf, data, size);
    buf[size] = '\0';
    size_t pos = 0;
    parse_v2(buf, size, &pos, &v2);
    int n = 0;
    const char *body = NULL;
    size_t body_len = 0;
    while (n < F_COUNT && pos <= size) {
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
    if (v2.on)
        check_v2(&v2, f, body ? body : "", body_len, canonical);
    free(want);
    free(canonical);
    free(buf);
    return 0;
}
