/*
 * Idempotency keys end to end (idem.h, docs/protocol.md) on a real stack: redis-server,
 * mcpq-devbroker, two ingress replicas and a worker running an exec tool that counts its runs
 * in a file.
 *   - a repeat sent to the other replica while the first call runs waits for it: both get
 *     the same response, the tool runs once;
 *   - repeats after the end are replayed on either replica without running the tool;
 *   - the same key with other arguments, and malformed keys, are -32602;
 *   - an ingress killed (kill -9) while its call runs: the client's retry on the other replica
 *     gets the result of the one run;
 *   - after MCPQ_IDEMPOTENCY_TTL_S the key is new again;
 *   - a task-mode call with a key answers the same TaskId to every repeat.
 */
#include "check.h"
#include "fixture.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static fx_stack_t fx;
static char count_file[300];

static const char script[] =
    "#!/bin/sh\n"
    "env=$(cat)\n"
    "secs=$(printf '%s' \"$env\" | sed -n 's/.*\"secs\":\\([0-9]*\\).*/\\1/p')\n"
    "file=$(printf '%s' \"$env\" | sed -n 's/.*\"file\":\"\\([^\"]*\\)\".*/\\1/p')\n"
    "sleep \"${secs:-0}\"\n"
    "echo run >> \"$file\"\n"
    "printf 'run %s' \"$(wc -l < \"$file\" | tr -d ' ')\"\n";

/* How many times the tool ran. */
static int runs(void)
{
    FILE *f = fopen(count_file, "r");
    int n = 0;
    char line[64];
    while (f && fgets(line, sizeof(line), f))
        n++;
    if (f)
        fclose(f);
    return n;
}

typedef struct call {
    int port;
    char args[1024];
    fx_reply_t r;
    int rc;
} call_t;

/* tools/call of `count` (or tool) with the given arguments JSON members. */
static void do_call(call_t *c, const char *tool)
{
    char url[128], body[2048];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/mcp", c->port);
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"%s\",\"arguments\":{%s}}}",
             tool, c->args);
    const char *hdrs[] = {"Authorization: Bearer idem-key", NULL};
    c->rc = fx_http_post(url, hdrs, body, &c->r);
}

static void *call_thread(void *arg)
{
    do_call(arg, "count");
    return NULL;
}

/* The text of a successful result ("" otherwise; the buffer is reused). */
static const char *text_of(const call_t *c)
{
    static char out[256];
    out[0] = '\0';
    cJSON *j = cJSON_Parse(c->r.body);
    const cJSON *content =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "result"), "content");
    const char *t = cJSON_GetStringValue(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(content, 0), "text"));
    if (t)
        snprintf(out, sizeof(out), "%s", t);
    cJSON_Delete(j);
    return out;
}

static int error_code(const call_t *c)
{
    cJSON *j = cJSON_Parse(c->r.body);
    const cJSON *code =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "error"), "code");
    int v = cJSON_IsNumber(code) ? code->valueint : 0;
    cJSON_Delete(j);
    return v;
}

static void args(call_t *c, int port, const char *fmt, const char *key, int secs)
{
    c->port = port;
    snprintf(c->args, sizeof(c->args), fmt, key, secs, count_file);
}

#define ARGS "\"idempotency_key\":\"%s\",\"secs\":%d,\"file\":\"%s\""

static void write_config(const char *path, const char *tool_path)
{
    char cfg[2048];
    snprintf(cfg, sizeof(cfg),
             "{\"tenants\": [{\"id\": \"t\", \"api_keys\": [{\"id\": \"k\", \"key\": "
             "\"idem-key\"}]}],"
             " \"servers\": [{\"tenant\": \"t\", \"name\": \"default\"}],"
             " \"tools\": [{\"tenant\": \"t\", \"server\": \"default\", \"name\": \"count\","
             " \"published\": \"1\", \"versions\": [{\"version\": \"1\", \"timeout_ms\": 30000,"
             " \"inputSchema\": {\"type\": \"object\"},"
             " \"executor\": {\"type\": \"exec\", \"argv\": [\"/bin/sh\", \"%s\"]}}]},"
             " {\"tenant\": \"t\", \"server\": \"default\", \"name\": \"report\","
             " \"published\": \"1\", \"versions\": [{\"version\": \"1\", \"mode\": \"task\","
             " \"inputSchema\": {\"type\": \"object\"},"
             " \"executor\": {\"type\": \"builtin\", \"name\": \"echo\"}}]}]}",
             tool_path);
    fx_write_file(path, cfg, 0600);
}

