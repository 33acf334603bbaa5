/*
 * test_accesslog.c - the request id and the access log end to end (docs/operations.md "Logs
 * and tracing", "Access log"): redis-server, mcpq-devbroker, an mcpq-ingress with a separate
 * operations listener, one mcpq-worker (tests/fixture.c), and an in-process HTTP server that
 * is an http executor's tool and records the X-Request-Id it is sent. Checked, as a client and
 * an operator see it:
 *   - a tools/call sent with X-Request-Id gets it back; exactly one access line names it, with
 *     method, route, status, the bytes the client received, a duration, the tenant, the trace
 *     id of the traceparent sent, the listener and the client; the worker's lines about the job
 *     carry the same request_id and trace_id; the tool gets the header, an exec tool
 *     MCPQ_REQUEST_ID;
 *   - an id that is too long or holds a space is replaced by a new 32-hex id (so is none);
 *   - a 404, a 405, a 413, a route of the other listener and the ops /healthz get their header
 *     and line, the route a pattern (never the ids or the query of the target);
 *   - an SSE answer carries the header, and its line counts the bytes of the frames sent;
 *   - a call whose client goes away before the answer is logged with status 0 and "aborted";
 *   - a tools/call a worker answered has stages_us: every stage of ingress/core/stages.h, none
 *     negative, their sum within the call's duration_us (plus a clock allowance), the execute
 *     stage holding the tool's own time; other requests have none; /metrics has
 *     mcpq_call_stage_seconds for every stage, and promtool accepts it;
 *   - with MCPQ_ACCESS_LOG=0 the ingress writes no access line (but still returns the id).
 */
#include "check.h"
#include "fixture.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define T1 "4bf92f3577b34da6a3ce929d0e0e4736"
#define P "00f067aa0ba902b7"
#define KEY "Authorization: Bearer al-key"

static fx_stack_t fx;
static int port, ops_port, srv_port;

/* ---- the tool: the X-Request-Id of the last request it got ---- */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char tool_rid[256], up_rid[256]; /* the http tool's; the upstream's tools/call's */

static enum MHD_Result reply(struct MHD_Connection *conn, int status, const char *body)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(r, "Content-Type", "application/json");
    enum MHD_Result ret = MHD_queue_response(conn, (unsigned)status, r);
    MHD_destroy_response(r);
    return ret;
}

/* /mcp: the smallest legacy MCP server an mcp executor talks to (initialize, tools/call; any
 * other request, server/discover included, is -32601). */
static enum MHD_Result on_upstream(struct MHD_Connection *conn, const util_buf_t *b,
                                   const char *rid)
{
    cJSON *j = cJSON_Parse(b->data ? b->data : "");
    const char *m = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "method"));
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(j, "id");
    char body[512];
    if (!cJSON_IsNumber(id))
        snprintf(body, sizeof(body), "%s", "");
    else if (m && strcmp(m, "initialize") == 0)
        snprintf(
            body, sizeof(body),
            "{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{\"protocolVersion\":\"2025-06-18\","
            "\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":\"up\",\"version\":\"1\"}}}",
            id->valueint);
    else if (m && strcmp(m, "tools/call") == 0)
        snprintf(body, sizeof(body),
                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{\"content\":[{\"type\":\"text\","
                 "\"text\":\"up\"}]}}",
                 id->valueint);
    else
        snprintf(body, sizeof(body),
                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"error\":{\"code\":-32601,\"message\":\"no\"}}",
                 id->valueint);
    if (m && strcmp(m, "tools/call") == 0) {
        pthread_mutex_lock(&mu);
        snprintf(up_rid, sizeof(up_rid), "%s", rid ? rid : "(none)");
        pthread_mutex_unlock(&mu);
    }
    cJSON_Delete(j);
    return reply(conn, body[0] ? 200 : 202, body);
}

/* 1 when what the server recorded in seen (tool_rid, up_rid) is want; else says what it was. */
static int seen_is(const char *seen, const char *want)
{
    pthread_mutex_lock(&mu);
    int same = strcmp(seen, want) == 0;
    if (!same)
        fprintf(stderr, "the server saw X-Request-Id \"%s\", not \"%s\"\n", seen, want);
    pthread_mutex_unlock(&mu);
    return same;
}

