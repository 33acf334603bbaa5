/*
 * store.h - the worker's Redis writer: result-exists and cancellation checks, result
 * records, reply-stream entries (docs/internals.md, "Redis keys", "Worker delivery
 * semantics" and "Cancellation").
 *
 * Requests are queued without I/O and sent by wrk_store_flush(), which the loop calls once
 * per round: every queued command goes out in one pipeline on one blocking hiredis context
 * (kv_connect, MCPQ_REDIS_TIMEOUT_MS bounds every read and write), so a thousand finished
 * jobs cost a couple of round trips, not a thousand.
 *
 *   CHECK  GET {mcpq}:result:<id>, EXISTS {mcpq}:cancel:<id>, GET {mcpq}:asked:<id>,
 *          HGET {mcpq}:ask:<id> worker                → done(req, record or NULL),
 *                                                      req->cancelled, asked, ask_live set
 *   PROBE  EXISTS {mcpq}:cancel:<id>                   → done(req, NULL, 0), req->cancelled set
 *   WRITE  SET {mcpq}:result:<id> <record> NX GET EX <ttl>   (ttl: the store's, or the
 *          request's ttl_s when longer; the record that is durable:
 *          ours, or the one another worker wrote first), then for every reply stream
 *          XADD <stream> MAXLEN ~ 100000 * job <id> kind result data <durable record>
 *          and EXPIRE <stream> 3600                  → done(req, durable record)
 *   REPLY  the XADD/EXPIRE part alone, for a record already durable (a redelivered job).
 *   CANCEL GET {mcpq}:cancel:<id> (for its reason, record.h wrk_record_cancelled), then for
 *          every reply stream XADD ... kind cancelled data {"reason":"..."} and EXPIRE
 *                                                    → done(req, entry data)
 *   notify XADD ... kind progress|log data <json>, best effort: dropped if Redis is down.
 *
 * A request's done callback runs only once its commands succeeded. When Redis is
 * unreachable or the connection breaks, requests stay queued (results stay in memory) and
 * are retried after a backoff (100 ms doubling to 5 s); the callback never runs for a write
 * that did not happen, so no caller stores a Kafka offset for it.
 *
 * With wrk_store_set_wait(), every pipeline that wrote results or entries ends with
 * WAIT <replicas> <timeout_ms>: a request is done only once that many replicas hold its
 * writes. When fewer acknowledged it waits, and WAIT is asked again on the same connection
 * with the next pipeline; if that connection is lost first its writes are sent again (a
 * failover to a replica that missed them cannot lose a result whose offset was stored). A -READONLY
 * answer (the master was demoted) drops the connection like a lost one (docs/redis.md).
 *
 * Requests live in their owner's memory (embedded in a job) and must stay valid until done
 * runs or wrk_store_forget() drops them. Thread safety: loop thread only.
 */
#ifndef MCPQ_WORKER_STORE_H
#define MCPQ_WORKER_STORE_H

#include "kv.h"
#include "names.h"

#include <stddef.h>
#include <stdint.h>

#define WRK_REPLY_MAXLEN "100000"
#define WRK_REPLY_TTL_S "3600"
#define WRK_RESULT_PREFIX NAMES_KEY_RESULT
#define WRK_CANCEL_PREFIX NAMES_KEY_CANCEL

typedef struct wrk_store wrk_store_t;
typedef struct wrk_store_req wrk_store_req_t;

typedef enum {
    WRK_STORE_CHECK = 1,
    WRK_STORE_WRITE,
    WRK_STORE_REPLY,
    WRK_STORE_PROBE,
    WRK_STORE_CANCEL,
} wrk_store_op_t;

/* record: CHECK, the stored record (NULL when none); WRITE/REPLY, the durable record;
 * PROBE, NULL; CANCEL, the data of the entry sent. The bytes are valid during the call
 * only. */
typedef void (*wrk_store_fn)(wrk_store_req_t *req, const char *record, size_t len, void *arg);

