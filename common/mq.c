#include "mq.h"
#include "names.h"

#include "err.h"
#include "log.h"
#include "util.h"

#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mq_producer {
    rd_kafka_t *rk;
    pthread_t thread;
    atomic_int stop;
    atomic_int up;
    int message_timeout_ms;
    int64_t slow_since_ms; /* the first probe of a run of timed-out ones; 0: none (probe's) */
    mq_delivery_fn on_delivery;
    void *cb_arg;
    jobsig_keys_t sign; /* n == 1: key[0] signs every record */
};

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    mq_producer_t *p = opaque;
    int err = 0;
    if (m->err) {
        rd_kafka_msg_status_t st = rd_kafka_message_status(m);
        err = st == RD_KAFKA_MSG_STATUS_POSSIBLY_PERSISTED ? MCPQ_ETIMEDOUT : MCPQ_EUNAVAIL;
        log_event(LOG_WARN, "kafka delivery failed", "error", rd_kafka_err2str(m->err),
                  (char *)NULL);
    }
    if (p->on_delivery)
        p->on_delivery(m->_private, err, p->cb_arg);
}

static void error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    mq_producer_t *p = opaque;
    if (err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN)
        atomic_store(&p->up, 0);
    log_event(LOG_WARN, "kafka error", "error", rd_kafka_err2name(err), "reason", reason,
              (char *)NULL);
}

static void *poll_thread(void *arg)
{
    mq_producer_t *p = arg;
    while (!atomic_load(&p->stop))
        rd_kafka_poll(p->rk, 50);
    return NULL;
}

/* The producer's built-in defaults (a properties file may override them) and the properties
 * mcpq fixes (kconf.h refuses them from the user). tmo holds message_timeout_ms. The latency
 * ones (linger.ms, socket.nagle.disable) were chosen from the stage breakdown: docs/kafka.md,
 * "Latency". */
#define PRODUCER_BASE(client_id)                                                                   \
    {                                                                                              \
        {"client.id", client_id, "default"}, {"linger.ms", "1", "default"},                        \
            {"socket.nagle.disable", "true", "default"}, {"socket.timeout.ms", "3000", "default"}, \
            {"reconnect.backoff.max.ms", "1000", "default"},                                       \
            {"queue.buffering.max.messages", "1000000", "default"},                                \
            {"message.max.bytes", "16777216", "default"},                                          \
    }
#define PRODUCER_FIXED(brokers, tmo)                                                               \
    {                                                                                              \
        {"bootstrap.servers", brokers, "MCPQ_KAFKA_BROKERS"},                                      \
            {"enable.idempotence", "true", "fixed"},                                               \
            {"message.timeout.ms", tmo, "MCPQ_KAFKA_MESSAGE_TIMEOUT_MS"},                          \
    }
#define NPROPS(a) (sizeof(a) / sizeof((a)[0]))

void mq_producer_conf_print(FILE *out, const kconf_t *kc, const char *brokers,
                            int message_timeout_ms)
{
    char tmo[32];
    snprintf(tmo, sizeof(tmo), "%d", message_timeout_ms);
    const kconf_prop_t base[] = PRODUCER_BASE("mcpq-ingress");
    const kconf_prop_t fixed[] = PRODUCER_FIXED(brokers, tmo);
    kconf_print(out, kc, KCONF_PRODUCER, base, NPROPS(base), fixed, NPROPS(fixed));
}

/* Wipes the key and frees p. */
static void producer_release(mq_producer_t *p)
{
    jobsig_keys_cleanup(&p->sign);
    free(p);
}

