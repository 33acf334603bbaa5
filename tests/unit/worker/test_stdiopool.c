/*
 * Tests worker/executors/stdiopool.c on a real loop with real child processes: a small stdio
 * MCP server of our own (tests/unit/worker/stdio_server.py) for what server-everything cannot
 * show on demand (tests/integration/test_mcp_stdio.c runs server-everything): malformed
 * executors refused with a message; a call answered with its progress and log routed to it,
 * resources/updated handed to the callback, ping and roots/list from the server answered;
 * calls sharing one process and queueing past its concurrency; a full queue; a start that
 * times out, crashes or settles on an unknown version; a crash, a closed stdout and an
 * overlong line mid-call, each followed by a working call; cancel of a sent call
 * (notifications/cancelled reaches the server) and of a queued one; env references and an
 * unreadable file; a command that cannot start; idle shutdown; free killing the processes;
 * a server's elicitation/create during the only call in flight reaching that call's request
 * callback and the answer written back, the same with two calls in flight answered -32603
 * (never guessed), and the capabilities declared at initialize.
 */
#include "check.h"
#include "loop.h"
#include "stdiopool.h"
#include "util.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char server_py[600];

typedef struct res {
    int done;
    cJSON *response;
    char failure[400];
    char detail[1200];
    int progress, logs;
    double last_token;
    char version[16]; /* the serving process's handshake */
    int hello_name;   /* its initialize result named the server */
} res_t;

static int updates;
static char update_uri[64];

static void on_done(cJSON *response, const char *failure, const char *detail,
                    const wrk_stdiopool_hello_t *hello, void *arg)
{
    res_t *r = arg;
    r->done++;
    snprintf(r->version, sizeof(r->version), "%s", hello ? hello->version : "");
    r->hello_name =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(hello ? hello->result : NULL, "serverInfo"),
            "name")) != NULL;
    r->response = response;
    snprintf(r->failure, sizeof(r->failure), "%s", failure ? failure : "");
    snprintf(r->detail, sizeof(r->detail), "%s", detail ? detail : "");
}

static void on_note(const cJSON *note, void *arg)
{
    res_t *r = arg;
    const char *m = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(note, "method"));
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(note, "params");
    if (strcmp(m, "notifications/progress") == 0) {
        r->progress++;
        r->last_token = cJSON_GetObjectItemCaseSensitive(p, "progressToken")->valuedouble;
    } else if (strcmp(m, "notifications/message") == 0) {
        r->logs++;
    }
}

static void on_updated(const char *key, const char *uri, void *arg)
{
    (void)arg;
    CHECK(strstr(key, "stdio_server.py") != NULL);
    updates++;
    snprintf(update_uri, sizeof(update_uri), "%s", uri);
}

static void run_until(wrk_loop_t *loop, const int *flag, int want)
{
    int64_t end = util_mono_ms() + 20000;
    while (*flag < want && util_mono_ms() < end)
        wrk_loop_run_once(loop, 50);
    CHECK(*flag >= want);
}

static cJSON *executor(const char *mode, const char *extra)
{
    char buf[2048];
    snprintf(buf, sizeof(buf),
             "{\"type\":\"mcp\",\"tool\":\"t\",\"command\":\"python3\",\"args\":[\"%s\",\"%s\"]%s}",
             server_py, mode, extra ? extra : "");
    cJSON *ex = cJSON_Parse(buf);
    CHECK(ex != NULL);
    return ex;
}

static cJSON *tool_params(const char *name)
{
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "name", name);
    cJSON *a = cJSON_AddObjectToObject(p, "arguments");
    cJSON_AddStringToObject(a, "say", name);
    return p;
}

static wrk_stdiopool_call_t *start(wrk_stdiopool_t *pool, const cJSON *ex, const char *tool,
                                   res_t *r)
{
    char why[300];
    memset(r, 0, sizeof(*r));
    wrk_stdiopool_call_t *c = wrk_stdiopool_call(pool, ex, "tools/call", tool_params(tool), "job-1",
                                                 on_note, on_done, r, why, sizeof(why));
    if (!c)
        fprintf(stderr, "refused: %s\n", why);
    CHECK(c != NULL);
    return c;
}

