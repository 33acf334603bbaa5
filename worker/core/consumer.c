#include "consumer.h"

#include "err.h"
#include "ktopic.h"
#include "log.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct wrk_consumer {
    rd_kafka_t *rk;
    rd_kafka_queue_t *queue;
    char *topic;
    int wake[2];                /* pipe: librdkafka writes [1] when the queue gets events */
    wrk_offsets_part_t **parts; /* indexed by partition; NULL when not assigned */
    int nparts;
    wrk_offsets_part_t *dirty;
    int paused;
    int closed;
    int left; /* wrk_consumer_leave() */
    int fatal;
    int up;               /* wrk_consumer_up() */
    int topic_partitions; /* of the jobs topic, as last seen (0: unknown) */
    int last_assigned;    /* partitions of the last assignment (-1: none yet) */
    int idle_warned;      /* the warning of warn_idle() was logged for that assignment */
    wrk_lag_fn on_lag;
    void *lag_arg;
    wrk_record_fn on_record;
    wrk_assign_fn on_assign;
    void *arg;
};

static void consumer_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    (void)rk;
    log_level_t lv = level <= 3   ? LOG_ERROR
                     : level <= 4 ? LOG_WARN
                     : level <= 6 ? LOG_INFO
                                  : LOG_DEBUG;
    log_msgf(lv, "librdkafka %s: %s", fac, buf);
}

static void consumer_error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    wrk_consumer_t *c = opaque;
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
        char why[512];
        rd_kafka_resp_err_t orig = rd_kafka_fatal_error(rk, why, sizeof(why));
        log_event(LOG_ERROR, "kafka fatal error: the worker must stop", "error",
                  rd_kafka_err2name(orig), "reason", why, (char *)NULL);
        c->fatal = 1;
        c->up = 0;
        return;
    }
    if (err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN)
        c->up = 0;
    log_event(err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN ? LOG_ERROR : LOG_WARN, "kafka error",
              "error", rd_kafka_err2name((rd_kafka_resp_err_t)err), "reason", reason, (char *)NULL);
}

/* The tracker of partition, created when create is set. */
static wrk_offsets_part_t *part_get(wrk_consumer_t *c, int32_t partition, int create)
{
    if (partition < 0)
        return NULL;
    if (partition < c->nparts && c->parts[partition])
        return c->parts[partition];
    if (!create)
        return NULL;
    if (partition >= c->nparts) {
        int n = partition + 1;
        wrk_offsets_part_t **p = realloc(c->parts, (size_t)n * sizeof(*p));
        if (!p)
            return NULL;
        for (int i = c->nparts; i < n; i++)
            p[i] = NULL;
        c->parts = p;
        c->nparts = n;
    }
    wrk_offsets_part_t *part = malloc(sizeof(*part));
    if (!part)
        return NULL;
    wrk_offsets_part_init(part, partition, &c->dirty);
    c->parts[partition] = part;
    return part;
}

static void part_drop(wrk_consumer_t *c, int32_t partition)
{
    wrk_offsets_part_t *p = part_get(c, partition, 0);
    if (!p)
        return;
    wrk_offsets_part_detach(p);
    free(p);
    c->parts[partition] = NULL;
}

static void set_pause(wrk_consumer_t *c, rd_kafka_topic_partition_list_t *list, int paused)
{
    if (!list || list->cnt == 0)
        return;
    rd_kafka_resp_err_t err =
        paused ? rd_kafka_pause_partitions(c->rk, list) : rd_kafka_resume_partitions(c->rk, list);
    if (err)
        log_msgf(LOG_WARN, "cannot %s partitions: %s", paused ? "pause" : "resume",
                 rd_kafka_err2str(err));
}

static void list_partitions(const rd_kafka_topic_partition_list_t *parts, char *buf, size_t size)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < parts->cnt && o + 16 < size; i++)
        o += (size_t)snprintf(buf + o, size - o, "%s%d", i ? "," : "",
                              (int)parts->elems[i].partition);
}

