/*
 * test_trace.c - W3C trace context end to end (docs/operations.md "Logs and tracing"):
 * redis-server, mcpq-devbroker, one mcpq-ingress and one mcpq-worker (tests/fixture.c), and an
 * in-process HTTP server that is at once the tool of an http executor (/tool), a 2025-11-25
 * upstream MCP server for an mcp executor (/mcp) and a webhook receiver (/hook). It records the
 * traceparent of every request. Checked, as users see it:
 *   - a traceparent header is continued: the tool gets the same trace-id, a new parent-id;
 *   - so is params._meta.traceparent (its tracestate never reaches a log);
 *   - without one, or with an invalid one (ignored, the call succeeds), the tool still gets
 *     a valid traceparent of a new trace;
 *   - an mcp executor's requests to its upstream carry the trace;
 *   - the webhook delivery of a task-mode call carries the call's trace-id;
 *   - every ingress and worker log line naming a call's job id carries its trace_id.
 */
#include "check.h"
#include "names.h"
#include "fixture.h"
#include "trace.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T1 "4bf92f3577b34da6a3ce929d0e0e4736"
#define T2 "0af7651916cd43dd8448eb211c80319c"
#define T3 "11112222333344445555666677778888"
#define P "00f067aa0ba902b7"
#define SECRET "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwTest0001"

static fx_stack_t fx;
static int port, srv_port;

/* ---- the server: what it saw per request ---- */

#define MAXSEEN 128

typedef struct seen {
    char path[32];
    char traceparent[128];
    char method[64]; /* the JSON-RPC method, for /mcp */
    char text[128];  /* arguments.text of the tool's body, for /tool */
} seen_t;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static seen_t seen[MAXSEEN];
static int nseen;

static enum MHD_Result answer(struct MHD_Connection *conn, int status, const char *body,
                              const char *ctype, const char *session)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(r, "Content-Type", ctype);
    if (session)
        MHD_add_response_header(r, "Mcp-Session-Id", session);
    enum MHD_Result ret = MHD_queue_response(conn, (unsigned)status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result on_req(struct MHD_Connection *conn, const char *url, const char *method,
                              const util_buf_t *b)
{
    (void)method;
    cJSON *j = cJSON_Parse(b->data ? b->data : "");
    const char *m = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "method"));
    const char *text = cJSON_GetStringValue(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "arguments"), "text"));
    const char *tp = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "traceparent");
    pthread_mutex_lock(&mu);
    if (nseen < MAXSEEN) {
        seen_t *s = &seen[nseen++];
        snprintf(s->path, sizeof(s->path), "%s", url);
        snprintf(s->traceparent, sizeof(s->traceparent), "%s", tp ? tp : "");
        snprintf(s->method, sizeof(s->method), "%s", m ? m : "");
        snprintf(s->text, sizeof(s->text), "%s", text ? text : "");
    }
    pthread_mutex_unlock(&mu);
    enum MHD_Result ret;
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(j, "id");
    char *idj = id ? cJSON_PrintUnformatted(id) : NULL;
    char body[512];
    if (strcmp(url, "/mcp") != 0) {
        ret = answer(conn, 200, "{\"ok\":true}", "application/json", NULL);
    } else if (!idj) {
        ret = answer(conn, 202, "", "application/json", NULL); /* a notification */
    } else if (m && strcmp(m, "initialize") == 0) {
        const char *asked = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(j, "params"), "protocolVersion"));
        snprintf(body, sizeof(body),
                 "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"protocolVersion\":\"%s\","
                 "\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":\"up\",\"version\":"
                 "\"1\"}}}",
                 idj, asked ? asked : NAMES_PROTO_LATEST);
        ret = answer(conn, 200, body, "application/json", "s-1");
    } else if (m && strcmp(m, "tools/call") == 0) {
        snprintf(body, sizeof(body),
                 "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":"
                 "\"text\",\"text\":\"up\"}]}}",
                 idj);
        ret = answer(conn, 200, body, "application/json", NULL);
    } else {
        snprintf(body, sizeof(body),
                 "{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":-32601,\"message\":"
                 "\"Method not found\"}}",
                 idj);
        ret = answer(conn, 200, body, "application/json", NULL);
    }
    cJSON_free(idj);
    cJSON_Delete(j);
    return ret;
}

/* The traceparent the server saw on the last request to path with that text or method
 * ("" for any); waits up to 15 s. */
static void wait_seen(const char *path, const char *text, const char *method, seen_t *out)
{
    long long until = fx_now_ms() + 15000;
    for (;;) {
        int found = 0;
        pthread_mutex_lock(&mu);
        for (int i = nseen - 1; i >= 0 && !found; i--) {
            if (strcmp(seen[i].path, path) == 0 && (!text || strcmp(seen[i].text, text) == 0) &&
                (!method || strcmp(seen[i].method, method) == 0)) {
                *out = seen[i];
                found = 1;
            }
        }
        pthread_mutex_unlock(&mu);
        if (found)
            return;
        if (fx_now_ms() > until) {
            fprintf(stderr, "no request to %s (%s) seen\n", path, text ? text : method);
            exit(1);
        }
        fx_sleep_ms(50);
    }
}

