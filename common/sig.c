#include "sig.h"

#include "err.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_nonce_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
}

static int check_app_id(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if (n >= SIG_APP_ID_MAX || s[n] <= ' ' || s[n] > '~')
            return MCPQ_EINVAL;
    return n ? 0 : MCPQ_EINVAL;
}

static int check_nonce(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if (n >= SIG_NONCE_MAX || !is_nonce_char(s[n]))
            return MCPQ_EINVAL;
    return n >= SIG_NONCE_MIN ? 0 : MCPQ_EINVAL;
}

static int check_signature(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if (n >= 64 || !((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
            return MCPQ_EINVAL;
    return n == 64 ? 0 : MCPQ_EINVAL;
}

static int parse_ts(const char *s, long long *out)
{
    size_t n = strlen(s);
    if (n == 0 || n > 12)
        return MCPQ_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return MCPQ_EINVAL;
    return util_parse_ll(s, 0, 999999999999LL, out);
}

int sig_headers_parse(const char *app_id, const char *timestamp, const char *nonce,
                      const char *signature, sig_headers_t *out, const char **why)
{
    memset(out, 0, sizeof(*out));
    if (!app_id || !timestamp || !nonce || !signature) {
        *why = "HMAC signing needs X-App-Id, X-Timestamp, X-Nonce and X-Signature";
        return MCPQ_EINVAL;
    }
    if (check_app_id(app_id) < 0) {
        *why = "X-App-Id must be 1-128 printable characters without spaces";
        return MCPQ_EINVAL;
    }
    if (parse_ts(timestamp, &out->ts) < 0) {
        *why = "X-Timestamp must be Unix seconds (decimal digits)";
        return MCPQ_EINVAL;
    }
    if (check_nonce(nonce) < 0) {
        *why = "X-Nonce must be 8-64 characters of [A-Za-z0-9_-]";
        return MCPQ_EINVAL;
    }
    if (check_signature(signature) < 0) {
        *why = "X-Signature must be 64 lowercase hex digits (HMAC-SHA256)";
        return MCPQ_EINVAL;
    }
    out->app_id = app_id;
    out->timestamp = timestamp;
    out->nonce = nonce;
    out->signature = signature;
    return 0;
}

char *sig_canonical(const char *method, const char *uri, const char *timestamp, const char *nonce,
                    const void *body, size_t body_len)
{
    if (!method || !uri || !timestamp || !nonce || (!body && body_len))
        return NULL;
    char body_hex[65];
    util_sha256_hex(body ? body : "", body_len, body_hex);
    size_t n = strlen(method) + strlen(uri) + strlen(timestamp) + strlen(nonce) + 64 + 5;
    char *out = malloc(n);
    if (!out)
        return NULL;
    snprintf(out, n, "%s\n%s\n%s\n%s\n%s", method, uri, timestamp, nonce, body_hex);
    return out;
}

int sig_verify(const char *secret, size_t secret_len, const char *canonical,
               const char *signature_hex)
{
    if (!secret || !canonical || !signature_hex || strlen(signature_hex) != 64)
        return 0;
    char want[65];
    util_hmac_sha256_hex(secret, secret_len, canonical, strlen(canonical), want);
    return util_ct_equal(want, signature_hex, 64);
}

int sig_ts_fresh(long long ts, long long now_s)
{
    long long d = ts - now_s;
    return d >= -SIG_WINDOW_S && d <= SIG_WINDOW_S;
}
