/*
 * builtin.c - the builtin executor (docs/executors.md): tools the worker answers itself.
 *
 *   echo   its arguments as compact JSON text and as structuredContent
 *   sleep  waits arguments.ms (an integer >= 0) on a loop timer, "slept <ms> ms"
 *   fail   isError with arguments.message (or "tool failed")
 *
 * The executor config is {"type": "builtin", "name": "<tool>"}. Only sleep keeps state
 * (its timer); cancelling it stops the timer at once.
 */
#include "job.h"

#include "log.h"
#include "output.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLEEP_MAX_MS 86400000.0 /* a day: the longest deadline a tool may have */

typedef struct builtin_sleep {
    wrk_loop_timer_t timer;
    long long ms;
} builtin_sleep_t;

static cJSON *builtin_echo(const cJSON *args)
{
    cJSON *empty = NULL;
    if (!args)
        args = empty = cJSON_CreateObject();
    cJSON *res = args ? wrk_output_structured(args) : NULL;
    cJSON_Delete(empty);
    return res;
}

static cJSON *builtin_fail(const cJSON *args)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(args, "message");
    const char *msg = cJSON_IsString(m) && m->valuestring[0] ? m->valuestring : "tool failed";
    return wrk_output_text(msg, strlen(msg), 1);
}

static void sleep_done(wrk_loop_timer_t *t, void *arg)
{
    wrk_job_t *job = arg;
    builtin_sleep_t *s = job->ex_state;
    (void)t;
    char text[64];
    snprintf(text, sizeof(text), "slept %lld ms", s->ms);
    cJSON *res = wrk_output_text(text, strlen(text), 0);
    cJSON *sc = cJSON_CreateObject();
    if (res && sc && cJSON_AddNumberToObject(sc, "slept_ms", (double)s->ms)) {
        cJSON *is_error = cJSON_DetachItemFromObjectCaseSensitive(res, "isError");
        cJSON_AddItemToObject(res, "structuredContent", sc);
        cJSON_AddItemToObject(res, "isError", is_error);
        sc = NULL;
    } else {
        cJSON_Delete(res);
        res = NULL;
    }
    cJSON_Delete(sc);
    free(s);
    wrk_job_finish(job, res);
}

static int builtin_sleep_start(wrk_job_t *job, const cJSON *args)
{
    const cJSON *ms = cJSON_GetObjectItemCaseSensitive(args, "ms");
    if (!cJSON_IsNumber(ms) || !isfinite(ms->valuedouble) || ms->valuedouble < 0 ||
        ms->valuedouble != floor(ms->valuedouble) || ms->valuedouble > SLEEP_MAX_MS) {
        wrk_job_finish(job, wrk_output_errorf("sleep: arguments.ms must be an integer from 0 "
                                              "to %.0f",
                                              SLEEP_MAX_MS));
        return 0;
    }
    builtin_sleep_t *s = calloc(1, sizeof(*s));
    if (!s)
        return -1;
    s->ms = (long long)ms->valuedouble;
    wrk_loop_timer_init(&s->timer, sleep_done, job);
    if (wrk_loop_timer_start(job->rt->loop, &s->timer, s->ms) < 0) {
        free(s);
        return -1;
    }
    job->ex_state = s;
    return 0;
}

static int builtin_start(wrk_job_t *job)
{
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(job->env.executor, "name");
    const char *n = cJSON_IsString(name) ? name->valuestring : "";
    const cJSON *args = job->env.arguments;
    if (strcmp(n, "echo") == 0) {
        wrk_job_finish(job, builtin_echo(args));
    } else if (strcmp(n, "sleep") == 0) {
        return builtin_sleep_start(job, args);
    } else if (strcmp(n, "fail") == 0) {
        wrk_job_finish(job, builtin_fail(args));
    } else {
        wrk_job_finish(job, wrk_output_errorf("builtin tool \"%.64s\" does not exist (builtin "
                                              "tools: echo, sleep, fail)",
                                              n));
    }
    return 0;
}

static void builtin_cancel(wrk_job_t *job, wrk_cancel_t how)
{
    (void)how;
    builtin_sleep_t *s = job->ex_state;
    if (!s)
        return;
    wrk_loop_timer_stop(job->rt->loop, &s->timer);
    free(s);
    job->ex_state = NULL;
    wrk_job_finish(job, NULL);
}

const wrk_executor_t wrk_builtin_executor = {
    .type = "builtin",
    .start = builtin_start,
    .cancel = builtin_cancel,
};
