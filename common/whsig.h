/*
 * whsig.h - Standard Webhooks signing (https://www.standardwebhooks.com), shared by the
 * ingress's webhook deliveries (docs/webhooks.md, ingress/core/webhook.c) and the worker's http
 * executor (docs/executors.md "http", worker/executors/httpexec.c); the format is in
 * docs/signatures.md, "Standard Webhooks".
 *
 * A secret is "whsec_" followed by the base64 of the key. A signed request carries
 * webhook-id (stable across retries), webhook-timestamp (Unix seconds, new per attempt) and
 *   webhook-signature: v1,<base64 HMAC-SHA256(key, id + "." + timestamp + "." + body)>
 * over the raw body bytes, so a receiver can verify it with any Standard Webhooks library.
 * While a secret is being rotated the header carries one signature per active secret,
 * separated by a space ("v1,<new> v1,<old>"); a receiver accepts the request when any of
 * them verifies with the secret it holds.
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

/* The most secrets one header is signed with (the current one and the one being rotated). */
#define WHSIG_MAX_SECRETS 2

/*
 * whsig_sign with each of the n secrets (1..WHSIG_MAX_SECRETS), the signatures joined by
 * one space in the order given, into out (at least n * WHSIG_LEN bytes). 0, or MCPQ_EINVAL
 * when a secret is not a Standard Webhooks secret, n is out of range or out is too small.
 */
int whsig_sign_all(const char *const *secrets, size_t n, const char *id, long long timestamp,
                   const void *body, size_t len, char *out, size_t out_size);

#endif
