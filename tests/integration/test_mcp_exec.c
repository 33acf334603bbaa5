/*
 * test_mcp_exec.c - the mcp executor (docs/executors.md) and federation end to end: redis-server,
 * mcpq-devbroker, one mcpq-ingress and one mcpq-worker (tests/fixture.c), and an in-process
 * upstream MCP server (libmicrohttpd) that can act as
 *   /legacy   a 2025-11-25 server with sessions (initialize, Mcp-Session-Id; 404 for an
 *             unknown session), answering application/json; tools/list in two pages;
 *   /modern   a 2026-07-28 server (server/discover; checks MCP-Protocol-Version, Mcp-Method,
 *             Mcp-Name and _meta), answering tools/call as an SSE stream with a progress
 *             notification before the response.
 * Checked: legacy and 2026-07-28 calls, structuredContent and isError passthrough, upstream
 * -32602 → -32602, other upstream errors → isError with the message and an error id (the
 * upstream's host only in the worker's log), session 404 → re-initialize and the call
 * succeeds, upstream down → isError quickly, timeout → -32003,
 * configured headers reach the upstream and never the result or the worker's log, and
 * federation (through a worker's mcpq/catalog job): the upstream's tools listed with the prefix
 * (an invalid name skipped) and callable, from the legacy and the 2026-07-28 upstream; from the
 * official SDK upstream also its resource, template and prompt, read, got and completed through
 * mcpq; and, once the upstream restarts with fewer objects, a second ingress refreshing every
 * second (MCPQ_FEDERATE_REFRESH_MS) prunes what it dropped (tool, template, prompt), seen on the
 * first ingress.
 */
#include "check.h"
#include "names.h"
#include "fixture.h"
#include "util.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TOKEN "sekrit-upstream-token-42"
#define ADMIN_TOKEN "admin-token-for-the-federation-test-0123456789"

static fx_stack_t fx;
static int port, up_port, sdk_port;
static atomic_int sessions_epoch = 1; /* bumping it expires every session */
static atomic_int n_initialize, n_initialized, n_discover, n_cancelled, n_bad_auth, n_call;

/* ---- the upstream ---- */

static const char *hdr(struct MHD_Connection *conn, const char *name)
{
    const char *v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name);
    return v ? v : "";
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *ctype,
                             char *body, const char *session)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(body ? strlen(body) : 0, body ? body : (void *)"",
                                        body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (ctype)
        MHD_add_response_header(r, "Content-Type", ctype);
    if (session)
        MHD_add_response_header(r, "Mcp-Session-Id", session);
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

static char *rpc_result(const cJSON *id, cJSON *result)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "jsonrpc", "2.0");
    cJSON_AddItemToObject(o, "id", cJSON_Duplicate(id, 1));
    cJSON_AddItemToObject(o, "result", result);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

static char *rpc_error(const cJSON *id, int code, const char *msg)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "jsonrpc", "2.0");
    cJSON_AddItemToObject(o, "id", id ? cJSON_Duplicate(id, 1) : cJSON_CreateNull());
    cJSON *e = cJSON_AddObjectToObject(o, "error");
    cJSON_AddNumberToObject(e, "code", code);
    cJSON_AddStringToObject(e, "message", msg);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

static cJSON *text_result(const char *text, int is_error)
{
    cJSON *r = cJSON_CreateObject();
    cJSON *c = cJSON_AddArrayToObject(r, "content");
    cJSON *t = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "type", "text");
    cJSON_AddStringToObject(t, "text", text);
    cJSON_AddItemToArray(c, t);
    if (is_error)
        cJSON_AddTrueToObject(r, "isError");
    return r;
}

static cJSON *tool_def(const char *name)
{
    cJSON *t = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "name", name);
    cJSON_AddStringToObject(t, "description", "upstream tool");
    cJSON *s = cJSON_AddObjectToObject(t, "inputSchema");
    cJSON_AddStringToObject(s, "type", "object");
    return t;
}

