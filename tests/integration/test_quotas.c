/*
 * What one tenant may take of what every tenant shares (docs/tools.md "Task mode, robots and
 * priorities" and "Tenant quotas", ingress/core/quota.h) on a real stack: redis-server,
 * mcpq-devbroker and one mcpq-ingress (no worker: tasks stay waiting, which is enough to count
 * them). Tenant a declares robot "robot-a" and has small quotas (2 notification streams,
 * 2 sessions, 3 tasks, 1000 file bytes); tenant b has the defaults.
 *   - robots: b naming robot-a gets -32602 (which tenant owns it is not said) and no task is
 *     created; a naming robot-a works; a robot nobody declares is shared: both may name it;
 *   - sessions: a's third initialize is 429, -32029 naming quotas.sessions while b's works;
 *     after a DELETE (and after a session expired, its key gone) a new one works;
 *   - notification streams: a's third (a subscriptions/listen after two GET streams) is 429,
 *     -32029 naming quotas.notification_streams while b can open one; once a stream ended
 *     another opens;
 *   - tasks: a's fourth task is 429, -32029 naming quotas.tasks (nothing created) while b's
 *     works; a task whose hash expired frees its place;
 *   - file bytes: a presign that would take a past 1000 bytes is 429 naming quotas.file_bytes,
 *     one that fits works, and expired files free their bytes;
 *   - admin API: tenants take "robots" and "quotas"; a robot another tenant declares is 409
 *     naming the field, on POST, PATCH and PUT /admin/v1/config; a robot declared through
 *     the API is refused to other tenants' tasks.
 */
#include "check.h"
#include "names.h"
#include "fixture.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define TOKEN "quotas-it-admin-token-0123456789"
#define A_KEY "Authorization: Bearer a-key"
#define B_KEY "Authorization: Bearer b-key"
#define LEGACY_V "MCP-Protocol-Version: " NAMES_PROTO_2025_06_18
#define META                                                                                       \
    "\"_meta\":{\"" NAMES_META_PROTOCOL_VERSION "\":\"" NAMES_PROTO_MODERN "\","                   \
    "\"io.modelcontextprotocol/clientInfo\":{\"name\":\"itest\",\"version\":\"1\"},"               \
    "\"io.modelcontextprotocol/clientCapabilities\":{}}"
#define LISTEN_BODY                                                                                \
    "{\"jsonrpc\":\"2.0\",\"id\":\"sub\",\"method\":\"subscriptions/listen\",\"params\":{" META    \
    ",\"notifications\":{\"toolsListChanged\":true}}}"
#define FILES_TTL "3" /* s: MCPQ_FILES_TTL_S of the ingress */

static fx_stack_t fx;
static int port;
static redisContext *redis;

/* ---- raw HTTP on a connection of its own, which a stream keeps open ---- */

typedef struct raw {
    int fd;
    long status;
    char buf[8192]; /* the head and what came of the body */
    size_t len;
} raw_t;

/* Sends req on a new connection and reads until the head is in and, when it announces a
 * Content-Length, its body too (an SSE stream has none: the connection stays open for
 * raw_close), at most 5 s. */
