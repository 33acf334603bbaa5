/*
 * webhook.h - webhook delivery (docs/webhooks.md): the dispatcher every ingress replica
 * runs, the rules it follows (retry schedule, Retry-After, the SSRF guard), and the tenant
 * API over deliveries (whapi.c).
 *
 * Deliveries are created in Redis by whq_enqueue (common/whq.h), atomically with the task
 * transition that caused them. Each replica runs one dispatcher thread that, every
 * ING_WH_POLL_MS, claims due deliveries with a Lua script: ZRANGE {mcpq}:wh:due BYSCORE up to
 * Redis's clock, and re-scores each to now + ING_WH_VISIBILITY_MS with a fresh claim token
 * in the delivery hash. A replica that dies holding a claim thus loses it after the
 * visibility timeout and another replica sends the delivery again (at least once; the
 * webhook-id is the same, so receivers can deduplicate); an outcome whose claim token is no
 * longer the delivery's is ignored. The dispatcher resolves the webhook (url, secret,
 * events) from the current registry snapshot, signs the body (common/whsig.h; a new
 * webhook-timestamp per attempt) and POSTs it with libcurl's multi interface, up to
 * MCPQ_WEBHOOK_MAX_INFLIGHT at once, ING_WH_TIMEOUT_MS each, never following redirects.
 *
 * Outcomes: a 2xx is "delivered". A 410 marks the delivery and its endpoint "disabled"
 * ({mcpq}:wh:disabled:<tenant>:<webhook>): later deliveries to it are not sent until a
 * redelivery or a new url re-enables it. Anything else is a failed attempt, appended to the
 * delivery's log (at most ING_WH_LOG_MAX entries); the next attempt follows
 * MCPQ_WEBHOOK_RETRY_SCHEDULE, no earlier than a Retry-After on 429 or 503 (capped at
 * ING_WH_RETRY_AFTER_MAX_MS); when the schedule is used up the delivery is "failed" and
 * kept for inspection. All of a delivery's state is in Redis, so any replica resumes it.
 *
 * SSRF guard: unless MCPQ_WEBHOOK_ALLOW_PRIVATE=1, the address libcurl is about to connect
 * to (after DNS, so rebinding cannot bypass it) is refused when it is loopback, private
 * (RFC 1918, fc00::/7), link-local, CGNAT (100.64.0.0/10), IETF protocol assignments
 * (192.0.0.0/24), benchmarking (198.18.0.0/15), documentation (TEST-NET-1/2/3), multicast,
 * unspecified or reserved, Teredo (2001::/32), local-use NAT64 (64:ff9b:1::/48) or
 * discard-only (100::/64), IPv4-mapped and other IPv4-embedding IPv6 forms included; only
 * http and https are spoken and no proxy from the environment is used. At start-up
 * ing_whrules_config_check() refuses a config whose webhook url names such an address literally.
 *
 * Nothing here logs or returns a secret, a signature or a webhook url.
 *
 * Thread safety: the pure functions are thread-safe. ing_webhook_new/start/quiesce/free are
 * called from the main thread; the dispatcher's state belongs to its thread. ing_whapi_route()
 * is called from HTTP threads and is thread-safe.
 */
#ifndef MCPQ_ING_WEBHOOK_H
#define MCPQ_ING_WEBHOOK_H

#include "ctx.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define ING_WH_POLL_MS 200
#define ING_WH_VISIBILITY_MS 60000
#define ING_WH_TIMEOUT_MS 15000
#define ING_WH_LOG_MAX 50
#define ING_WH_RETRY_AFTER_MAX_MS (24LL * 3600 * 1000)
#define ING_WH_SCHEDULE_MAX 32
#define ING_WH_SCHEDULE_ENTRY_MAX_S (30LL * 86400)

/* MCPQ_WEBHOOK_RETRY_SCHEDULE parsed: seconds before attempt i+1 of a round. */
typedef struct ing_whrules_schedule {
    int n;
    long long s[ING_WH_SCHEDULE_MAX];
} ing_whrules_schedule_t;

