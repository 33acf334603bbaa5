/*
 * The config file follows a Kubernetes ConfigMap (docs/config-file.md, "Watching the file";
 * ingress/core/cfgwatch.h) on a real stack: redis-server, mcpq-devbroker and two ingress
 * replicas A and B with MCPQ_CONFIG_WATCH_MS=200 naming one file laid out as kubelet mounts a
 * ConfigMap: <dir>/mcpq.json -> ..data/mcpq.json, ..data -> ..<timestamp>/. Kubelet's update
 * is done as kubelet does it: the new file in a new timestamped directory, a new symlink
 * renamed over ..data, the old directory removed.
 *   - a swap that adds a tool: both replicas list it within 20 s (polled every 100 ms), the
 *     registry revision moves exactly once, one replica counts it applied and the other
 *     already applied (mcpq_config_reload_total), and without MCPQ_CONFIG_PRUNE a tool the
 *     file no longer names stays;
 *   - a swap to a bad file (a tool on a server that does not exist): both replicas refuse it
 *     with a log line, mcpq_config_reload_total{result="refused"}, mcpq_config_refused 1 and
 *     an event each in GET /admin/v1/config/events (next to the applied ones, newest first),
 *     keep serving the registry as it was, and the revision does not move;
 *   - a third replica starting while the bad file is mounted starts anyway, refuses the file the
 *     same way and serves the registry Redis holds;
 *   - a swap back to the good file is found already applied (the revision does not move, the
 *     gauge goes back to 0);
 *   - a swap to a file valid alone that clashes with the registry (a robot of a tenant made
 *     through the admin API) is refused the same way when it is applied: nothing written;
 *   - replicas restarted with MCPQ_CONFIG_PRUNE=1: a swap to a file that drops a tool makes it
 *     disappear from both.
 */
#include "check.h"
#include "fixture.h"
#include "names.h"

#include <curl/curl.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define T_KEY "Authorization: Bearer t-key"
#define ADMIN "cfgwatch-admin-token-0123456789abcdef"
#define WAIT_MS 20000 /* generous: the machine is shared; the watcher polls every 200 ms */

static fx_stack_t fx;
static redisContext *redis;
static char cm[300]; /* the ConfigMap mount */
static int generation;

#define TOOL(name, desc)                                                                           \
    "{\"tenant\": \"t\", \"server\": \"default\", \"name\": \"" name "\", \"published\": \"1\","   \
    " \"versions\": [{\"version\": \"1\", \"description\": \"" desc "\", \"inputSchema\":"         \
    " {\"type\": \"object\"}, \"executor\": {\"type\": \"builtin\", \"name\": \"echo\"}}]}"
#define CONFIG(tools)                                                                              \
    "{\"tenants\": [{\"id\": \"t\", \"api_keys\": [{\"id\": \"k\", \"key\": \"t-key\"}]}],"        \
    " \"servers\": [{\"tenant\": \"t\", \"name\": \"default\"}], \"tools\": [" tools "]}"

static const char v1[] = CONFIG(TOOL("echo", "echo") "," TOOL("old", "to be pruned"));
static const char v2[] = CONFIG(TOOL("echo", "echo") "," TOOL("added", "new in v2"));
static const char bad[] =
    CONFIG(TOOL("echo", "echo") ", {\"tenant\": \"t\", \"server\": \"nowhere\", \"name\": "
                                "\"stray\", \"versions\": [{\"version\": \"1\", \"inputSchema\": "
                                "{\"type\": \"object\"}, \"executor\": {\"type\": \"builtin\", "
                                "\"name\": \"echo\"}}]}");
static const char clash[] =
    "{\"tenants\": [{\"id\": \"t\", \"robots\": [\"r1\"], \"api_keys\": [{\"id\": \"k\", \"key\":"
    " \"t-key\"}]}], \"servers\": [{\"tenant\": \"t\", \"name\": \"default\"}], \"tools\": [" TOOL(
        "echo", "echo") "]}";
static const char v4[] = CONFIG(TOOL("echo", "echo") "," TOOL("added", "changed in v4"));

/* What kubelet's atomic writer does: the file in a new ..<timestamp> directory, a symlink
 * ..data_tmp to it renamed over ..data, the previous directory removed. */