static void raw_send(raw_t *r, const char *req)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    memset(r, 0, sizeof(*r));
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    r->fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(r->fd >= 0);
    CHECK_INT_EQ(connect(r->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    CHECK_INT_EQ(write(r->fd, req, strlen(req)), (long long)strlen(req));
    long long until = fx_now_ms() + 5000;
    for (;;) {
        const char *end = strstr(r->buf, "\r\n\r\n");
        if (end) {
            const char *cl = strcasestr(r->buf, "\r\nContent-Length:");
            size_t head = (size_t)(end + 4 - r->buf);
            if (!cl || cl > end || r->len >= head + strtoul(cl + 17, NULL, 10))
                break;
        }
        struct pollfd p = {.fd = r->fd, .events = POLLIN};
        CHECK(fx_now_ms() < until && r->len + 1 < sizeof(r->buf));
        if (poll(&p, 1, 100) <= 0)
            continue;
        ssize_t n = read(r->fd, r->buf + r->len, sizeof(r->buf) - 1 - r->len);
        CHECK(n > 0);
        r->len += (size_t)n;
        r->buf[r->len] = '\0';
    }
    CHECK(strncmp(r->buf, "HTTP/1.1 ", 9) == 0);
    r->status = strtol(r->buf + 9, NULL, 10);
}

static void raw_close(raw_t *r)
{
    if (r->fd >= 0)
        close(r->fd);
    r->fd = -1;
}

/* One exchange: method path with the extra header lines (each ending "\r\n") and body. */
static void http(raw_t *r, const char *method, const char *path, const char *headers,
                 const char *body)
{
    char req[4096];
    snprintf(req, sizeof(req),
             "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n%s"
             "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
             method, path, port, headers, body ? strlen(body) : 0, body ? body : "");
    raw_send(r, req);
    raw_close(r);
}

/* A value of the reply's head ("" when absent); the buffer is reused. */
static const char *header(const raw_t *r, const char *name)
{
    static char out[128];
    char needle[64];
    snprintf(needle, sizeof(needle), "\r\n%s:", name);
    const char *p = strcasestr(r->buf, needle);
    out[0] = '\0';
    if (p) {
        p += strlen(needle);
        p += strspn(p, " ");
        snprintf(out, sizeof(out), "%.*s", (int)strcspn(p, "\r\n"), p);
    }
    return out;
}

/* ---- MCP ---- */

static void mcp(raw_t *r, const char *key, const char *extra, const char *body)
{
    char h[512];
    snprintf(h, sizeof(h), "%s\r\nAccept: application/json, text/event-stream\r\n%s", key, extra);
    http(r, "POST", "/mcp", h, body);
}

/* initialize as key: the reply; *sid the session id ("" when refused). */
static void initialize(raw_t *r, const char *key, char *sid, size_t size)
{
    mcp(r, key, LEGACY_V "\r\n",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
        "\"" NAMES_PROTO_2025_06_18
        "\",\"capabilities\":{},\"clientInfo\":{\"name\":\"q\",\"version\":\"1\"}}}");
    snprintf(sid, size, "%s", header(r, "Mcp-Session-Id"));
}

/* Opens the legacy GET stream of session sid as key (the connection stays open when 200). */
static void get_stream(raw_t *r, const char *key, const char *sid)
{
    char req[1024];
    snprintf(
        req, sizeof(req),
        "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%s\r\nAccept: text/event-stream\r\n" LEGACY_V
        "\r\nMcp-Session-Id: %s\r\n\r\n",
        port, key, sid);
    raw_send(r, req);
}

/* A 2026-07-28 subscriptions/listen stream as key. */
static void listen_stream(raw_t *r, const char *key)
{
    char req[2048];
    snprintf(req, sizeof(req),
             "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%s\r\n"
             "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
             "MCP-Protocol-Version: " NAMES_PROTO_MODERN "\r\nMcp-Method: subscriptions/listen\r\n"
             "Content-Length: %zu\r\n\r\n%s",
             port, key, strlen(LISTEN_BODY), LISTEN_BODY);
    raw_send(r, req);
}

/* A tools/call of the task-mode tool "job" as key with the arguments args (JSON members). */
static void task(raw_t *r, const char *key, const char *args)
{
    char body[512];
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"job\","
             "\"arguments\":{\"text\":\"x\"%s%s}}}",
             *args ? "," : "", args);
    mcp(r, key, "", body);
}

/* The TaskId of a task-mode answer (checked to be one); the buffer is reused. */
static const char *task_id(const raw_t *r)
{
    static char id[64];
    CHECK_INT_EQ(r->status, 200);
    const char *p = strstr(r->buf, "\"structuredContent\":{\"TaskId\":\"");
    if (!p)
        fprintf(stderr, "not a task answer:\n%s\n", r->buf);
    CHECK(p != NULL);
    p += strlen("\"structuredContent\":{\"TaskId\":\"");
    snprintf(id, sizeof(id), "%.*s", (int)strcspn(p, "\""), p);
    return id;
}

static long long zcard(const char *key)
{
    redisReply *rr = redisCommand(redis, "ZCARD %s", key);
    CHECK(rr != NULL && rr->type == REDIS_REPLY_INTEGER);
    long long n = rr->integer;
    freeReplyObject(rr);
    return n;
}

static void redis_del(const char *key)
{
    redisReply *rr = redisCommand(redis, "DEL %s", key);
    CHECK(rr != NULL && rr->type == REDIS_REPLY_INTEGER && rr->integer == 1);
    freeReplyObject(rr);
}

/* ---- files ---- */

static void presign(raw_t *r, const char *key, long long size)
{
    char body[200];
    snprintf(body, sizeof(body),
             "{\"filename\":\"f.bin\",\"content_type\":\"application/octet-stream\",\"size\":%lld}",
             size);
    char h[128];
    snprintf(h, sizeof(h), "%s\r\n", key);
    http(r, "POST", "/v1/files/presign-upload", h, body);
}

