/*
 * Integration test of task-mode tools (docs/protocol.md, issue 5) on a real stack: redis-server,
 * mcpq-devbroker, one mcpq-ingress, a worker without a robot id and a robot worker (r1):
 *   - a task with RobotId r1 runs on the robot worker, one without on the other worker;
 *   - a task for a robot nobody runs stays waiting;
 *   - tasks waiting for the same robot start in TaskPriority order (higher first), one at a
 *     time;
 *   - workerSysCancelTask on a running exec task ends it cancelled and kills its process;
 *   - a robot worker killed with SIGKILL mid-task: restarted, the task runs again (attempt 2)
 *     and completes; never left running;
 *   - bad RobotId / TaskPriority are -32602.
 */
#include "check.h"
#include "names.h"
#include "fixture.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static fx_stack_t fx;
static int port;
static redisContext *rc;
static char tool_path[300];

static const char script[] =
    "#!/bin/sh\n"
    "env=$(cat)\n"
    "secs=$(printf '%s' \"$env\" | sed -n 's/.*\"secs\":\\([0-9]*\\).*/\\1/p')\n"
    "pidf=$(printf '%s' \"$env\" | sed -n 's/.*\"pidfile\":\"\\([^\"]*\\)\".*/\\1/p')\n"
    "[ -n \"$pidf\" ] && echo $$ > \"$pidf\"\n"
    "echo 'progress 1 2 working' >&2\n"
    "sleep \"${secs:-0}\"\n"
    "printf '{\"content\":[{\"type\":\"text\",\"text\":\"done\"}],\"isError\":false}'\n";

static cJSON *post(const char *server, const char *body)
{
    char url[160];
    fx_reply_t r;
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/mcp%s%s", port, server ? "/" : "",
             server ? server : "");
    const char *hdrs[] = {"Authorization: Bearer tasks-key", NULL};
    CHECK_INT_EQ(fx_http_post(url, hdrs, body, &r), 0);
    CHECK_INT_EQ(r.status, 200);
    cJSON *j = cJSON_Parse(r.body);
    CHECK(j != NULL);
    return j;
}

/* Starts a task of `job` with the given extra arguments; returns its TaskId (malloc'd). */
static char *start(const char *args)
{
    char body[1024];
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"job\",\"arguments\":{%s}}}",
             args);
    cJSON *j = post(NULL, body);
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(j, "result"), "structuredContent");
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(sc, "TaskId"));
    CHECK(id != NULL);
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(sc, "TaskStatus")),
                 "waiting");
    char *out = strdup(id);
    cJSON_Delete(j);
    return out;
}

/* A field of the task's hash in Redis ("" when absent); the buffer is reused. */
static const char *field(const char *id, const char *name)
{
    static char buf[512];
    redisReply *r = redisCommand(rc, "HGET " NAMES_KEY_TASK "%s %s", id, name);
    CHECK(r != NULL);
    snprintf(buf, sizeof(buf), "%s", r->type == REDIS_REPLY_STRING ? r->str : "");
    freeReplyObject(r);
    return buf;
}

static int wait_state(const char *id, const char *state, int ms)
{
    long long until = fx_now_ms() + ms;
    while (fx_now_ms() < until) {
        if (strcmp(field(id, "state"), state) == 0)
            return 0;
        fx_sleep_ms(50);
    }
    fprintf(stderr, "task %s: state %s, wanted %s\n", id, field(id, "state"), state);
    return -1;
}

static long long num(const char *id, const char *name)
{
    return strtoll(field(id, name), NULL, 10);
}

static void write_config(const char *path)
{
    char cfg[2048];
    snprintf(cfg, sizeof(cfg),
             "{\"tenants\": [{\"id\": \"t\", \"api_keys\": [{\"id\": \"k\", \"key\": "
             "\"tasks-key\"}]}],"
             " \"servers\": [{\"tenant\": \"t\", \"name\": \"default\"}],"
             " \"tools\": [{\"tenant\": \"t\", \"server\": \"default\", \"name\": \"job\","
             " \"published\": \"1\", \"versions\": [{\"version\": \"1\", \"mode\": \"task\","
             " \"timeout_ms\": 60000, \"inputSchema\": {\"type\": \"object\"},"
             " \"executor\": {\"type\": \"exec\", \"argv\": [\"/bin/sh\", \"%s\"]}}]}]}",
             tool_path);
    fx_write_file(path, cfg, 0600);
}