mq_producer_t *mq_producer_new(const char *brokers, int message_timeout_ms, const kconf_t *kc,
                               const jobsig_key_t *sign_key, mq_delivery_fn on_delivery,
                               void *cb_arg, char *errstr, size_t errstr_size)
{
    mq_producer_t *p = calloc(1, sizeof(*p));
    if (!p) {
        snprintf(errstr, errstr_size, "out of memory");
        return NULL;
    }
    p->on_delivery = on_delivery;
    p->cb_arg = cb_arg;
    if (sign_key) {
        p->sign.key[0] = *sign_key;
        p->sign.n = 1;
    }
    atomic_init(&p->up, 1);
    atomic_init(&p->stop, 0);
    p->message_timeout_ms = message_timeout_ms;

    char tmo[32];
    snprintf(tmo, sizeof(tmo), "%d", message_timeout_ms);
    const kconf_prop_t base[] = PRODUCER_BASE("mcpq-ingress");
    const kconf_prop_t fixed[] = PRODUCER_FIXED(brokers, tmo);
    rd_kafka_conf_t *conf = kconf_build(kc, KCONF_PRODUCER, base, NPROPS(base), fixed,
                                        NPROPS(fixed), errstr, errstr_size);
    if (!conf) {
        producer_release(p);
        return NULL;
    }
    rd_kafka_conf_set_dr_msg_cb(conf, dr_cb);
    rd_kafka_conf_set_error_cb(conf, error_cb);
    rd_kafka_conf_set_opaque(conf, p);
    p->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, errstr_size);
    if (!p->rk) {
        rd_kafka_conf_destroy(conf);
        producer_release(p);
        return NULL;
    }
    conf = NULL; /* now owned by rk */
    if (pthread_create(&p->thread, NULL, poll_thread, p) != 0) {
        snprintf(errstr, errstr_size, "cannot start the producer thread");
        rd_kafka_destroy(p->rk);
        producer_release(p);
        return NULL;
    }
    return p;
}

void mq_producer_free(mq_producer_t *p, int timeout_ms)
{
    if (!p)
        return;
    rd_kafka_flush(p->rk, timeout_ms);
    atomic_store(&p->stop, 1);
    pthread_join(p->thread, NULL);
    rd_kafka_purge(p->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    rd_kafka_poll(p->rk, 0);
    rd_kafka_destroy(p->rk);
    producer_release(p);
}

int mq_producer_send(mq_producer_t *p, const char *topic, const char *job_id, const char *key,
                     const void *value, size_t len, const char *traceparent, const char *tracestate,
                     void *opaque)
{
    if (!atomic_load(&p->up))
        return MCPQ_EUNAVAIL;
    if (!key)
        key = job_id;
    rd_kafka_headers_t *hdrs = rd_kafka_headers_new(4);
    rd_kafka_header_add(hdrs, NAMES_HDR_JOB_ID, -1, job_id, -1);
    if (p->sign.n) {
        char sig[JOBSIG_VALUE_LEN + 1];
        jobsig_sign(&p->sign.key[0], value, len, sig);
        rd_kafka_header_add(hdrs, JOBSIG_HEADER, -1, sig, (ssize_t)JOBSIG_VALUE_LEN);
    }
    if (traceparent)
        rd_kafka_header_add(hdrs, NAMES_HDR_TRACEPARENT, -1, traceparent, -1);
    if (tracestate)
        rd_kafka_header_add(hdrs, NAMES_HDR_TRACESTATE, -1, tracestate, -1);
    rd_kafka_resp_err_t err = rd_kafka_producev(
        p->rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_KEY(key, strlen(key)),
        RD_KAFKA_V_VALUE((void *)value, len), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_HEADERS(hdrs), RD_KAFKA_V_OPAQUE(opaque), RD_KAFKA_V_END);
    if (err) {
        rd_kafka_headers_destroy(hdrs); /* not taken over on failure */
        log_event(LOG_WARN, "kafka produce refused", "error", rd_kafka_err2str(err), (char *)NULL);
        return err == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE ? MCPQ_ETOOBIG : MCPQ_EIO;
    }
    return 0;
}

int mq_producer_up(const mq_producer_t *p)
{
    return atomic_load(&p->up);
}

int mq_producer_probe(mq_producer_t *p, int timeout_ms)
{
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t err = rd_kafka_metadata(p->rk, 0, NULL, &md, timeout_ms);
    int up = err == RD_KAFKA_RESP_ERR_NO_ERROR && md && md->broker_cnt > 0;
    if (md)
        rd_kafka_metadata_destroy(md);
    /* A connected broker that answers later than timeout_ms is slow, not down: a job still
     * reaches it within message.timeout.ms, so only timeouts for that long mark Kafka down
     * (no broker at all, or a refused connection, still does at once). */
    if (err == RD_KAFKA_RESP_ERR__TIMED_OUT) {
        int64_t now = util_mono_ms();
        if (!p->slow_since_ms)
            p->slow_since_ms = now;
        if (now - p->slow_since_ms < p->message_timeout_ms)
            return atomic_load(&p->up);
    } else {
        p->slow_since_ms = 0;
    }
    atomic_store(&p->up, up);
    return up;
}