/* Once per assignment, when it left this worker without a partition of a topic whose
 * partition count is known (mcpq_worker_kafka_idle_member says the same). */
static void warn_idle(wrk_consumer_t *c)
{
    if (c->idle_warned || c->last_assigned != 0 || c->topic_partitions <= 0)
        return;
    c->idle_warned = 1;
    char np[16];
    snprintf(np, sizeof(np), "%d", c->topic_partitions);
    log_event(LOG_WARN,
              "this worker got no partition: the group has more workers than the jobs topic "
              "has partitions, so it stays idle (an autoscaler cannot add consumers past the "
              "partition count; add partitions or run fewer workers; docs/kafka.md)",
              "topic", c->topic, "partitions", np, (char *)NULL);
}

static void consumer_rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                                  rd_kafka_topic_partition_list_t *parts, void *opaque)
{
    wrk_consumer_t *c = opaque;
    char which[512];
    list_partitions(parts, which, sizeof(which));
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        for (int i = 0; i < parts->cnt; i++) {
            if (strcmp(parts->elems[i].topic, c->topic) != 0)
                continue;
            part_drop(c, parts->elems[i].partition); /* a stale tracker never survives */
            if (!part_get(c, parts->elems[i].partition, 1))
                log_msgf(LOG_ERROR, "out of memory tracking partition %d",
                         (int)parts->elems[i].partition);
        }
        rd_kafka_resp_err_t aerr = rd_kafka_assign(rk, parts);
        if (aerr)
            log_msgf(LOG_ERROR, "rd_kafka_assign: %s", rd_kafka_err2str(aerr));
        if (c->paused)
            set_pause(c, parts, 1);
        c->up = 1;
        log_event(LOG_INFO, "partitions assigned", "partitions", which, (char *)NULL);
        c->last_assigned = parts->cnt;
        c->idle_warned = 0;
        warn_idle(c);
        if (c->on_assign)
            c->on_assign(parts->cnt, c->arg);
        return;
    }
    /* Revoked (or a rebalance error): store what is finished, then forget the rest. */
    wrk_consumer_store(c);
    for (int i = 0; i < parts->cnt; i++)
        if (strcmp(parts->elems[i].topic, c->topic) == 0)
            part_drop(c, parts->elems[i].partition);
    rd_kafka_assign(rk, NULL);
    if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS)
        log_event(LOG_INFO, "partitions revoked", "partitions", which, (char *)NULL);
    else
        log_event(LOG_WARN, "rebalance error: assignment dropped", "error", rd_kafka_err2name(err),
                  (char *)NULL);
}

/*
 * Consumer lag from librdkafka's statistics (statistics.interval.ms), rather than from
 * rd_kafka_position() + rd_kafka_get_watermark_offsets(): both of those are thread-safe and
 * non-blocking in 2.0.2, but the position is RD_KAFKA_OFFSET_INVALID on every partition no
 * record was consumed from since it was assigned, so an idle partition (or one that is
 * behind but paused) would have no lag at all; and rd_kafka_committed() would fill the gap
 * only with a blocking broker round trip. The statistics carry, per partition, the high
 * watermark, the application's position (app_offset), the committed offset and the
 * fetcher's next offset, gathered by librdkafka's own thread without any request. The
 * callback is served through the main queue, which rd_kafka_poll_set_consumer() forwards to
 * the consumer queue: it runs on the loop thread inside rd_kafka_consumer_poll(), like the
 * rebalance callback, so it may read the tracked assignment. Cost: one cJSON parse of a few
 * KiB every WRK_CONSUMER_STATS_MS.
 *
 * lag = hi_offset - position, position being app_offset (the offset after the last record
 * handed to the worker), else the committed offset (where consuming resumes), else
 * next_offset (auto.offset.reset=earliest: the log start). Partitions with neither a high
 * watermark nor a position yet are left out rather than reported as 0.
 */
static int64_t stats_offset(const cJSON *part, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(part, name);
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : -1;
}