/* ---- admin ---- */

static void admin(raw_t *r, const char *method, const char *path, const char *body)
{
    http(r, method, path, "Authorization: Bearer " TOKEN "\r\n", body);
}

/* Waits (up to 3 s: a registry change reaches a replica within 1 s) until a task of key
 * naming robot gets the answer holding want. */
static void wait_task_answer(const char *key, const char *robot, const char *want)
{
    char args[160];
    raw_t r;
    snprintf(args, sizeof(args), "\"RobotId\":\"%s\"", robot);
    long long until = fx_now_ms() + 3000;
    for (;;) {
        task(&r, key, args);
        if (strstr(r.buf, want))
            return;
        if (fx_now_ms() > until)
            fprintf(stderr, "wanted \"%s\", got:\n%s\n", want, r.buf);
        CHECK(fx_now_ms() <= until);
        fx_sleep_ms(100);
    }
}

static void write_config(const char *path)
{
    static const char cfg[] =
        "{\"tenants\": ["
        " {\"id\": \"a\", \"api_keys\": [{\"id\": \"k\", \"key\": \"a-key\"}],"
        "  \"robots\": [\"robot-a\"],"
        "  \"quotas\": {\"notification_streams\": 2, \"sessions\": 2, \"tasks\": 3,"
        "   \"file_bytes\": 1000}},"
        " {\"id\": \"b\", \"api_keys\": [{\"id\": \"k\", \"key\": \"b-key\"}]}],"
        " \"servers\": [{\"tenant\": \"a\", \"name\": \"default\"},"
        "  {\"tenant\": \"b\", \"name\": \"default\"}],"
        " \"tools\": ["
        "  {\"tenant\": \"a\", \"server\": \"default\", \"name\": \"job\", \"versions\": [{"
        "   \"version\": \"1\", \"mode\": \"task\", \"inputSchema\": {\"type\": \"object\"}, "
        "\"executor\": {\"type\": \"builtin\","
        "   \"name\": \"echo\"}}]},"
        "  {\"tenant\": \"b\", \"server\": \"default\", \"name\": \"job\", \"versions\": [{"
        "   \"version\": \"1\", \"mode\": \"task\", \"inputSchema\": {\"type\": \"object\"}, "
        "\"executor\": {\"type\": \"builtin\","
        "   \"name\": \"echo\"}}]}]}";
    fx_write_file(path, cfg, 0600);
}

static void test_robots(void)
{
    raw_t r;
    task(&r, B_KEY, "\"RobotId\":\"robot-a\",\"TaskPriority\":100");
    CHECK_INT_EQ(r.status, 200);
    CHECK_CONTAINS(r.buf, "\"code\":-32602");
    CHECK_CONTAINS(r.buf, "arguments.RobotId: robot \\\"robot-a\\\" is reserved for the tenant "
                          "that declares it");
    CHECK(strstr(r.buf, "\"a\"") == NULL); /* the owner is not named */
    CHECK_INT_EQ(zcard(NAMES_KEY_TASKS "b"), 0);
    CHECK_INT_EQ(zcard(NAMES_KEY_TASK_QUEUE "robot-a"), 0);
    task(&r, A_KEY, "\"RobotId\":\"robot-a\",\"TaskPriority\":90");
    task_id(&r);
    task(&r, A_KEY, "\"RobotId\":\"shared-1\"");
    task_id(&r);
    task(&r, B_KEY, "\"RobotId\":\"shared-1\"");
    task_id(&r);
    CHECK_INT_EQ(zcard(NAMES_KEY_TASKS "a"), 2);
    CHECK_INT_EQ(zcard(NAMES_KEY_TASKS "b"), 1);
    TEST_PASS("robots: b naming a's robot-a gets -32602 and no task; a may; an undeclared robot "
              "is shared");
}

