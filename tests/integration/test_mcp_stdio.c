/*
 * test_mcp_stdio.c - stdio upstreams of the mcp executor (docs/executors.md, "stdio
 * upstreams"; worker/executors/stdiopool.h) end to end: redis-server, mcpq-devbroker, one
 * mcpq-ingress and one mcpq-worker (tests/fixture.c), and the official
 * @modelcontextprotocol/server-everything (npm, tests/clients/package.json) run by the worker
 * over stdio with the node the tests use (never through the network at test time).
 * Checked, as a client and an operator see it: tools declared by hand call the server's
 * echo and get-env tools; env references reach the process (a worker variable and a file)
 * and the worker's own environment does not; the server's progress notifications reach the
 * client with its progressToken; a 2026-07-28 stdio server built with the official SDK 2.x
 * (tests/clients/stdio-upstream-v2.mjs) is spoken to in 2026-07-28 and server-everything in
 * 2025-11-25; concurrent calls share the processes
 * (limits.processes 2, concurrency 2: four calls at once, two processes); killing the server
 * mid-call fails that call with a clear isError and the next call works on a new process;
 * a call that times out (-32003) leaves its process serving the next call;
 * a missing worker variable fails the call clearly and the log names it; the server's stderr
 * is in the worker's log; a pool with a short idle_ms shuts its process down.
 * The processes of a pool are found by a marker variable in /proc/<pid>/environ.
 */
#include "check.h"
#include "fixture.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static fx_stack_t fx;
static int port;
static char mark_a[64], mark_b[64], secret_file[400];

#define FILE_SECRET "from-a-file-7f3e"

static cJSON *post(const char *body)
{
    char url[160];
    fx_reply_t r;
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/mcp", port);
    const char *hdrs[] = {"Authorization: Bearer stdio-key", NULL};
    CHECK_INT_EQ(fx_http_post(url, hdrs, body, &r), 0);
    CHECK_INT_EQ(r.status, 200);
    cJSON *j = cJSON_Parse(r.body);
    CHECK(j != NULL);
    return j;
}

static cJSON *call(const char *tool, const char *args)
{
    char body[1024];
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"%s\",\"arguments\":%s}}",
             tool, args);
    return post(body);
}

static const cJSON *result_of(const cJSON *j)
{
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(j, "result");
    if (!cJSON_IsObject(r)) {
        char *s = cJSON_PrintUnformatted(j);
        fprintf(stderr, "no result: %s\n", s);
        free(s);
    }
    CHECK(cJSON_IsObject(r));
    return r;
}

static const char *text0(const cJSON *j)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(result_of(j), "content");
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(c, 0), "text"));
}

static int is_error(const cJSON *j)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(result_of(j), "isError"));
}

/* The pids of live processes whose environment holds MCPQ_STDIO_MARK=mark (at most max). */
static int procs_with(const char *mark, pid_t *out, int max)
{
    char want[128], path[64], env[65536];
    int n = snprintf(want, sizeof(want), "MCPQ_STDIO_MARK=%s", mark) + 1, found = 0;
    DIR *d = opendir("/proc");
    CHECK(d != NULL);
    for (struct dirent *e; (e = readdir(d));) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0 || !fx_alive((pid_t)pid))
            continue;
        snprintf(path, sizeof(path), "/proc/%ld/environ", pid);
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        size_t len = fread(env, 1, sizeof(env), f);
        fclose(f);
        for (size_t i = 0; i + (size_t)n <= len; i += strlen(env + i) + 1)
            if (memcmp(env + i, want, (size_t)n) == 0) {
                if (found < max)
                    out[found] = (pid_t)pid;
                found++;
                break;
            }
    }
    closedir(d);
    return found;
}

static int count_procs(const char *mark)
{
    pid_t pids[32];
    return procs_with(mark, pids, 32);
}

static int file_contains(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    char line[16384];
    int hit = 0;
    while (f && !hit && fgets(line, sizeof(line), f))
        hit = strstr(line, needle) != NULL;
    if (f)
        fclose(f);
    return hit;
}

/* ---- the checks ---- */

