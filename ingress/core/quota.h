/*
 * quota.h - the caps one tenant has on what every tenant shares (docs/api.md, "Tenant quotas"):
 * notification streams open on one ingress replica, and across the fleet live sessions,
 * tasks in retention and the bytes of stored and presigned files. A tenant's config sets
 * them under "quotas"; a member it leaves out takes its MCPQ_TENANT_MAX_* setting; 0 means
 * no limit. Each is counted where the thing is made, in the same step that makes it
 * (listen.c under its lock; Lua scripts in session.c, common/task.c and filesapi.c); this
 * module names the limits and words the answer: HTTP 429 with -32029 (RPC_RATE_LIMITED), or
 * {"error"} on /v1, whose message names the limit and the config member.
 *
 * Thread-safe (pure functions of immutable registry snapshots and settings).
 */
#ifndef MCPQ_ING_QUOTA_H
#define MCPQ_ING_QUOTA_H

#include "registry.h"
#include "settings.h"

#include <cjson/cJSON.h>
#include <stddef.h>

typedef enum {
    ING_QUOTA_STREAMS,    /* quotas.notification_streams, per ingress replica */
    ING_QUOTA_SESSIONS,   /* quotas.sessions */
    ING_QUOTA_TASKS,      /* quotas.tasks */
    ING_QUOTA_FILE_BYTES, /* quotas.file_bytes */
    ING_QUOTA_COUNT
} ing_quota_t;

/* Tenant t's cap q: its config's quotas.<member>, else the setting; 0: no limit. */
long long ing_quota_limit(const ing_tenant_t *t, ing_quota_t q, const mcpq_settings_t *set);

/* The answer's message, "tenant limit reached: 2 live sessions (quotas.sessions)", into out. */
void ing_quota_message(ing_quota_t q, long long limit, char *out, size_t size);

/* The JSON-RPC error's data, {"quota": "quotas.sessions", "limit": 2} (caller frees). */
cJSON *ing_quota_data(ing_quota_t q, long long limit);

#endif
