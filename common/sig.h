/*
 * sig.h - HMAC request signing (docs/authentication.md "Authentication"): the X-App-Id,
 * X-Timestamp, X-Nonce and X-Signature headers, the canonical string of version 1
 *
 *   METHOD "\n" REQUEST_URI "\n" TIMESTAMP "\n" NONCE "\n" hex(SHA256(BODY))
 *
 * and X-Signature = hex(HMAC-SHA256(app_secret, canonical)), compared in constant time.
 * REQUEST_URI is the path and query exactly as the client sent them.
 *
 * Version 2 (`X-Signature-Version: 2`) also covers the headers that decide where a request
 * goes and what it means: the client lists the headers it signed in `X-Signed-Headers`
 * (lowercase names joined by ";", in ascending byte order, "host" among them) and the
 * canonical string goes on after the body hash with that list and one "name:value" line
 * per listed header (the value without leading and trailing blanks):
 *
 *   ... hex(SHA256(BODY)) "\n" SIGNED_HEADERS ("\n" NAME ":" VALUE)*
 *
 * Host, Mcp-Session-Id, MCP-Protocol-Version, Mcp-Method, Mcp-Name and every Mcp-Param-*
 * present in a v2 request must be listed, so a header added to a signed request fails it.
 * This module only
 * parses and computes; the timestamp window and the once-per-nonce rule are the caller's
 * (the ingress keeps nonces in Redis so every replica refuses a replay). Nothing here logs,
 * and no message it returns contains a header value. Thread-safe.
 */
#ifndef MCPQ_SIG_H
#define MCPQ_SIG_H

#include <stddef.h>

#define SIG_WINDOW_S 300    /* |server clock - X-Timestamp| allowed */
#define SIG_NONCE_TTL_S 600 /* a nonce is accepted once per app within this long */
#define SIG_APP_ID_MAX 128
#define SIG_NONCE_MIN 8
#define SIG_NONCE_MAX 64
#define SIG_SIGNED_MAX 64        /* names in X-Signed-Headers */
#define SIG_SIGNED_LIST_MAX 2048 /* length of X-Signed-Headers */

typedef struct sig_headers {
    const char *app_id; /* borrowed from the caller's strings */
    const char *timestamp;
    const char *nonce;
    const char *signature;
    long long ts; /* X-Timestamp as Unix seconds */
} sig_headers_t;

/*
 * Checks the four headers as received (any may be NULL): X-App-Id 1-128 printable ASCII
 * characters without spaces, X-Timestamp 1-12 decimal digits, X-Nonce 8-64 characters of
 * [A-Za-z0-9_-], X-Signature 64 lowercase hex digits. 0 with out filled, or MCPQ_EINVAL with
 * *why set to a static message for the client.
 */
int sig_headers_parse(const char *app_id, const char *timestamp, const char *nonce,
                      const char *signature, sig_headers_t *out, const char **why);

/* The canonical string of a request: a malloc'd string the caller frees, or NULL when out
 * of memory or an argument is NULL (body may be NULL when body_len is 0). */
char *sig_canonical(const char *method, const char *uri, const char *timestamp, const char *nonce,
                    const void *body, size_t body_len);

/* A request header as received (name in any case). */
typedef struct sig_header {
    const char *name;
    const char *value;
} sig_header_t;

/* X-Signature-Version: NULL (absent) or "1" is 1, "2" is 2; anything else MCPQ_EINVAL. */
int sig_version_parse(const char *value, int *version);

/* 1 when a header of this name (any case) must be listed in a v2 request's X-Signed-Headers:
 * Host, Mcp-Session-Id, MCP-Protocol-Version, Mcp-Method, Mcp-Name, Mcp-Param-<anything>. */
int sig_header_covered(const char *name);

/*
 * The canonical string of a v2 request. signed_list is X-Signed-Headers as received (NULL
 * when absent); hdrs are all n headers of the request as received, in any order. Checks
 * that the list is 1..SIG_SIGNED_MAX lowercase header names in ascending order without
 * repeats, names "host" and not "x-signature"; that each listed header occurs exactly once
 * in hdrs, without a line break in its value; and that every covered header of hdrs is
 * listed. 0 with *out a malloc'd string the caller frees; MCPQ_EINVAL with *why a static
 * message for the client (no header value in it), also when method, uri, timestamp or nonce
 * is NULL; MCPQ_ENOMEM.
 */
int sig_canonical_v2(const char *method, const char *uri, const char *timestamp, const char *nonce,
                     const void *body, size_t body_len, const char *signed_list,
                     const sig_header_t *hdrs, size_t n, char **out, const char **why);

/* 1 when signature_hex is hex(HMAC-SHA256(secret, canonical)), compared in constant time;
 * 0 otherwise (including a signature that is not 64 characters). */
int sig_verify(const char *secret, size_t secret_len, const char *canonical,
               const char *signature_hex);

/* 1 when ts is within SIG_WINDOW_S of now_s. */
int sig_ts_fresh(long long ts, long long now_s);

#endif