/* tools/call on either upstream: a result (NULL with *err_code set for an error). */
static cJSON *call_tool(const cJSON *params, int *err_code, const char **err_msg)
{
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(params, "name"));
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(params, "arguments");
    atomic_fetch_add(&n_call, 1);
    if (name && strcmp(name, "echo") == 0) {
        char *a = cJSON_PrintUnformatted(args);
        cJSON *r = text_result(a, 0);
        cJSON_AddItemToObject(r, "structuredContent", cJSON_Duplicate(args, 1));
        free(a);
        return r;
    }
    if (name && strcmp(name, "bad") == 0)
        return text_result("the upstream tool failed", 1);
    if (name && strcmp(name, "boom") == 0) {
        *err_code = -32000;
        *err_msg = "kaboom from upstream";
        return NULL;
    }
    if (name && strcmp(name, "slow") == 0) {
        fx_sleep_ms(4000);
        return text_result("slow done", 0);
    }
    *err_code = -32602;
    *err_msg = "Unknown tool: nosuch";
    return NULL;
}

static enum MHD_Result legacy(struct MHD_Connection *conn, cJSON *msg)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
    const char *method = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "method"));
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
    char sess[64];
    snprintf(sess, sizeof(sess), "sess-%d", atomic_load(&sessions_epoch));
    if (!method)
        return reply(conn, 400, "application/json", rpc_error(id, -32600, "bad"), NULL);
    if (strcmp(method, "server/discover") == 0) {
        atomic_fetch_add(&n_discover, 1);
        /* what the 1.x SDK answers: no session yet */
        return reply(conn, 400, "application/json",
                     rpc_error(NULL, -32000, "Bad Request: Server not initialized"), NULL);
    }
    if (strcmp(method, "initialize") == 0) {
        if (strcmp(hdr(conn, "User-Agent"), "mcpq-worker") == 0) /* not federation's */
            atomic_fetch_add(&n_initialize, 1);
        cJSON *r = cJSON_CreateObject();
        const char *asked =
            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(params, "protocolVersion"));
        cJSON_AddStringToObject(r, "protocolVersion", asked ? asked : "?");
        cJSON_AddObjectToObject(cJSON_AddObjectToObject(r, "capabilities"), "tools");
        cJSON *si = cJSON_AddObjectToObject(r, "serverInfo");
        cJSON_AddStringToObject(si, "name", "legacy-up");
        cJSON_AddStringToObject(si, "version", "1");
        return reply(conn, 200, "application/json", rpc_result(id, r), sess);
    }
    if (strcmp(hdr(conn, "Mcp-Session-Id"), sess) != 0)
        return reply(conn, 404, "application/json", rpc_error(NULL, -32001, "Session not found"),
                     NULL);
    if (strcmp(hdr(conn, "MCP-Protocol-Version"), NAMES_PROTO_LATEST) != 0)
        return reply(conn, 400, "application/json", rpc_error(id, -32000, "bad version"), NULL);
    if (strcmp(method, "notifications/initialized") == 0) {
        if (strcmp(hdr(conn, "User-Agent"), "mcpq-worker") == 0)
            atomic_fetch_add(&n_initialized, 1);
        return reply(conn, 202, NULL, NULL, NULL);
    }
    if (strcmp(method, "notifications/cancelled") == 0) {
        atomic_fetch_add(&n_cancelled, 1);
        return reply(conn, 202, NULL, NULL, NULL);
    }
    if (strcmp(method, "tools/list") == 0) {
        const char *cursor =
            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(params, "cursor"));
        cJSON *r = cJSON_CreateObject();
        cJSON *tools = cJSON_AddArrayToObject(r, "tools");
        if (!cursor) {
            cJSON_AddItemToArray(tools, tool_def("echo"));
            cJSON_AddItemToArray(tools, tool_def("bad name!"));
            cJSON_AddStringToObject(r, "nextCursor", "page2");
        } else {
            cJSON_AddItemToArray(tools, tool_def("bad"));
        }
        return reply(conn, 200, "application/json", rpc_result(id, r), NULL);
    }
    if (strcmp(method, "tools/call") == 0) {
        int code = 0;
        const char *em = NULL;
        cJSON *r = call_tool(params, &code, &em);
        return reply(conn, 200, "application/json", r ? rpc_result(id, r) : rpc_error(id, code, em),
                     NULL);
    }
    return reply(conn, 200, "application/json", rpc_error(id, -32601, "Method not found"), NULL);
}