/* The text of a response's first content item ("" when there is none). */
static const char *text_of(const res_t *r)
{
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(r->response, "result");
    const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(res, "content"), 0);
    const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "text"));
    return t ? t : "";
}

static void call_ok(wrk_loop_t *loop, wrk_stdiopool_t *pool, const cJSON *ex, const char *tool,
                    res_t *r)
{
    start(pool, ex, tool, r);
    run_until(loop, &r->done, 1);
    if (!r->response)
        fprintf(stderr, "failed: %s / %s\n", r->failure, r->detail);
    CHECK(r->response != NULL);
}

static void test_refused(wrk_stdiopool_t *pool)
{
    static const char *const cases[][2] = {
        {"{\"type\":\"mcp\",\"command\":\"\"}", "executor.command must be a non-empty string"},
        {"{\"type\":\"mcp\",\"command\":\"x\",\"url\":\"http://h\"}",
         "either \"url\" or \"command\""},
        {"{\"type\":\"mcp\",\"command\":\"x\",\"args\":[1]}", "executor.args must be an array"},
        {"{\"type\":\"mcp\",\"command\":\"x\",\"env\":{\"A\":\"literal\"}}",
         "executor.env.A must be a reference"},
        {"{\"type\":\"mcp\",\"command\":\"x\",\"env\":{\"A\":{\"file\":\"rel\"}}}",
         "executor.env.A must be a reference"},
        {"{\"type\":\"mcp\",\"command\":\"x\",\"env\":[]}", "executor.env must be an object"},
        {"{\"type\":\"mcp\",\"command\":\"x\",\"cwd\":\"tmp\"}",
         "executor.cwd must be an absolute path"},
        {"{\"type\":\"mcp\",\"command\":\"x\",\"limits\":3}", "executor.limits must be an object"},
        {"{\"type\":\"mcp\",\"command\":\"x\",\"limits\":{\"processes\":17}}",
         "executor.limits: processes 1-16"},
        {"{\"type\":\"mcp\",\"command\":\"x\",\"limits\":{\"idle_ms\":1.5}}",
         "executor.limits: processes 1-16"},
    };
    char why[300];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cJSON *ex = cJSON_Parse(cases[i][0]);
        res_t r = {0};
        CHECK(wrk_stdiopool_call(pool, ex, "tools/call", NULL, "j", on_note, on_done, &r, why,
                                 sizeof(why)) == NULL);
        if (!strstr(why, cases[i][1]))
            fprintf(stderr, "case %zu: %s\n", i, why);
        CHECK(strstr(why, cases[i][1]) != NULL);
        cJSON_Delete(ex);
    }
    cJSON *ex = cJSON_Parse("{\"command\":\"x\"}");
    CHECK_INT_EQ(wrk_stdiopool_is_stdio(ex), 1);
    cJSON_Delete(ex);
    TEST_PASS("malformed stdio executors are refused with a message");
}