static int stats_brokers_up(const cJSON *root)
{
    const cJSON *brokers = cJSON_GetObjectItemCaseSensitive(root, "brokers"), *b;
    cJSON_ArrayForEach(b, brokers)
    {
        const char *source = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(b, "source"));
        const char *state = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(b, "state"));
        if (source && (strcmp(source, "internal") == 0 || strcmp(source, "logical") == 0))
            continue;
        if (state && strcmp(state, "UP") == 0)
            return 1;
    }
    return 0;
}

static int consumer_stats_cb(rd_kafka_t *rk, char *json, size_t json_len, void *opaque)
{
    wrk_consumer_t *c = opaque;
    (void)rk;
    cJSON *root = cJSON_ParseWithLength(json, json_len);
    if (!root)
        return 0; /* librdkafka frees json */
    if (!c->fatal)
        c->up = stats_brokers_up(root);
    const cJSON *parts = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "topics"),
                                         c->topic),
        "partitions");
    int known = 0;
    const cJSON *kp;
    cJSON_ArrayForEach(kp, parts) known += stats_offset(kp, "partition") >= 0;
    if (known > 0)
        c->topic_partitions = known;
    warn_idle(c); /* the partition count may be learnt after an empty assignment */
    int32_t *ids = c->nparts > 0 ? malloc((size_t)c->nparts * sizeof(*ids)) : NULL;
    int64_t *lags = c->nparts > 0 ? malloc((size_t)c->nparts * sizeof(*lags)) : NULL;
    size_t n = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, parts)
    {
        if (!ids || !lags)
            break;
        int64_t id = stats_offset(p, "partition");
        if (id < 0 || id >= c->nparts || !c->parts[id])
            continue; /* the unassigned pseudo-partition -1, or not ours */
        int64_t hi = stats_offset(p, "hi_offset");
        int64_t pos = stats_offset(p, "app_offset");
        if (pos < 0)
            pos = stats_offset(p, "committed_offset");
        if (pos < 0)
            pos = stats_offset(p, "next_offset");
        if (hi < 0 || pos < 0)
            continue;
        ids[n] = (int32_t)id;
        lags[n] = hi > pos ? hi - pos : 0;
        n++;
    }
    if (c->on_lag)
        c->on_lag(c->topic, ids, lags, n, c->lag_arg);
    free(ids);
    free(lags);
    cJSON_Delete(root);
    return 0;
}

static int conf_set(rd_kafka_conf_t *conf, const char *k, const char *v, char *errstr,
                    size_t errstr_size)
{
    if (rd_kafka_conf_set(conf, k, v, errstr, errstr_size) != RD_KAFKA_CONF_OK)
        return MCPQ_EINVAL;
    return 0;
}

/* The consumer's built-in defaults (a properties file may override them) and the properties
 * mcpq fixes (kconf.h refuses them from the user); fetch_wait holds the setting. */
#define CONSUMER_BASE(client_id)                                                                   \
    {                                                                                              \
        {"client.id", client_id, "MCPQ_WORKER_ID"},                                                \
            {"auto.commit.interval.ms", "1000", "default"},                                        \
            {"auto.offset.reset", "earliest", "default"},                                          \
            {"session.timeout.ms", "10000", "default"},                                            \
            {"heartbeat.interval.ms", "1000", "default"},                                          \
            {"fetch.error.backoff.ms", "100", "default"},                                          \
            {"socket.nagle.disable", "true", "default"},                                           \
            {"reconnect.backoff.max.ms", "2000", "default"},                                       \
    }
#define CONSUMER_FIXED(s, fetch_wait)                                                              \
    {                                                                                              \
        {"bootstrap.servers", (s)->kafka_brokers, "MCPQ_KAFKA_BROKERS"},                           \
            {"group.id", (s)->group_id, "MCPQ_GROUP_ID"},                                          \
            {"enable.auto.offset.store", "false", "fixed"},                                        \
            {"enable.auto.commit", "true", "fixed"},                                               \
            {"fetch.wait.max.ms", fetch_wait, "MCPQ_KAFKA_FETCH_WAIT_MS"},                         \
    }
#define NPROPS(a) (sizeof(a) / sizeof((a)[0]))

