/*
 * ktopic.h - the topics mcpq uses, made to exist at start-up (docs/kafka.md "Topics").
 *
 * mcpq uses two topics: MCPQ_TOPIC_JOBS and its dead-letter topic <jobs>.dlq. At start-up the
 * ingress and the worker each ask the cluster (a short-lived admin client made from the same
 * Kafka properties, with allow.auto.create.topics=false so that asking never creates a topic
 * with the broker's defaults) whether they exist. A missing one is created through the Admin
 * API (CreateTopics) with MCPQ_PARTITIONS partitions and MCPQ_REPLICATION_FACTOR replicas
 * when MCPQ_TOPIC_CREATE=1; when that is refused (no Create ACL, or a broker without the API)
 * or creation is off, one error line says exactly what to create. Start-up goes on either
 * way: the readiness probes report whether Kafka works.
 *
 * Not thread-safe; call once at start-up.
 */
#ifndef MCPQ_KAFKATOPIC_H
#define MCPQ_KAFKATOPIC_H

#include "kconf.h"

#define KTOPIC_TIMEOUT_MS 3000 /* the whole check, creation included */

/* What the caller wants. */
typedef struct ktopic_want {
    const char *brokers;
    const kconf_t *kc; /* may be NULL */
    const char *const *topics;
    int ntopics;
    int partitions, replication; /* replication -1: the broker's default */
    int create;
} ktopic_want_t;

/* Makes sure the topics exist (see above). Returns the partition count of topics[0] as the
 * cluster reports it after any creation (> 0), 0 when it is still missing, or a negative mcpq
 * error when the cluster could not be asked (all logged). */
int ktopic_ensure(const ktopic_want_t *want);

#endif