static enum MHD_Result modern(struct MHD_Connection *conn, cJSON *msg)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
    const char *method = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "method"));
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
    const char *mv = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(params, "_meta"), NAMES_META_PROTOCOL_VERSION));
    if (!method || !mv || strcmp(mv, NAMES_PROTO_MODERN) != 0 ||
        strcmp(hdr(conn, "MCP-Protocol-Version"), NAMES_PROTO_MODERN) != 0 ||
        strcmp(hdr(conn, "Mcp-Method"), method) != 0)
        return reply(conn, 400, "application/json", rpc_error(id, -32020, "header mismatch"), NULL);
    if (strcmp(method, "server/discover") == 0) {
        atomic_fetch_add(&n_discover, 1);
        cJSON *r = cJSON_CreateObject();
        cJSON *sup = cJSON_AddArrayToObject(r, "supportedVersions");
        cJSON_AddItemToArray(sup, cJSON_CreateString(NAMES_PROTO_MODERN));
        cJSON_AddObjectToObject(cJSON_AddObjectToObject(r, "capabilities"), "tools");
        cJSON_AddStringToObject(r, "resultType", "complete");
        return reply(conn, 200, "application/json", rpc_result(id, r), NULL);
    }
    if (strcmp(method, "tools/list") == 0) { /* one page: echo */
        cJSON *r = cJSON_CreateObject();
        cJSON_AddItemToArray(cJSON_AddArrayToObject(r, "tools"), tool_def("echo"));
        cJSON_AddStringToObject(r, "resultType", "complete");
        return reply(conn, 200, "application/json", rpc_result(id, r), NULL);
    }
    if (strcmp(method, "tools/call") == 0) {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(params, "name"));
        if (!name || strcmp(hdr(conn, "Mcp-Name"), name) != 0)
            return reply(conn, 400, "application/json", rpc_error(id, -32020, "Mcp-Name"), NULL);
        int code = 0;
        const char *em = NULL;
        cJSON *r = call_tool(params, &code, &em);
        if (r)
            cJSON_AddStringToObject(r, "resultType", "complete");
        char *resp = r ? rpc_result(id, r) : rpc_error(id, code, em);
        size_t n = strlen(resp) + 512;
        char *sse = malloc(n);
        snprintf(sse, n,
                 ": comment\r\nevent: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":"
                 "\"notifications/progress\",\"params\":{\"progressToken\":\"x\",\"progress\":1,"
                 "\"total\":2}}\r\n\r\nevent: message\ndata: %s\n\n",
                 resp);
        free(resp);
        return reply(conn, 200, "text/event-stream", sse, NULL);
    }
    return reply(conn, 404, "application/json", rpc_error(id, -32601, "Method not found"), NULL);
}

static enum MHD_Result on_req(struct MHD_Connection *conn, const char *url, const char *method,
                              const util_buf_t *b)
{
    (void)method;
    if (strcmp(hdr(conn, "Authorization"), "Bearer " TOKEN) != 0) {
        atomic_fetch_add(&n_bad_auth, 1);
        return reply(conn, 401, "application/json", rpc_error(NULL, -32000, "no auth"), NULL);
    }
    if (!strstr(hdr(conn, "Accept"), "text/event-stream") ||
        !strstr(hdr(conn, "Accept"), "application/json"))
        return reply(conn, 406, "application/json", rpc_error(NULL, -32000, "accept"), NULL);
    cJSON *msg = cJSON_ParseWithLength(b->data ? b->data : "", b->len);
    enum MHD_Result ret;
    if (strcmp(url, "/legacy") == 0)
        ret = legacy(conn, msg);
    else if (strcmp(url, "/modern") == 0)
        ret = modern(conn, msg);
    else
        ret = reply(conn, 404, NULL, NULL, NULL);
    cJSON_Delete(msg);
    return ret;
}

static struct MHD_Daemon *upstream_start(int p)
{
    struct MHD_Daemon *d = fx_server_start(p, on_req);
    CHECK(d != NULL);
    return d;
}

/* ---- the gateway side ---- */

/* POSTs body to /mcp[/server] of the first ingress: the JSON answer, whose HTTP status must be
 * want_status; with want_status -1, 200, or NULL for a 404 (a server not known yet). */
static cJSON *post_to(const char *server, const char *body, long want_status)
{
    char url[160];
    fx_reply_t r;
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/mcp%s%s", port, server ? "/" : "",
             server ? server : "");
    const char *hdrs[] = {"Authorization: Bearer mcp-key", NULL};
    CHECK_INT_EQ(fx_http_post(url, hdrs, body, &r), 0);
    if (want_status < 0 && r.status == 404) /* a server this ingress does not know yet */
        return NULL;
    CHECK_INT_EQ(r.status, want_status < 0 ? 200 : want_status);
    CHECK(strstr(r.body, TOKEN) == NULL);
    cJSON *j = cJSON_Parse(r.body);
    CHECK(j != NULL);
    return j;
}

