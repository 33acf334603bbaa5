/*
 * mrtr.h - 2026-07-28 multi round-trip requests (docs/protocol.md, "Asking the user",
 * "2026-07-28: multi round-trip requests"; docs/internals.md, "Asking the client").
 *
 * A tools/call, resources/read or prompts/get whose job asks its client a question is
 * answered with an InputRequiredResult (`resultType: "input_required"`, `inputRequests`,
 * `requestState`: rstate.h) by the call's input hook (ing_mrtr_hook, pending.h's on_input);
 * the worker keeps waiting. The client retries the same request with `inputResponses` and
 * the `requestState`, on any replica: ing_mrtr_retry_check verifies the state, then
 * ing_mrtr_retry_run submits the responses (answer.h) with this replica's stream as the
 * job's reply_to and parks the retry on the same job, without publishing a new one; a
 * second question answers the retry with a new InputRequiredResult, the tool's result ends
 * it. Outcomes that say to start over: a state that fails its check (-32602), a question
 * that is gone (the worker died, or the question ended: -32603 data.reason "input_lost").
 *
 * Used by toolcall.c (its step tc_resume) and mcptasks.c (tasks/update). Thread-safe.
 */
#ifndef MCPQ_ING_MRTR_H
#define MCPQ_ING_MRTR_H

#include "mcpreq.h"
#include "pending.h"
#include "rstate.h"

#include <cjson/cJSON.h>

/* The message of a requestState that fails its check (docs/internals.md). */
#define ING_MRTR_BAD_STATE                                                                         \
    "invalid or expired requestState: call again without requestState and inputResponses"
/* The message of a valid state whose question is gone (data.reason "input_lost"). */
#define ING_MRTR_LOST                                                                              \
    "the call's worker stopped while it waited for your answer, or the question has ended; call "  \
    "again without requestState and inputResponses"

/* A retry's verified state: the job and question it names. */
typedef struct ing_mrtr_retry {
    char job[ING_RSTATE_JOB_MAX];
    ing_rstate_claims_t claims; /* the caller's and the request's, as checked */
    const cJSON *responses;     /* params.inputResponses (borrowed), or NULL */
} ing_mrtr_retry_t;

/* Arms call (filled by the caller, not yet in the table) with the 2026-07-28 input hook for
 * the request msg of m: what the hook needs (the caller, the request's digest, the client's
 * declared capabilities) is copied into call->input_arg, which ing_pending_release frees.
 * 0, or MCPQ_ENOMEM (the call is left without a hook: a question is then UNREACHABLE). */
int ing_mrtr_arm(const ing_mcp_t *m, const rpc_msg_t *msg, ing_call_t *call);

/* The input hook of a 2026-07-28 call (pending.h, ing_call_input_fn): ING_INPUT_ANSWER with
 * the call's InputRequiredResult for the requests the client declared; a request it did not
 * declare (the worker checks this first) is answered with the -32601 error for the tool and
 * left out. UNREACHABLE when no state can be made (Redis down for the fleet key). */
ing_input_t ing_mrtr_hook(ing_call_t *call, const char *job_id, const cJSON *data, cJSON **msgs);

/* A request of m whose params carry requestState or inputResponses (2026-07-28 only): 0 when
 * it is not a retry (nothing done); 1 when it was answered (resp filled: a malformed or
 * refused state); 2 when it is a retry with a verified state (r filled). */
int ing_mrtr_retry_check(ing_mcp_t *m, const rpc_msg_t *msg, ing_mrtr_retry_t *r, ing_resp_t *resp);

/* Runs the verified retry r on call (filled for the request: job id r->job, armed): adds it
 * to the table, submits the responses, and parks it (1) or answers it (0, resp filled: a new
 * InputRequiredResult for requests still open, the question gone, an answer refused). */
int ing_mrtr_retry_run(ing_mcp_t *m, const rpc_msg_t *msg, ing_call_t *call,
                       const ing_mrtr_retry_t *r, ing_resp_t *resp);

/* tasks/update (the tasks extension) of task t, which the caller may see: inputResponses for
 * the task's open question (its `input` field) are submitted; keys not outstanding are
 * ignored. 0 (acknowledge with {}), or 1 with resp filled (an answer refused, Redis down). */
int ing_mrtr_task_update(ing_mcp_t *m, const rpc_msg_t *msg, const ing_tasks_t *t,
                         ing_resp_t *resp);

#endif