static enum MHD_Result on_tool(struct MHD_Connection *conn, const char *url, const char *method,
                               const util_buf_t *b)
{
    (void)method;
    const char *rid = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Request-Id");
    if (strcmp(url, "/mcp") == 0)
        return on_upstream(conn, b, rid);
    pthread_mutex_lock(&mu);
    snprintf(tool_rid, sizeof(tool_rid), "%s", rid ? rid : "(none)");
    pthread_mutex_unlock(&mu);
    return reply(conn, 200, "{\"ok\":true}");
}

static void write_config(const char *path)
{
    char cfg[8192];
    snprintf(cfg, sizeof(cfg),
             "{\"tenants\":[{\"id\":\"al\",\"api_keys\":[{\"id\":\"k\",\"key\":\"al-key\"}]}],"
             "\"servers\":[{\"tenant\":\"al\",\"name\":\"default\"}],"
             "\"tools\":["
             "{\"tenant\":\"al\",\"server\":\"default\",\"name\":\"web\",\"published\":\"1\","
             "\"versions\":[{\"version\":\"1\",\"inputSchema\":{\"type\":\"object\"},"
             "\"executor\":{\"type\":\"http\",\"url\":\"http://127.0.0.1:%d/tool\","
             "\"headers\":{\"X-Request-Id\":\"configured\"}}}]},"
             "{\"tenant\":\"al\",\"server\":\"default\",\"name\":\"up\",\"published\":\"1\","
             "\"versions\":[{\"version\":\"1\",\"inputSchema\":{\"type\":\"object\"},"
             "\"executor\":{\"type\":\"mcp\",\"url\":\"http://127.0.0.1:%d/mcp\",\"tool\":"
             "\"echo\",\"headers\":{\"X-Request-Id\":\"configured\"}}}]},"
             "{\"tenant\":\"al\",\"server\":\"default\",\"name\":\"sh\",\"published\":\"1\","
             "\"versions\":[{\"version\":\"1\",\"inputSchema\":{\"type\":\"object\"},"
             "\"executor\":{\"type\":\"exec\",\"argv\":[\"sh\",\"-c\","
             "\"printf 'rid=%%s' \\\"$MCPQ_REQUEST_ID\\\"\"]}}]},"
             "{\"tenant\":\"al\",\"server\":\"default\",\"name\":\"prog\",\"published\":\"1\","
             "\"versions\":[{\"version\":\"1\",\"inputSchema\":{\"type\":\"object\"},"
             "\"executor\":{\"type\":\"exec\",\"argv\":[\"sh\",\"-c\","
             "\"echo 'progress 1 2 half' >&2; sleep 0.3; echo done\"]}}]},"
             "{\"tenant\":\"al\",\"server\":\"default\",\"name\":\"slow\",\"published\":\"1\","
             "\"versions\":[{\"version\":\"1\",\"inputSchema\":{\"type\":\"object\"},"
             "\"executor\":{\"type\":\"exec\",\"argv\":[\"sh\",\"-c\",\"sleep 3; echo late\"]}}]}"
             "]}",
             srv_port, srv_port);
    fx_write_file(path, cfg, 0600);
}

/* A tools/call of tool on the ingress at p with headers (NULL-terminated after the key). */
static void call(int p, const char *tool, const char *h1, const char *h2, fx_reply_t *r)
{
    char url[96], body[256];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/mcp", p);
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"%s\",\"arguments\":{}}}",
             tool);
    const char *hdrs[] = {KEY, h1, h2, NULL};
    CHECK_INT_EQ(fx_http_post(url, h1 ? hdrs : (const char *[]){KEY, NULL}, body, r), 0);
}

/* ---- the logs ---- */

/* The access lines of the log at path whose request_id is rid: how many, the last in *last
 * (caller frees; may be NULL). */