struct wrk_store_req {
    wrk_store_op_t op;
    const char *job_id;
    const char *record; /* WRITE, REPLY: the record bytes (owned by the requester) */
    size_t record_len;
    const char *const *streams; /* WRITE, REPLY: reply streams (may be 0) */
    size_t nstreams;
    int64_t ttl_s; /* WRITE: keep the record at least this long (0: the store's TTL) */
    wrk_store_fn done;
    void *arg;
    int cancelled;    /* CHECK, PROBE: 1 when {mcpq}:cancel:<id> exists (set before done runs) */
    const char *self; /* CHECK: this worker's id (ask_live leaves its own questions out) */
    int asked;        /* CHECK: 1 when {mcpq}:asked:<id> is set (an attempt asked its client) */
    int ask_live;     /* CHECK: 1 when {mcpq}:ask:<id> is kept alive by another worker */
    int64_t submitted_us; /* util_mono_us() when wrk_store_submit() queued it (set there): a
                           * WRITE's done callback times the durable write from it */
    /* private */
    int phase;         /* WRITE, CANCEL: 0 SET/GET pending, 1 XADD pending; 4 (all three):
                        * written, waiting for replicas (wrk_store_set_wait) */
    unsigned wait_gen; /* phase 4: the connection it was written on */
    char *durable;     /* WRITE: another worker's record found by SET NX GET; CANCEL: the entry
                        * data (malloc'd) */
    size_t durable_len;
    int64_t stored_us; /* WRITE: Unix µs when Redis acknowledged the SET (the result_write
                        * stage's end); sent as the entry's stored_us field */
    wrk_store_req_t *next;
    wrk_store_req_t *prev; /* while queued: so wrk_store_forget unlinks it at once (a worker
                            * holding 50,000 sleeping jobs forgets one probe per job) */
    int queued;
};

/* A writer to Redis through kvt (which must outlive it), each command bounded by
 * timeout_ms, result records kept result_ttl_s seconds. Connects on the first flush. NULL
 * on ENOMEM. */
wrk_store_t *wrk_store_new(kv_target_t *kvt, int timeout_ms, long long result_ttl_s);
/* Drops queued notifications, closes the connection and frees st. Queued requests are not
 * called back; their memory stays their owners'. NULL is a no-op. */
void wrk_store_free(wrk_store_t *st);

/* Makes WRITE, REPLY and CANCEL wait for `replicas` replicas (Redis WAIT, at most
 * timeout_ms per pipeline) before they are done; replicas 0 (the default) turns it off. */
void wrk_store_set_wait(wrk_store_t *st, int replicas, int timeout_ms);

/* Queues req (filled by the caller, op through arg). */
void wrk_store_submit(wrk_store_t *st, wrk_store_req_t *req);
/* Drops req if queued (its done never runs). */
void wrk_store_forget(wrk_store_t *st, wrk_store_req_t *req);
/* 1 while req waits in the queue. */
int wrk_store_queued(const wrk_store_req_t *req);

/* Queues a best-effort XADD of a progress or log entry (copies everything). */
void wrk_store_notify(wrk_store_t *st, const char *stream, const char *job_id, const char *kind,
                      const char *data, size_t len);

/* Queues a best-effort PUBLISH of msg[0..len) on a Pub/Sub channel (copies everything), in
 * order with the progress and log entries (and dropped with them when the backlog is full). */
void wrk_store_publish(wrk_store_t *st, const char *channel, const char *msg, size_t len);

/* Sends what is queued (see above). Returns 1 when requests remain that can be sent at once
 * (the caller should not sleep), else 0. */
int wrk_store_flush(wrk_store_t *st);

/* 1 while the last attempt to reach Redis succeeded. */
int wrk_store_up(const wrk_store_t *st);
/* 1 while requests or notifications wait to be sent. */
int wrk_store_pending(const wrk_store_t *st);

/* Since the store was made: WRITE requests done (result records durable), and write
 * requests (WRITE, REPLY, CANCEL) that did not go through and were queued again. */
void wrk_store_counts(const wrk_store_t *st, unsigned long long *written,
                      unsigned long long *retried);

#endif