/* ---- the gateway side ---- */

static void write_config(const char *path)
{
    char cfg[4096];
    snprintf(
        cfg, sizeof(cfg),
        "{\"tenants\":[{\"id\":\"tr\",\"api_keys\":[{\"id\":\"k\",\"key\":\"trace-key\"}],"
        "\"webhooks\":[{\"id\":\"wh\",\"url\":\"http://127.0.0.1:%d/hook\",\"secret\":\"" SECRET
        "\",\"events\":[\"task.completed\"]}]}],"
        "\"servers\":[{\"tenant\":\"tr\",\"name\":\"default\"}],"
        "\"tools\":["
        "{\"tenant\":\"tr\",\"server\":\"default\",\"name\":\"web\",\"published\":\"1\","
        "\"versions\":[{\"version\":\"1\",\"inputSchema\":{\"type\":\"object\"},"
        "\"executor\":{\"type\":\"http\",\"url\":\"http://127.0.0.1:%d/tool\"}}]},"
        "{\"tenant\":\"tr\",\"server\":\"default\",\"name\":\"up\",\"published\":\"1\","
        "\"versions\":[{\"version\":\"1\",\"inputSchema\":{\"type\":\"object\"},"
        "\"executor\":{\"type\":\"mcp\",\"url\":\"http://127.0.0.1:%d/mcp\",\"tool\":"
        "\"echo\"}}]},"
        "{\"tenant\":\"tr\",\"server\":\"default\",\"name\":\"job\",\"published\":\"1\","
        "\"versions\":[{\"version\":\"1\",\"mode\":\"task\",\"inputSchema\":{\"type\":"
        "\"object\"},\"executor\":{\"type\":\"http\",\"url\":\"http://127.0.0.1:%d/tool\"}}]}"
        "]}",
        srv_port, srv_port, srv_port, srv_port);
    fx_write_file(path, cfg, 0600);
}

/* A tools/call of tool with {"text": text}, extra headers (NULL-terminated, may be NULL)
 * and extra params members (",..." or ""); the JSON answer (caller frees). */
static cJSON *call(const char *tool, const char *text, const char *hdr1, const char *params)
{
    char url[96], body[1024];
    fx_reply_t r;
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/mcp", port);
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"%s\",\"arguments\":{\"text\":\"%s\"}%s}}",
             tool, text, params);
    const char *hdrs[] = {"Authorization: Bearer trace-key", hdr1, NULL};
    CHECK_INT_EQ(fx_http_post(url, hdrs, body, &r), 0);
    CHECK_INT_EQ(r.status, 200);
    cJSON *j = cJSON_Parse(r.body);
    CHECK(j != NULL);
    if (!strstr(r.body, "\"isError\":false") && strstr(r.body, "isError"))
        fprintf(stderr, "answer: %s\n", r.body);
    CHECK(cJSON_GetObjectItemCaseSensitive(j, "result") != NULL);
    CHECK(!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(j, "result"), "isError")));
    return j;
}

/* The traceparent s carries parses, with trace-id want (NULL: any) and a parent-id that is
 * not the client's. */
static void check_continued(const seen_t *s, const char *want)
{
    trace_ctx_t t;
    CHECK_INT_EQ(trace_parse(s->traceparent, &t), 0);
    if (want)
        CHECK_STR_EQ(t.trace_id, want);
    CHECK(strcmp(t.span_id, P) != 0);
}

/* Every line of the log at path that contains needle also contains trace_id T; at least
 * min such lines. */
static void check_log(const char *path, const char *needle, const char *trace_id, int min)
{
    char want[64];
    snprintf(want, sizeof(want), "\"trace_id\":\"%s\"", trace_id);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    char line[16384];
    int n = 0;
    while (fgets(line, sizeof(line), f)) {
        if (!strstr(line, needle))
            continue;
        n++;
        if (!strstr(line, want)) {
            fprintf(stderr, "%s: a line naming %s lacks %s:\n%s", path, needle, want, line);
            exit(1);
        }
    }
    fclose(f);
    if (n < min) {
        fprintf(stderr, "%s: %d lines name %s, wanted at least %d\n", path, n, needle, min);
        exit(1);
    }
}

static int file_has(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    char line[16384];
    int found = 0;
    while (!found && fgets(line, sizeof(line), f))
        found = strstr(line, needle) != NULL;
    fclose(f);
    return found;
}