static int access_lines(const char *path, const char *rid, cJSON **last)
{
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    char line[16384];
    int n = 0;
    if (last)
        *last = NULL;
    while (fgets(line, sizeof(line), f)) {
        if (!strstr(line, "\"msg\":\"access\""))
            continue;
        cJSON *j = cJSON_Parse(line);
        const char *r = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "request_id"));
        if (r && (!rid || strcmp(r, rid) == 0)) {
            n++;
            if (last) {
                cJSON_Delete(*last);
                *last = j;
                j = NULL;
            }
        }
        cJSON_Delete(j);
    }
    fclose(f);
    return n;
}

/* The one access line of rid (waits up to 15 s for it; the line is written when libmicrohttpd
 * reports the request complete, which may be just after the client has its answer). */
static cJSON *access_line(const char *path, const char *rid)
{
    long long until = fx_now_ms() + 15000;
    cJSON *j = NULL;
    int n;
    while ((n = access_lines(path, rid, &j)) == 0 && fx_now_ms() < until) {
        fx_sleep_ms(50);
    }
    if (n != 1) {
        fprintf(stderr, "%s: %d access lines with request_id %s, wanted 1\n", path, n, rid);
        fx_log_tail(path);
        exit(1);
    }
    return j;
}

static const char *str(const cJSON *j, const char *k)
{
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, k));
    return s ? s : "(absent)";
}

static double num(const cJSON *j, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, k);
    CHECK(cJSON_IsNumber(v));
    return v->valuedouble;
}

/* s is 32 lowercase hex characters. */
static int hex32(const char *s)
{
    size_t n = strspn(s, "0123456789abcdef");
    return n == 32 && s[32] == '\0';
}

/* Lines of path holding "request_id":"rid": at least one (waits up to 15 s), and every one of
 * them also holds trace_id (when not NULL). */
static void check_lines_of(const char *path, const char *rid, const char *trace_id)
{
    char want[200], wtrace[64];
    snprintf(want, sizeof(want), "\"request_id\":\"%s\"", rid);
    snprintf(wtrace, sizeof(wtrace), "\"trace_id\":\"%s\"", trace_id ? trace_id : "");
    long long until = fx_now_ms() + 15000;
    while (fx_log_count(path, want, NULL) == 0 && fx_now_ms() < until)
        fx_sleep_ms(50);
    int n = fx_log_count(path, want, NULL);
    if (n == 0 || (trace_id && fx_log_count(path, want, wtrace) != n)) {
        fprintf(stderr, "%s: %d lines with %s, %d of them with %s\n", path, n, want,
                fx_log_count(path, want, wtrace), wtrace);
        fx_log_tail(path);
        exit(1);
    }
}

/* ---- the checks ---- */

static const char *const stage_names[] = {"http_auth", "validate",     "produce", "queue",
                                          "execute",   "result_write", "wake",    "respond"};
#define NSTAGES (sizeof(stage_names) / sizeof(stage_names[0]))
/* The cross-process stages compare the worker's clock with the ingress's; here both read one
 * host's clock, so only rounding (µs) and a clamp at 0 could push the sum over duration_us. */
#define STAGE_SKEW_US 1000

/* The access line a's stages_us: every stage there, a number >= 0, their sum at most the
 * line's duration_us (+ STAGE_SKEW_US); the execute stage's µs returned. */
static double check_stage_fields(const cJSON *a)
{
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(a, "stages_us");
    if (!cJSON_IsObject(st)) {
        char *t = cJSON_PrintUnformatted(a);
        fprintf(stderr, "no stages_us object in %s\n", t ? t : "?");
        free(t);
        exit(1);
    }
    double sum = 0;
    for (size_t i = 0; i < NSTAGES; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(st, stage_names[i]);
        if (!cJSON_IsNumber(v) || v->valuedouble < 0) {
            fprintf(stderr, "stages_us.%s is missing or negative\n", stage_names[i]);
            exit(1);
        }
        sum += v->valuedouble;
    }
    CHECK_INT_EQ(cJSON_GetArraySize(st), (long long)NSTAGES);
    double dur = num(a, "duration_us");
    if (sum > dur + STAGE_SKEW_US) {
        fprintf(stderr, "the stages add up to %.0f us, the call took %.0f us\n", sum, dur);
        exit(1);
    }
    return num(st, "execute");
}

/* Where the time of a call goes (stages.h): in the access line of calls a worker answered
 * (one plain, one streamed whose tool takes 0.3 s), nowhere else; and on /metrics. */
