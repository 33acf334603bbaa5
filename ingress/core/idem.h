/*
 * idem.h - idempotency keys of tools/call (docs/protocol.md, "Reserved arguments").
 *
 * A call whose arguments carry `idempotency_key` (1..255 bytes) claims, in one Redis
 * script, the key {mcpq}:idem:<tenant>:<sha256(server, tool, key)> holding the fingerprint of
 * its arguments (SHA-256 of their canonical JSON: object members sorted by name) and the job
 * (or task) id of the call, kept for MCPQ_IDEMPOTENCY_TTL_S. Then:
 *   - the first call runs as usual under its id, and the worker keeps its result record for
 *     at least the idempotency TTL (the envelope's result_ttl_s);
 *   - a repeat with the same arguments after the first ended gets the stored record,
 *     replayed as the response, without running the tool;
 *   - a repeat while the first runs (on any replica) publishes the same job id again: the
 *     worker running it adds the repeat's reply stream to the job (worker/core/job.h,
 *     wrk_job_attach), or re-sends the stored result, so the tool runs once. This is also
 *     what makes a retry after an ingress crash safe: the claim may exist without a
 *     published job, and the repeat publishes it;
 *   - the same key with other arguments is refused (-32602);
 *   - the key belongs to the principal that claimed it (owner.h, the owner string): another
 *     principal of the tenant using it, with any arguments, is refused (-32602, "in use by
 *     another caller") and learns nothing of the first call; a claim written before owners
 *     were recorded counts as another principal's until it expires;
 *   - once the claim expires, the key is new again and a call with it runs (under a new id).
 * Keys are per tenant and per tool, so another tenant (or tool) using the same key runs its
 * own call. A call that becomes a task claims its task id the same way; its record is the
 * task's result, which a repeat never gets: the repeat is answered with the task
 * (ingress/mcp/toolcall.c, tc_task), or -32603 "try again" when the task cannot be read; a
 * repeat of a task still waiting that no worker has queued publishes its job again, as a
 * synchronous repeat does.
 *
 * Thread-safe (Redis through the kv pool).
 */
#ifndef MCPQ_ING_IDEM_H
#define MCPQ_ING_IDEM_H

#include "kv.h"

#include <cjson/cJSON.h>
#include <stddef.h>

#define ING_IDEM_KEY_MAX 255

typedef enum {
    ING_IDEM_NEW = 0,  /* claimed now: run the call */
    ING_IDEM_REPEAT,   /* claimed before with the same arguments (*record when it has ended) */
    ING_IDEM_CONFLICT, /* claimed before with other arguments */
    ING_IDEM_FOREIGN,  /* claimed by another principal (nothing of its call is returned) */
} ing_idem_state_t;

/* params.arguments.idempotency_key: 0 absent, 1 present (*key set), MCPQ_EINVAL when it is
 * not a string of 1..255 bytes. */
int ing_idem_key(const cJSON *args, const char **key);

/* SHA-256 of the canonical JSON of v (object members sorted by name, recursively) as 64 hex
 * characters. 0, or MCPQ_ENOMEM. */
int ing_idem_fingerprint(const cJSON *v, char hex[65]);

/* The claim's scope: 32 hex characters of SHA-256 over server, tool and key. */
void ing_idem_scope(const char *tenant, const char *server, const char *tool, const char *key,
                    char scope[33]);

/*
 * Claims the key (scope) of the tenant for owner (the caller's owner string, owner.h) and a
 * call with arguments args (the tool's own, reserved names removed), proposing proposed_id as
 * its job or task id: ING_IDEM_NEW (id = proposed_id), ING_IDEM_REPEAT (the same owner; id =
 * the first call's id; when its job has a result record, *record is that record, malloc'd,
 * with *record_len), ING_IDEM_CONFLICT (the same owner, other arguments), ING_IDEM_FOREIGN
 * (another owner's; checked before the arguments, so the answer says nothing about them),
 * or MCPQ_EUNAVAIL (Redis down). owner "" never matches: such a claim is nobody's.
 */
int ing_idem_claim(kv_pool_t *kv, const char *tenant, const char *scope, const char *owner,
                   const cJSON *args, long long ttl_s, const char *proposed_id, char *id,
                   size_t id_size, char **record, size_t *record_len);

#endif