static void test_call(wrk_loop_t *loop, wrk_stdiopool_t *pool)
{
    cJSON *ex = executor("ok", ",\"limits\":{\"concurrency\":1}");
    res_t r;
    call_ok(loop, pool, ex, "echo", &r);
    CHECK_STR_EQ(text_of(&r), "{\"say\": \"echo\"}");
    CHECK_INT_EQ(r.progress, 1);
    CHECK_INT_EQ(r.logs, 1); /* the only call in flight */
    CHECK(r.last_token == cJSON_GetObjectItemCaseSensitive(r.response, "id")->valuedouble);
    CHECK_INT_EQ(updates, 1);
    CHECK_STR_EQ(update_uri, "test://r");
    CHECK_STR_EQ(r.version, "2025-06-18"); /* the handshake comes with the answer */
    CHECK_INT_EQ(r.hello_name, 1);
    cJSON_Delete(r.response);
    /* a call without a method only waits for a ready process and its handshake */
    char why[300];
    memset(&r, 0, sizeof(r));
    CHECK(wrk_stdiopool_call(pool, ex, NULL, NULL, "job-h", on_note, on_done, &r, why,
                             sizeof(why)) != NULL);
    run_until(loop, &r.done, 1);
    CHECK(r.response == NULL);
    CHECK_STR_EQ(r.failure, "");
    CHECK_STR_EQ(r.version, "2025-06-18");
    CHECK_INT_EQ(r.hello_name, 1);
    call_ok(loop, pool, ex, "answers", &r);
    cJSON *ans = cJSON_Parse(text_of(&r));
    CHECK(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(ans, "s1")));
    CHECK_INT_EQ(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(ans, "s1")), 0);
    CHECK_INT_EQ(
        (int)cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ans, "s2"), "code")
            ->valuedouble,
        -32601);
    cJSON_Delete(ans);
    cJSON_Delete(r.response);
    TEST_PASS("a call is answered; its progress and log reach it; resources/updated reaches the "
              "callback; the server's ping gets {} and roots/list -32601");

    /* concurrency 1: three calls at once wait their turn on the one process */
    res_t q[3];
    for (int i = 0; i < 3; i++)
        start(pool, ex, "echo", &q[i]);
    for (int i = 0; i < 3; i++) {
        run_until(loop, &q[i].done, 1);
        CHECK(q[i].response != NULL);
        cJSON_Delete(q[i].response);
    }
    CHECK_INT_EQ((int)wrk_stdiopool_processes(pool), 1);
    TEST_PASS("calls beyond a process's concurrency wait in the queue and share it");

    /* cancel: a sent call's server hears notifications/cancelled; a queued one just leaves */
    res_t h, w, c;
    wrk_stdiopool_call_t *hc = start(pool, ex, "hang", &h);
    run_until(loop, &h.progress, 1);
    long hid = (long)h.last_token;
    wrk_stdiopool_call_t *wc = start(pool, ex, "echo", &w); /* queued behind hang */
    wrk_stdiopool_cancel(pool, wc, "no longer wanted");
    wrk_stdiopool_cancel(pool, hc, "cancelled by the caller");
    call_ok(loop, pool, ex, "cancelled", &c);
    cJSON *ids = cJSON_Parse(text_of(&c));
    CHECK_INT_EQ(cJSON_GetArraySize(ids), 1);
    CHECK_INT_EQ((long)cJSON_GetArrayItem(ids, 0)->valuedouble, hid);
    cJSON_Delete(ids);
    cJSON_Delete(c.response);
    CHECK_INT_EQ(h.done + w.done, 0);
    TEST_PASS("cancel: notifications/cancelled for a sent call, a queued call leaves the queue, "
              "no callbacks");
    cJSON_Delete(ex);
}

/* A call to tool on ex fails with failure; the detail holds detail; then echo works. */
static void fails_then_works(wrk_loop_t *loop, wrk_stdiopool_t *pool, const char *tool,
                             const char *failure, const char *detail)
{
    cJSON *ex = executor("ok", ",\"limits\":{\"restart_backoff_ms\":0}");
    res_t r;
    start(pool, ex, tool, &r);
    run_until(loop, &r.done, 1);
    CHECK(r.response == NULL);
    CHECK(strstr(r.failure, failure) != NULL);
    if (!strstr(r.detail, detail))
        fprintf(stderr, "detail: %s\n", r.detail);
    CHECK(strstr(r.detail, detail) != NULL);
    call_ok(loop, pool, ex, "echo", &r);
    cJSON_Delete(r.response);
    cJSON_Delete(ex);
}

typedef struct asked {
    res_t r;
    wrk_stdiopool_t *pool;
    wrk_stdiopool_call_t *call;
    int requests;
    char method[64];
} asked_t;

/* The request callback of test_requests: answers the elicitation as a client would. */
static void on_request(const cJSON *req, void *arg)
{
    asked_t *a = arg;
    a->requests++;
    snprintf(a->method, sizeof(a->method), "%s",
             cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "method")));
    cJSON *resp = cJSON_Parse("{\"jsonrpc\":\"2.0\",\"result\":{\"action\":\"accept\","
                              "\"content\":{\"name\":\"Ada\"}}}");
    cJSON_AddItemToObject(resp, "id",
                          cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(req, "id"), 1));
    CHECK_INT_EQ(wrk_stdiopool_respond(a->pool, a->call, resp), 0);
}