static void check_stages(const char *ilog)
{
    cJSON *a = access_line(ilog, "r-abc-123");
    check_stage_fields(a);
    cJSON_Delete(a);
    a = access_line(ilog, "r-sse"); /* the tool's 0.3 s are its execute stage */
    double exec_us = check_stage_fields(a);
    if (exec_us < 3e5 || exec_us > num(a, "duration_us")) {
        fprintf(stderr, "execute %.0f us: not the tool's 0.3 s\n", exec_us);
        exit(1);
    }
    cJSON_Delete(a);
    a = access_line(ilog, "g-404");
    CHECK(cJSON_GetObjectItemCaseSensitive(a, "stages_us") == NULL);
    cJSON_Delete(a);
    TEST_PASS("a tools/call's access line has stages_us: every stage, none negative, their sum "
              "within duration_us, the tool's time in execute; a 404's has none");

    char url[96];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", ops_port);
    char *text = fx_http_text(url);
    CHECK(text != NULL);
    for (size_t i = 0; i < NSTAGES; i++) {
        char needle[128];
        snprintf(needle, sizeof(needle), "\nmcpq_call_stage_seconds_count{stage=\"%s\"} ",
                 stage_names[i]);
        const char *p = strstr(text, needle);
        if (!p || strtoll(p + strlen(needle), NULL, 10) < 2) {
            fprintf(stderr, "/metrics: %s is missing or under 2\n", needle + 1);
            exit(1);
        }
    }
    CHECK_INT_EQ(fx_promtool_check(text), 0);
    free(text);
    TEST_PASS("/metrics has mcpq_call_stage_seconds{stage} of every stage; promtool accepts it");
}

static void check_call(const char *ilog, const char *wlog)
{
    fx_reply_t r;
    call(port, "web", "X-Request-Id: r-abc-123", "traceparent: 00-" T1 "-" P "-01", &r);
    CHECK_INT_EQ(r.status, 200);
    CHECK_CONTAINS(r.body, "\"result\"");
    CHECK_STR_EQ(r.request_id, "r-abc-123");
    cJSON *a = access_line(ilog, "r-abc-123");
    CHECK_STR_EQ(str(a, "method"), "POST");
    CHECK_STR_EQ(str(a, "route"), "/mcp");
    CHECK_STR_EQ(str(a, "level"), "info");
    CHECK_INT_EQ((long long)num(a, "status"), 200);
    CHECK_INT_EQ((long long)num(a, "bytes"), (long long)r.len);
    CHECK(num(a, "duration_us") > 0);
    CHECK_STR_EQ(str(a, "tenant"), "al");
    CHECK_STR_EQ(str(a, "trace_id"), T1);
    /* the ingress's span, not the client's */
    CHECK_INT_EQ((long long)strlen(str(a, "span_id")), 16);
    CHECK(strcmp(str(a, "span_id"), P) != 0);
    CHECK_STR_EQ(str(a, "listener"), "clients");
    CHECK_STR_EQ(str(a, "client"), "127.0.0.1");
    CHECK(cJSON_GetObjectItemCaseSensitive(a, "aborted") == NULL);
    cJSON_Delete(a);
    TEST_PASS("a tools/call's X-Request-Id comes back and names exactly one full access line");

    check_lines_of(wlog, "r-abc-123", T1);
    check_lines_of(ilog, "r-abc-123", NULL); /* the call's own lines, not only the access one */
    CHECK(fx_log_count(ilog, "\"request_id\":\"r-abc-123\"", "tool call published") == 1);
    CHECK(seen_is(tool_rid, "r-abc-123"));
    TEST_PASS("the worker's lines about the job carry its request_id and trace_id; the tool "
              "gets X-Request-Id");

    call(port, "up", "X-Request-Id: r-up", NULL, &r);
    CHECK_INT_EQ(r.status, 200);
    CHECK_CONTAINS(r.body, "\"up\"");
    CHECK(seen_is(up_rid, "r-up"));
    TEST_PASS("an mcp executor's tools/call to its upstream carries X-Request-Id (over the "
              "configured one)");

    call(port, "sh", "X-Request-Id: r-exec.1", NULL, &r);
    CHECK_INT_EQ(r.status, 200);
    CHECK_CONTAINS(r.body, "rid=r-exec.1");
    TEST_PASS("an exec tool gets the request id as MCPQ_REQUEST_ID");
}