static void test_call(const char *wlog)
{
    cJSON *j = call("se_echo", "{\"message\":\"hello stdio\"}");
    CHECK(!is_error(j));
    CHECK_STR_EQ(text0(j), "Echo: hello stdio");
    cJSON_Delete(j);
    CHECK_INT_EQ(count_procs(mark_a), 1);
    CHECK(file_contains(wlog, "stdio MCP server ready"));
    /* server-everything prints its banner on stderr: the worker's log has it, tagged */
    CHECK(file_contains(wlog, "Starting default (STDIO) server"));
    TEST_PASS("a server-everything tool over stdio, declared by hand, answers through mcpq; "
              "its stderr is in the worker's log");
}

static void test_env(void)
{
    cJSON *j = call("se_env", "{}");
    CHECK(!is_error(j));
    cJSON *env = cJSON_Parse(text0(j));
    CHECK(cJSON_IsObject(env));
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(env, "MCPQ_STDIO_MARK")),
                 mark_a);
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(env, "FILE_SECRET")),
                 FILE_SECRET);
    /* the worker's own variables stay the worker's */
    CHECK(cJSON_GetObjectItemCaseSensitive(env, "STDIO_WORKER_MARK") == NULL);
    CHECK(cJSON_GetObjectItemCaseSensitive(env, "MCPQ_REDIS_URL") == NULL);
    CHECK(cJSON_GetObjectItemCaseSensitive(env, "PATH") != NULL);
    cJSON_Delete(env);
    cJSON_Delete(j);
    TEST_PASS("env references reach the process (a worker variable, a file); nothing else of "
              "the worker's environment does");
}

static void *long_call(void *arg)
{
    cJSON **out = arg;
    *out = call("se_long", "{\"duration\":2,\"steps\":4}");
    return NULL;
}

static void test_concurrency(void)
{
    pthread_t th[4];
    cJSON *res[4] = {0};
    for (int i = 0; i < 4; i++)
        CHECK_INT_EQ(pthread_create(&th[i], NULL, long_call, &res[i]), 0);
    int most = 0;
    for (int i = 0; i < 40; i++) { /* while the calls run (2 s each) */
        int n = count_procs(mark_a);
        most = n > most ? n : most;
        fx_sleep_ms(50);
    }
    for (int i = 0; i < 4; i++) {
        CHECK_INT_EQ(pthread_join(th[i], NULL), 0);
        CHECK(!is_error(res[i]));
        CHECK(strstr(text0(res[i]), "Long running operation completed") != NULL);
        cJSON_Delete(res[i]);
    }
    /* limits.processes 2, concurrency 2: four calls at once share two processes */
    CHECK_INT_EQ(most, 2);
    CHECK_INT_EQ(count_procs(mark_a), 2);
    TEST_PASS("concurrent calls share the pool's processes (4 calls, 2 processes)");
}

static void test_kill_mid_call(void)
{
    pid_t before[32], after[32];
    cJSON *res = NULL;
    pthread_t th;
    int n = procs_with(mark_a, before, 32);
    CHECK_INT_EQ(n, 2);
    CHECK_INT_EQ(pthread_create(&th, NULL, long_call, &res), 0);
    fx_sleep_ms(700); /* the call is running (it lasts 2 s); an early kill fails it too */
    for (int i = 0; i < n; i++)
        CHECK_INT_EQ(kill(before[i], SIGKILL), 0);
    CHECK_INT_EQ(pthread_join(th, NULL), 0);
    CHECK(is_error(res));
    CHECK(strstr(text0(res), "stdio MCP server stopped during the call") != NULL);
    cJSON_Delete(res);
    cJSON *j = call("se_echo", "{\"message\":\"again\"}");
    CHECK(!is_error(j));
    CHECK_STR_EQ(text0(j), "Echo: again");
    cJSON_Delete(j);
    int m = procs_with(mark_a, after, 32);
    CHECK(m >= 1);
    for (int i = 0; i < m; i++)
        for (int k = 0; k < n; k++)
            CHECK(after[i] != before[k]);
    TEST_PASS("a server killed mid-call fails that call clearly; the next call works on a new "
              "process");
}