static void on_asked_done(cJSON *response, const char *failure, const char *detail,
                          const wrk_stdiopool_hello_t *hello, void *arg)
{
    on_done(response, failure, detail, hello, &((asked_t *)arg)->r);
}

static wrk_stdiopool_call_t *start_asked(wrk_stdiopool_t *pool, const cJSON *ex, asked_t *a)
{
    char why[300];
    memset(a, 0, sizeof(*a));
    a->pool = pool;
    a->call = wrk_stdiopool_call(pool, ex, "tools/call", tool_params("ask"), "job-ask", NULL,
                                 on_asked_done, a, why, sizeof(why));
    CHECK(a->call != NULL);
    wrk_stdiopool_on_request(a->call, on_request);
    return a->call;
}

static void test_requests(wrk_loop_t *loop, wrk_stdiopool_t *pool)
{
    cJSON *ex = executor("ok", ",\"limits\":{\"concurrency\":2}");
    asked_t a, b;
    start_asked(pool, ex, &a);
    run_until(loop, &a.r.done, 1);
    CHECK_INT_EQ(a.requests, 1);
    CHECK_STR_EQ(a.method, "elicitation/create");
    CHECK_STR_EQ(text_of(&a.r), "{\"action\": \"accept\", \"content\": {\"name\": \"Ada\"}}");
    cJSON_Delete(a.r.response);
    /* the session declared what a client may be asked */
    res_t r;
    call_ok(loop, pool, ex, "caps", &r);
    CHECK_STR_EQ(text_of(&r), "{\"elicitation\": {\"form\": {}, \"url\": {}}, \"sampling\": {}, "
                              "\"roots\": {}}");
    cJSON_Delete(r.response);
    /* two calls in flight on one process: which one asks cannot be told; no guess */
    start_asked(pool, ex, &a);
    start_asked(pool, ex, &b);
    run_until(loop, &a.r.done, 1);
    run_until(loop, &b.r.done, 1);
    CHECK_INT_EQ(a.requests + b.requests, 0);
    CHECK(strstr(text_of(&a.r), "-32603") != NULL);
    CHECK(strstr(text_of(&b.r), "limits.concurrency 1") != NULL);
    cJSON_Delete(a.r.response);
    cJSON_Delete(b.r.response);
    /* a call that takes no requests: -32601 */
    memset(&r, 0, sizeof(r));
    call_ok(loop, pool, ex, "ask", &r);
    CHECK(strstr(text_of(&r), "-32601") != NULL);
    cJSON_Delete(r.response);
    cJSON_Delete(ex);
    TEST_PASS("a server's request during the only call in flight reaches that call and its "
              "answer the server; two calls in flight: -32603, never a guess; capabilities "
              "declared at initialize");
}