int main(void)
{
    char cfg[300], pidfile[300], args[600];
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (fx_start(&fx, 2) < 0)
        return 1;
    snprintf(tool_path, sizeof(tool_path), "%s/job.sh", fx.dir);
    fx_write_file(tool_path, script, 0755);
    snprintf(cfg, sizeof(cfg), "%s/tasks.json", fx.dir);
    write_config(cfg);
    port = fx_free_port();
    pid_t ing = fx_spawn_ingress(&fx, "ingress", port, cfg, NULL, NULL, 0);
    CHECK(ing > 0);
    const char *common[] = {"MCPQ_TASK_LEASE_MS=2000", "MCPQ_KILL_GRACE_MS=500", NULL};
    const char *robot[] = {"MCPQ_TASK_LEASE_MS=2000", "MCPQ_KILL_GRACE_MS=500", "MCPQ_ROBOT_ID=r1",
                           NULL};
    pid_t w_any = fx_spawn_worker(&fx, "w-any", common);
    pid_t w_r1 = fx_spawn_worker(&fx, "w-r1", robot);
    CHECK(w_any > 0 && w_r1 > 0);
    rc = redisConnect("127.0.0.1", fx.redis_port);
    CHECK(rc && !rc->err);

    char *a = start("\"RobotId\":\"r1\",\"secs\":0");
    char *b = start("\"secs\":0");
    char *n = start("\"RobotId\":\"nobody\",\"secs\":0");
    CHECK_INT_EQ(wait_state(a, "complete", 20000), 0);
    CHECK_INT_EQ(wait_state(b, "complete", 20000), 0);
    CHECK_STR_EQ(field(a, "worker"), "w-r1");
    CHECK_STR_EQ(field(b, "worker"), "w-any");
    CHECK_STR_EQ(field(n, "state"), "waiting");
    TEST_PASS("RobotId r1 runs on the r1 worker, no RobotId on the other; robot 'nobody' waits");

    /* One at a time on r1: while `hold` runs, three wait; they start by priority. */
    char *hold = start("\"RobotId\":\"r1\",\"secs\":2");
    CHECK_INT_EQ(wait_state(hold, "running", 20000), 0);
    char *low = start("\"RobotId\":\"r1\",\"TaskPriority\":10,\"secs\":0");
    char *high = start("\"RobotId\":\"r1\",\"TaskPriority\":90,\"secs\":0");
    char *mid = start("\"RobotId\":\"r1\",\"secs\":0");
    CHECK_INT_EQ(wait_state(low, "complete", 30000), 0);
    CHECK_INT_EQ(wait_state(mid, "complete", 30000), 0);
    CHECK_INT_EQ(wait_state(high, "complete", 30000), 0);
    CHECK(num(hold, "end_ms") <= num(high, "begin_ms"));
    CHECK(num(high, "begin_ms") <= num(mid, "begin_ms"));
    CHECK(num(mid, "begin_ms") <= num(low, "begin_ms"));
    CHECK_STR_EQ(field(mid, "priority"), "50");
    TEST_PASS("a robot runs one task at a time, waiting tasks start by TaskPriority (90, 50, 10)");

    snprintf(pidfile, sizeof(pidfile), "%s/cancel.pid", fx.dir);
    snprintf(args, sizeof(args), "\"secs\":30,\"pidfile\":\"%s\"", pidfile);
    char *c = start(args);
    CHECK_INT_EQ(wait_state(c, "running", 20000), 0);
    CHECK_INT_EQ(fx_wait_file(pidfile, 10000), 0);
    fx_sleep_ms(200);
    char body[512];
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"workerSysCancelTask\",\"arguments\":{\"TaskId\":\"%s\"}}}",
             c);
    cJSON *j = post("system", body);
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(j, "result"), "structuredContent");
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sc, "success")));
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
                     cJSON_GetObjectItemCaseSensitive(sc, "data"), "TaskStatus")),
                 "cancelled");
    cJSON_Delete(j);
    FILE *f = fopen(pidfile, "r");
    CHECK(f != NULL);
    int child = 0;
    CHECK_INT_EQ(fscanf(f, "%d", &child), 1);
    fclose(f);
    long long until = fx_now_ms() + 10000;
    while (kill(child, 0) == 0 && fx_now_ms() < until)
        fx_sleep_ms(50);
    CHECK(kill(child, 0) != 0);
    CHECK_STR_EQ(field(c, "state"), "cancelled");
    TEST_PASS("workerSysCancelTask of a running exec task: cancelled, its process is gone");

    char *d = start("\"RobotId\":\"r1\",\"secs\":3");
    CHECK_INT_EQ(wait_state(d, "running", 20000), 0);
    CHECK_INT_EQ(kill(w_r1, SIGKILL), 0);
    fx_wait_exit(w_r1, 5000);
    w_r1 = fx_spawn_worker(&fx, "w-r1", robot);
    CHECK(w_r1 > 0);
    CHECK_INT_EQ(wait_state(d, "complete", 60000), 0);
    CHECK_STR_EQ(field(d, "attempts"), "2");
    TEST_PASS("a robot worker killed mid-task: the task runs again (attempt 2) and completes");

    /* A worker stopped with SIGTERM mid-task hands the task back at once: with a 30 s lease,
     * only the hand-back can bring it back to waiting within seconds. */
    const char *r2[] = {"MCPQ_TASK_LEASE_MS=30000", "MCPQ_KILL_GRACE_MS=500",
                        "MCPQ_SHUTDOWN_GRACE_MS=300", "MCPQ_ROBOT_ID=r2", NULL};
    pid_t w_r2 = fx_spawn_worker(&fx, "w-r2", r2);
    CHECK(w_r2 > 0);
    char *e = start("\"RobotId\":\"r2\",\"secs\":4");
    CHECK_INT_EQ(wait_state(e, "running", 20000), 0);
    long long stopped_at = fx_now_ms();
    CHECK_INT_EQ(fx_stop_pid(w_r2, 10000), 0); /* SIGTERM, exit status 0 */
    CHECK_INT_EQ(wait_state(e, "waiting", 5000), 0);
    CHECK(fx_now_ms() - stopped_at < 5000);
    CHECK_STR_EQ(field(e, "attempts"), "0");
    CHECK_STR_EQ(field(e, "msg"), "waiting again: its worker shut down");
    w_r2 = fx_spawn_worker(&fx, "w-r2b", r2);
    CHECK(w_r2 > 0);
    CHECK_INT_EQ(wait_state(e, "complete", 30000), 0);
    CHECK_STR_EQ(field(e, "worker"), "w-r2b");
    CHECK_STR_EQ(field(e, "attempts"), "1");
    TEST_PASS("a worker stopped mid-task hands it back at once (attempt not counted); another "
              "worker of the pool completes it");

    j = post(NULL, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":"
                   "\"job\",\"arguments\":{\"TaskPriority\":101}}}");
    CHECK(cJSON_GetObjectItemCaseSensitive(j, "error") != NULL);
    CHECK_INT_EQ(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "error"), "code")
            ->valueint,
        -32602);
    cJSON_Delete(j);
    j = post(NULL, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":"
                   "\"job\",\"arguments\":{\"RobotId\":\"bad robot\"}}}");
    CHECK(cJSON_GetObjectItemCaseSensitive(j, "error") != NULL);
    cJSON_Delete(j);
    TEST_PASS("TaskPriority outside 0-100 and a malformed RobotId are -32602");

    free(a);
    free(b);
    free(n);
    free(hold);
    free(low);
    free(high);
    free(mid);
    free(c);
    free(d);
    free(e);
    redisFree(rc);
    CHECK_INT_EQ(fx_stop_pid(w_any, 10000), 0);
    CHECK_INT_EQ(fx_stop_pid(w_r1, 10000), 0);
    CHECK_INT_EQ(fx_stop_pid(w_r2, 10000), 0);
    CHECK_INT_EQ(fx_stop_pid(ing, 10000), 0);
    fx_stop(&fx);
    curl_global_cleanup();
    return 0;
}