static cJSON *call(const char *server, const char *tool, const char *args)
{
    char body[1024];
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"%s\",\"arguments\":%s}}",
             tool, args);
    return post_to(server, body, 200);
}

static const char *str_at(const cJSON *j, const char *a, const char *b, const char *c)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, a);
    if (b)
        x = cJSON_GetObjectItemCaseSensitive(x, b);
    if (c)
        x = cJSON_GetObjectItemCaseSensitive(x, c);
    return cJSON_GetStringValue(x);
}

static const cJSON *result_of(const cJSON *j)
{
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(j, "result");
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

static int error_code(const cJSON *j)
{
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "code");
    return cJSON_IsNumber(c) ? (int)c->valuedouble : 0;
}

static void tool_json(char *out, size_t size, const char *name, const char *path, const char *tool,
                      int timeout_ms, int port_of_upstream)
{
    snprintf(out, size,
             "{\"tenant\":\"m\",\"server\":\"default\",\"name\":\"%s\",\"published\":\"1\","
             "\"versions\":[{\"version\":\"1\",\"inputSchema\":{\"type\":\"object\"},"
             "\"timeout_ms\":%d,\"executor\":{\"type\":\"mcp\",\"url\":\"http://127.0.0.1:%d%s\","
             "\"tool\":\"%s\",\"headers\":{\"Authorization\":\"Bearer " TOKEN "\"}}}]}",
             name, timeout_ms, port_of_upstream, path, tool);
}

static void write_config(const char *path, int down_port)
{
    char t[10][768], cfg[12288];
    tool_json(t[0], sizeof(t[0]), "l_echo", "/legacy", "echo", 10000, up_port);
    tool_json(t[1], sizeof(t[1]), "l_bad", "/legacy", "bad", 10000, up_port);
    tool_json(t[2], sizeof(t[2]), "l_nosuch", "/legacy", "nosuch", 10000, up_port);
    tool_json(t[3], sizeof(t[3]), "l_boom", "/legacy", "boom", 10000, up_port);
    tool_json(t[4], sizeof(t[4]), "l_slow", "/legacy", "slow", 1500, up_port);
    tool_json(t[5], sizeof(t[5]), "m_echo", "/modern", "echo", 10000, up_port);
    tool_json(t[6], sizeof(t[6]), "m_nosuch", "/modern", "nosuch", 10000, up_port);
    tool_json(t[7], sizeof(t[7]), "down", "/legacy", "echo", 20000, down_port);
    tool_json(t[8], sizeof(t[8]), "sdk_echo", "/mcp", "echo", 10000, sdk_port);
    tool_json(t[9], sizeof(t[9]), "sdk_fail", "/mcp", "fail", 10000, sdk_port);
    snprintf(cfg, sizeof(cfg),
             "{\"tenants\":[{\"id\":\"m\",\"api_keys\":[{\"id\":\"k\",\"key\":\"mcp-key\"}]}],"
             "\"servers\":[{\"tenant\":\"m\",\"name\":\"default\"},"
             "{\"tenant\":\"m\",\"name\":\"fed\",\"federate\":{\"url\":"
             "\"http://127.0.0.1:%d/legacy\",\"prefix\":\"up_\",\"headers\":{"
             "\"Authorization\":\"Bearer " TOKEN "\"}}},"
             "{\"tenant\":\"m\",\"name\":\"modfed\",\"federate\":{\"url\":"
             "\"http://127.0.0.1:%d/modern\",\"prefix\":\"mod_\",\"headers\":{"
             "\"Authorization\":\"Bearer " TOKEN "\"}}},"
             "{\"tenant\":\"m\",\"name\":\"sdkfed\",\"federate\":{\"url\":"
             "\"http://127.0.0.1:%d/mcp\",\"prefix\":\"sdkup_\",\"headers\":{"
             "\"Authorization\":\"Bearer " TOKEN "\"}}}],"
             "\"tools\":[%s,%s,%s,%s,%s,%s,%s,%s,%s,%s]}",
             up_port, up_port, sdk_port, t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8],
             t[9]);
    fx_write_file(path, cfg, 0600);
}

