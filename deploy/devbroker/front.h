/*
 * front.h - a Kafka-protocol front for the devbroker's mock cluster: the parts of a real
 * broker that librdkafka 2.0.2's mock cluster lacks (docs/kafka.md "What was tested here").
 *
 * The mock cluster listens on 127.0.0.1 in plaintext and knows neither SASL, nor TLS, nor
 * CreateTopics. The front listens on its own 127.0.0.1 port per mock broker and relays every
 * request to that broker, except:
 *   - ApiVersions answers gain CreateTopics (v0-4) and, with SASL on, SaslHandshake (v0-1)
 *     and SaslAuthenticate (v0-1);
 *   - Metadata and FindCoordinator answers name the front's ports instead of the mock's, so
 *     clients, which connect to the addresses brokers advertise, always come back through it;
 *   - SaslHandshake / SaslAuthenticate are answered here for one user, with the mechanisms
 *     of sasl_mechanisms: PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 (scram.h); a refusal is
 *     SASL_AUTHENTICATION_FAILED with the message a Kafka broker sends, then the connection is
 *     closed; before a connection authenticated, any other request closes it, as a broker does;
 *   - CreateTopics creates the topics in the mock cluster (rd_kafka_mock_topic_create), or
 *     refuses them with TOPIC_AUTHORIZATION_FAILED when deny_create is set (a principal
 *     without the Create ACL).
 * With a certificate and key the front speaks TLS (OpenSSL); with a CA file it also requires
 * and verifies a client certificate (mutual TLS).
 *
 * One thread per listener and per connection, blocking I/O: for development and tests.
 */
#ifndef MCPQ_DEVBROKER_FRONT_H
#define MCPQ_DEVBROKER_FRONT_H

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stddef.h>

typedef struct db_front_opts {
    const char *sasl_user, *sasl_password; /* NULL: no SASL */
    const char *sasl_mechanisms;           /* offered, comma-separated; NULL or "": PLAIN */
    const char *tls_cert, *tls_key;        /* NULL: plaintext */
    const char *tls_ca;                    /* NULL: no client certificates */
    int deny_create;
} db_front_opts_t;

typedef struct db_front db_front_t;

/* Starts listeners for the brokers of mock_bootstraps ("127.0.0.1:p1,127.0.0.1:p2", broker
 * ids 1..n in that order). NULL with errstr filled (also for a mechanism it does not serve). */
db_front_t *db_front_start(rd_kafka_mock_cluster_t *mcluster, const char *mock_bootstraps,
                           const db_front_opts_t *opts, char *errstr, size_t errstr_size);

/* The front's bootstrap servers "127.0.0.1:f1,...". */
const char *db_front_bootstraps(const db_front_t *f);

/* Closes every client connection and waits (at most timeout_ms) until their threads ended,
 * so none is left holding OpenSSL state when the process exits. */
void db_front_stop(db_front_t *f, int timeout_ms);

#endif
