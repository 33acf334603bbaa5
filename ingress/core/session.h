/*
 * session.h - Mcp-Session-Id sessions of the legacy protocol versions, kept in Redis
 * (`{mcpq}:session:<id>`, docs/internals.md) so that any replica serves any session.
 * A session belongs to one tenant: looked up by another tenant it does not exist.
 * `{mcpq}:sessions:<tenant>` (zset of the tenant's session ids) counts them for the tenant's
 * quotas.sessions (quota.h): create checks and adds in one script, DELETE removes, and ids
 * whose session expired are dropped by later creates.
 * Thread-safe (every call takes a pooled Redis connection).
 */
#ifndef MCPQ_ING_SESSION_H
#define MCPQ_ING_SESSION_H

#include "kv.h"
#include "names.h"

#include <stddef.h>

#define ING_SESSION_KEY_PREFIX NAMES_KEY_SESSION /* + id: the session's JSON */
#define ING_SESSION_CAPS_MAX 1100                /* room for caps (mcpask.h keeps it to 1024) */

typedef struct ing_session {
    char id[80];
    char tenant[128];
    char version[32];
    char log_level[16];
    /* JSON of what the client declared at initialize that a tool may use (elicitation,
     * sampling, roots: mcpask.h, bounded there); "" when nothing */
    char caps[ING_SESSION_CAPS_MAX];
} ing_session_t;

/* Creates a session of s->tenant; fills s->id. max: live sessions the tenant may hold (0: no
 * limit). 0, MCPQ_EQUOTA (it holds max: nothing created) or MCPQ_EUNAVAIL. */
int ing_session_create(kv_pool_t *kv, ing_session_t *s, long long ttl_s, long long max);
/* 0 (found; its TTL refreshed, and its resource subscriptions' (rsub.h)), MCPQ_ENOTFOUND
 * (absent or another tenant's), MCPQ_EUNAVAIL. */
int ing_session_get(kv_pool_t *kv, const char *id, const char *tenant, long long ttl_s,
                    ing_session_t *s);
/* 0 (deleted, with its resource subscriptions), MCPQ_ENOTFOUND, MCPQ_EUNAVAIL. */
int ing_session_delete(kv_pool_t *kv, const char *id, const char *tenant);
/* Stores the logging/setLevel level. */
int ing_session_save(kv_pool_t *kv, const ing_session_t *s, long long ttl_s);

/* 1 when id has the shape of a session id this gateway mints (visible ASCII, bounded). */
int ing_session_id_valid(const char *id);

#endif