static int file_contains(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    char line[8192];
    int found = 0;
    while (!found && fgets(line, sizeof(line), f))
        found = strstr(line, needle) != NULL;
    fclose(f);
    return found;
}

static void test_legacy(void)
{
    cJSON *j = call(NULL, "l_echo", "{\"text\":\"hi\"}");
    CHECK(!is_error(j));
    CHECK_STR_EQ(text0(j), "{\"text\":\"hi\"}");
    CHECK_STR_EQ(str_at(j, "result", "structuredContent", "text"), "hi");
    cJSON_Delete(j);
    CHECK_INT_EQ(atomic_load(&n_initialize), 1);
    CHECK_INT_EQ(atomic_load(&n_initialized), 1);
    /* the session is cached: no second handshake */
    j = call(NULL, "l_echo", "{\"text\":\"again\"}");
    CHECK_STR_EQ(str_at(j, "result", "structuredContent", "text"), "again");
    cJSON_Delete(j);
    CHECK_INT_EQ(atomic_load(&n_initialize), 1);

    j = call(NULL, "l_bad", "{}");
    CHECK(is_error(j));
    CHECK_STR_EQ(text0(j), "the upstream tool failed");
    cJSON_Delete(j);

    j = call(NULL, "l_nosuch", "{}");
    CHECK_INT_EQ(error_code(j), -32602);
    CHECK_CONTAINS(str_at(j, "error", "message", NULL), "Unknown tool");
    cJSON_Delete(j);

    j = call(NULL, "l_boom", "{}");
    CHECK(is_error(j));
    CHECK_CONTAINS(text0(j), "kaboom from upstream");
    CHECK_CONTAINS(text0(j), "(error id e_");
    CHECK(strstr(text0(j), "127.0.0.1") == NULL); /* the host goes to the worker's log only */
    cJSON_Delete(j);
    TEST_PASS("legacy upstream: session handshake once, passthrough, isError, -32602, errors");
}

static void test_session_expired(void)
{
    int before = atomic_load(&n_initialize);
    atomic_fetch_add(&sessions_epoch, 1);
    cJSON *j = call(NULL, "l_echo", "{\"text\":\"after expiry\"}");
    CHECK(!is_error(j));
    CHECK_STR_EQ(str_at(j, "result", "structuredContent", "text"), "after expiry");
    cJSON_Delete(j);
    CHECK_INT_EQ(atomic_load(&n_initialize), before + 1);
    TEST_PASS("legacy upstream: session 404 → initialize again, the call succeeds");
}

static void test_modern(void)
{
    cJSON *j = call(NULL, "m_echo", "{\"n\":3}");
    CHECK(!is_error(j));
    CHECK_INT_EQ((int)cJSON_GetObjectItemCaseSensitive(
                     cJSON_GetObjectItemCaseSensitive(result_of(j), "structuredContent"), "n")
                     ->valuedouble,
                 3);
    cJSON_Delete(j);
    j = call(NULL, "m_nosuch", "{}");
    CHECK_INT_EQ(error_code(j), -32602);
    cJSON_Delete(j);
    TEST_PASS("2026-07-28 upstream: discover, headers and _meta, SSE answer, -32602");
}

static void test_down_and_timeout(void)
{
    long long t0 = fx_now_ms();
    cJSON *j = call(NULL, "down", "{}");
    CHECK(is_error(j));
    CHECK_CONTAINS(text0(j), "the tool's upstream MCP server could not be reached (error id e_");
    CHECK(strstr(text0(j), "127.0.0.1") == NULL); /* the host goes to the worker's log only */
    CHECK(fx_now_ms() - t0 < 5000);
    cJSON_Delete(j);

    int calls = atomic_load(&n_call);
    t0 = fx_now_ms();
    j = call(NULL, "l_slow", "{}");
    CHECK_INT_EQ(error_code(j), -32003);
    CHECK(fx_now_ms() - t0 < 4000);
    cJSON_Delete(j);
    CHECK(atomic_load(&n_call) > calls);
    /* notifications/cancelled reaches the upstream best-effort */
    for (int i = 0; i < 100 && atomic_load(&n_cancelled) == 0; i++)
        fx_sleep_ms(50);
    CHECK_INT_EQ(atomic_load(&n_cancelled), 1);
    TEST_PASS("upstream down → isError quickly; timeout → -32003 and notifications/cancelled");
}

