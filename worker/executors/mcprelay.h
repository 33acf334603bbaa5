/*
 * mcprelay.h - the mcp executor's relay of its upstream's questions to the calling client
 * (docs/executors.md, "Questions from upstreams"), through the worker's ask API
 * (worker/core/ask.h; docs/internals.md, "Asking the client").
 *
 * One relay per call to an upstream, in one of two shapes:
 *   - requests (up to 2025-11-25): the upstream sends elicitation/create,
 *     sampling/createMessage or roots/list as a JSON-RPC request while the call runs (on the
 *     call's SSE stream, or a stdio process's stdout). Each becomes one question of the job,
 *     with one key derived from the request's id (a valid key [A-Za-z0-9_.-]{1,64} as it is,
 *     an integer in decimal, else "q<n>"); requests arriving while a question is open wait in
 *     a queue and are asked one at a time, in order. The answer goes back to the upstream as
 *     the JSON-RPC response to its request: the client's result, or the error the ask API gave
 *     (-32601 when the calling client did not declare the capability, -32001 when it did not
 *     answer in time, ...). ping is answered {} and any other method -32601, without asking.
 *     Every response goes out through reply from a loop timer, never from inside the call
 *     that handed the request over (an SSE chunk callback cannot start a transfer);
 *   - input (2026-07-28 multi round-trip requests, basic/patterns/mrtr.mdx): an
 *     InputRequiredResult's inputRequests become one question (keys kept when valid, else
 *     mapped to "k<n>" and back); the answers come back to inputs as the InputResponses map
 *     under the upstream's own keys, or, when any key got an error (not declared, no answer
 *     in time), as a failure message for the caller (the MRTR shape has no slot for an error).
 *
 * The ask API is passed in (wrk_mcprelay_api_t), so this module's unit test can stand in for
 * it; the executor passes wrk_ask_open and wrk_ask_abandon. Thread safety: loop thread only.
 */
#ifndef MCPQ_WORKER_MCPRELAY_H
#define MCPQ_WORKER_MCPRELAY_H

#include "job.h"

#include <cjson/cJSON.h>
#include <stddef.h>

#define WRK_MCPRELAY_QUEUE_MAX 64 /* upstream requests waiting for their turn, per call */

/* worker/core/ask.h's API, as the relay uses it (same signatures). */
typedef void (*wrk_mcprelay_answer_fn)(wrk_job_t *job, const cJSON *answers, void *arg);
typedef struct wrk_mcprelay_api {
    int (*open)(wrk_job_t *job, const cJSON *requests, wrk_mcprelay_answer_fn cb, void *arg,
                char *errstr, size_t errstr_size);
    void (*abandon)(wrk_job_t *job);
} wrk_mcprelay_api_t;

typedef struct wrk_mcprelay wrk_mcprelay_t;

/* A JSON-RPC response (owned) for the upstream, to its request. */
typedef void (*wrk_mcprelay_reply_fn)(cJSON *response, void *arg);
/* A 2026-07-28 question's end: responses (owned) is the InputResponses map under the
 * upstream's keys, or NULL with failure (a sentence for the caller, valid during the call). */
typedef void (*wrk_mcprelay_inputs_fn)(cJSON *responses, const char *failure, void *arg);

/* A relay for job's call (api, borrowed, lives longer). reply and inputs (either may be NULL
 * when the call cannot get that shape) get arg. NULL on ENOMEM. */
wrk_mcprelay_t *wrk_mcprelay_new(wrk_job_t *job, const wrk_mcprelay_api_t *api,
                                 wrk_mcprelay_reply_fn reply, wrk_mcprelay_inputs_fn inputs,
                                 void *arg);
/* Stops waiting (an open question is abandoned: no callback) and drops what is queued and
 * not yet sent. NULL is a no-op. */
void wrk_mcprelay_free(wrk_mcprelay_t *a);

/* An upstream's request (borrowed): asked, queued, or answered at once (see above). */
void wrk_mcprelay_request(wrk_mcprelay_t *a, const cJSON *request);

/* Asks the client an InputRequiredResult's inputRequests (borrowed, a non-empty object);
 * inputs runs once later (never inside this call). 0, or MCPQ_EBUSY (a question is open) or
 * MCPQ_EINVAL with errstr saying why (a request mcpq cannot relay) and nothing asked. */
int wrk_mcprelay_inputs(wrk_mcprelay_t *a, const cJSON *input_requests, char *errstr,
                        size_t errstr_size);

/* 1 while a question of this relay is open, else 0. */
int wrk_mcprelay_open(const wrk_mcprelay_t *a);

#endif