/* The job id of the last "tool call published" line of the ingress log for trace_id. */
static void job_of_trace(const char *ilog, const char *trace_id, char *out, size_t size)
{
    FILE *f = fopen(ilog, "r");
    CHECK(f != NULL);
    char line[16384];
    out[0] = '\0';
    while (fgets(line, sizeof(line), f)) {
        if (!strstr(line, "tool call published") || !strstr(line, trace_id))
            continue;
        cJSON *j = cJSON_Parse(line);
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "job_id"));
        if (id)
            snprintf(out, size, "%s", id);
        cJSON_Delete(j);
    }
    fclose(f);
    CHECK(out[0] != '\0');
}

int main(void)
{
    char cfg[300], ilog[400], wlog[400];
    seen_t s;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (fx_start(&fx, 2) < 0)
        return 1;
    srv_port = fx_free_port();
    struct MHD_Daemon *srv = fx_server_start(srv_port, on_req);
    CHECK(srv != NULL);
    snprintf(cfg, sizeof(cfg), "%s/trace.json", fx.dir);
    write_config(cfg);
    port = fx_free_port();
    const char *ienv[] = {"MCPQ_WEBHOOK_RETRY_SCHEDULE=0,1,1", "MCPQ_WEBHOOK_ALLOW_PRIVATE=1",
                          NULL};
    pid_t ing = fx_spawn_ingress(&fx, "ingress", port, cfg, ienv, ilog, sizeof(ilog));
    CHECK(ing > 0);
    pid_t w = fx_spawn_worker(&fx, "w1", NULL);
    CHECK(w > 0);
    snprintf(wlog, sizeof(wlog), "%s/w1.log", fx.dir);

    /* (a) the HTTP header */
    cJSON_Delete(call("web", "hdr", "traceparent: 00-" T1 "-" P "-01", ""));
    wait_seen("/tool", "hdr", NULL, &s);
    check_continued(&s, T1);
    CHECK_STR_EQ(s.traceparent + 53, "01");
    TEST_PASS("a traceparent header is continued to the http tool (same trace, new parent)");

    /* (b) params._meta, with a tracestate */
    cJSON_Delete(call("web", "meta", NULL,
                      ",\"_meta\":{\"traceparent\":\"00-" T2 "-" P
                      "-01\",\"tracestate\":\"rojo=00f067aa0ba902b7\"}"));
    wait_seen("/tool", "meta", NULL, &s);
    check_continued(&s, T2);
    TEST_PASS("params._meta.traceparent is continued to the http tool");

    /* (c) none: the tool still gets a valid one */
    cJSON_Delete(call("web", "none", NULL, ""));
    wait_seen("/tool", "none", NULL, &s);
    check_continued(&s, NULL);
    TEST_PASS("a call without trace context starts a trace the tool receives");

    /* (d) an invalid header is ignored: the call succeeds in a new trace */
    cJSON_Delete(call("web", "bad", "traceparent: 00-" T3 "-0000000000000000-01", ""));
    wait_seen("/tool", "bad", NULL, &s);
    check_continued(&s, NULL);
    CHECK(strstr(s.traceparent, T3) == NULL);
    cJSON_Delete(call("web", "bad2", "traceparent: garbage", ""));
    wait_seen("/tool", "bad2", NULL, &s);
    check_continued(&s, NULL);
    TEST_PASS("an invalid traceparent is ignored and the call succeeds");

    /* the mcp executor: the upstream's initialize and tools/call carry the trace */
    cJSON_Delete(call("up", "u", "traceparent: 00-" T3 "-" P "-01", ""));
    wait_seen("/mcp", NULL, "tools/call", &s);
    check_continued(&s, T3);
    TEST_PASS("an mcp executor's call to its upstream carries the trace");

    /* (e) a task-mode call: its webhook delivery carries the call's trace-id */
    cJSON_Delete(call("job", "task", "traceparent: 00-" T2 "-" P "-01", ""));
    wait_seen("/tool", "task", NULL, &s);
    check_continued(&s, T2);
    wait_seen("/hook", NULL, NULL, &s);
    check_continued(&s, T2);
    TEST_PASS("a task's webhook delivery carries the creating call's trace-id");

    /* (f) logs: every line naming a call's job id carries its trace_id */
    char job[128];
    job_of_trace(ilog, T1, job, sizeof(job));
    check_log(ilog, job, T1, 2);
    check_log(wlog, job, T1, 2);
    job_of_trace(ilog, T3, job, sizeof(job));
    check_log(ilog, job, T3, 2);
    check_log(wlog, job, T3, 2);
    CHECK(!file_has(ilog, "rojo=") && !file_has(wlog, "rojo=")); /* tracestate is not logged */
    TEST_PASS("every ingress and worker log line of a call carries its trace_id");

    CHECK_INT_EQ(fx_stop_pid(w, 15000), 0);
    CHECK_INT_EQ(fx_stop_pid(ing, 15000), 0);
    MHD_stop_daemon(srv);
    fx_stop(&fx);
    curl_global_cleanup();
    return 0;
}
