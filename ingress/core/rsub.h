/*
 * rsub.h - the resource subscriptions of legacy sessions (resources/subscribe of 2025-03-26 to
 * 2025-11-25; docs/protocol.md "Resource subscriptions"), kept in Redis so that the replica
 * holding a session's GET stream delivers updates subscribed through any replica.
 *
 * `{mcpq}:rsubs:<session id>` (docs/internals.md) is a set of "<server> <uri>" members (a
 * server name holds no space, so the first space splits them), at most `max` of them, with
 * its session's TTL: refreshed with the session (session.c) and deleted with it.
 *
 * Thread-safe (every call takes a pooled Redis connection).
 */
#ifndef MCPQ_ING_RSUB_H
#define MCPQ_ING_RSUB_H

#include "kv.h"
#include "names.h"

#include <stddef.h>

#define ING_RSUB_KEY_PREFIX NAMES_KEY_RSUBS /* + session id */

/* Subscribes session_id to uri of server. 0 (subscribed, or already), MCPQ_ETOOBIG (it holds
 * max subscriptions: nothing added) or MCPQ_EUNAVAIL (Redis). */
int ing_rsub_add(kv_pool_t *kv, const char *session_id, const char *server, const char *uri,
                 long long ttl_s, long long max);
/* Forgets the subscription (absent is fine). 0 or MCPQ_EUNAVAIL. */
int ing_rsub_remove(kv_pool_t *kv, const char *session_id, const char *server, const char *uri);

/* Which of the n sessions are subscribed to uri of server: hit[i] set to 1 or 0, in one
 * pipeline per 256 sessions. 0, or MCPQ_EUNAVAIL (then the hits not read are 0). */
int ing_rsub_match(kv_pool_t *kv, const char *const *sessions, size_t n, const char *server,
                   const char *uri, int *hit);

#endif