void wrk_consumer_conf_print(FILE *out, const mcpq_settings_t *s, const char *worker_id,
                             const kconf_t *kc)
{
    char fetch_wait[24];
    snprintf(fetch_wait, sizeof(fetch_wait), "%lld", s->kafka_fetch_wait_ms);
    const kconf_prop_t base[] = CONSUMER_BASE(worker_id);
    const kconf_prop_t fixed[] = CONSUMER_FIXED(s, fetch_wait);
    kconf_print(out, kc, KCONF_CONSUMER, base, NPROPS(base), fixed, NPROPS(fixed));
}

/* The consumer configuration of c: the user's Kafka properties (the jobs topic ensured with
 * them first, its partition count kept in c), mcpq's own and c's callbacks. NULL with errstr
 * filled on a bad property; the caller owns the configuration. */
static rd_kafka_conf_t *consumer_conf(wrk_consumer_t *c, const mcpq_settings_t *s,
                                      const char *worker_id, int static_member, char *errstr,
                                      size_t errstr_size)
{
    rd_kafka_conf_t *conf = NULL;
    char fetch_wait[24];
    snprintf(fetch_wait, sizeof(fetch_wait), "%lld", s->kafka_fetch_wait_ms);
    const kconf_prop_t base[] = CONSUMER_BASE(worker_id);
    const kconf_prop_t fixed[] = CONSUMER_FIXED(s, fetch_wait);
    kconf_t *kc =
        kconf_load(s->kafka_properties, (const char *const *)environ, errstr, errstr_size);
    if (!kc)
        goto fail;
    const char *const jobs_topic[] = {s->topic_jobs};
    c->topic_partitions = ktopic_ensure(&(ktopic_want_t){.brokers = s->kafka_brokers,
                                                         .kc = kc,
                                                         .topics = jobs_topic,
                                                         .ntopics = 1,
                                                         .partitions = (int)s->partitions,
                                                         .replication = (int)s->replication_factor,
                                                         .create = (int)s->topic_create});
    if (c->topic_partitions < 0)
        c->topic_partitions = 0;
    conf = kconf_build(kc, KCONF_CONSUMER, base, NPROPS(base), fixed, NPROPS(fixed), errstr,
                       errstr_size);
    kconf_free(kc);
    kc = NULL;
    if (!conf)
        goto fail;
    if (static_member && conf_set(conf, "group.instance.id", worker_id, errstr, errstr_size) < 0)
        goto fail;
    /* fetch.queue.backoff.ms exists from librdkafka 2.1.0; 2.0.2 has no such wait. */
    char ignored[128];
    rd_kafka_conf_set(conf, "fetch.queue.backoff.ms", "10", ignored, sizeof(ignored));
    rd_kafka_conf_set_log_cb(conf, consumer_log_cb);
    rd_kafka_conf_set_error_cb(conf, consumer_error_cb);
    rd_kafka_conf_set_rebalance_cb(conf, consumer_rebalance_cb);
    if (s->metrics_listen && *s->metrics_listen) {
        char every[24];
        snprintf(every, sizeof(every), "%d", WRK_CONSUMER_STATS_MS);
        if (conf_set(conf, "statistics.interval.ms", every, errstr, errstr_size) < 0)
            goto fail;
        rd_kafka_conf_set_stats_cb(conf, consumer_stats_cb);
    }
    rd_kafka_conf_set_opaque(conf, c);
    return conf;
fail:
    if (conf)
        rd_kafka_conf_destroy(conf);
    return NULL;
}

/* Subscribes c to the jobs topic. 0, or MCPQ_EIO with errstr filled. */
static int topic_subscribe(wrk_consumer_t *c, char *errstr, size_t errstr_size)
{
    rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(topics, c->topic, RD_KAFKA_PARTITION_UA);
    rd_kafka_resp_err_t err = rd_kafka_subscribe(c->rk, topics);
    rd_kafka_topic_partition_list_destroy(topics);
    if (err) {
        snprintf(errstr, errstr_size, "subscribe %s: %s", c->topic, rd_kafka_err2str(err));
        return MCPQ_EIO;
    }
    return 0;
}

