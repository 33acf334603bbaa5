/*
 * whsig.h - Standard Webhooks request signing for the http executor (SPEC section 6.2).
 *
 * A tool version's executor may carry a secret "whsec_<base64 key>". Requests to the tool
 * then carry webhook-id, webhook-timestamp and
 *   webhook-signature: v1,<base64 HMAC-SHA256(key, id + "." + timestamp + "." + body)>
 * so the service can verify them with any Standard Webhooks library.
 *
 * Pure functions, thread-safe.
 */
#ifndef MCPQ_WORKER_WHSIG_H
#define MCPQ_WORKER_WHSIG_H

#include <stddef.h>

/* "v1," + 44 base64 characters + NUL */
#define WRK_WHSIG_LEN 48

/*
 * Writes the webhook-signature value for (id, timestamp, body) into out (at least
 * WRK_WHSIG_LEN bytes). 0, or MCPQ_EINVAL when secret is not "whsec_" followed by
 * base64 of 1..256 bytes.
 */
int wrk_whsig_sign(const char *secret, const char *id, long long timestamp, const void *body,
                   size_t len, char *out, size_t out_size);

#endif