/* The names in list (a list result's array) joined by ",", into out. */
static const char *names_of(const cJSON *list, char *out, size_t size)
{
    size_t n = 0;
    out[0] = '\0';
    const cJSON *x;
    cJSON_ArrayForEach(x, list)
    {
        const char *name = str_at(x, "name", NULL, NULL);
        int w = snprintf(out + n, size - n, "%s%s", n ? "," : "", name ? name : "?");
        if (w < 0 || (size_t)w >= size - n)
            break;
        n += (size_t)w;
    }
    return out;
}

/* A request of method with params (JSON text) to server: the response (NULL: a 404, a server
 * the first ingress does not know yet). */
static cJSON *rpc_to(const char *server, const char *method, const char *params)
{
    char body[1024];
    snprintf(body, sizeof(body), "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"%s\",\"params\":%s}",
             method, params);
    return post_to(server, body, -1);
}

static cJSON *sdkfed(const char *method, const char *params)
{
    cJSON *j = rpc_to("sdkfed", method, params);
    CHECK(j != NULL);
    return j;
}

/* Polls a list method of server (bound: about 30 s) until its names equal want. */
static void wait_names_on(const char *server, const char *method, const char *member,
                          const char *want)
{
    char got[1024] = "";
    for (int i = 0; i < 300; i++) {
        cJSON *j = rpc_to(server, method, "{}");
        if (j)
            names_of(cJSON_GetObjectItemCaseSensitive(result_of(j), member), got, sizeof(got));
        cJSON_Delete(j);
        if (strcmp(got, want) == 0)
            break;
        fx_sleep_ms(100);
    }
    CHECK_STR_EQ(got, want);
}

/* wait_names_on server sdkfed. */
static void wait_names(const char *method, const char *member, const char *want)
{
    wait_names_on("sdkfed", method, member, want);
}

static void test_federation(void)
{
    /* the import happens in the background after start-up */
    wait_names_on("fed", "tools/list", "tools", "up_bad,up_echo");
    cJSON *j = post_to("fed", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", 200);
    const cJSON *tools = cJSON_GetObjectItemCaseSensitive(result_of(j), "tools");
    CHECK_STR_EQ(str_at(cJSON_GetArrayItem(tools, 1), "description", NULL, NULL), "upstream tool");
    char *printed = cJSON_PrintUnformatted(j);
    CHECK(strstr(printed, TOKEN) == NULL);
    free(printed);
    cJSON_Delete(j);
    j = call("fed", "up_echo", "{\"text\":\"federated\"}");
    CHECK_STR_EQ(str_at(j, "result", "structuredContent", "text"), "federated");
    cJSON_Delete(j);
    j = call("fed", "up_bad", "{}");
    CHECK(is_error(j));
    cJSON_Delete(j);
    TEST_PASS("federation: upstream tools listed with the prefix (bad name skipped), callable");

    /* a 2026-07-28 upstream: listed by the worker without a session, called the same way */
    wait_names_on("modfed", "tools/list", "tools", "mod_echo");
    j = call("modfed", "mod_echo", "{\"n\":5}");
    CHECK(!is_error(j));
    CHECK_INT_EQ((int)cJSON_GetObjectItemCaseSensitive(
                     cJSON_GetObjectItemCaseSensitive(result_of(j), "structuredContent"), "n")
                     ->valuedouble,
                 5);
    cJSON_Delete(j);
    TEST_PASS("federation of a 2026-07-28 upstream: listed through a worker, callable");
}

/* The official TypeScript SDK 1.x as the upstream (tests/clients/sdk-upstream.mjs), when
 * node and the npm packages of tests/clients/install.sh are there; else 0 (skipped). */
static pid_t sdk_start(char *deps, size_t size, const char *mode)
{
    pid_t pid = fx_sdk_upstream_mode(&fx, sdk_port, TOKEN, mode, deps, size);
    CHECK(pid >= 0);
    return pid;
}

static void test_sdk_upstream(void)
{
    cJSON *j = call(NULL, "sdk_echo", "{\"text\":\"hello sdk\"}");
    CHECK(!is_error(j));
    CHECK_STR_EQ(text0(j), "sdk echo: hello sdk");
    CHECK_STR_EQ(str_at(j, "result", "structuredContent", "text"), "hello sdk");
    cJSON_Delete(j);
    j = call(NULL, "sdk_fail", "{}");
    CHECK(is_error(j));
    CHECK_STR_EQ(text0(j), "sdk tool failed");
    cJSON_Delete(j);
    /* federation from the SDK server too */
    wait_names("tools/list", "tools", "sdkup_echo,sdkup_fail");
    j = sdkfed("tools/list", "{}");
    const cJSON *tools = cJSON_GetObjectItemCaseSensitive(result_of(j), "tools");
    CHECK(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(tools, 0), "outputSchema"));
    cJSON_Delete(j);
    j = call("sdkfed", "sdkup_echo", "{\"text\":\"via federation\"}");
    CHECK_STR_EQ(str_at(j, "result", "structuredContent", "text"), "via federation");
    cJSON_Delete(j);
    TEST_PASS("official TypeScript SDK 1.x upstream (SSE answers, sessions): call, isError, "
              "federation");
}