static void test_failures(wrk_loop_t *loop, wrk_stdiopool_t *pool)
{
    fails_then_works(loop, pool, "crash", "stopped during the call", "exited with status 5");
    fails_then_works(loop, pool, "closeout", "stopped during the call", "closed its stdout");
    fails_then_works(loop, pool, "big", "stopped during the call",
                     "larger than the worker's output limit");
    TEST_PASS("a crash, a closed stdout or an overlong line fails the call clearly; the next "
              "call works on a new process");

    static const char *const starts[][3] = {
        {"noinit", ",\"limits\":{\"start_timeout_ms\":300}",
         "no answer to initialize within 300 ms"},
        {"crash-init", NULL, "exited with status 3"},
        {"badversion", NULL, "no protocol version this gateway speaks"},
    };
    for (size_t i = 0; i < 3; i++) {
        cJSON *ex = executor(starts[i][0], starts[i][1]);
        res_t r;
        start(pool, ex, "echo", &r);
        run_until(loop, &r.done, 1);
        CHECK(r.response == NULL);
        CHECK(strstr(r.failure, "could not be started") != NULL);
        if (!strstr(r.detail, starts[i][2]))
            fprintf(stderr, "detail: %s\n", r.detail);
        CHECK(strstr(r.detail, starts[i][2]) != NULL);
        cJSON_Delete(ex);
    }
    TEST_PASS("a start that times out, crashes or settles on an unknown version fails the "
              "waiting call");

    cJSON *ex = cJSON_Parse("{\"type\":\"mcp\",\"command\":\"/nonexistent/mcp-server\"}");
    res_t r;
    start(pool, ex, "echo", &r);
    run_until(loop, &r.done, 1);
    CHECK(strstr(r.failure, "could not be started") != NULL);
    CHECK(strstr(r.detail, "No such file or directory") != NULL);
    cJSON_Delete(ex);
    TEST_PASS("a command that cannot start fails the call clearly");

    /* a full queue: the server never answers initialize */
    ex = executor("noinit", ",\"limits\":{\"start_timeout_ms\":60000}");
    static res_t many[WRK_STDIOPOOL_QUEUE_MAX];
    static wrk_stdiopool_call_t *calls[WRK_STDIOPOOL_QUEUE_MAX];
    for (int i = 0; i < WRK_STDIOPOOL_QUEUE_MAX; i++)
        calls[i] = start(pool, ex, "echo", &many[i]);
    char why[300];
    CHECK(wrk_stdiopool_call(pool, ex, "tools/call", NULL, "j", on_note, on_done, &r, why,
                             sizeof(why)) == NULL);
    CHECK(strstr(why, "is busy: 256 calls already wait for it") != NULL);
    for (int i = 0; i < WRK_STDIOPOOL_QUEUE_MAX; i++)
        wrk_stdiopool_cancel(pool, calls[i], "x");
    cJSON_Delete(ex);
    TEST_PASS("a full queue refuses the next call at once");
}

static void test_eras(wrk_loop_t *loop, wrk_stdiopool_t *pool)
{
    /* a 2026-07-28 server: no initialize; every request carries the _meta envelope */
    cJSON *ex = executor("modern", NULL);
    res_t r;
    call_ok(loop, pool, ex, "meta", &r);
    cJSON *meta = cJSON_Parse(text_of(&r));
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
                     meta, "io.modelcontextprotocol/protocolVersion")),
                 "2026-07-28");
    CHECK(cJSON_IsObject(
        cJSON_GetObjectItemCaseSensitive(meta, "io.modelcontextprotocol/clientCapabilities")));
    CHECK(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(meta, "progressToken")));
    cJSON_Delete(meta);
    cJSON_Delete(r.response);
    cJSON_Delete(ex);
    /* a legacy server that never answers server/discover still gets initialize */
    ex = executor("quiet", ",\"limits\":{\"start_timeout_ms\":2000}");
    call_ok(loop, pool, ex, "meta", &r);
    meta = cJSON_Parse(text_of(&r));
    CHECK(cJSON_GetObjectItemCaseSensitive(meta, "io.modelcontextprotocol/protocolVersion") ==
          NULL);
    cJSON_Delete(meta);
    cJSON_Delete(r.response);
    cJSON_Delete(ex);
    TEST_PASS("server/discover first: a 2026-07-28 server is spoken to with the _meta envelope, "
              "a legacy one (answering -32601 or nothing) through initialize");
}