/* Parses a comma list of 1..ING_WH_SCHEDULE_MAX integers in [0, ING_WH_SCHEDULE_ENTRY_MAX_S]
 * (blanks around entries allowed). 0, or MCPQ_EINVAL with errstr filled. */
int ing_whrules_schedule_parse(const char *text, ing_whrules_schedule_t *out, char *errstr,
                               size_t errstr_size);

/*
 * The delay before the next attempt after attempt number `attempt` (1-based, counted since
 * the delivery was created or last redelivered) failed: the schedule's next entry in ms,
 * raised to retry_after_ms when that is larger (pass -1 when there is none). -1 when the
 * schedule is used up (the delivery fails).
 */
long long ing_whrules_next_delay_ms(const ing_whrules_schedule_t *s, long long attempt,
                                    long long retry_after_ms);

/*
 * A Retry-After value (delay-seconds or an HTTP-date) as milliseconds from now_ms (epoch
 * ms), clamped to [0, ING_WH_RETRY_AFTER_MAX_MS]; -1 when it is neither.
 */
long long ing_whrules_retry_after_ms(const char *value, int64_t now_ms);

/*
 * Why the SSRF guard refuses an address ("a loopback address", ...), or NULL when it is a
 * public unicast address. sa is an AF_INET or AF_INET6 sockaddr; other families are
 * refused.
 */
const char *ing_whrules_addr_refused(const struct sockaddr *sa);

/* One transfer under the guard (ing_whrules_socket): what its refusal says. */
typedef struct ing_whrules_guard {
    int off;             /* 1: every address is allowed (MCPQ_WEBHOOK_ALLOW_PRIVATE=1) */
    const char *subject; /* what resolved: "the webhook host" */
    const char *hint;    /* what the refusal means, after the address */
    char refused[256];   /* out: "refused: <subject> resolves to 127.0.0.1, a loopback address
                          * (<hint>)", or "" */
} ing_whrules_guard_t;

/*
 * The guard as libcurl applies it after DNS, a CURLOPT_OPENSOCKETFUNCTION whose
 * CURLOPT_OPENSOCKETDATA is an ing_whrules_guard_t: a new socket for a (close-on-exec), or
 * CURL_SOCKET_BAD with guard->refused filled when ing_whrules_addr_refused refuses its address.
 * The webhook dispatcher and the OAuth key service's requests to URLs learned from metadata
 * (oauthhttp.h) use it.
 */
curl_socket_t ing_whrules_socket(void *guard, curlsocktype purpose, struct curl_sockaddr *a);

/*
 * For a webhook url whose host is a literal IP address (IPv4 in any form inet_aton takes,
 * or a bracketed IPv6 address): why the guard refuses it, or NULL (also when the host is a
 * name, which is checked when connecting). host_out (may be NULL) receives the host.
 */
const char *ing_whrules_url_refused(const char *url, char *host_out, size_t host_size);

/* Checks every $.tenants[i].webhooks[j].url of a normalized config with
 * ing_whrules_url_refused: 0, or MCPQ_EINVAL with errstr naming the JSON path. */
int ing_whrules_config_check(const cJSON *config, char *errstr, size_t errstr_size);

typedef struct ing_webhook ing_webhook_t;

/* A dispatcher for ctx (settings: retry schedule, allow-private, max in flight), not yet
 * running; NULL with errstr filled (a bad MCPQ_WEBHOOK_RETRY_SCHEDULE, out of memory). */
ing_webhook_t *ing_webhook_new(ing_ctx_t *ctx, char *errstr, size_t errstr_size);

/* Starts the dispatcher thread: 0 or MCPQ_EIO. */
int ing_webhook_start(ing_webhook_t *wh);

/* Stops claiming; deliveries in flight may finish within grace_ms. Returns at once. */
void ing_webhook_quiesce(ing_webhook_t *wh, long long grace_ms);

/* Stops the thread (aborting what is still in flight and handing its claims back to the
 * queue, due now) and frees wh. NULL does nothing. */
void ing_webhook_free(ing_webhook_t *wh);

#endif
