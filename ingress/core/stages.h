/*
 * stages.h - where the time of one tools/call goes: its stages, from the stamps the ingress
 * and the worker take (docs/operations.md, "Access log", field stages_us).
 *
 * A call that a worker answered is split into eight consecutive stages; each ends where the
 * next starts, so they add up to the call's duration:
 *
 *   http_auth     request start (headers read)      -> front door passed        ingress
 *   validate      front door passed                 -> envelope built (sent_us) ingress
 *   produce       envelope built, handed to Kafka   -> the producer's delivery report
 *   queue         delivery report                   -> the worker started the executor
 *                 (exec_us; includes its pick-up, picked_us, and its did-it-run check)
 *   execute       executor started                  -> executor ended (finished_us)
 *   result_write  executor ended                    -> Redis acknowledged the result's SET
 *                 (the reply entry's stored_us)
 *   wake          result stored                     -> the reader thread completed the call
 *   respond       call completed                    -> response complete (the access log)
 *
 * queue, result_write's start and wake cross processes (the worker's wall clock against the
 * ingress's): they assume synced clocks and are clamped at 0, as the queue-wait and result
 * delivery histograms are. Every stamp is Unix µs (util_now_us()); 0 means not taken.
 *
 * Pure functions, thread-safe.
 */
#ifndef MCPQ_ING_STAGES_H
#define MCPQ_ING_STAGES_H

#include <stdint.h>

typedef enum {
    ING_STAGE_HTTP_AUTH = 0,
    ING_STAGE_VALIDATE,
    ING_STAGE_PRODUCE,
    ING_STAGE_QUEUE,
    ING_STAGE_EXECUTE,
    ING_STAGE_RESULT_WRITE,
    ING_STAGE_WAKE,
    ING_STAGE_RESPOND,
    ING_STAGE_COUNT
} ing_stage_t;

/* The stage names ("http_auth", ..., "respond"), indexed by ing_stage_t. */
extern const char *const ing_stages_names[ING_STAGE_COUNT];

/* The stamps of one call, in order (see above). */
typedef struct ing_stamps {
    int64_t start_us;    /* request start */
    int64_t door_us;     /* front door passed */
    int64_t sent_us;     /* envelope built and handed to the producer (the envelope's sent_us) */
    int64_t acked_us;    /* the producer's delivery report */
    int64_t exec_us;     /* the worker's (result record; its picked_us is inside queue) */
    int64_t finished_us; /* the worker's (result record) */
    int64_t stored_us;   /* the worker's (the reply entry's stored_us) */
    int64_t woke_us;     /* the ingress's reader completed the call */
    int64_t end_us;      /* response complete */
} ing_stamps_t;

/* Fills us[ING_STAGE_COUNT] with each stage's µs (a stamp later than the next one: 0) and
 * returns 1 when every stamp is there; 0 (us untouched) when one is missing (a call answered
 * without a worker's result, a timeout, a worker that does not stamp). */
int ing_stages_split(const ing_stamps_t *s, int64_t us[ING_STAGE_COUNT]);

#endif