static void test_tasks(void)
{
    raw_t r;
    char third[64];
    task(&r, A_KEY, ""); /* a's third task (two from test_robots) */
    snprintf(third, sizeof(third), "%s", task_id(&r));
    task(&r, A_KEY, "");
    CHECK_INT_EQ(r.status, 429);
    CHECK_CONTAINS(r.buf, "\"code\":-32029");
    CHECK_CONTAINS(r.buf, "tenant limit reached: 3 tasks in retention (quotas.tasks)");
    CHECK_CONTAINS(r.buf, "\"data\":{\"quota\":\"quotas.tasks\",\"limit\":3}");
    CHECK_INT_EQ(zcard(NAMES_KEY_TASKS "a"), 3);
    task(&r, B_KEY, "");
    task_id(&r);
    /* a task whose retention ran out (its hash gone) no longer counts */
    char key[128];
    snprintf(key, sizeof(key), NAMES_KEY_TASK "%s", third);
    redis_del(key);
    task(&r, A_KEY, "");
    task_id(&r);
    task(&r, A_KEY, "");
    CHECK_INT_EQ(r.status, 429);
    TEST_PASS("tasks: a's fourth task is 429, -32029 naming quotas.tasks, b's works; an expired "
              "task frees its place");
}

static void test_sessions_and_streams(void)
{
    raw_t r, s1, s2, sb, l;
    char a1[128], a2[128], a3[128], b1[128];
    initialize(&r, A_KEY, a1, sizeof(a1));
    CHECK_INT_EQ(r.status, 200);
    CHECK(a1[0] != '\0');
    initialize(&r, A_KEY, a2, sizeof(a2));
    CHECK_INT_EQ(r.status, 200);
    initialize(&r, A_KEY, a3, sizeof(a3));
    CHECK_INT_EQ(r.status, 429);
    CHECK_STR_EQ(a3, "");
    CHECK_CONTAINS(r.buf, "\"code\":-32029");
    CHECK_CONTAINS(r.buf, "tenant limit reached: 2 live sessions (quotas.sessions)");
    initialize(&r, B_KEY, b1, sizeof(b1));
    CHECK_INT_EQ(r.status, 200);
    TEST_PASS("sessions: a's third initialize is 429, -32029 naming quotas.sessions; b's works");

    get_stream(&s1, A_KEY, a1);
    CHECK_INT_EQ(s1.status, 200);
    CHECK_CONTAINS(header(&s1, "Content-Type"), "text/event-stream");
    get_stream(&s2, A_KEY, a2);
    CHECK_INT_EQ(s2.status, 200);
    listen_stream(&l, A_KEY);
    CHECK_INT_EQ(l.status, 429);
    CHECK_CONTAINS(l.buf, "\"code\":-32029");
    CHECK_CONTAINS(l.buf, "tenant limit reached: 2 notification streams open on this replica "
                          "(quotas.notification_streams)");
    raw_close(&l);
    get_stream(&sb, B_KEY, b1);
    CHECK_INT_EQ(sb.status, 200);
    listen_stream(&l, B_KEY);
    CHECK_INT_EQ(l.status, 200);
    raw_close(&l);
    TEST_PASS("notification streams: a's third (subscriptions/listen after two GET streams) is "
              "429, -32029 naming quotas.notification_streams; b opens both kinds");

    /* DELETE of a1 ends the session and its stream: a gets a session and a stream again */
    char h[256];
    snprintf(h, sizeof(h), "%s\r\nMcp-Session-Id: %s\r\n", A_KEY, a1);
    http(&r, "DELETE", "/mcp", h, NULL);
    CHECK_INT_EQ(r.status, 200);
    initialize(&r, A_KEY, a3, sizeof(a3));
    CHECK_INT_EQ(r.status, 200);
    CHECK(a3[0] != '\0');
    long long until = fx_now_ms() + 3000;
    for (;;) { /* the ended stream leaves once its request is over */
        listen_stream(&l, A_KEY);
        if (l.status == 200 || fx_now_ms() > until)
            break;
        raw_close(&l);
        fx_sleep_ms(50);
    }
    CHECK_INT_EQ(l.status, 200);
    raw_close(&l);
    raw_close(&s1);
    /* a session that expired (its key gone) no longer counts */
    initialize(&r, A_KEY, a1, sizeof(a1));
    CHECK_INT_EQ(r.status, 429);
    char key[200];
    snprintf(key, sizeof(key), NAMES_KEY_SESSION "%s", a3);
    redis_del(key);
    initialize(&r, A_KEY, a1, sizeof(a1));
    CHECK_INT_EQ(r.status, 200);
    raw_close(&s2);
    raw_close(&sb);
    TEST_PASS("after a DELETE a new session and stream work; an expired session frees its place");
}

