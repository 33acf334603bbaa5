/*
 * whsig.h - Standard Webhooks signing (https://www.standardwebhooks.com), shared by the
 * ingress's webhook deliveries (SPEC section 5.4, ingress/webhook.c) and the worker's http
 * executor (SPEC section 6.2, worker/http.c).
 *
 * A secret is "whsec_" followed by the base64 of the key. A signed request carries
 * webhook-id (stable across retries), webhook-timestamp (Unix seconds, new per attempt) and
 *   webhook-signature: v1,<base64 HMAC-SHA256(key, id + "." + timestamp + "." + body)>
 * over the raw body bytes, so a receiver can verify it with any Standard Webhooks library.
 * Neither the key nor the signature is ever logged by the callers.
 *
 * Pure functions, thread-safe.
 */
#ifndef MCPQ_WHSIG_H
#define MCPQ_WHSIG_H

#include <stddef.h>

/* "v1," + 44 base64 characters + NUL */
#define WHSIG_LEN 48

/*
 * Writes the webhook-signature value for (id, timestamp, body) into out (at least
 * WHSIG_LEN bytes). 0, or MCPQ_EINVAL when secret is not "whsec_" followed by strict
 * base64 (padding optional) of 1..256 bytes, or out is too small.
 */
int whsig_sign(const char *secret, const char *id, long long timestamp, const void *body,
               size_t len, char *out, size_t out_size);

#endif