static void configmap_write(const char *content)
{
    char dir[400], file[700], tmp[400], data[400], old[600] = "";
    snprintf(data, sizeof(data), "%s/..data", cm);
    char target[200];
    ssize_t n = readlink(data, target, sizeof(target) - 1);
    if (n > 0) {
        target[n] = '\0';
        snprintf(old, sizeof(old), "%s/%s", cm, target);
    }
    generation++;
    snprintf(dir, sizeof(dir), "%s/..2026_11_28_16_00_%02d.%09d", cm, generation, generation);
    CHECK_INT_EQ(mkdir(dir, 0755), 0);
    snprintf(file, sizeof(file), "%s/mcpq.json", dir);
    fx_write_file(file, content, 0644);
    snprintf(tmp, sizeof(tmp), "%s/..data_tmp", cm);
    CHECK_INT_EQ(symlink(strrchr(dir, '/') + 1, tmp), 0);
    CHECK_INT_EQ(rename(tmp, data), 0);
    if (old[0]) {
        snprintf(file, sizeof(file), "%s/mcpq.json", old);
        CHECK_INT_EQ(unlink(file), 0);
        CHECK_INT_EQ(rmdir(old), 0);
    }
}

/* 1 when tools/list on port names tool (and, when given, holds text). */
static int listed(int port, const char *tool, const char *text)
{
    const char *h[] = {T_KEY, NULL};
    char url[64], name[96];
    fx_reply_t r;
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/mcp", port);
    CHECK_INT_EQ(
        fx_http_post(url, h, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", &r), 0);
    CHECK_INT_EQ(r.status, 200);
    snprintf(name, sizeof(name), "\"name\":\"%s\"", tool);
    return strstr(r.body, name) && (!text || strstr(r.body, text));
}

/* Polls both replicas every 100 ms until tools/list shows (want 1) or no longer shows (0)
 * tool on both: the ms it took, or -1 after WAIT_MS. */
static long long until_both(const int ports[2], const char *tool, const char *text, int want)
{
    long long t0 = fx_now_ms();
    for (;;) {
        if (listed(ports[0], tool, text) == want && listed(ports[1], tool, text) == want)
            return fx_now_ms() - t0;
        if (fx_now_ms() - t0 >= WAIT_MS)
            return -1;
        fx_sleep_ms(100);
    }
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    char *buf = arg;
    size_t have = strlen(buf), k = size * n, room = 65536 - 1 - have;
    memcpy(buf + have, p, k < room ? k : room);
    buf[have + (k < room ? k : room)] = '\0';
    return k;
}

/* GETs path on the replica at port (with the admin token when admin): the status, the body in
 * a static buffer. */
static long http_get(int port, const char *path, int admin, const char **body_out)
{
    static char body[65536];
    char url[128];
    long status = 0;
    body[0] = '\0';
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
    CURL *c = curl_easy_init();
    struct curl_slist *hl = admin ? curl_slist_append(NULL, "Authorization: Bearer " ADMIN) : NULL;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
    CHECK_INT_EQ(curl_easy_perform(c), CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    curl_slist_free_all(hl);
    *body_out = body;
    return status;
}

/* mcpq_config_reload_total{result="<result>"} on the replica at port (-1: not shown). */
static long long reloads(int port, const char *result)
{
    const char *body;
    char series[96];
    CHECK_INT_EQ(http_get(port, "/metrics", 0, &body), 200);
    CHECK_INT_EQ(fx_promtool_check(body), 0);
    snprintf(series, sizeof(series), "mcpq_config_reload_total{result=\"%s\"} ", result);
    const char *at = strstr(body, series);
    return at ? strtoll(at + strlen(series), NULL, 10) : -1;
}

/* The gauge mcpq_config_refused on the replica at port (-1: not shown). */
static long long refused_now(int port)
{
    const char *body;
    CHECK_INT_EQ(http_get(port, "/metrics", 0, &body), 200);
    const char *at = strstr(body, "\nmcpq_config_refused ");
    return at ? strtoll(at + strlen("\nmcpq_config_refused "), NULL, 10) : -1;
}

/* How many times text occurs in s. */
static int count(const char *s, const char *text)
{
    int n = 0;
    for (const char *at = strstr(s, text); at; at = strstr(at + 1, text))
        n++;
    return n;
}

/* Waits until both replicas counted want changes in total (applied, unchanged and refused):
 * 0, or -1 after WAIT_MS. */
static int until_counted(const int ports[2], long long want)
{
    long long t0 = fx_now_ms();
    for (;;) {
        int done = 0;
        for (int i = 0; i < 2; i++)
            done += reloads(ports[i], "applied") + reloads(ports[i], "unchanged") +
                        reloads(ports[i], "refused") ==
                    want;
        if (done == 2)
            return 0;
        if (fx_now_ms() - t0 >= WAIT_MS)
            return -1;
        fx_sleep_ms(100);
    }
}

static long long registry_rev(void)
{
    redisReply *r = redisCommand(redis, "GET " NAMES_KEY_REGISTRY_REV);
    CHECK(r != NULL && r->type == REDIS_REPLY_STRING);
    long long rev = strtoll(r->str, NULL, 10);
    freeReplyObject(r);
    return rev;
}

static void start_pair(const char *a, const char *b, const int ports[2], int prune, pid_t pids[2],
                       char logs[2][300])
{
    char file[400];
    snprintf(file, sizeof(file), "%s/mcpq.json", cm);
    const char *env[] = {"MCPQ_CONFIG_WATCH_MS=200", "MCPQ_ADMIN_TOKEN=" ADMIN,
                         prune ? "MCPQ_CONFIG_PRUNE=1" : "MCPQ_CONFIG_PRUNE=0", NULL};
    pids[0] = fx_spawn_ingress(&fx, a, ports[0], file, env, logs[0], sizeof(logs[0]));
    pids[1] = fx_spawn_ingress(&fx, b, ports[1], file, env, logs[1], sizeof(logs[1]));
    CHECK(pids[0] > 0 && pids[1] > 0);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (fx_start(&fx, 2) < 0)
        return 1;
    snprintf(cm, sizeof(cm), "%s/configmap", fx.dir);
    CHECK_INT_EQ(mkdir(cm, 0755), 0);
    configmap_write(v1);
    char link[400];
    snprintf(link, sizeof(link), "%s/mcpq.json", cm);
    CHECK_INT_EQ(symlink("..data/mcpq.json", link), 0);
    int ports[2] = {fx_free_port(), fx_free_port()};
    while (ports[1] == ports[0])
        ports[1] = fx_free_port();
    pid_t pids[2];
    char logs[2][300];
    start_pair("ingress-a", "ingress-b", ports, 0, pids, logs);
    struct timeval tv = {5, 0};
    redis = redisConnectWithTimeout("127.0.0.1", fx.redis_port, tv);
    CHECK(redis != NULL && !redis->err);
    CHECK(until_both(ports, "old", NULL, 1) >= 0);
    CHECK(!listed(ports[0], "added", NULL) && !listed(ports[1], "added", NULL));
    CHECK_INT_EQ(reloads(ports[0], "applied"), 0); /* the start-up load is not a reload */

    /* 1. A ConfigMap update adding a tool: every replica serves it, applied once. */
    long long rev0 = registry_rev();
    configmap_write(v2);
    long long ms = until_both(ports, "added", "new in v2", 1);
    printf("# both replicas list the new tool %lld ms after the swap\n", ms);
    CHECK(ms >= 0);
    CHECK_INT_EQ(until_counted(ports, 1), 0);
    CHECK_INT_EQ(reloads(ports[0], "applied") + reloads(ports[1], "applied"), 1);
    CHECK_INT_EQ(reloads(ports[0], "unchanged") + reloads(ports[1], "unchanged"), 1);
    CHECK_INT_EQ(registry_rev(), rev0 + 1);
    CHECK(listed(ports[0], "old", NULL) && listed(ports[1], "old", NULL)); /* no prune */
    TEST_PASS("configmap swap adding a tool: both replicas list it, revision moved once");

    /* 2. A bad file: refused by both, the registry stays as it was. */
    configmap_write(bad);
    CHECK_INT_EQ(until_counted(ports, 2), 0);
    for (int i = 0; i < 2; i++) {
        CHECK_INT_EQ(reloads(ports[i], "refused"), 1);
        CHECK_INT_EQ(refused_now(ports[i]), 1);
        CHECK(fx_log_line(logs[i], "config file refused", "nowhere", NULL, 0));
        CHECK(listed(ports[i], "added", "new in v2") && listed(ports[i], "old", NULL));
        CHECK(!listed(ports[i], "stray", NULL));
    }
    CHECK_INT_EQ(registry_rev(), rev0 + 1);
    /* The events the admin API shows: the start-up load and the change applied (once each, for
     * the fleet), the bad file refused by each replica. */
    const char *events;
    CHECK_INT_EQ(http_get(ports[1], "/admin/v1/config/events", 1, &events), 200);
    CHECK_INT_EQ(count(events, "\"result\":\"applied\""), 2);
    CHECK_INT_EQ(count(events, "\"result\":\"refused\""), 2);
    CHECK_CONTAINS(events, "\"instance\":\"ingress-a\",");
    CHECK_CONTAINS(events, "\"instance\":\"ingress-b\",");
    CHECK_CONTAINS(events, "nowhere");
    char revision[64];
    snprintf(revision, sizeof(revision), "\"revision\":%lld,", rev0 + 1);
    CHECK_CONTAINS(events, revision);
    CHECK(strstr(events, "\"result\":\"refused\"") < strstr(events, revision)); /* newest first */
    TEST_PASS("configmap swap to a bad file: refused, logged, counted and shown as events; "
              "registry as it was");

    /* 2b. A replica starting (a scale-up) while the bad file is mounted: it starts, refuses the
     * file the same way and serves the registry as it is. */
    char file[400], log_c[300];
    snprintf(file, sizeof(file), "%s/mcpq.json", cm);
    const char *env_c[] = {"MCPQ_CONFIG_WATCH_MS=200", NULL};
    int port_c = fx_free_port();
    pid_t pid_c = fx_spawn_ingress(&fx, "ingress-c", port_c, file, env_c, log_c, sizeof(log_c));
    CHECK(pid_c > 0);
    long long t0 = fx_now_ms();
    while (reloads(port_c, "refused") != 1 && fx_now_ms() - t0 < WAIT_MS)
        fx_sleep_ms(100);
    CHECK_INT_EQ(reloads(port_c, "refused"), 1);
    CHECK(listed(port_c, "added", "new in v2") && !listed(port_c, "stray", NULL));
    CHECK_INT_EQ(refused_now(port_c), 1);
    CHECK(fx_log_line(log_c, "config file refused", "nowhere", NULL, 0));
    CHECK_INT_EQ(registry_rev(), rev0 + 1);
    CHECK_INT_EQ(fx_stop_pid(pid_c, 10000), 0);
    TEST_PASS("a replica starting with the bad file mounted: starts, refuses it, serves the "
              "registry");

    /* 3. Back to the good file: already applied, nothing moves. */
    configmap_write(v2);
    CHECK_INT_EQ(until_counted(ports, 3), 0);
    CHECK_INT_EQ(reloads(ports[0], "unchanged") + reloads(ports[1], "unchanged"), 3);
    CHECK_INT_EQ(refused_now(ports[0]) + refused_now(ports[1]), 0);
    CHECK_INT_EQ(registry_rev(), rev0 + 1);
    TEST_PASS("configmap swap back to the applied file: already applied, revision unchanged");

    /* 3b. A file valid alone that clashes with the registry (a robot another tenant declares,
     * created through the admin API): refused when applied, nothing written. */
    const char *h_admin[] = {"Authorization: Bearer " ADMIN, NULL};
    char url[96];
    fx_reply_t r;
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/admin/v1/tenants", ports[0]);
    CHECK_INT_EQ(fx_http_post(url, h_admin, "{\"id\":\"other\",\"robots\":[\"r1\"]}", &r), 0);
    CHECK_INT_EQ(r.status, 201);
    long long rev1 = registry_rev();
    configmap_write(clash);
    CHECK_INT_EQ(until_counted(ports, 4), 0);
    for (int i = 0; i < 2; i++) {
        CHECK_INT_EQ(reloads(ports[i], "refused"), 2);
        CHECK_INT_EQ(refused_now(ports[i]), 1);
        CHECK(fx_log_line(logs[i], "config file refused", "already declared by tenant", NULL, 0));
    }
    CHECK_INT_EQ(registry_rev(), rev1);
    configmap_write(v2);
    CHECK_INT_EQ(until_counted(ports, 5), 0);
    CHECK_INT_EQ(registry_rev(), rev1);
    TEST_PASS("configmap swap to a file clashing with the registry: refused, nothing written");

    /* 4. With MCPQ_CONFIG_PRUNE=1, a tool the file no longer names disappears. */
    for (int i = 0; i < 2; i++)
        CHECK_INT_EQ(fx_stop_pid(pids[i], 10000), 0);
    start_pair("ingress-a2", "ingress-b2", ports, 1, pids, logs);
    CHECK(listed(ports[0], "old", NULL) && listed(ports[1], "old", NULL));
    configmap_write(v4);
    ms = until_both(ports, "old", NULL, 0);
    printf("# both replicas dropped the pruned tool %lld ms after the swap\n", ms);
    CHECK(ms >= 0);
    CHECK(listed(ports[0], "added", "changed in v4") && listed(ports[1], "added", "changed in v4"));
    CHECK_INT_EQ(until_counted(ports, 1), 0);
    CHECK_INT_EQ(registry_rev(), rev1 + 1);
    TEST_PASS("configmap swap with MCPQ_CONFIG_PRUNE=1: a tool the file dropped disappears");

    for (int i = 0; i < 2; i++)
        CHECK_INT_EQ(fx_stop_pid(pids[i], 10000), 0);
    redisFree(redis);
    fx_stop(&fx);
    curl_global_cleanup();
    return 0;
}