/* The first item of the array member of j's result. */
static const cJSON *first_of(const cJSON *j, const char *member)
{
    return cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(result_of(j), member), 0);
}

/* The SDK upstream's resource, template and prompt, imported through the worker: listed with
 * the prefix, read, got and completed through mcpq (each a job the worker sends upstream). */
static void test_federation_kinds(void)
{
    wait_names("resources/list", "resources", "sdkup_readme");
    cJSON *j = sdkfed("resources/list", "{}");
    CHECK_STR_EQ(str_at(first_of(j, "resources"), "uri", NULL, NULL), "sdk://readme");
    CHECK_STR_EQ(str_at(first_of(j, "resources"), "mimeType", NULL, NULL), "text/markdown");
    cJSON_Delete(j);
    j = sdkfed("resources/read", "{\"uri\":\"sdk://readme\"}");
    CHECK_STR_EQ(str_at(first_of(j, "contents"), "text", NULL, NULL), "# SDK readme");
    CHECK_STR_EQ(str_at(first_of(j, "contents"), "uri", NULL, NULL), "sdk://readme");
    cJSON_Delete(j);

    wait_names("resources/templates/list", "resourceTemplates", "sdkup_notes");
    j = sdkfed("resources/read", "{\"uri\":\"sdk://notes/kafka\"}");
    CHECK_STR_EQ(str_at(first_of(j, "contents"), "text", NULL, NULL), "notes on kafka");
    cJSON_Delete(j);

    wait_names("prompts/list", "prompts", "sdkup_greet");
    j = sdkfed("prompts/get", "{\"name\":\"sdkup_greet\",\"arguments\":{\"name\":\"mcpq\"}}");
    CHECK_STR_EQ(str_at(first_of(j, "messages"), "role", NULL, NULL), "user");
    CHECK_STR_EQ(str_at(first_of(j, "messages"), "content", "text", NULL), "Greet mcpq");
    cJSON_Delete(j);
    j = sdkfed("completion/complete", "{\"ref\":{\"type\":\"ref/prompt\",\"name\":\"sdkup_greet\"},"
                                      "\"argument\":{\"name\":\"style\",\"value\":\"f\"}}");
    const cJSON *values = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(result_of(j), "completion"), "values");
    CHECK_INT_EQ(cJSON_GetArraySize(values), 3);
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetArrayItem(values, 1)), "friendly");
    cJSON_Delete(j);
    TEST_PASS("federation of the SDK upstream's resource, template and prompt: listed with "
              "the prefix, read, got and completed through a worker");
}

/* The upstream restarts with fewer objects; a second ingress that refreshes every second
 * prunes what it dropped, and the first ingress serves the pruned registry. */