static void check_generated(const char *ilog)
{
    char longid[160], h[200];
    memset(longid, 'x', 129);
    longid[129] = '\0';
    snprintf(h, sizeof(h), "X-Request-Id: %s", longid);
    const char *sent[] = {h, "X-Request-Id: has space", NULL};
    char seen[3][160];
    for (int i = 0; i < 3; i++) {
        fx_reply_t r;
        call(port, "web", sent[i], NULL, &r);
        CHECK_INT_EQ(r.status, 200);
        if (!hex32(r.request_id)) {
            fprintf(stderr, "sent %s, got X-Request-Id \"%s\"\n", sent[i] ? sent[i] : "(none)",
                    r.request_id);
            exit(1);
        }
        snprintf(seen[i], sizeof(seen[i]), "%s", r.request_id);
        cJSON_Delete(access_line(ilog, r.request_id));
    }
    CHECK(strcmp(seen[0], seen[1]) != 0 && strcmp(seen[1], seen[2]) != 0);
    CHECK(fx_log_count(ilog, "has space", NULL) == 0 && fx_log_count(ilog, longid, NULL) == 0);
    TEST_PASS("a too long or spaced X-Request-Id (or none) is replaced by a new 32-hex id");

    /* 128 bytes of printable ASCII is kept as sent */
    memset(longid, '~', 128);
    longid[128] = '\0';
    snprintf(h, sizeof(h), "X-Request-Id: %s", longid);
    fx_reply_t r;
    call(port, "web", h, NULL, &r);
    CHECK_STR_EQ(r.request_id, longid);
    TEST_PASS("a 128-byte X-Request-Id is kept");
}

/* A call answered as an SSE stream (its progress came first): the header on the stream, the
 * access line's bytes the frames the client received. */
static void check_stream(const char *ilog)
{
    fx_stream_t st;
    const char *hdrs[] = {KEY, "Accept: application/json, text/event-stream", "X-Request-Id: r-sse",
                          NULL};
    fx_stream_open(&st, port, "/mcp",
                   "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
                   "\"prog\",\"arguments\":{},\"_meta\":{\"progressToken\":\"p1\"}}}",
                   hdrs);
    CHECK(fx_stream_wait_done(&st, 20000));
    pthread_mutex_lock(&st.lock);
    size_t got = st.len;
    int sse = strstr(st.ctype, "text/event-stream") != NULL;
    int progress = strstr(st.buf, "notifications/progress") != NULL;
    int done = strstr(st.buf, "done") != NULL;
    char rid[160];
    snprintf(rid, sizeof(rid), "%s", st.request_id);
    pthread_mutex_unlock(&st.lock);
    if (!sse || !progress || !done)
        fx_stream_dump(&st, "the streamed call");
    CHECK(sse && progress && done);
    CHECK_STR_EQ(rid, "r-sse");
    fx_stream_close(&st);
    cJSON *a = access_line(ilog, "r-sse");
    CHECK_INT_EQ((long long)num(a, "status"), 200);
    CHECK_INT_EQ((long long)num(a, "bytes"), (long long)got);
    CHECK(num(a, "duration_us") > 3e5); /* the tool's 0.3 s between its frames */
    CHECK(cJSON_GetObjectItemCaseSensitive(a, "aborted") == NULL);
    cJSON_Delete(a);
    TEST_PASS("an SSE answer carries the request id; its line counts the frames' bytes");
}

/* A GET of path on port p with X-Request-Id rid: its status, and its access line. */
static cJSON *get(int p, const char *path, const char *rid, long want, const char *ilog)
{
    char url[256], h[200];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", p, path);
    snprintf(h, sizeof(h), "X-Request-Id: %s", rid);
    const char *hdrs[] = {h, NULL};
    fx_reply_t r;
    CHECK_INT_EQ(fx_http_request("GET", url, hdrs, NULL, &r), 0);
    CHECK_INT_EQ(r.status, want);
    CHECK_STR_EQ(r.request_id, rid);
    cJSON *a = access_line(ilog, rid);
    CHECK_STR_EQ(str(a, "method"), "GET");
    CHECK_INT_EQ((long long)num(a, "status"), want);
    CHECK_INT_EQ((long long)num(a, "bytes"), (long long)r.len);
    return a;
}

