/* Unit tests of ingress/http/pending.c without Redis (the reader thread keeps failing to connect,
 * so deadlines are what completes calls) and without connections (nothing is parked): a call
 * added twice is refused, and a batch's group (pending.h, "Batches") ends exactly when its
 * seal and every element are done, with the elements' responses where they belong. */
#include "check.h"
#include "names.h"
#include "err.h"
#include "rpc.h"
#include "pending.h"
#include "settings.h"
#include "util.h"

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#define NO_REDIS "redis://127.0.0.1:1/0"

/* One target for every table of the run (never reached). */
static kv_target_t *no_redis(void)
{
    static kv_target_t *t;
    if (!t) {
        static const mcpq_settings_t set = {.redis_url = NO_REDIS};
        char err[128];
        t = kv_target_new(&set, err, sizeof(err));
    }
    return t;
}

static ing_pending_t *table(void)
{
    ing_pending_t *p = ing_pending_new(no_redis(), 200, NAMES_KEY_REPLY "test", 100);
    CHECK(p != NULL);
    return p;
}

static void element(ing_call_t *c, ing_call_t *group, const char *job, int id, int wait_ms)
{
    memset(c, 0, sizeof(*c));
    snprintf(c->job_id, sizeof(c->job_id), "%s", job);
    snprintf(c->id_json, sizeof(c->id_json), "%d", id);
    snprintf(c->tool, sizeof(c->tool), "t");
    c->deadline_mono = util_mono_ms() + wait_ms;
    c->log_min = -1;
    c->sse_ok = group ? group->sse_ok : 0;
    c->group = group;
}

/* Waits (at most 5 s) until no call is waiting. */
static void drain(ing_pending_t *p)
{
    for (int i = 0; i < 500 && ing_pending_count(p) > 0; i++)
        usleep(10 * 1000);
    CHECK_INT_EQ(ing_pending_count(p), 0);
}

/* The same call added twice: an assertion in debug builds, MCPQ_EEXIST in release builds;
 * either way it is never linked twice (which made the keep-alive tick spin forever). Run in
 * a child so the assertion can fire. */
static void test_added_twice(void)
{
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        ing_pending_t *p = table();
        ing_call_t c;
        element(&c, NULL, "j_twice", 1, 60000);
        if (ing_pending_add(p, &c) != 0)
            _exit(3);
        int rc = ing_pending_add(p, &c); /* aborts where assertions are on */
        _exit(rc == MCPQ_EEXIST && ing_pending_count(p) == 1 ? 0 : 4);
    }
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECK((WIFEXITED(st) && WEXITSTATUS(st) == 0) || (WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT));
    TEST_PASS("a call added twice is refused (assertion or MCPQ_EEXIST)");
}

/* Two elements of one batch waiting on the same job id (two tasks/result of one task): two
 * calls of their own, each answered. */
static void test_group_json(void)
{
    ing_pending_t *p = table();
    ing_call_t group, a, b, c;
    memset(&group, 0, sizeof(group));
    ing_pending_group_init(p, &group);
    element(&a, &group, "j_same", 1, 100);
    element(&b, &group, "j_same", 2, 150);
    element(&c, &group, "j_other", 3, 60000);
    CHECK_INT_EQ(ing_pending_add(p, &a), 0);
    CHECK_INT_EQ(ing_pending_add(p, &b), 0);
    CHECK_INT_EQ(ing_pending_add(p, &c), 0);
    CHECK_INT_EQ(ing_pending_count(p), 3);
    /* c's request fails before the seal: it gives its reference back. */
    CHECK_INT_EQ(ing_pending_remove(p, &c), 1);
    ing_pending_fail(p, "j_nobody", RPC_INTERNAL_ERROR, "x"); /* no such call: nothing */
    drain(p);                    /* a and b reach their deadlines: -32003 each */
    CHECK_INT_EQ(group.done, 0); /* the seal still holds it */
    ing_pending_group_seal(p, &group, NULL, 0);
    CHECK_INT_EQ(group.done, 1);
    CHECK_INT_EQ(group.want_stream, 0);
    CHECK(a.done && b.done && a.timed_out && b.timed_out);
    CHECK_CONTAINS(a.response, "\"id\":1");
    CHECK_CONTAINS(a.response, "-32003");
    CHECK_CONTAINS(b.response, "\"id\":2");
    ing_pending_release(&a);
    ing_pending_release(&b);
    ing_pending_release(&c);
    ing_pending_release(&group);
    ing_pending_free(p);
    TEST_PASS("batch group, JSON: elements answered on their own, group done after the seal");
}