static pid_t test_federation_prune(pid_t *sdk, char *deps, size_t deps_size, const char *cfg)
{
    CHECK_INT_EQ(fx_stop_pid(*sdk, 5000), 0);
    *sdk = sdk_start(deps, deps_size, "fewer");
    CHECK(*sdk > 0);
    const char *env[] = {"MCPQ_FEDERATE_REFRESH_MS=1000", "MCPQ_ADMIN_TOKEN=" ADMIN_TOKEN, NULL};
    int port2 = fx_free_port();
    pid_t ing2 = fx_spawn_ingress(&fx, "ingress2", port2, cfg, env, NULL, 0);
    CHECK(ing2 > 0);
    wait_names("tools/list", "tools", "sdkup_echo");
    wait_names("prompts/list", "prompts", "");
    wait_names("resources/templates/list", "resourceTemplates", "");
    wait_names("resources/list", "resources", "sdkup_readme");
    cJSON *j = call("sdkfed", "sdkup_echo", "{\"text\":\"after the restart\"}");
    CHECK_STR_EQ(str_at(j, "result", "structuredContent", "text"), "after the restart");
    cJSON_Delete(j);
    j = call("sdkfed", "sdkup_fail", "{}");
    CHECK(error_code(j) != 0); /* no such tool any more */
    cJSON_Delete(j);
    /* the tenant's tools the config made are untouched */
    j = call(NULL, "sdk_echo", "{\"text\":\"still here\"}");
    CHECK_STR_EQ(str_at(j, "result", "structuredContent", "text"), "still here");
    cJSON_Delete(j);
    TEST_PASS("federation refresh: what the restarted upstream dropped is pruned (tool, "
              "prompt, template), what it kept still works, the config's tools are kept");

    /* a federated server the admin API creates is imported without a restart */
    char url[120], body[600];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/admin/v1/tenants/m/servers", port2);
    snprintf(body, sizeof(body),
             "{\"name\":\"late\",\"federate\":{\"url\":\"http://127.0.0.1:%d/mcp\","
             "\"prefix\":\"late_\",\"headers\":{\"Authorization\":\"Bearer " TOKEN "\"}}}",
             sdk_port);
    const char *hdrs[] = {"Authorization: Bearer " ADMIN_TOKEN, "Content-Type: application/json",
                          NULL};
    fx_reply_t r;
    CHECK_INT_EQ(fx_http_post(url, hdrs, body, &r), 0);
    CHECK_INT_EQ(r.status, 201);
    wait_names_on("late", "tools/list", "tools", "late_echo");
    j = call("late", "late_echo", "{\"text\":\"late\"}");
    CHECK_STR_EQ(str_at(j, "result", "structuredContent", "text"), "late");
    cJSON_Delete(j);
    TEST_PASS("federation follows the registry: a federated server created through the admin "
              "API is imported and served without a restart");
    return ing2;
}

int main(void)
{
    char cfg[300], wlog[400], ilog[400];
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (fx_start(&fx, 2) < 0)
        return 1;
    up_port = fx_free_port();
    sdk_port = fx_free_port();
    int down_port = fx_free_port();
    struct MHD_Daemon *up = upstream_start(up_port);
    char deps[500];
    pid_t sdk = sdk_start(deps, sizeof(deps), NULL);
    snprintf(cfg, sizeof(cfg), "%s/mcp.json", fx.dir);
    write_config(cfg, down_port);
    port = fx_free_port();
    pid_t ing = fx_spawn_ingress(&fx, "ingress", port, cfg, NULL, ilog, sizeof(ilog));
    CHECK(ing > 0);
    pid_t w = fx_spawn_worker(&fx, "w1", NULL);
    CHECK(w > 0);
    snprintf(wlog, sizeof(wlog), "%s/w1.log", fx.dir);

    test_legacy();
    test_session_expired();
    test_modern();
    test_down_and_timeout();
    test_federation();
    const char *ci = getenv("CI");
    if (sdk <= 0 && ci && strcmp(ci, "true") == 0) {
        fprintf(stderr,
                "the official SDK upstream cannot run in CI: no node or no npm packages "
                "in %s (scripts/test.sh installs them)\n",
                deps);
        CHECK(sdk > 0);
    }
    pid_t ing2 = 0;
    if (sdk > 0) {
        test_sdk_upstream();
        test_federation_kinds();
        ing2 = test_federation_prune(&sdk, deps, sizeof(deps), cfg);
    } else
        TEST_SKIP("official SDK upstream: no node or no npm packages in %s "
                  "(tests/clients/install.sh)",
                  deps);

    CHECK_INT_EQ(atomic_load(&n_bad_auth), 0);
    CHECK(!file_contains(wlog, TOKEN));
    CHECK(!file_contains(ilog, TOKEN));
    TEST_PASS("the upstream token never reaches a log");

    if (ing2 > 0)
        CHECK_INT_EQ(fx_stop_pid(ing2, 10000), 0);
    CHECK_INT_EQ(fx_stop_pid(w, 10000), 0);
    CHECK_INT_EQ(fx_stop_pid(ing, 10000), 0);
    MHD_stop_daemon(up);
    if (sdk > 0)
        fx_stop_pid(sdk, 5000);
    fx_stop(&fx);
    curl_global_cleanup();
    return TEST_EXIT();
}
