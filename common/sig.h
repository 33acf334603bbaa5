/*
 * sig.h - HMAC request signing (SPEC section 3, seed 002): the X-App-Id, X-Timestamp,
 * X-Nonce and X-Signature headers, the canonical string
 *
 *   METHOD "\n" REQUEST_URI "\n" TIMESTAMP "\n" NONCE "\n" hex(SHA256(BODY))
 *
 * and X-Signature = hex(HMAC-SHA256(app_secret, canonical)), compared in constant time.
 * REQUEST_URI is the path and query exactly as the client sent them. This module only
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

/* 1 when signature_hex is hex(HMAC-SHA256(secret, canonical)), compared in constant time;
 * 0 otherwise (including a signature that is not 64 characters). */
int sig_verify(const char *secret, size_t secret_len, const char *canonical,
               const char *signature_hex);

/* 1 when ts is within SIG_WINDOW_S of now_s. */
int sig_ts_fresh(long long ts, long long now_s);

#endif