static void test_env(wrk_loop_t *loop, wrk_stdiopool_t *pool)
{
    char path[] = "/tmp/mcpq-stdiopool-XXXXXX", extra[400];
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    CHECK(write(fd, "file-value\n", 11) == 11);
    close(fd);
    setenv("STDIOPOOL_TEST_VAR", "var-value", 1);
    snprintf(extra, sizeof(extra),
             ",\"env\":{\"FROM_VAR\":{\"env\":\"STDIOPOOL_TEST_VAR\"},\"FROM_FILE\":{\"file\":"
             "\"%s\"}},\"cwd\":\"/tmp\"",
             path);
    cJSON *ex = executor("ok", extra);
    res_t r;
    call_ok(loop, pool, ex, "env", &r);
    cJSON *env = cJSON_Parse(text_of(&r));
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(env, "FROM_VAR")),
                 "var-value");
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(env, "FROM_FILE")),
                 "file-value");
    CHECK(cJSON_GetObjectItemCaseSensitive(env, "STDIOPOOL_TEST_VAR") == NULL);
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(env, "LANG")), "C.UTF-8");
    cJSON_Delete(env);
    cJSON_Delete(r.response);
    cJSON_Delete(ex);
    unlink(path);
    /* the file is gone now: a new pool entry (other args) cannot start */
    snprintf(extra, sizeof(extra), ",\"env\":{\"FROM_FILE\":{\"file\":\"%s\"}}", path);
    ex = executor("ok", extra);
    start(pool, ex, "env", &r);
    run_until(loop, &r.done, 1);
    CHECK(strstr(r.failure, "an environment reference of its executor could not be resolved"));
    CHECK(strstr(r.detail, "cannot read") != NULL);
    cJSON_Delete(ex);
    /* a setting of the worker itself is never handed over, even when the process has it */
    setenv("MCPQ_JOB_SIGNING_KEY", "worker-secret", 1);
    ex = executor("ok", ",\"env\":{\"S\":{\"env\":\"MCPQ_JOB_SIGNING_KEY\"}}");
    start(pool, ex, "env", &r);
    run_until(loop, &r.done, 1);
    CHECK(r.failure != NULL);
    CHECK(strstr(r.detail, "MCPQ_JOB_SIGNING_KEY is a setting of mcpq itself") != NULL);
    cJSON_Delete(ex);
    unsetenv("MCPQ_JOB_SIGNING_KEY");
    TEST_PASS("env references resolve on the worker (variable, file without its newline); an "
              "unreadable file or a reference to a setting of mcpq fails the call");
}

static void test_idle_and_free(wrk_loop_t *loop, const mcpq_settings_t *s)
{
    wrk_stdiopool_t *pool = wrk_stdiopool_new(loop, s);
    cJSON *ex = executor("ok", ",\"limits\":{\"idle_ms\":200}");
    res_t r;
    call_ok(loop, pool, ex, "echo", &r);
    cJSON_Delete(r.response);
    CHECK_INT_EQ((int)wrk_stdiopool_processes(pool), 1);
    int64_t end = util_mono_ms() + 20000;
    while (wrk_stdiopool_processes(pool) > 0 && util_mono_ms() < end)
        wrk_loop_run_once(loop, 50);
    CHECK_INT_EQ((int)wrk_stdiopool_processes(pool), 0);
    TEST_PASS("an idle process is shut down");

    call_ok(loop, pool, ex, "env", &r); /* started again on demand */
    cJSON_Delete(r.response);
    call_ok(loop, pool, ex, "answers", &r);
    cJSON_Delete(r.response);
    res_t h;
    start(pool, ex, "hang", &h);
    run_until(loop, &h.progress, 1);
    CHECK_INT_EQ((int)wrk_stdiopool_processes(pool), 1);
    cJSON_Delete(ex);
    wrk_stdiopool_free(pool); /* kills and reaps the process; hang's callback is dropped */
    CHECK_INT_EQ(h.done, 0);
    wrk_stdiopool_free(NULL);
    TEST_PASS("free kills every process group");
}

int main(void)
{
    char *abs = realpath("tests/unit/worker/stdio_server.py", NULL);
    CHECK(abs != NULL);
    snprintf(server_py, sizeof(server_py), "%s", abs);
    free(abs);
    signal(SIGPIPE, SIG_IGN);
    wrk_loop_t *loop = wrk_loop_new();
    mcpq_settings_t s;
    memset(&s, 0, sizeof(s));
    s.max_output_bytes = 65536;
    s.kill_grace_ms = 200;
    wrk_stdiopool_t *pool = wrk_stdiopool_new(loop, &s);
    wrk_stdiopool_on_updated(pool, on_updated, NULL);
    test_refused(pool);
    test_call(loop, pool);
    test_requests(loop, pool);
    test_failures(loop, pool);
    test_eras(loop, pool);
    test_env(loop, pool);
    wrk_stdiopool_free(pool);
    test_idle_and_free(loop, &s);
    /* let the loop release freed watchers */
    wrk_loop_run_once(loop, 0);
    wrk_loop_free(loop);
    return TEST_EXIT();
}
