/*
 * control.h - the devbroker's control channel: fault injection into its mock cluster over a
 * Unix stream socket (MCPQ_DEVBROKER_CONTROL; docs/kafka.md "Fault injection").
 *
 * One text command per line, one answer line per command: "ok ..." or "error <reason>".
 *
 *   brokers                          each broker as <id>:up|down[:<rtt>ms]
 *   topics                           the topics the devbroker created, as <name>:<partitions>
 *   down <id|all>                    the broker closes its connections and refuses new ones
 *   up <id|all>                      it accepts connections again
 *   leader <topic> <partition> <id>  moves the partition's leader (no data moves)
 *   errors <api> <count> <error>     the next <count> requests of <api>, on any broker, fail
 *                                    with <error> (librdkafka's name: NOT_COORDINATOR,
 *                                    _TRANSPORT disconnects the client, ...)
 *   rtt <id|all> <ms>                delays every answer of the broker by <ms>
 *   clear <api>                      drops the errors still queued for <api>
 *   help                             the commands
 *
 * <api> is a Kafka request name (Produce, Fetch, Metadata, OffsetCommit, OffsetFetch,
 * FindCoordinator, JoinGroup, Heartbeat, LeaveGroup, SyncGroup, ...; any case). A line longer
 * than DB_CONTROL_LINE_MAX bytes or holding a NUL byte is answered with an error and dropped.
 * A few clients may be connected at once; each is served in turn by one thread.
 *
 * It changes only what rdkafka_mock.h lets it change: a broker that is down keeps its
 * partitions (no leader moves by itself, as the mock documents), and nothing is persisted.
 */
#ifndef MCPQ_DEVBROKER_CONTROL_H
#define MCPQ_DEVBROKER_CONTROL_H

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stddef.h>

#define DB_CONTROL_LINE_MAX 256

typedef struct db_control db_control_t;

typedef struct db_control_opts {
    const char *path;          /* the socket's path; created 0600, removed by db_control_stop */
    int brokers;               /* the mock cluster's brokers, ids 1..brokers */
    const char *const *topics; /* the topics the devbroker created (`leader` takes only these) */
    int ntopics;
    int partitions; /* their partition count */
} db_control_opts_t;

/* Listens on opts->path and serves commands on a thread of its own until db_control_stop.
 * A stale socket at the path (nobody listening) is replaced; any other file there, or a
 * socket someone listens on, is an error. NULL with errstr filled. The strings of opts must
 * live as long as the channel. */
db_control_t *db_control_start(rd_kafka_mock_cluster_t *mcluster, const db_control_opts_t *opts,
                               char *errstr, size_t errstr_size);

/* Stops the thread, closes every connection and removes the socket. NULL does nothing. */
void db_control_stop(db_control_t *ctl);

#endif