/* A streaming group: the immediate responses, then each element's response, are frames of
 * the group's stream, which ends with the last element. */
static void test_group_sse(void)
{
    ing_pending_t *p = table();
    ing_call_t group, a;
    memset(&group, 0, sizeof(group));
    group.sse_ok = 1;
    ing_pending_group_init(p, &group);
    element(&a, &group, "j_sse", 7, 60000);
    CHECK_INT_EQ(ing_pending_add(p, &a), 0);
    char *bodies[] = {strdup("{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}"), NULL};
    ing_pending_group_seal(p, &group, bodies, 2);
    CHECK_INT_EQ(group.done, 0);
    CHECK_INT_EQ(group.want_stream, 1);
    ing_pending_fail(p, "j_sse", RPC_INTERNAL_ERROR, "job queue (Kafka) unavailable");
    CHECK_INT_EQ(group.done, 1);
    CHECK_INT_EQ(group.stream_end, 1);
    char buf[4096];
    size_t len = 0;
    for (;;) {
        ssize_t n = ing_pending_read(p, &group, buf + len, sizeof(buf) - 1 - len);
        if (n == MHD_CONTENT_READER_END_OF_STREAM)
            break;
        CHECK(n > 0);
        len += (size_t)n;
    }
    buf[len] = '\0';
    CHECK_CONTAINS(buf, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}\n\n");
    CHECK_CONTAINS(buf, "\"id\":7,\"error\"");
    CHECK(strstr(buf, "\"id\":5") < strstr(buf, "\"id\":7"));
    free(bodies[0]);
    ing_pending_release(&a);
    ing_pending_release(&group);
    ing_pending_free(p);
    TEST_PASS("batch group, SSE: immediate and waiting responses are frames, stream ends last");
}

/* An element that completes before the seal does not end the batch early. */
static void test_group_early(void)
{
    ing_pending_t *p = table();
    ing_call_t group, a, b;
    memset(&group, 0, sizeof(group));
    ing_pending_group_init(p, &group);
    element(&a, &group, "j_a", 1, 60000);
    element(&b, &group, "j_b", 2, 60000);
    CHECK_INT_EQ(ing_pending_add(p, &a), 0);
    ing_pending_fail(p, "j_a", RPC_INTERNAL_ERROR, "gone");
    CHECK_INT_EQ(group.done, 0);
    CHECK_INT_EQ(ing_pending_add(p, &b), 0);
    ing_pending_group_seal(p, &group, NULL, 0);
    CHECK_INT_EQ(group.done, 0);
    ing_pending_fail_all(p, "server shutting down");
    CHECK_INT_EQ(group.done, 1);
    CHECK_CONTAINS(b.response, "server shutting down");
    ing_pending_release(&a);
    ing_pending_release(&b);
    ing_pending_release(&group);
    ing_pending_free(p);
    TEST_PASS("batch group: an early element does not end it; shutdown ends every element");
}

/* The response to a record for call c, as text (malloc'd), and its outcome. */
static char *answer(const ing_call_t *c, const char *rec, ing_call_outcome_t *outcome)
{
    ing_stamps_t st = {.finished_us = -1, .exec_us = -1};
    char *out = ing_pending_record_response(c, rec, strlen(rec), outcome, &st);
    CHECK(out != NULL);
    const char *f = strstr(rec, "\"finished_us\":"); /* what the worker wrote, else 0 */
    CHECK_INT_EQ(st.finished_us, f ? strtoll(f + 14, NULL, 10) : 0);
    const char *x = strstr(rec, "\"exec_us\":");
    CHECK_INT_EQ(st.exec_us, x ? strtoll(x + 10, NULL, 10) : 0);
    return out;
}