int main(void)
{
    char cfg[300], tool_path[300];
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (fx_start(&fx, 2) < 0)
        return 1;
    snprintf(tool_path, sizeof(tool_path), "%s/count.sh", fx.dir);
    fx_write_file(tool_path, script, 0755);
    snprintf(count_file, sizeof(count_file), "%s/runs.txt", fx.dir);
    snprintf(cfg, sizeof(cfg), "%s/idem.json", fx.dir);
    write_config(cfg, tool_path);
    int p1 = fx_free_port(), p2 = fx_free_port();
    while (p2 == p1)
        p2 = fx_free_port();
    pid_t i1 = fx_spawn_ingress(&fx, "ingress-1", p1, cfg, NULL, NULL, 0);
    pid_t i2 = fx_spawn_ingress(&fx, "ingress-2", p2, cfg, NULL, NULL, 0);
    pid_t w = fx_spawn_worker(&fx, "worker", NULL);
    CHECK(i1 > 0 && i2 > 0 && w > 0);

    /* 1. A repeat on the other replica while the first runs. */
    call_t a, b;
    args(&a, p1, ARGS, "k-concurrent", 2);
    args(&b, p2, ARGS, "k-concurrent", 2);
    pthread_t th;
    CHECK_INT_EQ(pthread_create(&th, NULL, call_thread, &a), 0);
    fx_sleep_ms(700);
    do_call(&b, "count");
    pthread_join(th, NULL);
    CHECK_INT_EQ(a.rc, 0);
    CHECK_INT_EQ(b.rc, 0);
    CHECK_STR_EQ(text_of(&a), "run 1");
    CHECK_STR_EQ(text_of(&b), "run 1");
    CHECK_INT_EQ(runs(), 1);
    TEST_PASS("a repeat on another replica while the first call runs gets its response; one run");

    /* 2. Repeats after the end, on both replicas. */
    call_t c;
    args(&c, p2, ARGS, "k-concurrent", 2);
    do_call(&c, "count");
    CHECK(c.r.ms < 1500); /* answered from the stored record, not after another 2 s run */
    CHECK_STR_EQ(text_of(&c), "run 1");
    args(&c, p1, ARGS, "k-concurrent", 2);
    do_call(&c, "count");
    CHECK_STR_EQ(text_of(&c), "run 1");
    CHECK_INT_EQ(runs(), 1);
    TEST_PASS("repeats after the end are replayed by either replica without running the tool");

    /* 3. Same key, other arguments; malformed keys. */
    args(&c, p1, ARGS, "k-concurrent", 1);
    do_call(&c, "count");
    CHECK_INT_EQ(error_code(&c), -32602);
    CHECK_CONTAINS(c.r.body, "other arguments");
    const char *bad[] = {"\"idempotency_key\":5", "\"idempotency_key\":\"\"",
                         "\"idempotency_key\":null"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        c.port = p2;
        snprintf(c.args, sizeof(c.args), "%s,\"file\":\"%s\"", bad[i], count_file);
        do_call(&c, "count");
        CHECK_INT_EQ(error_code(&c), -32602);
    }
    char longkey[300];
    memset(longkey, 'k', 256);
    longkey[256] = '\0';
    args(&c, p2, ARGS, longkey, 0);
    do_call(&c, "count");
    CHECK_INT_EQ(error_code(&c), -32602);
    longkey[255] = '\0'; /* 255 bytes is allowed */
    args(&c, p2, ARGS, longkey, 0);
    do_call(&c, "count");
    CHECK_STR_EQ(text_of(&c), "run 2");
    CHECK_INT_EQ(runs(), 2);
    TEST_PASS("the same key with other arguments and malformed keys are -32602; 255 bytes work");

    /* 4. The replica that took the call dies; the client retries on the other one. */
    args(&a, p1, ARGS, "k-crash", 3);
    CHECK_INT_EQ(pthread_create(&th, NULL, call_thread, &a), 0);
    fx_sleep_ms(1000);
    CHECK_INT_EQ(kill(i1, SIGKILL), 0);
    pthread_join(th, NULL);
    CHECK(a.rc < 0 || a.r.status != 200 || text_of(&a)[0] == '\0'); /* no answer came */
    args(&b, p2, ARGS, "k-crash", 3);
    do_call(&b, "count");
    CHECK_STR_EQ(text_of(&b), "run 3");
    fx_sleep_ms(500);
    CHECK_INT_EQ(runs(), 3);
    TEST_PASS("an ingress killed mid-call: the retry on another replica gets the one run's result");

    /* 5. After the TTL the key is new. */
    const char *short_ttl[] = {"MCPQ_IDEMPOTENCY_TTL_S=2", NULL};
    int p3 = fx_free_port();
    pid_t i3 = fx_spawn_ingress(&fx, "ingress-3", p3, cfg, short_ttl, NULL, 0);
    CHECK(i3 > 0);
    args(&c, p3, ARGS, "k-ttl", 0);
    do_call(&c, "count");
    CHECK_STR_EQ(text_of(&c), "run 4");
    do_call(&c, "count");
    CHECK_STR_EQ(text_of(&c), "run 4");
    fx_sleep_ms(3000);
    do_call(&c, "count");
    CHECK_STR_EQ(text_of(&c), "run 5");
    TEST_PASS("after MCPQ_IDEMPOTENCY_TTL_S the same key runs the tool again");

    /* 6. Task mode: every repeat gets the first TaskId. */
    char ids[3][64];
    const char *keys[] = {"k-task", "k-task", "k-task-2"};
    for (int i = 0; i < 3; i++) {
        c.port = i == 1 ? p3 : p2;
        snprintf(c.args, sizeof(c.args), "\"idempotency_key\":\"%s\",\"month\":\"2026-10\"",
                 keys[i]);
        do_call(&c, "report");
        cJSON *j = cJSON_Parse(c.r.body);
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "result"),
                                             "structuredContent"),
            "TaskId"));
        CHECK(id != NULL);
        snprintf(ids[i], sizeof(ids[i]), "%s", id);
        cJSON_Delete(j);
    }
    CHECK_STR_EQ(ids[0], ids[1]);
    CHECK(strcmp(ids[0], ids[2]) != 0);
    TEST_PASS("a task-mode call with a key answers the same TaskId to every repeat");

    CHECK_INT_EQ(fx_stop_pid(w, 10000), 0);
    CHECK_INT_EQ(fx_stop_pid(i2, 10000), 0);
    CHECK_INT_EQ(fx_stop_pid(i3, 10000), 0);
    fx_wait_exit(i1, 1000);
    fx_stop(&fx);
    curl_global_cleanup();
    return 0;
}