static void check_routes(const char *ilog)
{
    cJSON *a = get(port, "/no/such/thing", "g-404", 404, ilog);
    CHECK_STR_EQ(str(a, "route"), "-");
    CHECK_STR_EQ(str(a, "tenant"), "(absent)");
    cJSON_Delete(a);
    a = get(port, "/healthz", "g-other", 404, ilog); /* served on the ops listener only */
    CHECK_STR_EQ(str(a, "route"), "/healthz");
    CHECK_STR_EQ(str(a, "listener"), "clients");
    cJSON_Delete(a);
    a = get(ops_port, "/healthz", "g-ops", 200, ilog);
    CHECK_STR_EQ(str(a, "route"), "/healthz");
    CHECK_STR_EQ(str(a, "listener"), "ops");
    cJSON_Delete(a);
    a = get(ops_port, "/admin/v1/tenants/al?x=secret", "g-admin", 404, ilog); /* no token set */
    CHECK_STR_EQ(str(a, "route"), "/admin/v1/*");
    cJSON_Delete(a);
    a = get(port, "/v1/tasks/t_0123456789?cursor=x", "g-task", 401, ilog);
    CHECK_STR_EQ(str(a, "route"), "/v1/tasks/*");
    cJSON_Delete(a);
    CHECK(fx_log_count(ilog, "t_0123456789", "\"msg\":\"access\"") == 0);
    CHECK(fx_log_count(ilog, "x=secret", NULL) == 0);
    fx_reply_t r; /* a method /mcp does not take: 405 */
    const char *hdrs[] = {"X-Request-Id: g-405", NULL};
    char url[96];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/mcp", port);
    CHECK_INT_EQ(fx_http_request("PUT", url, hdrs, "{}", &r), 0);
    CHECK_INT_EQ(r.status, 405);
    CHECK_STR_EQ(r.request_id, "g-405");
    a = access_line(ilog, "g-405");
    CHECK_STR_EQ(str(a, "route"), "/mcp");
    CHECK_STR_EQ(str(a, "method"), "PUT");
    cJSON_Delete(a);
    static char big[70000]; /* over MCPQ_PREAUTH_BODY_BYTES without a credential: 413 */
    memset(big, 'x', sizeof(big) - 1);
    const char *h413[] = {"X-Request-Id: g-413", NULL};
    CHECK_INT_EQ(fx_http_request("POST", url, h413, big, &r), 0);
    CHECK_INT_EQ(r.status, 413);
    CHECK_STR_EQ(r.request_id, "g-413");
    a = access_line(ilog, "g-413");
    CHECK_INT_EQ((long long)num(a, "status"), 413);
    cJSON_Delete(a);
    TEST_PASS(
        "a 404, a 405, a 413, another listener's route and the ops routes get the header and a "
        "line naming the route's pattern");
}

/* A client that goes away: logged once its request ends; status 0 and "aborted" when nothing
 * was queued (its body never came in full), else the status queued (a parked call's answer is
 * queued when its result comes, to a connection libmicrohttpd finds closed only then, if at
 * all). */
