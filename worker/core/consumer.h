/*
 * consumer.h - the worker's Kafka consumer-group membership (librdkafka 2.0.2) and its
 * offset bookkeeping (docs/internals.md "Worker delivery semantics").
 *
 * One high-level consumer subscribed to MCPQ_TOPIC_JOBS in MCPQ_GROUP_ID with the eager
 * default assignor, static membership (group.instance.id = MCPQ_WORKER_ID) when a worker
 * id is set, session.timeout.ms 10 s, enable.auto.offset.store=false with auto commit, and
 * fetch settings tuned for latency. Records come only from rd_kafka_consumer_poll() (never
 * the batch APIs, which lose messages with pause/resume in 2.0.2).
 *
 * The consumer queue wakes the worker's loop through a pipe
 * (rd_kafka_queue_io_event_enable): wrk_consumer_fd() becomes readable when records,
 * rebalances or errors are waiting. wrk_consumer_poll() serves them: each record is handed
 * to on_record with an offset node (offsets.h) that the callee finishes with
 * wrk_offsets_node_done() once the result is durable; wrk_consumer_store() then stores, per
 * partition, the offset after the finished prefix (+1 already applied). On revoke, the
 * partitions' bookkeeping is dropped (running records become detached nodes; they will be
 * delivered again to the next owner).
 *
 * Thread safety: loop thread only (librdkafka's own threads never call back into it,
 * except the log callback, which only logs).
 */
#ifndef MCPQ_WORKER_CONSUMER_H
#define MCPQ_WORKER_CONSUMER_H

#include "kconf.h"
#include "offsets.h"
#include "settings.h"

#include <librdkafka/rdkafka.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

typedef struct wrk_consumer wrk_consumer_t;

#define WRK_CONSUMER_STATS_MS 2000

/* A record (never an error event); node is NULL when the partition is not tracked (the
 * record must then be ignored). msg is valid during the call only. */
typedef void (*wrk_record_fn)(const rd_kafka_message_t *msg, wrk_offsets_node_t *node, void *arg);
/* After every assignment (count may be 0). */
typedef void (*wrk_assign_fn)(int count, void *arg);

/* The lag of the assigned partitions (records behind the high watermark), from librdkafka's
 * statistics; partitions whose offsets are not known yet are left out. */
typedef void (*wrk_lag_fn)(const char *topic, const int32_t *partitions, const int64_t *lags,
                           size_t n, void *arg);

/* Creates the consumer and subscribes. static_member: use worker_id as group.instance.id.
 * NULL with errstr filled on a configuration error. */
wrk_consumer_t *wrk_consumer_new(const mcpq_settings_t *s, const char *worker_id, int static_member,
                                 wrk_record_fn on_record, wrk_assign_fn on_assign, void *arg,
                                 char *errstr, size_t errstr_size);
/* Prints the consumer's effective properties (kconf_print) for --print-config. */
void wrk_consumer_conf_print(FILE *out, const mcpq_settings_t *s, const char *worker_id,
                             const kconf_t *kc);

/* Closes (when not done yet) and destroys. NULL is a no-op. */
void wrk_consumer_free(wrk_consumer_t *c);

/* Readable when the consumer queue has events; drain it with wrk_consumer_wake_clear(). */
int wrk_consumer_fd(const wrk_consumer_t *c);
/* Empties the wake-up pipe, before the queue is served. */
void wrk_consumer_wake_clear(wrk_consumer_t *c);

/* Serves queued events and up to max records. Returns 1 when it stopped because of max
 * (more may be waiting), else 0. */
int wrk_consumer_poll(wrk_consumer_t *c, int max);

/* Pauses (1) or resumes (0) fetching on every assigned partition; later assignments
 * follow the same state. */
void wrk_consumer_pause(wrk_consumer_t *c, int paused);
/* 1 while paused by wrk_consumer_pause, else 0. */
int wrk_consumer_paused(const wrk_consumer_t *c);

/* Stores the commit points of partitions whose finished prefix advanced. */
void wrk_consumer_store(wrk_consumer_t *c);

/* Leaves the consumer group without closing (rd_kafka_unsubscribe): the group rebalances this
 * member's partitions to the others; the revoke runs in a later wrk_consumer_poll(), storing
 * what is finished and dropping the rest (their records go to the next owner). A consumer
 * that left takes no records until wrk_consumer_rejoin(). 0, or MCPQ_EIO (logged). A no-op
 * when it left already or is closed. */
int wrk_consumer_leave(wrk_consumer_t *c);
/* Subscribes again after wrk_consumer_leave(): the group assigns it partitions in the next
 * rebalance. 0, or MCPQ_EIO (logged; still out of the group, call it again). A no-op when it
 * has not left. */
int wrk_consumer_rejoin(wrk_consumer_t *c);
/* 1 between wrk_consumer_leave() and wrk_consumer_rejoin(). */
int wrk_consumer_left(const wrk_consumer_t *c);

/* Leaves the group cleanly: revokes (storing offsets), commits, closes. */
void wrk_consumer_close(wrk_consumer_t *c);

/* 1 after librdkafka raised a fatal error (e.g. this static member was fenced). */
int wrk_consumer_fatal(const wrk_consumer_t *c);

/* Where the lag goes: on_lag runs on the loop thread (from wrk_consumer_poll) every
 * WRK_CONSUMER_STATS_MS when the consumer was created with MCPQ_METRICS_LISTEN set. */
void wrk_consumer_on_lag(wrk_consumer_t *c, wrk_lag_fn on_lag, void *arg);

/* 1 while the consumer reaches Kafka: set once partitions are assigned, cleared when every
 * broker is down or on a fatal error, and then following the brokers' state in the
 * statistics. */
int wrk_consumer_up(const wrk_consumer_t *c);

/* Partitions assigned now. */
int wrk_consumer_assigned(const wrk_consumer_t *c);

/* Partitions of the jobs topic (0: not known yet): from the start-up check (ktopic.h),
 * then from the statistics when MCPQ_METRICS_LISTEN is set. */
int wrk_consumer_topic_partitions(const wrk_consumer_t *c);

/* 1 when the last assignment gave this member no partition of a topic that has some: the
 * group has more members than the topic has partitions. */
int wrk_consumer_idle_member(const wrk_consumer_t *c);

#endif
