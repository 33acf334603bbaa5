#include "handoff.h"

#include "err.h"
#include "log.h"
#include "kv.h"
#include "task.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RETRY_AFTER_FAILURE_MS 1000
#define REAP_LIMIT "100"

struct wrk_handoff {
    const mcpq_settings_t *s;
    kv_target_t *kvt;
    const char *worker_id;
    const char *robot; /* "" for none */
    redisContext *c;
    int64_t retry_at; /* monotonic ms: no Redis calls before */
    int down_logged;
    char lease[24], retention[24], max_attempts[24];
};

wrk_handoff_t *wrk_handoff_new(const mcpq_settings_t *s, kv_target_t *kvt, const char *worker_id)
{
    wrk_handoff_t *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->s = s;
    t->kvt = kvt;
    t->worker_id = worker_id;
    t->robot = s->robot_id && *s->robot_id ? s->robot_id : "";
    snprintf(t->lease, sizeof(t->lease), "%lld", s->task_lease_ms);
    snprintf(t->retention, sizeof(t->retention), "%lld", s->task_retention_s);
    snprintf(t->max_attempts, sizeof(t->max_attempts), "%lld", s->task_max_attempts);
    return t;
}

void wrk_handoff_free(wrk_handoff_t *t)
{
    if (!t)
        return;
    if (t->c)
        redisFree(t->c);
    free(t);
}

size_t wrk_handoff_slots(const wrk_handoff_t *t)
{
    return *t->robot ? 1 : (size_t)t->s->task_slots;
}

/* Runs a task script; NULL when Redis is unreachable (then no calls for a second). */
static redisReply *run(wrk_handoff_t *t, task_script_t s, int argc, const char *const *argv)
{
    char err[256];
    if (!t->c) {
        if (util_mono_ms() < t->retry_at)
            return NULL;
        t->c = kv_connect(t->kvt, (int)t->s->redis_timeout_ms, err, sizeof(err));
        if (!t->c)
            goto fail;
    }
    redisReply *r = task_script_run(t->c, s, argc, argv, err, sizeof(err));
    if (r) {
        if (t->down_logged)
            log_event(LOG_INFO, "tasks: Redis reachable again", (char *)NULL);
        t->down_logged = 0;
        return r;
    }
    if (t->c->err) {
        redisFree(t->c);
        t->c = NULL;
    }
fail:
    t->retry_at = util_mono_ms() + RETRY_AFTER_FAILURE_MS;
    if (!t->down_logged)
        log_event(LOG_WARN, "tasks: Redis call failed; retrying", "error", err, (char *)NULL);
    t->down_logged = 1;
    return NULL;
}

static char *id_base(char out[20])
{
    util_random_hex(out, 8);
    return out;
}

int wrk_handoff_enqueue(wrk_handoff_t *t, const char *task_id)
{
    const char *argv[] = {task_id};
    redisReply *r = run(t, TASK_SCRIPT_ENQUEUE, 1, argv);
    if (!r)
        return MCPQ_EUNAVAIL;
    if (r->type == REDIS_REPLY_INTEGER && r->integer == 1)
        log_event(LOG_INFO, "task queued", "task_id", task_id, (char *)NULL);
    freeReplyObject(r);
    /* The job's offset is stored once this returns 0: with MCPQ_REDIS_WAIT_REPLICAS the
     * queue entry must be on the replicas first, else a failover could lose the task while
     * Kafka no longer holds it (docs/redis.md). Retried (the script is idempotent). */
    int rc = kv_wait(t->c, (int)t->s->redis_wait_replicas, (int)t->s->redis_wait_timeout_ms);
    if (rc == MCPQ_EIO) {
        redisFree(t->c);
        t->c = NULL;
    }
    if (rc < 0) {
        t->retry_at = util_mono_ms() + RETRY_AFTER_FAILURE_MS;
        log_event(LOG_WARN, "task hand-off: too few Redis replicas acknowledged; retrying",
                  "task_id", task_id, (char *)NULL);
        return MCPQ_EUNAVAIL;
    }
    return 0;
}

/* The claimed task's tracestate (the reply's fifth element) into out when it may be relayed. */
static void claim_tracestate(const redisReply *r, char out[TRACE_STATE_MAX + 1])
{
    out[0] = '\0';
    if (r->elements < 5 || r->element[4]->type != REDIS_REPLY_STRING ||
        r->element[4]->len > TRACE_STATE_MAX)
        return;
    memcpy(out, r->element[4]->str, r->element[4]->len);
    out[r->element[4]->len] = '\0';
    if (!trace_state_ok(out))
        out[0] = '\0';
}

