/*
 * ask.h - a running job asks its client (elicitation, sampling, roots) and waits for the
 * answers without holding the loop (docs/internals.md, "Asking the client"; how tools ask:
 * docs/tools.md, "Asking the user").
 *
 * A question is one InputRequests map {"<key>": {"method", "params"}} (keys
 * [A-Za-z0-9_.-]{1,64}; methods elicitation/create, sampling/createMessage, roots/list), at
 * most MCPQ_INPUT_MAX_BYTES of JSON. A job has at most one open question; it may ask many in
 * sequence (n = 1, 2, ...). wrk_ask_open checks each request against the capabilities the
 * client declared (the envelope's "client"): a request it did not declare is answered at
 * once with an error and never sent. The rest is stored by ask_open.lua in one script:
 * {mcpq}:ask:<job_id> (PEXPIRE 5 s, refreshed every second while the worker waits), the
 * {mcpq}:asked:<job_id> marker (until the deadline + 60 s, for the redelivery rule), for a
 * task its input fields, webhook event and the entry to its waiters, and the `input` entry
 * on the job's reply streams.
 *
 * The answers are taken by ask_take.lua when mcpq:answer names the job (cancelsub.h,
 * wrk_ask_answered) or at the once-a-second tick (wrk_ask_tick), which also refreshes the
 * question's expiry: complete answers delete the question and reach the callback; a changed
 * `reply_to` (a 2026-07-28 retry on another replica) moves the job's streams[0] there, so
 * later entries and the result go where the call now waits. At expires_ms (now +
 * MCPQ_INPUT_TIMEOUT_MS, at most the deadline) every key still unanswered gets
 * {"code": -32001, "message": "the client did not answer within <N> ms"}. A question whose
 * hash vanished (this worker stalled past its expiry) answers -32603.
 *
 * Redis calls run on one blocking context of the service (kv_lazy; MCPQ_REDIS_TIMEOUT_MS
 * bounds each), as the agent executor's do: a question costs one script to open and one to
 * take, plus, once a second, one pipeline for all the open questions (ask_take.lua in mode
 * poll). When Redis cannot be reached at open, every key is answered with an error (-32603).
 *
 * This module reads job fields but calls no job.c function (job.c calls wrk_ask_abandon).
 * Thread safety: loop thread only.
 */
#ifndef MCPQ_WORKER_ASK_H
#define MCPQ_WORKER_ASK_H

#include "job.h"
#include "kv.h"
#include "loop.h"
#include "settings.h"

#include <cjson/cJSON.h>
#include <stddef.h>

#define WRK_ASK_KEY_MAX 64
#define WRK_ASK_TTL_MS 5000      /* the question's hash outlives its last refresh by this */
#define WRK_ASK_ASKED_SLACK_S 60 /* the asked marker outlives the deadline by this */
#define WRK_ASK_ERR_UNDECLARED -32601
#define WRK_ASK_ERR_TIMEOUT -32001
#define WRK_ASK_ERR_LOST -32603
#define WRK_ASK_ROUNDS_MAX 16 /* questions an http or agent tool may ask in one call */
/* The result of a job delivered again after the worker that asked for it died. */
#define WRK_ASK_LOST_MESSAGE                                                                       \
    "the call's worker stopped while it waited for the client's answer; call the tool again"
#define WRK_ASK_LOST_REASON "input_lost"

/* cb runs exactly once on the loop thread (never inside wrk_ask_open), with answers (an
 * object key -> {"result": ...} | {"error": {"code", "message"}}, one per key asked,
 * borrowed for the call), unless wrk_ask_abandon ran first. */
typedef void (*wrk_ask_fn)(wrk_job_t *job, const cJSON *answers, void *arg);

/* The worker's asking service. s, kvt and worker_id must outlive it. NULL on ENOMEM. */
wrk_ask_t *wrk_ask_new(const mcpq_settings_t *s, kv_target_t *kvt, wrk_loop_t *loop,
                       const char *worker_id);
/* Every question must have been abandoned or answered. NULL is a no-op. */
void wrk_ask_free(wrk_ask_t *a);

/* Asks job's client the question `requests` (borrowed; copied). 0, or MCPQ_EBUSY (a
 * question is open), MCPQ_EINVAL (malformed: errstr says why), MCPQ_ETOOBIG. A request
 * the client did not declare (envelope "client") is answered with an error at once,
 * asynchronously, and never sent. */
int wrk_ask_open(wrk_job_t *job, const cJSON *requests, wrk_ask_fn cb, void *arg, char *errstr,
                 size_t errstr_size);
/* The executor stops waiting (its cancel, its own end): no callback; the question is
 * deleted from Redis. No-op when none is open. Also run by job.c when a job ends. */
void wrk_ask_abandon(wrk_job_t *job);

/* A message on mcpq:answer named job_id: its question here (if any) takes its answers. */
void wrk_ask_answered(wrk_ask_t *a, const char *job_id);
/* Once a second: refreshes every open question's expiry and takes the answers of those the
 * client answered (a lost Pub/Sub message). */
void wrk_ask_tick(wrk_ask_t *a);

/* Pure helpers (tests/unit/worker/test_ask.c). */

/* Checks a question map: 0, MCPQ_EINVAL (errstr says why) or MCPQ_ETOOBIG (over max_bytes
 * of compact JSON). */
int wrk_ask_check(const cJSON *requests, long long max_bytes, char *errstr, size_t errstr_size);
/* NULL when client (the envelope's "client", may be NULL) declared what request needs, else
 * the capability's name for the error ("elicitation", "elicitation url mode", "sampling",
 * "roots"). */
const char *wrk_ask_undeclared(const cJSON *client, const cJSON *request);
/* The answers as a 2026-07-28 InputResponses map, for a tool called again with them (http,
 * agent): each key's "result", or its {"error": {...}} as it is. A new object; NULL on ENOMEM. */
cJSON *wrk_ask_responses(const cJSON *answers);
/* {"error": {"code": code, "message": message}}; NULL on ENOMEM. */
cJSON *wrk_ask_error_answer(int code, const char *message);

#endif