/* A job that answered another method than tools/call (jobargs.h): its result passes through,
 * an "isError" member in it is no tool error, a cacheable 2026-07-28 read gets the version's
 * ttlMs and cacheScope in place of any upstream ones, and an error record is the JSON-RPC
 * error the worker wrote. */
static void test_method_results(void)
{
    ing_call_t c;
    ing_call_outcome_t outcome;
    element(&c, NULL, "j1", 5, 1000);
    c.method_result = 1;
    char *out = answer(&c,
                       "{\"v\":1,\"job_id\":\"j1\",\"status\":\"ok\",\"result\":{\"messages\":[],"
                       "\"isError\":true},\"exec_us\":1796000000000042,"
                       "\"finished_us\":1796000000123456}",
                       &outcome);
    CHECK_STR_EQ(out,
                 "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"messages\":[],\"isError\":true}}");
    CHECK_INT_EQ(outcome, ING_CALL_OK);
    free(out);

    c.modern = 1;
    c.cacheable = 1;
    c.ttl_ms = 60000;
    c.cache_public = 1;
    out = answer(&c,
                 "{\"v\":1,\"job_id\":\"j1\",\"status\":\"ok\",\"result\":{\"contents\":[{\"uri\":"
                 "\"a:b\",\"text\":\"t\"}],\"ttlMs\":5,\"cacheScope\":\"private\"}}",
                 &outcome);
    CHECK_STR_EQ(out, "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"contents\":[{\"uri\":\"a:b\","
                      "\"text\":\"t\"}],\"resultType\":\"complete\",\"ttlMs\":60000,"
                      "\"cacheScope\":\"public\"}}");
    free(out);
    c.cache_public = 0;
    c.ttl_ms = 0;
    out = answer(&c, "{\"v\":1,\"job_id\":\"j1\",\"status\":\"ok\",\"result\":{\"contents\":[]}}",
                 &outcome);
    CHECK_CONTAINS(out, "\"ttlMs\":0,\"cacheScope\":\"private\"");
    free(out);

    out = answer(&c,
                 "{\"v\":1,\"job_id\":\"j1\",\"status\":\"error\",\"error\":{\"code\":-32603,"
                 "\"message\":\"no such file\"}}",
                 &outcome);
    CHECK_STR_EQ(out, "{\"jsonrpc\":\"2.0\",\"id\":5,\"error\":{\"code\":-32603,\"message\":"
                      "\"no such file\"}}");
    CHECK_INT_EQ(outcome, ING_CALL_FAILED);
    free(out);
    /* error.data passes on: the input_lost reason of a job whose asking worker died */
    out = answer(&c,
                 "{\"v\":1,\"job_id\":\"j1\",\"status\":\"error\",\"error\":{\"code\":-32603,"
                 "\"message\":\"lost\",\"data\":{\"reason\":\"input_lost\"}}}",
                 &outcome);
    CHECK_STR_EQ(out, "{\"jsonrpc\":\"2.0\",\"id\":5,\"error\":{\"code\":-32603,\"message\":"
                      "\"lost\",\"data\":{\"reason\":\"input_lost\"}}}");
    free(out);

    /* a tools/call result with isError stays a tool error */
    element(&c, NULL, "j2", 6, 1000);
    out = answer(&c,
                 "{\"v\":1,\"job_id\":\"j2\",\"status\":\"ok\",\"result\":{\"content\":[],"
                 "\"isError\":true}}",
                 &outcome);
    CHECK_INT_EQ(outcome, ING_CALL_TOOL_ERROR);
    CHECK(strstr(out, "ttlMs") == NULL);
    free(out);
    TEST_PASS("a method's result passes through with its cache hints; errors stay errors");
}

int main(void)
{
    test_method_results();
    test_added_twice();
    test_group_json();
    test_group_sse();
    test_group_early();
    return 0;
}