static void check_aborted(const char *ilog)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK_INT_EQ(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    /* Expect: 100-continue: the 100 says the ingress began the request (its first access-handler
     * call) and waits for the body, which never comes */
    static const char head[] = "POST /mcp HTTP/1.1\r\nHost: x\r\nX-Request-Id: r-cut\r\n"
                               "Content-Type: application/json\r\nContent-Length: 1000\r\n"
                               "Expect: 100-continue\r\n\r\n";
    CHECK_INT_EQ(send(fd, head, sizeof(head) - 1, MSG_NOSIGNAL), (long long)sizeof(head) - 1);
    char got[256];
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    CHECK_INT_EQ(poll(&pf, 1, 15000), 1);
    ssize_t n = recv(fd, got, sizeof(got) - 1, 0);
    CHECK(n > 0);
    got[n] = '\0';
    CHECK_CONTAINS(got, "HTTP/1.1 100");
    close(fd);
    cJSON *a = access_line(ilog, "r-cut");
    CHECK_INT_EQ((long long)num(a, "status"), 0);
    CHECK_INT_EQ((long long)num(a, "bytes"), 0);
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "aborted")));
    cJSON_Delete(a);
    TEST_PASS("a request whose client went away before any answer is logged with status 0 and "
              "aborted");

    fx_stream_t st;
    const char *hdrs[] = {KEY, "Accept: application/json", "X-Request-Id: r-gone", NULL};
    fx_stream_open(&st, port, "/mcp",
                   "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
                   "\"slow\",\"arguments\":{}}}",
                   hdrs);
    long long until = fx_now_ms() + 15000;
    while (fx_log_count(ilog, "tool call published", "\"request_id\":\"r-gone\"") == 0 &&
           fx_now_ms() < until)
        fx_sleep_ms(50);
    CHECK(fx_log_count(ilog, "tool call published", "\"request_id\":\"r-gone\"") == 1);
    fx_stream_close(&st);
    a = access_line(ilog, "r-gone"); /* once its result came (the tool sleeps 3 s) */
    CHECK_INT_EQ((long long)num(a, "status"), 200);
    CHECK(num(a, "duration_us") > 2e6);
    CHECK_STR_EQ(str(a, "tenant"), "al");
    cJSON_Delete(a);
    TEST_PASS("a parked call whose client went away is logged once, when it ends, with the "
              "status queued");
}

int main(void)
{
    char cfg[300], ilog[400], wlog[400], qlog[400];
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (fx_start(&fx, 2) < 0)
        return 1;
    srv_port = fx_free_port();
    struct MHD_Daemon *srv = fx_server_start(srv_port, on_tool);
    CHECK(srv != NULL);
    snprintf(cfg, sizeof(cfg), "%s/al.json", fx.dir);
    write_config(cfg);
    port = fx_free_port();
    ops_port = fx_free_port();
    char ops[64];
    snprintf(ops, sizeof(ops), "MCPQ_OPS_LISTEN=127.0.0.1:%d", ops_port);
    const char *ienv[] = {ops, NULL};
    pid_t ing = fx_spawn_ingress(&fx, "ingress", port, cfg, ienv, ilog, sizeof(ilog));
    CHECK(ing > 0);
    pid_t w = fx_spawn_worker(&fx, "w1", NULL);
    CHECK(w > 0);
    snprintf(wlog, sizeof(wlog), "%s/w1.log", fx.dir);

    check_call(ilog, wlog);
    check_generated(ilog);
    check_routes(ilog);
    check_stream(ilog);
    check_stages(ilog);
    check_aborted(ilog);

    /* MCPQ_ACCESS_LOG=0: the id still comes back, no line is written (read once it stopped,
     * when every request it served has ended) */
    int qport = fx_free_port();
    const char *qenv[] = {"MCPQ_ACCESS_LOG=0", NULL};
    pid_t quiet = fx_spawn_ingress(&fx, "quiet", qport, cfg, qenv, qlog, sizeof(qlog));
    CHECK(quiet > 0);
    fx_reply_t r;
    call(qport, "web", "X-Request-Id: q-1", NULL, &r);
    CHECK_INT_EQ(r.status, 200);
    CHECK_STR_EQ(r.request_id, "q-1");
    CHECK_INT_EQ(fx_stop_pid(quiet, 15000), 0);
    CHECK(fx_log_count(qlog, "\"request_id\":\"q-1\"", NULL) > 0); /* its other lines */
    CHECK_INT_EQ(access_lines(qlog, NULL, NULL), 0);
    TEST_PASS("MCPQ_ACCESS_LOG=0 writes no access line");

    CHECK_INT_EQ(fx_stop_pid(w, 15000), 0);
    CHECK_INT_EQ(fx_stop_pid(ing, 15000), 0);
    MHD_stop_daemon(srv);
    fx_stop(&fx);
    curl_global_cleanup();
    return 0;
}