/* Wakes c's pipe when its queue has events and subscribes to the jobs topic. 0, or
 * MCPQ_EIO with errstr filled. */
static int consumer_subscribe(wrk_consumer_t *c, char *errstr, size_t errstr_size)
{
    rd_kafka_poll_set_consumer(c->rk);
    c->queue = rd_kafka_queue_get_consumer(c->rk);
    if (!c->queue) {
        snprintf(errstr, errstr_size, "no consumer queue");
        return MCPQ_EIO;
    }
    if (pipe2(c->wake, O_NONBLOCK | O_CLOEXEC) < 0) {
        snprintf(errstr, errstr_size, "pipe2: %s", strerror(errno));
        return MCPQ_EIO;
    }
    rd_kafka_queue_io_event_enable(c->queue, c->wake[1], "1", 1);

    return topic_subscribe(c, errstr, errstr_size);
}

wrk_consumer_t *wrk_consumer_new(const mcpq_settings_t *s, const char *worker_id, int static_member,
                                 wrk_record_fn on_record, wrk_assign_fn on_assign, void *arg,
                                 char *errstr, size_t errstr_size)
{
    wrk_consumer_t *c = calloc(1, sizeof(*c));
    rd_kafka_conf_t *conf = NULL;
    if (!c) {
        snprintf(errstr, errstr_size, "out of memory");
        goto fail;
    }
    c->wake[0] = c->wake[1] = -1;
    c->last_assigned = -1;
    c->on_record = on_record;
    c->on_assign = on_assign;
    c->arg = arg;
    c->topic = strdup(s->topic_jobs);
    if (!c->topic) {
        snprintf(errstr, errstr_size, "out of memory");
        goto fail;
    }
    conf = consumer_conf(c, s, worker_id, static_member, errstr, errstr_size);
    if (!conf)
        goto fail;
    c->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, errstr_size);
    if (!c->rk)
        goto fail;
    conf = NULL; /* now owned by rk */
    if (consumer_subscribe(c, errstr, errstr_size) < 0)
        goto fail;
    return c;
fail:
    if (conf)
        rd_kafka_conf_destroy(conf);
    wrk_consumer_free(c);
    return NULL;
}

int wrk_consumer_fd(const wrk_consumer_t *c)
{
    return c->wake[0];
}

void wrk_consumer_wake_clear(wrk_consumer_t *c)
{
    char buf[256];
    while (read(c->wake[0], buf, sizeof(buf)) > 0)
        ;
}