int wrk_handoff_claim(wrk_handoff_t *t, char **env, size_t *len, int64_t *begin_ms, long *attempt,
                      char tracestate[TRACE_STATE_MAX + 1])
{
    char base[20];
    const char *argv[] = {t->robot, t->worker_id, t->lease, id_base(base)};
    redisReply *r = run(t, TASK_SCRIPT_CLAIM, 4, argv);
    if (!r)
        return MCPQ_EUNAVAIL;
    int rc = 0;
    if (r->type == REDIS_REPLY_ARRAY && r->elements >= 4 &&
        r->element[1]->type == REDIS_REPLY_STRING) {
        *env = malloc(r->element[1]->len + 1);
        if (*env) {
            memcpy(*env, r->element[1]->str, r->element[1]->len);
            (*env)[r->element[1]->len] = '\0';
            *len = r->element[1]->len;
            *begin_ms = r->element[2]->str ? strtoll(r->element[2]->str, NULL, 10) : 0;
            *attempt = r->element[3]->str ? strtol(r->element[3]->str, NULL, 10) : 1;
            claim_tracestate(r, tracestate);
            rc = 1;
        } else {
            rc = MCPQ_ENOMEM;
        }
    }
    freeReplyObject(r);
    return rc;
}

void wrk_handoff_heartbeat(wrk_handoff_t *t, const char *const *ids, size_t n)
{
    const char *argv[66];
    argv[0] = t->worker_id;
    argv[1] = t->lease;
    for (size_t i = 0; i < n;) {
        size_t k = 0;
        while (i < n && k < 64)
            argv[2 + k++] = ids[i++];
        redisReply *r = run(t, TASK_SCRIPT_HEARTBEAT, (int)(2 + k), argv);
        if (!r)
            return;
        freeReplyObject(r);
    }
}

void wrk_handoff_progress(wrk_handoff_t *t, const char *task_id, const char *message,
                          const char *progress_json)
{
    const char *argv[] = {task_id, t->worker_id, message ? message : "", progress_json};
    redisReply *r = run(t, TASK_SCRIPT_PROGRESS, 4, argv);
    if (r)
        freeReplyObject(r);
}

int wrk_handoff_finish(wrk_handoff_t *t, const char *task_id, const char *state,
                       const char *result_json, const char *reason, const char *fault)
{
    char base[20];
    const char *argv[] = {task_id, t->worker_id, state,         result_json,
                          reason,  t->retention, id_base(base), fault ? fault : ""};
    redisReply *r = run(t, TASK_SCRIPT_FINISH, 8, argv);
    if (!r)
        return MCPQ_EUNAVAIL;
    int rc = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    freeReplyObject(r);
    log_event(rc ? LOG_INFO : LOG_WARN,
              rc ? "task finished" : "task ended here but is no longer ours (cancelled or reaped)",
              "task_id", task_id, "state", state, (char *)NULL);
    return rc;
}

void wrk_handoff_reap(wrk_handoff_t *t)
{
    char base[20];
    const char *argv[] = {t->max_attempts, t->retention, id_base(base), REAP_LIMIT};
    redisReply *r = run(t, TASK_SCRIPT_REAP, 4, argv);
    if (!r)
        return;
    for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++)
        if (r->element[i]->type == REDIS_REPLY_STRING)
            log_event(LOG_WARN, "task lease ran out (its worker died or hung)", "task",
                      r->element[i]->str, (char *)NULL);
    freeReplyObject(r);
}

int wrk_handoff_handback(wrk_handoff_t *t, const char *task_id)
{
    const char *argv[] = {task_id, t->worker_id};
    redisReply *r = run(t, TASK_SCRIPT_HANDBACK, 2, argv);
    if (!r)
        return MCPQ_EUNAVAIL;
    int rc = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    freeReplyObject(r);
    if (rc)
        log_event(LOG_INFO, "task handed back: waiting for another worker", "task_id", task_id,
                  (char *)NULL);
    return rc;
}

void wrk_handoff_release_mine(wrk_handoff_t *t)
{
    const char *argv[] = {t->worker_id};
    redisReply *r = run(t, TASK_SCRIPT_RELEASE, 1, argv);
    if (r && r->type == REDIS_REPLY_INTEGER && r->integer > 0) {
        char n[24];
        snprintf(n, sizeof(n), "%lld", r->integer);
        log_event(LOG_WARN, "tasks this worker ran before it restarted go back to waiting", "tasks",
                  n, (char *)NULL);
    }
    if (r)
        freeReplyObject(r);
}