static void test_modern(const char *wlog)
{
    cJSON *j = call("v2_echo", "{\"text\":\"modern stdio\"}");
    CHECK(!is_error(j));
    CHECK_STR_EQ(text0(j), "v2 echo: modern stdio");
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(result_of(j), "structuredContent");
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(sc, "text")),
                 "modern stdio");
    cJSON_Delete(j);
    char line[4096];
    CHECK_INT_EQ(
        fx_log_line(wlog, "stdio MCP server ready", "stdio-upstream-v2.mjs", line, sizeof(line)),
        1);
    CHECK(strstr(line, "\"version\":\"2026-07-28\"") != NULL);
    CHECK_INT_EQ(
        fx_log_line(wlog, "stdio MCP server ready", "server-everything", line, sizeof(line)), 1);
    CHECK(strstr(line, "\"version\":\"2025-11-25\"") != NULL);
    TEST_PASS("a 2026-07-28 stdio server (official SDK 2.x) is spoken to in 2026-07-28, "
              "server-everything in 2025-11-25");
}

static void test_timeout(void)
{
    pid_t before[32], after[32];
    int n = procs_with(mark_a, before, 32);
    CHECK(n >= 1);
    /* timeout_ms 1000, the operation 3 s: the job ends, the process is told and stays */
    cJSON *j = call("se_short", "{\"duration\":3,\"steps\":3}");
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
    CHECK_INT_EQ((int)cJSON_GetObjectItemCaseSensitive(e, "code")->valuedouble, -32003);
    cJSON_Delete(j);
    j = call("se_echo", "{\"message\":\"after timeout\"}");
    CHECK_STR_EQ(text0(j), "Echo: after timeout");
    cJSON_Delete(j);
    CHECK_INT_EQ(procs_with(mark_a, after, 32), n);
    for (int i = 0; i < n; i++) {
        int same = 0;
        for (int k = 0; k < n; k++)
            same |= after[i] == before[k];
        CHECK(same);
    }
    TEST_PASS("a call that times out is cancelled upstream; its process keeps serving");
}

static void test_missing_ref(const char *wlog)
{
    cJSON *j = call("se_missing", "{\"message\":\"x\"}");
    CHECK(is_error(j));
    CHECK(strstr(text0(j), "could not be started (an environment reference") != NULL);
    cJSON_Delete(j);
    CHECK(file_contains(wlog, "the worker has no variable NO_SUCH_WORKER_VAR"));
    TEST_PASS("an env reference the worker cannot resolve fails the call clearly; the log names "
              "it");
}

static void test_idle(const char *wlog)
{
    cJSON *j = call("se_idle", "{\"message\":\"idle soon\"}");
    CHECK(!is_error(j));
    CHECK_STR_EQ(text0(j), "Echo: idle soon");
    cJSON_Delete(j);
    int n = 1;
    for (int i = 0; i < 300 && n > 0; i++) { /* idle_ms 500, then stdin closed */
        n = count_procs(mark_b);
        if (n > 0)
            fx_sleep_ms(100);
    }
    CHECK_INT_EQ(n, 0);
    CHECK(file_contains(wlog, "stdio MCP server idle: shutting it down"));
    /* and it starts again on demand */
    j = call("se_idle", "{\"message\":\"back\"}");
    CHECK_STR_EQ(text0(j), "Echo: back");
    cJSON_Delete(j);
    TEST_PASS("an idle process (idle_ms) is shut down, and started again by the next call");
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    char *buf = arg;
    size_t have = strlen(buf), k = size * n;
    if (have + k < 65536) {
        memcpy(buf + have, p, k);
        buf[have + k] = '\0';
    }
    return k;
}