int wrk_consumer_poll(wrk_consumer_t *c, int max)
{
    if (c->closed)
        return 0;
    for (int n = 0; n < max; n++) {
        rd_kafka_message_t *msg = rd_kafka_consumer_poll(c->rk, 0);
        if (!msg)
            return 0;
        if (msg->err) {
            if (msg->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                log_event(LOG_WARN, "kafka consumer error", "error", rd_kafka_err2name(msg->err),
                          "reason", rd_kafka_message_errstr(msg), (char *)NULL);
            rd_kafka_message_destroy(msg);
            continue;
        }
        wrk_offsets_node_t *node = NULL;
        wrk_offsets_part_t *p = NULL;
        if (strcmp(rd_kafka_topic_name(msg->rkt), c->topic) == 0)
            p = part_get(c, msg->partition, 0);
        if (p && (!p->tail || p->tail->offset < msg->offset))
            node = wrk_offsets_part_add(p, msg->offset);
        c->on_record(msg, node, c->arg);
        rd_kafka_message_destroy(msg);
    }
    return 1;
}

void wrk_consumer_pause(wrk_consumer_t *c, int paused)
{
    if (c->closed || c->paused == paused)
        return;
    c->paused = paused;
    rd_kafka_topic_partition_list_t *list = NULL;
    if (rd_kafka_assignment(c->rk, &list) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        set_pause(c, list, paused);
        rd_kafka_topic_partition_list_destroy(list);
    }
}

int wrk_consumer_paused(const wrk_consumer_t *c)
{
    return c->paused;
}

void wrk_consumer_store(wrk_consumer_t *c)
{
    if (!c->dirty)
        return;
    rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new(8);
    wrk_offsets_part_t *p;
    while ((p = wrk_offsets_part_pop_dirty(&c->dirty)))
        rd_kafka_topic_partition_list_add(list, c->topic, p->partition)->offset = p->commit;
    rd_kafka_resp_err_t err = rd_kafka_offsets_store(c->rk, list);
    if (err && err != RD_KAFKA_RESP_ERR__STATE)
        log_msgf(LOG_WARN, "storing offsets: %s", rd_kafka_err2str(err));
    for (int i = 0; i < list->cnt; i++)
        if (list->elems[i].err && list->elems[i].err != RD_KAFKA_RESP_ERR__STATE)
            log_msgf(LOG_WARN, "storing offset %lld of partition %d: %s",
                     (long long)list->elems[i].offset, (int)list->elems[i].partition,
                     rd_kafka_err2str(list->elems[i].err));
    rd_kafka_topic_partition_list_destroy(list);
}

void wrk_consumer_close(wrk_consumer_t *c)
{
    if (!c || !c->rk || c->closed)
        return;
    wrk_consumer_store(c);
    rd_kafka_resp_err_t err = rd_kafka_consumer_close(c->rk);
    if (err)
        log_msgf(LOG_WARN, "rd_kafka_consumer_close: %s", rd_kafka_err2str(err));
    c->closed = 1;
}

int wrk_consumer_leave(wrk_consumer_t *c)
{
    if (c->closed || c->left)
        return 0;
    wrk_consumer_store(c);
    rd_kafka_resp_err_t err = rd_kafka_unsubscribe(c->rk);
    if (err) {
        log_msgf(LOG_ERROR, "cannot leave the consumer group: rd_kafka_unsubscribe: %s",
                 rd_kafka_err2str(err));
        return MCPQ_EIO;
    }
    c->left = 1;
    return 0;
}

int wrk_consumer_rejoin(wrk_consumer_t *c)
{
    if (c->closed || !c->left)
        return 0;
    char errstr[256];
    if (topic_subscribe(c, errstr, sizeof(errstr)) < 0) {
        log_msgf(LOG_ERROR, "cannot join the consumer group again: %s", errstr);
        return MCPQ_EIO;
    }
    c->left = 0;
    return 0;
}

int wrk_consumer_left(const wrk_consumer_t *c)
{
    return c->left;
}

int wrk_consumer_fatal(const wrk_consumer_t *c)
{
    return c->fatal;
}

void wrk_consumer_on_lag(wrk_consumer_t *c, wrk_lag_fn on_lag, void *arg)
{
    c->on_lag = on_lag;
    c->lag_arg = arg;
}

int wrk_consumer_up(const wrk_consumer_t *c)
{
    return c->up && !c->fatal && !c->closed;
}

int wrk_consumer_assigned(const wrk_consumer_t *c)
{
    int n = 0;
    for (int i = 0; i < c->nparts; i++)
        n += c->parts[i] != NULL;
    return n;
}

int wrk_consumer_topic_partitions(const wrk_consumer_t *c)
{
    return c->topic_partitions;
}

int wrk_consumer_idle_member(const wrk_consumer_t *c)
{
    return c->last_assigned == 0 && c->topic_partitions > 0;
}

void wrk_consumer_free(wrk_consumer_t *c)
{
    if (!c)
        return;
    if (c->rk) {
        wrk_consumer_close(c);
        if (c->queue) {
            rd_kafka_queue_io_event_enable(c->queue, -1, NULL, 0);
            rd_kafka_queue_destroy(c->queue);
        }
        rd_kafka_destroy(c->rk);
    }
    for (int i = 0; i < c->nparts; i++)
        part_drop(c, i);
    free(c->parts);
    if (c->wake[0] >= 0)
        close(c->wake[0]);
    if (c->wake[1] >= 0)
        close(c->wake[1]);
    free(c->topic);
    free(c);
}
