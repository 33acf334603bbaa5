#include "sig.h"

#include "err.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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
    size_t n = strnlen(s, SIG_NONCE_MAX + 1);
    return n >= SIG_NONCE_MIN && util_id_ok(s, n, SIG_NONCE_MAX, "") ? 0 : MCPQ_EINVAL;
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

int sig_version_parse(const char *value, int *version)
{
    if (!value || strcmp(value, "1") == 0) {
        *version = 1;
        return 0;
    }
    if (strcmp(value, "2") == 0) {
        *version = 2;
        return 0;
    }
    return MCPQ_EINVAL;
}

int sig_header_covered(const char *name)
{
    static const char *const exact[] = {"host", "mcp-session-id", "mcp-protocol-version",
                                        "mcp-method", "mcp-name"};
    if (!name)
        return 0;
    for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
        if (strcasecmp(name, exact[i]) == 0)
            return 1;
    return strncasecmp(name, "mcp-param-", 10) == 0;
}

/* A lowercase token character of a header name (RFC 9110 tchar without A-Z). */
static int is_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Splits a copy of X-Signed-Headers into names[]: their count, or MCPQ_EINVAL with *why. */
static int signed_names(char *list, const char **names, const char **why)
{
    size_t n = 0;
    int host = 0;
    *why = "X-Signed-Headers must be lowercase header names joined by \";\" in ascending order, "
           "without repeats, \"host\" among them";
    for (char *p = list;;) {
        char *end = strchr(p, ';');
        if (end)
            *end = '\0';
        if (!*p || n == SIG_SIGNED_MAX || (n && strcmp(names[n - 1], p) >= 0))
            return MCPQ_EINVAL;
        for (const char *c = p; *c; c++)
            if (!is_name_char(*c))
                return MCPQ_EINVAL;
        if (strcmp(p, "x-signature") == 0) {
            *why = "X-Signed-Headers cannot name X-Signature";
            return MCPQ_EINVAL;
        }
        host |= strcmp(p, "host") == 0;
        names[n++] = p;
        if (!end)
            break;
        p = end + 1;
    }
    return host ? (int)n : MCPQ_EINVAL;
}

/* The header's value without leading and trailing spaces and tabs: *len bytes from the
 * returned pointer. */
static const char *trimmed(const char *v, size_t *len)
{
    if (!v)
        v = "";
    size_t n = strlen(v);
    while (n && (*v == ' ' || *v == '\t'))
        v++, n--;
    while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
        n--;
    *len = n;
    return v;
}

/* Checks hdrs against the listed names; fills vals[i] with the one header names[i] is. */
static int match_headers(const char *const *names, size_t nn, const sig_header_t *hdrs, size_t n,
                         const sig_header_t **vals, const char **why)
{
    for (size_t i = 0; i < nn; i++)
        vals[i] = NULL;
    for (size_t j = 0; j < n; j++) {
        size_t i = 0;
        while (i < nn && strcasecmp(hdrs[j].name, names[i]) != 0)
            i++;
        if (i == nn) {
            if (sig_header_covered(hdrs[j].name)) {
                *why = "a v2 signature must cover Host, Mcp-Session-Id, MCP-Protocol-Version, "
                       "Mcp-Method, Mcp-Name and Mcp-Param-* when the request carries them: "
                       "one of them is not in X-Signed-Headers";
                return MCPQ_EINVAL;
            }
            continue;
        }
        if (vals[i]) {
            *why = "a header named in X-Signed-Headers occurs more than once";
            return MCPQ_EINVAL;
        }
        const char *v = hdrs[j].value ? hdrs[j].value : "";
        if (strpbrk(v, "\r\n")) {
            *why = "a signed header's value holds a line break";
            return MCPQ_EINVAL;
        }
        vals[i] = &hdrs[j];
    }
    for (size_t i = 0; i < nn; i++)
        if (!vals[i]) {
            *why = "X-Signed-Headers names a header the request does not carry";
            return MCPQ_EINVAL;
        }
    return 0;
}

int sig_canonical_v2(const char *method, const char *uri, const char *timestamp, const char *nonce,
                     const void *body, size_t body_len, const char *signed_list,
                     const sig_header_t *hdrs, size_t n, char **out, const char **why)
{
    const char *names[SIG_SIGNED_MAX];
    const sig_header_t *vals[SIG_SIGNED_MAX];
    char list[SIG_SIGNED_LIST_MAX + 1];
    *out = NULL;
    if (!method || !uri || !timestamp || !nonce || (!body && body_len) || (!hdrs && n)) {
        *why = "a request without method, URI, X-Timestamp or X-Nonce cannot be signed";
        return MCPQ_EINVAL;
    }
    if (!signed_list || !*signed_list || strlen(signed_list) > SIG_SIGNED_LIST_MAX) {
        *why = "X-Signature-Version 2 needs X-Signed-Headers (at most 2048 characters)";
        return MCPQ_EINVAL;
    }
    snprintf(list, sizeof(list), "%s", signed_list);
    int nn = signed_names(list, names, why);
    if (nn < 0 || match_headers(names, (size_t)nn, hdrs, n, vals, why) < 0)
        return MCPQ_EINVAL;
    char *v1 = sig_canonical(method, uri, timestamp, nonce, body, body_len);
    if (!v1)
        return MCPQ_ENOMEM;
    const char *v[SIG_SIGNED_MAX];
    size_t vlen[SIG_SIGNED_MAX], size = strlen(v1) + 1 + strlen(signed_list) + 1;
    for (int i = 0; i < nn; i++) {
        v[i] = trimmed(vals[i]->value, &vlen[i]);
        size += 1 + strlen(names[i]) + 1 + vlen[i];
    }
    char *c = malloc(size), *p = c;
    if (!c) {
        free(v1);
        return MCPQ_ENOMEM;
    }
    p += snprintf(p, size, "%s\n%s", v1, signed_list);
    free(v1);
    for (int i = 0; i < nn; i++) {
        p += snprintf(p, size - (size_t)(p - c), "\n%s:", names[i]);
        memcpy(p, v[i], vlen[i]);
        p += vlen[i];
    }
    *p = '\0';
    *out = c; /* now the caller's */
    return 0;
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
