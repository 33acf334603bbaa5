/*
 * rstate.h - the requestState of a 2026-07-28 InputRequiredResult (multi round-trip requests,
 * docs/protocol.md "Asking the user"; docs/internals.md "Asking the client").
 *
 * When a job asks its 2026-07-28 client something, the call is answered with the question and
 * a requestState; the client echoes the state on its retry, which may reach any replica. The
 * state names the job and the question, so the retry reaches the waiting worker, and binds
 * them to the caller and the request, so a client cannot take over another call's question:
 *
 *   "v1." base64url(payload) "." base64url(HMAC-SHA256(key, "v1." base64url(payload)))
 *
 * payload = {"j": job id, "n": question number, "t": tenant, "o": first 32 hex digits of
 * SHA-256(owner string, owner.h), "s": session id (absent without one), "m": method,
 * "d": the request digest (ing_rstate_digest), "e": expiry, epoch ms}. The whole state is at
 * most ING_RSTATE_MAX bytes. It is signed, not encrypted: it holds ids and digests only,
 * never a secret or an argument's value. The spec asks the server to treat it as
 * attacker-controlled input: ing_rstate_check refuses anything that does not verify, whose
 * expiry passed, or that another tenant, owner, session, method or request presents.
 *
 * The key is MCPQ_REQUEST_STATE_KEY; unset, the fleet's key in Redis `{mcpq}:rstate:key`
 * (32 random bytes as hex, made once with SET NX by the first replica that needs it and
 * cached by each replica), so every replica checks what any other made.
 *
 * Thread-safe.
 */
#ifndef MCPQ_ING_RSTATE_H
#define MCPQ_ING_RSTATE_H

#include "kv.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#define ING_RSTATE_MAX 1024   /* bytes of a requestState, with its NUL: 1023 characters */
#define ING_RSTATE_JOB_MAX 40 /* bytes of a job id, with its NUL (ING_JOB_ID_LEN, pending.h) */

typedef struct ing_rstate ing_rstate_t;

/* What a state binds: the question, the caller and the request. */
typedef struct ing_rstate_claims {
    const char *job_id;  /* [A-Za-z0-9_-], shorter than ING_RSTATE_JOB_MAX */
    long long n;         /* the question's number in the job (>= 1) */
    const char *tenant;  /* the caller's tenant */
    const char *owner;   /* the caller's owner string (owner.h); "" for none */
    const char *session; /* the session id, or NULL */
    const char *method;  /* tools/call, resources/read, prompts/get */
    char digest[33];     /* ing_rstate_digest of the request */
    int64_t expires_ms;  /* epoch ms */
} ing_rstate_claims_t;

/* key (keylen bytes, may be NULL: the fleet's key in Redis through kv) is copied. kv is
 * borrowed and must outlive the result. NULL when out of memory. */
ing_rstate_t *ing_rstate_new(const char *key, size_t keylen, kv_pool_t *kv);
void ing_rstate_free(ing_rstate_t *rs);

/* The request digest into out[33]: the first 16 bytes of SHA-256, in hex, over the method
 * and its salient params: tools/call name and arguments, resources/read uri, prompts/get name
 * and arguments (objects with their members sorted by name at every depth, so the client may
 * reorder them). params may be NULL. 0, or MCPQ_ENOMEM. */
int ing_rstate_digest(const char *method, const cJSON *params, char out[33]);

/* Makes the state of c into out (size bytes, at least ING_RSTATE_MAX). 0; MCPQ_EINVAL (a
 * claim that does not fit its rules), MCPQ_ETOOBIG (the state would pass ING_RSTATE_MAX:
 * a session id or tenant that long), MCPQ_EUNAVAIL (the fleet key cannot be read from
 * Redis), MCPQ_ENOMEM. */
int ing_rstate_make(ing_rstate_t *rs, const ing_rstate_claims_t *c, char *out, size_t size);

/* Checks state (as the client sent it) against expect (every field but job_id, n and
 * expires_ms, which it fills, job_id pointing into job (ING_RSTATE_JOB_MAX bytes)): the
 * signature, then the expiry against now_ms, then the tenant, owner, session, method and
 * digest. 0 when it holds; MCPQ_EINVAL for anything else (errstr says which check failed, for
 * the log only: the client gets one message whatever failed); MCPQ_EUNAVAIL when the fleet
 * key cannot be read. */
int ing_rstate_check(ing_rstate_t *rs, const char *state, int64_t now_ms,
                     ing_rstate_claims_t *expect, char job[ING_RSTATE_JOB_MAX], char *errstr,
                     size_t errstr_size);

#endif
