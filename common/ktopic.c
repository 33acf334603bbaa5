#include "ktopic.h"

#include "err.h"
#include "log.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The partition count of name in md: > 0, or 0 when the cluster does not have it. */
static int md_partitions(const struct rd_kafka_metadata *md, const char *name)
{
    for (int i = 0; i < md->topic_cnt; i++)
        if (strcmp(md->topics[i].topic, name) == 0)
            return md->topics[i].err ? 0 : md->topics[i].partition_cnt;
    return 0;
}

/* The one line that says what to create, at error level. */
static void say_create(const ktopic_want_t *w, const char *topic, const char *why)
{
    char cmd[768];
    char rf[64] = "";
    if (w->replication > 0)
        snprintf(rf, sizeof(rf), " --replication-factor %d", w->replication);
    snprintf(cmd, sizeof(cmd),
             "kafka-topics.sh --bootstrap-server %s --create --topic %s "
             "--partitions %d%s",
             w->brokers, topic, w->partitions, rf);
    log_event(LOG_ERROR,
              "Kafka topic missing: create it (or let mcpq create it: MCPQ_TOPIC_CREATE=1 and "
              "the Create ACL on the cluster or topic)",
              "topic", topic, "reason", why, "create", cmd, (char *)NULL);
}

static int64_t left_ms(int64_t until)
{
    int64_t left = until - util_mono_ms();
    return left > 100 ? left : 100;
}

/* CreateTopics for the names in missing[]; logs each outcome. */
static void create_topics(rd_kafka_t *rk, const ktopic_want_t *w, const char *const *missing, int n,
                          int64_t until)
{
    rd_kafka_NewTopic_t **nt = calloc((size_t)n, sizeof(*nt));
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_AdminOptions_t *opt = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
    char why[512];
    int made = 0;
    if (!nt || !q || !opt)
        goto out;
    rd_kafka_AdminOptions_set_request_timeout(opt, (int)left_ms(until), why, sizeof(why));
    rd_kafka_AdminOptions_set_operation_timeout(opt, (int)left_ms(until), why, sizeof(why));
    for (; made < n; made++) {
        nt[made] =
            rd_kafka_NewTopic_new(missing[made], w->partitions, w->replication, why, sizeof(why));
        if (!nt[made]) {
            say_create(w, missing[made], why);
            goto out;
        }
    }
    rd_kafka_CreateTopics(rk, nt, (size_t)n, opt, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, (int)left_ms(until) + 1000);
    const rd_kafka_CreateTopics_result_t *res = ev ? rd_kafka_event_CreateTopics_result(ev) : NULL;
    if (!res) {
        for (int i = 0; i < n; i++)
            say_create(w, missing[i],
                       ev ? rd_kafka_event_error_string(ev) : "no answer to CreateTopics");
    } else if (rd_kafka_event_error(ev)) {
        for (int i = 0; i < n; i++)
            say_create(w, missing[i], rd_kafka_event_error_string(ev));
    } else {
        size_t cnt = 0;
        const rd_kafka_topic_result_t **tr = rd_kafka_CreateTopics_result_topics(res, &cnt);
        for (size_t i = 0; i < cnt; i++) {
            rd_kafka_resp_err_t err = rd_kafka_topic_result_error(tr[i]);
            const char *name = rd_kafka_topic_result_name(tr[i]);
            if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
                char parts[16];
                snprintf(parts, sizeof(parts), "%d", w->partitions);
                log_event(LOG_INFO, "Kafka topic created", "topic", name, "partitions", parts,
                          (char *)NULL);
            } else if (err != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) { /* another replica */
                const char *s = rd_kafka_topic_result_error_string(tr[i]);
                char reason[512];
                snprintf(reason, sizeof(reason), "%s: %s", rd_kafka_err2name(err),
                         s ? s : rd_kafka_err2str(err));
                say_create(w, name, reason);
            }
        }
    }
    if (ev)
        rd_kafka_event_destroy(ev);
out:
    if (nt) {
        for (int i = 0; i < made; i++)
            rd_kafka_NewTopic_destroy(nt[i]);
        free(nt);
    }
    if (opt)
        rd_kafka_AdminOptions_destroy(opt);
    if (q)
        rd_kafka_queue_destroy(q);
}

/* librdkafka's own log lines of the admin client (errors only reach error_cb). */
static void admin_error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    (void)rk;
    (void)opaque;
    log_event(LOG_WARN, "kafka error (topic check)", "error",
              rd_kafka_err2name((rd_kafka_resp_err_t)err), "reason", reason, (char *)NULL);
}

int ktopic_ensure(const ktopic_want_t *w)
{
    int64_t until = util_mono_ms() + KTOPIC_TIMEOUT_MS;
    char errstr[512];
    const kconf_prop_t base[] = {{"client.id", "mcpq-admin", "default"}};
    const kconf_prop_t fixed[] = {{"bootstrap.servers", w->brokers, "MCPQ_KAFKA_BROKERS"},
                                  {"allow.auto.create.topics", "false", "fixed"}};
    rd_kafka_conf_t *conf =
        kconf_build(w->kc, KCONF_PRODUCER, base, 1, fixed, 2, errstr, sizeof(errstr));
    if (!conf) {
        log_event(LOG_ERROR, "topic check: bad Kafka configuration", "error", errstr, (char *)NULL);
        return MCPQ_EINVAL;
    }
    rd_kafka_conf_set_error_cb(conf, admin_error_cb);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    if (!rk) {
        rd_kafka_conf_destroy(conf);
        log_event(LOG_ERROR, "topic check: cannot make a Kafka client", "error", errstr,
                  (char *)NULL);
        return MCPQ_EINVAL;
    }
    conf = NULL; /* now owned by rk */
    int rc = MCPQ_EUNAVAIL;
    const struct rd_kafka_metadata *md = NULL;
    const char **missing = calloc((size_t)w->ntopics, sizeof(*missing));
    rd_kafka_resp_err_t err = missing ? rd_kafka_metadata(rk, 1, NULL, &md, (int)left_ms(until))
                                      : RD_KAFKA_RESP_ERR__FAIL;
    if (err) {
        log_event(LOG_WARN, "topic check: Kafka did not answer; topics not checked", "error",
                  rd_kafka_err2str(err), (char *)NULL);
        goto out;
    }
    int n = 0;
    for (int i = 0; i < w->ntopics; i++)
        if (md_partitions(md, w->topics[i]) == 0)
            missing[n++] = w->topics[i];
    rc = md_partitions(md, w->topics[0]);
    if (n == 0)
        goto out;
    if (!w->create) {
        for (int i = 0; i < n; i++)
            say_create(w, missing[i], "MCPQ_TOPIC_CREATE=0");
        goto out;
    }
    create_topics(rk, w, missing, n, until);
    rd_kafka_metadata_destroy(md);
    md = NULL;
    /* the count the cluster reports now (creation may take a moment to show) */
    for (;;) {
        if (rd_kafka_metadata(rk, 1, NULL, &md, (int)left_ms(until)) != RD_KAFKA_RESP_ERR_NO_ERROR)
            break;
        rc = md_partitions(md, w->topics[0]);
        if (rc > 0 || util_mono_ms() >= until)
            break;
        rd_kafka_metadata_destroy(md);
        md = NULL;
        usleep(100 * 1000);
    }
out:
    if (md)
        rd_kafka_metadata_destroy(md);
    free(missing);
    rd_kafka_destroy(rk);
    return rc;
}