static void test_files(void)
{
    raw_t r;
    presign(&r, A_KEY, 600);
    CHECK_INT_EQ(r.status, 200);
    presign(&r, A_KEY, 500);
    CHECK_INT_EQ(r.status, 429);
    CHECK_CONTAINS(r.buf, "{\"error\":\"tenant limit reached: 1000 bytes of stored and presigned "
                          "files (quotas.file_bytes); 600 in use, this file needs 500\"}");
    presign(&r, B_KEY, 5000);
    CHECK_INT_EQ(r.status, 200);
    presign(&r, A_KEY, 400); /* exactly up to the quota */
    CHECK_INT_EQ(r.status, 200);
    presign(&r, A_KEY, 1);
    CHECK_INT_EQ(r.status, 429);
    fx_sleep_ms(atoi(FILES_TTL) * 1000 + 300); /* every file of a expired */
    presign(&r, A_KEY, 1000);
    CHECK_INT_EQ(r.status, 200);
    TEST_PASS("file bytes: a presign past 1000 bytes is 429 naming quotas.file_bytes, one that "
              "fits works, b's works; expired files free their bytes");
}

static void test_admin(void)
{
    raw_t r;
    admin(&r, "POST", "/admin/v1/tenants", "{\"id\":\"c\",\"robots\":[\"robot-c\",\"robot-a\"]}");
    CHECK_INT_EQ(r.status, 409);
    CHECK_CONTAINS(r.buf, "$.robots[1]: robot \\\"robot-a\\\" is already declared by tenant "
                          "\\\"a\\\"");
    admin(&r, "POST", "/admin/v1/tenants",
          "{\"id\":\"c\",\"robots\":[\"robot-c\"],\"quotas\":{\"tasks\":5}}");
    CHECK_INT_EQ(r.status, 201);
    CHECK_CONTAINS(r.buf, "\"robots\":[\"robot-c\"]");
    CHECK_CONTAINS(r.buf, "\"quotas\":{\"tasks\":5}");
    admin(&r, "PATCH", "/admin/v1/tenants/b", "{\"robots\":[\"robot-c\"]}");
    CHECK_INT_EQ(r.status, 409);
    CHECK_CONTAINS(r.buf, "$.robots[0]: robot \\\"robot-c\\\" is already declared by tenant "
                          "\\\"c\\\"");
    admin(&r, "PATCH", "/admin/v1/tenants/b",
          "{\"robots\":[\"robot-b\"],\"quotas\":{\"tasks\":0}}");
    CHECK_INT_EQ(r.status, 200);
    CHECK_CONTAINS(r.buf, "\"robots\":[\"robot-b\"]");
    admin(&r, "PATCH", "/admin/v1/tenants/b", "{\"quotas\":{\"tasks\":-1}}");
    CHECK_INT_EQ(r.status, 400);
    CHECK_CONTAINS(r.buf, "quotas.tasks");
    admin(&r, "PUT", "/admin/v1/config", "{\"tenants\":[{\"id\":\"d\",\"robots\":[\"robot-b\"]}]}");
    CHECK_INT_EQ(r.status, 409);
    CHECK_CONTAINS(r.buf, "$.tenants[0].robots[0]: robot \\\"robot-b\\\" is already declared by "
                          "tenant \\\"b\\\"");
    /* robot-b is b's now: a's task naming it is refused once the replica has the change */
    wait_task_answer(A_KEY, "robot-b", "is reserved for the tenant that declares it");
    wait_task_answer(B_KEY, "robot-b", "\"TaskId\"");
    TEST_PASS("admin API: robots and quotas taken and shown; a robot another tenant declares is "
              "409 naming the field (POST, PATCH, PUT config); declared robots are enforced");
}

int main(void)
{
    char cfg[300], dir[300], e_dir[340];
    if (fx_start(&fx, 2) < 0)
        return 1;
    snprintf(cfg, sizeof(cfg), "%s/quotas.json", fx.dir);
    write_config(cfg);
    snprintf(dir, sizeof(dir), "%s/files", fx.dir);
    snprintf(e_dir, sizeof(e_dir), "MCPQ_FILES_DIR=%s", dir);
    const char *env[] = {e_dir, "MCPQ_FILES_TTL_S=" FILES_TTL, "MCPQ_ADMIN_TOKEN=" TOKEN, NULL};
    port = fx_free_port();
    CHECK(fx_spawn_ingress(&fx, "ingress", port, cfg, env, NULL, 0) > 0);
    redis = redisConnect("127.0.0.1", fx.redis_port);
    CHECK(redis != NULL && !redis->err);

    test_robots();
    test_tasks();
    test_sessions_and_streams();
    test_files();
    test_admin();

    redisFree(redis);
    fx_stop(&fx);
    return 0;
}
