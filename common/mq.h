/*
 * mq.h - the job producer (librdkafka 2.0.2) the ingress publishes tools/call jobs with.
 *
 * mq_producer_new() starts one background thread that serves delivery reports
 * (rd_kafka_poll). Each mq_producer_send() carries an opaque pointer that comes back in the
 * delivery callback, on that thread, with 0 or a negative mcpq error. A message that timed
 * out in flight (POSSIBLY_PERSISTED) is reported as MCPQ_ETIMEDOUT: the job may still run.
 *
 * mq_producer_up() tells whether any broker is reachable right now (error_cb tracks
 * ALL_BROKERS_DOWN, a metadata probe clears it), so callers can fail at once instead of
 * queueing behind a dead cluster.
 *
 * Given a signing key, every record carries the header mcpq-sig (jobsig.h): whatever code
 * publishes through the producer signs, so no job leaves the ingress unsigned.
 * All functions are thread-safe.
 */
#ifndef MCPQ_KAFKA_H
#define MCPQ_KAFKA_H

#include "jobsig.h"
#include "kconf.h"

#include <stddef.h>
#include <stdio.h>

typedef struct mq_producer mq_producer_t;

/* Called on the producer's thread for each message: err 0 when Kafka acknowledged it. */
typedef void (*mq_delivery_fn)(void *opaque, int err, void *cb_arg);

/* kc: the user's Kafka properties (kconf.h; may be NULL; read during the call only).
 * sign_key (copied; NULL: records are not signed) signs every record's value. */
mq_producer_t *mq_producer_new(const char *brokers, int message_timeout_ms, const kconf_t *kc,
                               const jobsig_key_t *sign_key, mq_delivery_fn on_delivery,
                               void *cb_arg, char *errstr, size_t errstr_size);
/* Prints the producer's effective properties (kconf_print) for --print-config. */
void mq_producer_conf_print(FILE *out, const kconf_t *kc, const char *brokers,
                            int message_timeout_ms);

/* Flushes what is queued (up to timeout_ms), stops the thread, destroys the handle. */
void mq_producer_free(mq_producer_t *p, int timeout_ms);

/* Queues value (copied) for topic with the headers job_id, traceparent and tracestate (W3C
 * trace context; either may be NULL, then the header is left out), and mcpq-sig when the
 * producer has a signing key. The record's key is key, or job_id when key is NULL: records of
 * one key go to one partition (the default partitioner hashes the key), hence to one worker
 * of the group while the assignment holds (docs/executors.md, "Resource subscriptions").
 * 0, MCPQ_EUNAVAIL when no broker is up, MCPQ_ETOOBIG, or MCPQ_EIO (local queue full or
 * other error). */
int mq_producer_send(mq_producer_t *p, const char *topic, const char *job_id, const char *key,
                     const void *value, size_t len, const char *traceparent, const char *tracestate,
                     void *opaque);

/* 1 while at least one broker is reachable. */
int mq_producer_up(const mq_producer_t *p);

/* Asks the cluster for metadata (bounded by timeout_ms); updates and returns mq_producer_up.
 * An answer that does not come within timeout_ms leaves mq_producer_up as it was until such
 * timeouts have lasted message_timeout_ms (a slow cluster still takes jobs); any other
 * failure clears it at once. Called from one thread at a time. */
int mq_producer_probe(mq_producer_t *p, int timeout_ms);

#endif
