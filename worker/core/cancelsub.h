/*
 * cancelsub.h - the worker's subscription to cancellations (docs/internals.md
 * "Cancellation"): one Redis connection per worker process, subscribed to the channel
 * mcpq:cancel, driven by the worker's loop (loop.h) without blocking it.
 *
 * The connection is made by kv_connect (kv.h: TLS, AUTH, Sentinel), which blocks the loop
 * for at most MCPQ_REDIS_TIMEOUT_MS (at least 1 s) as every worker connect to Redis does;
 * then it is made non-blocking (replies parsed with redisBufferRead/redisGetReply), its fd is
 * watched by the loop like any other, and SUBSCRIBE is sent. Every message whose payload
 * is a valid job id (envelope.h) is handed to on_cancel on the loop thread; the owner decides
 * whether it runs that job. A PING goes out every WRK_CANCELSUB_PING_MS.
 *
 * When Redis cannot be reached, refuses AUTH or SUBSCRIBE, closes the connection, or leaves
 * the handshake or a PING unanswered for MCPQ_REDIS_TIMEOUT_MS (at least 1 s), the connection
 * is dropped and made again after a backoff (100 ms doubling to 5 s, reset once subscribed):
 * no retry loop spins and the worker never stops for it. Messages published while the
 * connection is down are lost; that is why the worker also checks the cancel keys of its
 * running jobs (store.h PROBE).
 *
 * Thread safety: loop thread only.
 */
#ifndef MCPQ_WORKER_CANCELSUB_H
#define MCPQ_WORKER_CANCELSUB_H

#include "loop.h"
#include "names.h"
#include "kv.h"

#define WRK_CANCEL_CHANNEL NAMES_CHAN_CANCEL
/* Also subscribed: the ingress publishes the message id of each agent_reply it stored
 * (docs/internals.md "Conversation channels and the agent reply path"); handed to the on_reply
 * callback. */
#define WRK_AGENTREPLY_CHANNEL NAMES_CHAN_AGENTREPLY
/* Also subscribed: the ingress publishes the job id of a question of a job that was answered
 * (or whose reply stream moved: docs/internals.md "Asking the client"); handed to on_answer. */
#define WRK_ANSWER_CHANNEL NAMES_CHAN_ANSWER
#define WRK_CANCELSUB_PING_MS 5000

typedef struct wrk_cancelsub wrk_cancelsub_t;

/* job_id is NUL-terminated and valid during the call only. */
typedef void (*wrk_cancelsub_fn)(const char *job_id, void *arg);

/* Connects at once (kvt is borrowed and must outlive sub). NULL on ENOMEM (logged). */
wrk_cancelsub_t *wrk_cancelsub_new(wrk_loop_t *loop, kv_target_t *kvt, int timeout_ms,
                                   wrk_cancelsub_fn on_cancel, void *arg);
/* Closes the connection and stops the timers. NULL is a no-op. */
void wrk_cancelsub_free(wrk_cancelsub_t *sub);

/* Where messages on WRK_AGENTREPLY_CHANNEL go (message ids, checked like job ids). */
void wrk_cancelsub_on_reply(wrk_cancelsub_t *sub, wrk_cancelsub_fn on_reply, void *arg);

/* Where messages on WRK_ANSWER_CHANNEL go (job ids; worker/core/ask.h). */
void wrk_cancelsub_on_answer(wrk_cancelsub_t *sub, wrk_cancelsub_fn on_answer, void *arg);

/* 1 while subscribed. */
int wrk_cancelsub_up(const wrk_cancelsub_t *sub);

#endif
