/*
 * answer.h - the client's answers to a job's open question (docs/internals.md, "Asking the
 * client", step 3), whichever replica receives them: a legacy client's JSON-RPC responses
 * POSTed to /mcp (mcp.c), a 2026-07-28 retried request's inputResponses, a task's
 * tasks/update, and the reader thread's own error answers for a call that cannot be asked
 * (pending.c).
 *
 * The question is `{mcpq}:ask:<job_id>` (written by the worker's ask_open.lua): `n`, `reqs`
 * (the InputRequests map), `tenant`, `owner`, `session`, `reply_to`, one `a:<key>` per answer
 * given. ing_answer_submit checks the caller against it (a mismatch looks exactly like a
 * missing question: no oracle for other callers' job ids), validates each accepted
 * elicitation's content against its requestedSchema (sch.h), and runs answer_submit.lua,
 * which stores the answers and, once every key is answered or the reply stream changed,
 * publishes the job id on `mcpq:answer` for the waiting worker.
 *
 * The caller bounds the answers' size (MCPQ_INPUT_MAX_BYTES, settings.h) before it parses
 * them: this module stores what it is given.
 *
 * Thread-safe (every call takes a pooled Redis connection).
 */
#ifndef MCPQ_ING_ANSWER_H
#define MCPQ_ING_ANSWER_H

#include "kv.h"

#include <cjson/cJSON.h>
#include <stddef.h>

/* Who answers: the caller's tenant, owner string (owner.h, "" for none) and legacy session
 * (NULL: none). */
typedef struct {
    const char *tenant, *owner, *session;
} ing_answer_who_t;

typedef enum { ING_ANSWER_OK = 0, ING_ANSWER_GONE, ING_ANSWER_INVALID } ing_answer_rc_t;

/* The error code of an answer that failed its requestedSchema, as the tool gets it. */
#define ING_ANSWER_SCHEMA_CODE (-32602)
/* The prefix of that error's message, followed by "<path>: <why>". */
#define ING_ANSWER_SCHEMA_MSG "the client's answer does not match the requested schema: "

/*
 * Stores answers (an object: key -> {"result": {...}} | {"error": {"code": int, "message":
 * string}}; each key must be one of the question's) for job_id's question number n (0:
 * whichever is open), after checking who against the question's tenant, owner and, when the
 * question has one, session (a mismatch is ING_ANSWER_GONE, like a missing question or
 * another n). who NULL: the gateway answers itself (the reader thread's error answers for a
 * call that cannot be asked): no caller check.
 *
 * Every accepted elicitation (an elicitation/create request answered with result.action
 * "accept") has its result.content (an absent one as {}) validated against the request's
 * params.requestedSchema: a failure is ING_ANSWER_INVALID with errstr =
 * ING_ANSWER_SCHEMA_MSG "<path>: <why>" (the path starts at "content") and nothing stored;
 * so is a malformed answer or a key the question does not have (errstr says which).
 *
 * reply_to (NULL: keep) moves the job's later reply entries to that stream. *open_out (may
 * be NULL) receives, on ING_ANSWER_OK, the question's requests not answered yet (a new
 * object, {} once complete; the caller frees). Returns an ing_answer_rc_t, or MCPQ_EUNAVAIL
 * (Redis) / MCPQ_ENOMEM, with errstr filled.
 */
int ing_answer_submit(kv_pool_t *kv, const char *job_id, long long n, const ing_answer_who_t *who,
                      const cJSON *answers, const char *reply_to, cJSON **open_out, char *errstr,
                      size_t errstr_size);

/* The error answer {"error": {"code": code, "message": message}} (a new object). */
cJSON *ing_answer_error(int code, const char *message);

#endif