static void test_progress(void)
{
    static char body[65536];
    char url[160];
    body[0] = '\0';
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/mcp", port);
    struct curl_slist *hl = curl_slist_append(NULL, "Content-Type: application/json");
    hl = curl_slist_append(hl, "Accept: application/json, text/event-stream");
    hl = curl_slist_append(hl, "Authorization: Bearer stdio-key");
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS,
                     "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\",\"params\":{"
                     "\"name\":\"se_long\",\"arguments\":{\"duration\":1,\"steps\":3},"
                     "\"_meta\":{\"progressToken\":\"p-stdio\"}}}");
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, (void *)body);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 30000L);
    CHECK_INT_EQ(curl_easy_perform(c), CURLE_OK);
    curl_easy_cleanup(c);
    curl_slist_free_all(hl);
    /* the server's three progress notifications reach the client with its token, then the
     * result */
    int n = 0;
    for (const char *q = body; (q = strstr(q, "notifications/progress")); q++)
        n++;
    if (n != 3)
        fprintf(stderr, "stream: %s\n", body);
    CHECK_INT_EQ(n, 3);
    CHECK(strstr(body, "\"progressToken\":\"p-stdio\"") != NULL);
    CHECK(strstr(body, "Long running operation completed") != NULL);
    TEST_PASS("the stdio server's progress notifications reach the client with its token");
}

/* ---- the stack ---- */

static void tool_json(char *out, size_t size, const char *name, const char *tool,
                      const char *index_js, const char *env, const char *limits)
{
    snprintf(out, size,
             "{\"tenant\":\"s\",\"server\":\"default\",\"name\":\"%s\",\"published\":\"1\","
             "\"versions\":[{\"version\":\"1\",\"inputSchema\":{\"type\":\"object\"},"
             "\"timeout_ms\":%d,\"executor\":{\"type\":\"mcp\",\"command\":\"node\","
             "\"args\":[\"%s\",\"stdio\"],\"tool\":\"%s\",\"env\":%s,\"limits\":%s}}]}",
             name, strcmp(name, "se_short") == 0 ? 1000 : 60000, index_js, tool, env, limits);
}

static void write_config(const char *path, const char *index_js, const char *repo)
{
    char t[7][1536], env_a[512], env_b[128], cfg[12288];
    const char *lim_a = "{\"processes\":2,\"concurrency\":2,\"restart_backoff_ms\":100}";
    snprintf(env_a, sizeof(env_a),
             "{\"MCPQ_STDIO_MARK\":{\"env\":\"STDIO_WORKER_MARK\"},"
             "\"FILE_SECRET\":{\"file\":\"%s\"}}",
             secret_file);
    snprintf(env_b, sizeof(env_b), "{\"MCPQ_STDIO_MARK\":{\"env\":\"STDIO_IDLE_MARK\"}}");
    tool_json(t[0], sizeof(t[0]), "se_echo", "echo", index_js, env_a, lim_a);
    tool_json(t[1], sizeof(t[1]), "se_env", "get-env", index_js, env_a, lim_a);
    tool_json(t[2], sizeof(t[2]), "se_long", "trigger-long-running-operation", index_js, env_a,
              lim_a);
    tool_json(t[3], sizeof(t[3]), "se_idle", "echo", index_js, env_b, "{\"idle_ms\":500}");
    tool_json(t[4], sizeof(t[4]), "se_missing", "echo", index_js,
              "{\"X\":{\"env\":\"NO_SUCH_WORKER_VAR\"}}", "{}");
    tool_json(t[5], sizeof(t[5]), "se_short", "trigger-long-running-operation", index_js, env_a,
              lim_a);
    snprintf(
        t[6], sizeof(t[6]),
        "{\"tenant\":\"s\",\"server\":\"default\",\"name\":\"v2_echo\",\"published\":"
        "\"1\",\"versions\":[{\"version\":\"1\",\"inputSchema\":{\"type\":\"object\"},"
        "\"executor\":{\"type\":\"mcp\",\"command\":\"node\",\"args\":[\"--import\","
        "\"%s/tests/clients/lib/register.mjs\",\"%s/tests/clients/stdio-upstream-v2.mjs\"],"
        "\"tool\":\"echo\",\"env\":{\"MCPQ_CLIENTS_DEPS\":{\"env\":\"MCPQ_CLIENTS_DEPS\"}}}}]}",
        repo, repo);
    snprintf(cfg, sizeof(cfg),
             "{\"tenants\":[{\"id\":\"s\",\"api_keys\":[{\"id\":\"k\",\"key\":\"stdio-key\"}]}],"
             "\"servers\":[{\"tenant\":\"s\",\"name\":\"default\"}],"
             "\"tools\":[%s,%s,%s,%s,%s,%s,%s]}",
             t[0], t[1], t[2], t[3], t[4], t[5], t[6]);
    fx_write_file(path, cfg, 0600);
}

int main(void)
{
    char cfg[300], wlog[400], ilog[400], deps[500], index_js[700];
    const char *env = getenv("MCPQ_CLIENTS_DEPS");
    snprintf(deps, sizeof(deps), "%s", env && *env ? env : "build/clients");
    snprintf(index_js, sizeof(index_js),
             "%s/node_modules/@modelcontextprotocol/server-everything/dist/index.js", deps);
    if (access(index_js, R_OK) != 0 || system("node --version >/dev/null 2>&1") != 0) {
        const char *ci = getenv("CI");
        if (ci && strcmp(ci, "true") == 0) {
            fprintf(stderr,
                    "server-everything cannot run in CI: no node or no %s "
                    "(scripts/test.sh installs the npm packages)\n",
                    index_js);
            return 1;
        }
        TEST_SKIP("stdio upstreams: no node or no %s (tests/clients/install.sh)", index_js);
        return TEST_EXIT();
    }
    char *abs = realpath(index_js, NULL);
    CHECK(abs != NULL);
    snprintf(index_js, sizeof(index_js), "%s", abs);
    free(abs);
    abs = realpath(deps, NULL);
    CHECK(abs != NULL);
    snprintf(deps, sizeof(deps), "%s", abs);
    free(abs);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (fx_start(&fx, 2) < 0)
        return 1;
    snprintf(mark_a, sizeof(mark_a), "pool-a-%ld-%lld", (long)getpid(), fx_now_ms());
    snprintf(mark_b, sizeof(mark_b), "pool-b-%ld-%lld", (long)getpid(), fx_now_ms());
    snprintf(secret_file, sizeof(secret_file), "%s/file-secret", fx.dir);
    fx_write_file(secret_file, FILE_SECRET "\n", 0600);
    snprintf(cfg, sizeof(cfg), "%s/stdio.json", fx.dir);
    char repo[400], deps_env[600];
    CHECK(getcwd(repo, sizeof(repo)) != NULL); /* ctest runs tests in the source dir */
    write_config(cfg, index_js, repo);
    port = fx_free_port();
    pid_t ing = fx_spawn_ingress(&fx, "ingress", port, cfg, NULL, ilog, sizeof(ilog));
    CHECK(ing > 0);
    char wa[128], wb[128];
    snprintf(wa, sizeof(wa), "STDIO_WORKER_MARK=%s", mark_a);
    snprintf(wb, sizeof(wb), "STDIO_IDLE_MARK=%s", mark_b);
    snprintf(deps_env, sizeof(deps_env), "MCPQ_CLIENTS_DEPS=%s", deps);
    const char *wenv[] = {wa, wb, deps_env, "MCPQ_KILL_GRACE_MS=1000", NULL};
    pid_t w = fx_spawn_worker(&fx, "w1", wenv);
    CHECK(w > 0);
    snprintf(wlog, sizeof(wlog), "%s/w1.log", fx.dir);

    test_call(wlog);
    test_env();
    test_progress();
    test_modern(wlog);
    test_concurrency();
    test_kill_mid_call();
    test_timeout();
    test_missing_ref(wlog);
    test_idle(wlog);

    /* the worker's stop takes its servers with it */
    CHECK_INT_EQ(fx_stop_pid(w, 15000), 0);
    for (int i = 0; i < 100 && count_procs(mark_a) > 0; i++)
        fx_sleep_ms(100);
    CHECK_INT_EQ(count_procs(mark_a), 0);
    TEST_PASS("the worker's shutdown kills every stdio server's process group");
    CHECK_INT_EQ(fx_stop_pid(ing, 10000), 0);
    fx_stop(&fx);
    curl_global_cleanup();
    return TEST_EXIT();
}
