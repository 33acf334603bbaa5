/*
 * Integration test of the agent round-trip (docs/protocol.md channels and open_channel,
 * docs/executors.md agent) through a real ingress, worker, redis-server and devbroker,
 * with the agent played by a libmicrohttpd server in this process:
 *   - an agent answering 200 with an agent_reply: its text becomes the MCP content, and the
 *     chat_message it got is schema-valid and signed (Standard Webhooks);
 *   - an agent answering 202, then replying through POST /v1/channels/{id}/messages with
 *     the tenant's API key, and with HMAC app signing: the waiting tools/call completes;
 *     a second reply to the same message is refused (409), one to an unknown message 404,
 *     another tenant's post 404, a body that is no agent_reply 400;
 *   - two calls in one legacy session: the second chat_message carries the first's turn;
 *   - 2026-07-28: open_channel, two calls with channel_id share turns; an unknown or
 *     another tenant's channel_id is -32602;
 *   - no reply before the deadline: -32003 "Agent reply timeout";
 *   - an agent that is down: an isError result with an error id, not naming it;
 *   - turns bounded by MCPQ_CHANNEL_MAX_TURNS and MCPQ_CHANNEL_MAX_BYTES (oldest dropped);
 *   - the agent's endpoint gets the call's X-Request-Id (the client's, or the one the ingress
 *     made and answered with; docs/operations.md "Access log").
 */
#include "check.h"
#include "names.h"
#include "fixture.h"
#include "sch.h"
#include "sig.h"
#include "util.h"
#include "whsig.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <hiredis/hiredis.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SECRET "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define APP "agent-app"
#define APP_SECRET "agent-app-secret-0d9e-0123456789abcdef"
#define MAXMSG 64
#define META_V "\"" NAMES_META_PROTOCOL_VERSION "\":\"" NAMES_PROTO_MODERN "\""

static fx_stack_t fx;
static int ing_port, agent_port;

/* ---- the agent ---- */

typedef struct msg {
    char path[32];
    char sig[256];
    char rid[160]; /* its X-Request-Id header */
    cJSON *body;
} msg_t;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static msg_t msgs[MAXMSG];
static int nmsgs;

static enum MHD_Result on_agent(struct MHD_Connection *conn, const char *url, const char *method,
                                const util_buf_t *b)
{
    (void)method;
    cJSON *m = cJSON_ParseWithLength(b->data ? b->data : "", b->len);
    int nturns = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(m, "turns"));
    const char *mid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "message_id"));
    const char *q = cJSON_GetStringValue(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(m, "arguments"), "q"));
    char *answer = NULL;
    int status = 202;
    if (strcmp(url, "/sync") == 0) {
        cJSON *r = cJSON_CreateObject();
        cJSON_AddStringToObject(r, "type", "agent_reply");
        cJSON_AddStringToObject(r, "in_reply_to", mid ? mid : "");
        char text[160];
        snprintf(text, sizeof(text), "turns=%d q=%s", nturns, q ? q : "");
        cJSON_AddStringToObject(r, "text", text);
        answer = cJSON_PrintUnformatted(r);
        cJSON_Delete(r);
        status = 200;
    }
    pthread_mutex_lock(&mu);
    if (nmsgs < MAXMSG) {
        msg_t *s = &msgs[nmsgs++];
        const char *v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "webhook-signature");
        const char *rid = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Request-Id");
        snprintf(s->path, sizeof(s->path), "%s", url);
        snprintf(s->sig, sizeof(s->sig), "%s", v ? v : "");
        snprintf(s->rid, sizeof(s->rid), "%s", rid ? rid : "");
        s->body = m;
        m = NULL;
    }
    pthread_mutex_unlock(&mu);
    cJSON_Delete(m);
    const char *text = answer ? answer : "";
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(resp, "Content-Type", "application/json");
    enum MHD_Result ret = MHD_queue_response(conn, (unsigned)status, resp);
    MHD_destroy_response(resp);
    free(answer);
    return ret;
}

/* The k-th chat_message received (waits up to 10 s). Borrowed. */
static const cJSON *agent_msg(int k)
{
    for (int i = 0; i < 1000; i++) {
        pthread_mutex_lock(&mu);
        const cJSON *m = k < nmsgs ? msgs[k].body : NULL;
        pthread_mutex_unlock(&mu);
        if (m)
            return m;
        fx_sleep_ms(10);
    }
    CHECK(!"the agent got no chat_message");
    return NULL;
}

static int agent_count(void)
{
    pthread_mutex_lock(&mu);
    int n = nmsgs;
    pthread_mutex_unlock(&mu);
    return n;
}

static const char *jstr(const cJSON *o, const char *name)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, name));
}

/* ---- HTTP ---- */

typedef struct answer {
    long status;
    char body[16384];
    size_t len;
    char sid[128];
    char rid[160]; /* the answer's X-Request-Id */
} answer_t;

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    answer_t *a = arg;
    size_t len = size * n;
    size_t room = sizeof(a->body) - 1 - a->len;
    memcpy(a->body + a->len, p, len < room ? len : room);
    a->len += len < room ? len : room;
    a->body[a->len] = '\0';
    return len;
}

/* The value of header line p (len bytes) into out when it is header name (with its ':'). */
static void header_value(const char *p, size_t len, const char *name, char *out, size_t size)
{
    size_t n = strlen(name);
    if (len <= n || strncasecmp(p, name, n) != 0)
        return;
    snprintf(out, size, "%.*s", (int)(len - n), p + n);
    char *s = out;
    while (*s == ' ')
        memmove(s, s + 1, strlen(s));
    s[strcspn(s, "\r\n")] = '\0';
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
    answer_t *a = arg;
    size_t len = size * n;
    header_value(p, len, "Mcp-Session-Id:", a->sid, sizeof(a->sid));
    header_value(p, len, "X-Request-Id:", a->rid, sizeof(a->rid));
    return len;
}

/* POSTs body to the ingress at path with the extra headers (NULL-terminated). */
static void post(const char *path, const char *const hdrs[], const char *body, answer_t *a)
{
    memset(a, 0, sizeof(*a));
    CURL *c = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    h = curl_slist_append(h, "Accept: application/json");
    for (int i = 0; hdrs && hdrs[i]; i++)
        h = curl_slist_append(h, hdrs[i]);
    char url[256];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", ing_port, path);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 20000L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, a);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, a);
    CHECK_INT_EQ(curl_easy_perform(c), CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &a->status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
}

/* tools/call of tool with arguments args (JSON text); sid: a legacy session (or NULL);
 * modern: 2026-07-28 headers; rid: the client's X-Request-Id (or NULL). */
static void call_rid(const char *key, const char *tool, const char *args, const char *sid,
                     int modern, const char *rid, answer_t *a)
{
    char body[4096], auth[128], sidh[200], name[128], ridh[200];
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"%s\","
             "\"arguments\":%s%s}}",
             tool, args, modern ? ",\"_meta\":{" META_V "}" : "");
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", key);
    snprintf(sidh, sizeof(sidh), "Mcp-Session-Id: %s", sid ? sid : "");
    snprintf(name, sizeof(name), "Mcp-Name: %s", tool);
    snprintf(ridh, sizeof(ridh), "X-Request-Id: %s", rid ? rid : "");
    const char *legacy[] = {auth, NULL, NULL, NULL}; /* (a NULL ends the list) */
    const char **h = legacy + 1;
    if (sid)
        *h++ = sidh;
    if (rid)
        *h = ridh;
    const char *modern_h[] = {auth, "MCP-Protocol-Version: " NAMES_PROTO_MODERN,
                              "Mcp-Method: tools/call", name, NULL};
    post("/mcp", modern ? modern_h : legacy, body, a);
}

static void call(const char *key, const char *tool, const char *args, const char *sid, int modern,
                 answer_t *a)
{
    call_rid(key, tool, args, sid, modern, NULL, a);
}

/* The first content block's text of a tools/call answer; "" when none. */
static const char *result_text(const answer_t *a, char *out, size_t size, int *is_error)
{
    cJSON *o = cJSON_Parse(a->body);
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(o, "result");
    const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(res, "content"), 0);
    const char *t = jstr(c0, "text");
    snprintf(out, size, "%s", t ? t : "");
    if (is_error)
        *is_error = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "isError"));
    cJSON_Delete(o);
    return out;
}

static int error_code(const answer_t *a)
{
    cJSON *o = cJSON_Parse(a->body);
    const cJSON *c =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "error"), "code");
    int code = cJSON_IsNumber(c) ? c->valueint : 0;
    cJSON_Delete(o);
    return code;
}

/* Posts an agent_reply for message_id on channel chan, authenticated with key, or with the
 * app's HMAC signature when key is NULL. */
static void reply(const char *chan, const char *mid, const char *text, const char *key, answer_t *a)
{
    char body[1024], path[256], auth[128];
    snprintf(body, sizeof(body),
             "{\"type\":\"agent_reply\",\"in_reply_to\":\"%s\",\"channel_id\":\"%s\","
             "\"text\":\"%s\"}",
             mid, chan, text);
    snprintf(path, sizeof(path), "/v1/channels/%s/messages", chan);
    if (key) {
        snprintf(auth, sizeof(auth), "X-Api-Key: %s", key);
        const char *h[] = {auth, NULL};
        post(path, h, body, a);
        return;
    }
    char hh[4][200];
    fx_sign_headers(APP, APP_SECRET, path, body, hh);
    const char *h[] = {hh[0], hh[1], hh[2], hh[3], NULL};
    post(path, h, body, a);
}

/* A tools/call run on a thread (it blocks until the agent's reply arrives). */
typedef struct bg {
    pthread_t th;
    const char *tool, *args;
    answer_t a;
} bg_t;

static void *bg_run(void *arg)
{
    bg_t *b = arg;
    call("k1", b->tool, b->args, NULL, 0, &b->a);
    return NULL;
}

static void bg_start(bg_t *b, const char *tool, const char *args)
{
    b->tool = tool;
    b->args = args;
    CHECK_INT_EQ(pthread_create(&b->th, NULL, bg_run, b), 0);
}

static void write_config(int down_port)
{
    char path[300];
    snprintf(path, sizeof(path), "%s/agent.json", fx.dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fprintf(f,
            "{\"tenants\": [{\"id\": \"t1\", \"api_keys\": [{\"id\": \"k\", \"key\": \"k1\"}],"
            " \"apps\": [{\"app_id\": \"" APP "\", \"secret\": \"" APP_SECRET "\"}]},"
            " {\"id\": \"t2\", \"api_keys\": [{\"id\": \"k\", \"key\": \"k2\"}]}],"
            " \"servers\": [{\"tenant\": \"t1\", \"name\": \"default\"},"
            " {\"tenant\": \"t2\", \"name\": \"default\"}],"
            " \"tools\": ["
            "{\"tenant\": \"t1\", \"server\": \"default\", \"name\": \"ask\", \"published\": \"1\","
            " \"versions\": [{\"version\": \"1\", \"inputSchema\": {\"type\": \"object\"},"
            " \"executor\": {\"type\": \"agent\", \"url\": \"http://127.0.0.1:%d/sync\","
            " \"secret\": \"" SECRET "\", \"headers\": {\"X-Agent-Key\": \"ak\"}}}]},"
            "{\"tenant\": \"t1\", \"server\": \"default\", \"name\": \"ask_async\","
            " \"published\": \"1\", \"versions\": [{\"version\": \"1\", \"inputSchema\":"
            " {\"type\": \"object\"}, \"timeout_ms\": 15000, \"executor\": {\"type\": \"agent\","
            " \"url\": \"http://127.0.0.1:%d/async\"}}]},"
            "{\"tenant\": \"t1\", \"server\": \"default\", \"name\": \"ask_slow\","
            " \"published\": \"1\", \"versions\": [{\"version\": \"1\", \"inputSchema\":"
            " {\"type\": \"object\"}, \"timeout_ms\": 1500, \"executor\": {\"type\": \"agent\","
            " \"url\": \"http://127.0.0.1:%d/async\"}}]},"
            "{\"tenant\": \"t1\", \"server\": \"default\", \"name\": \"ask_down\","
            " \"published\": \"1\", \"versions\": [{\"version\": \"1\", \"inputSchema\":"
            " {\"type\": \"object\"}, \"executor\": {\"type\": \"agent\","
            " \"url\": \"http://user:pw@127.0.0.1:%d/x\"}}]}]}",
            agent_port, agent_port, agent_port, down_port);
    fclose(f);
}

int main(void)
{
    answer_t a;
    char text[512];
    int is_err = 0;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (fx_start(&fx, 2) < 0)
        return 1;
    agent_port = fx_free_port();
    int down_port = fx_free_port();
    ing_port = fx_free_port();
    write_config(down_port);
    struct MHD_Daemon *agent = fx_server_start(agent_port, on_agent);
    CHECK(agent != NULL);
    char cfg[300], wlog[300];
    snprintf(cfg, sizeof(cfg), "%s/agent.json", fx.dir);
    pid_t ing = fx_spawn_ingress(&fx, "ingress", ing_port, cfg, NULL, NULL, 0);
    CHECK(ing > 0);
    const char *wenv[] = {"MCPQ_CHANNEL_MAX_TURNS=3", "MCPQ_CHANNEL_MAX_BYTES=2048", NULL};
    pid_t wrk = fx_spawn_worker(&fx, "w1", wenv);
    CHECK(wrk > 0);
    snprintf(wlog, sizeof(wlog), "%s/w1.log", fx.dir);

    /* 1. Synchronous agent (the client names its request). */
    call_rid("k1", "ask", "{\"q\":\"hello\"}", NULL, 0, "agent-call.3f1c-0451", &a);
    CHECK_INT_EQ(a.status, 200);
    CHECK_STR_EQ(result_text(&a, text, sizeof(text), &is_err), "turns=0 q=hello");
    CHECK_INT_EQ(is_err, 0);
    const cJSON *m0 = agent_msg(0);
    char why[300] = "";
    CHECK_INT_EQ(
        sch_validate(sch_builtin("chat-message.schema.json"), m0, "chat_message", why, sizeof(why)),
        0);
    CHECK_STR_EQ(jstr(m0, "type"), "chat_message");
    CHECK_STR_EQ(jstr(m0, "tenant"), "t1");
    CHECK_STR_EQ(msgs[0].path, "/sync");
    CHECK(strncmp(msgs[0].sig, "v1,", 3) == 0);
    CHECK_STR_EQ(a.rid, "agent-call.3f1c-0451");
    CHECK_STR_EQ(msgs[0].rid, "agent-call.3f1c-0451");
    TEST_PASS("an agent answering 200 with an agent_reply: its text is the content");
    TEST_PASS("the agent's endpoint gets the client's X-Request-Id");

    /* 2. Asynchronous agent, reply with the tenant's API key. */
    int k = agent_count();
    bg_t b1;
    bg_start(&b1, "ask_async", "{\"q\":\"later\"}");
    const cJSON *m1 = agent_msg(k);
    const char *mid = jstr(m1, "message_id"), *chan = jstr(m1, "channel_id");
    CHECK(mid && chan);
    reply(chan, mid, "async answer", "k2", &a); /* another tenant */
    CHECK_INT_EQ(a.status, 404);
    reply(chan, "j_nosuchmessage", "x", "k1", &a);
    CHECK_INT_EQ(a.status, 404);
    post("/v1/channels/c_x/messages", (const char *[]){"X-Api-Key: k1", NULL},
         "{\"type\":\"chat_message\"}", &a);
    CHECK_INT_EQ(a.status, 400);
    post("/v1/channels/c_x/messages", NULL, "{}", &a);
    CHECK_INT_EQ(a.status, 401);
    reply(chan, mid, "async answer", "k1", &a);
    CHECK_INT_EQ(a.status, 200);
    reply(chan, mid, "again", "k1", &a);
    CHECK(a.status == 409 || a.status == 404);
    pthread_join(b1.th, NULL);
    CHECK_INT_EQ(b1.a.status, 200);
    CHECK_STR_EQ(result_text(&b1.a, text, sizeof(text), &is_err), "async answer");
    TEST_PASS("an agent answering 202 then posting its reply with the tenant's key completes "
              "the call; foreign, unknown, malformed and duplicate replies are refused");

    /* 3. Asynchronous agent, reply signed by the tenant's app. */
    k = agent_count();
    bg_t b2;
    bg_start(&b2, "ask_async", "{\"q\":\"signed\"}");
    const cJSON *m2 = agent_msg(k);
    reply(jstr(m2, "channel_id"), jstr(m2, "message_id"), "signed answer", NULL, &a);
    CHECK_INT_EQ(a.status, 200);
    pthread_join(b2.th, NULL);
    CHECK_STR_EQ(result_text(&b2.a, text, sizeof(text), NULL), "signed answer");
    TEST_PASS("an agent reply signed with the tenant's app (HMAC) completes the call");

    /* 4. Legacy session: the second call sees the first's turn. */
    const char *init =
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
        "\"protocolVersion\":\"" NAMES_PROTO_2025_06_18 "\",\"capabilities\":{},\"clientInfo\":{"
        "\"name\":\"t\",\"version\":\"1\"}}}";
    post("/mcp", (const char *[]){"Authorization: Bearer k1", NULL}, init, &a);
    CHECK_INT_EQ(a.status, 200);
    char sid[128];
    snprintf(sid, sizeof(sid), "%s", a.sid);
    CHECK(sid[0] != '\0');
    k = agent_count();
    call("k1", "ask", "{\"q\":\"one\"}", sid, 0, &a);
    CHECK_STR_EQ(result_text(&a, text, sizeof(text), NULL), "turns=0 q=one");
    call("k1", "ask", "{\"q\":\"two\"}", sid, 0, &a);
    CHECK_STR_EQ(result_text(&a, text, sizeof(text), NULL), "turns=1 q=two");
    const cJSON *s1 = agent_msg(k), *s2 = agent_msg(k + 1);
    CHECK_STR_EQ(jstr(s1, "channel_id"), jstr(s2, "channel_id"));
    /* no X-Request-Id from the client: the agent gets the one the ingress made and answered */
    CHECK_INT_EQ((int)strlen(a.rid), 32);
    CHECK_INT_EQ((int)strspn(a.rid, "0123456789abcdef"), 32);
    CHECK_STR_EQ(msgs[k + 1].rid, a.rid);
    CHECK(strcmp(msgs[k].rid, a.rid) != 0);
    const cJSON *turn = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(s2, "turns"), 0);
    const cJSON *tin = cJSON_GetObjectItemCaseSensitive(turn, "in");
    CHECK_STR_EQ(jstr(tin, "message_id"), jstr(s1, "message_id"));
    CHECK_STR_EQ(jstr(cJSON_GetObjectItemCaseSensitive(tin, "arguments"), "q"), "one");
    const cJSON *tout = cJSON_GetObjectItemCaseSensitive(turn, "out");
    CHECK_STR_EQ(
        jstr(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(tout, "content"), 0), "text"),
        "turns=0 q=one");
    TEST_PASS("two calls in one legacy session: the second chat_message carries the first turn");

    /* 5. 2026-07-28: open_channel, calls sharing it, a foreign or unknown channel_id. */
    char body[512];
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\","
             "\"params\":{\"name\":\"open_channel\",\"arguments\":{},"
             "\"_meta\":{" META_V "}}}");
    post("/mcp/system",
         (const char *[]){"Authorization: Bearer k1", "MCP-Protocol-Version: " NAMES_PROTO_MODERN,
                          "Mcp-Method: tools/call", "Mcp-Name: open_channel", NULL},
         body, &a);
    CHECK_INT_EQ(a.status, 200);
    cJSON *o = cJSON_Parse(a.body);
    const char *cid = jstr(cJSON_GetObjectItemCaseSensitive(
                               cJSON_GetObjectItemCaseSensitive(o, "result"), "structuredContent"),
                           "channel_id");
    CHECK(cid != NULL);
    char chan_id[128], args[256];
    snprintf(chan_id, sizeof(chan_id), "%s", cid);
    cJSON_Delete(o);
    snprintf(args, sizeof(args), "{\"q\":\"m1\",\"channel_id\":\"%s\"}", chan_id);
    call("k1", "ask", args, NULL, 1, &a);
    CHECK_STR_EQ(result_text(&a, text, sizeof(text), NULL), "turns=0 q=m1");
    snprintf(args, sizeof(args), "{\"q\":\"m2\",\"channel_id\":\"%s\"}", chan_id);
    call("k1", "ask", args, NULL, 1, &a);
    CHECK_STR_EQ(result_text(&a, text, sizeof(text), NULL), "turns=1 q=m2");
    CHECK_STR_EQ(jstr(agent_msg(agent_count() - 1), "channel_id"), chan_id);
    call("k1", "ask", "{\"q\":\"x\",\"channel_id\":\"c_0000000000000000nosuch\"}", NULL, 1, &a);
    CHECK_INT_EQ(error_code(&a), -32602);
    post("/mcp/system",
         (const char *[]){"Authorization: Bearer k2", "MCP-Protocol-Version: " NAMES_PROTO_MODERN,
                          "Mcp-Method: tools/call", "Mcp-Name: open_channel", NULL},
         body, &a);
    o = cJSON_Parse(a.body);
    const char *foreign =
        jstr(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "result"),
                                              "structuredContent"),
             "channel_id");
    CHECK(foreign != NULL);
    snprintf(args, sizeof(args), "{\"q\":\"x\",\"channel_id\":\"%s\"}", foreign);
    cJSON_Delete(o);
    call("k1", "ask", args, NULL, 1, &a);
    CHECK_INT_EQ(error_code(&a), -32602); /* t2's channel: answered like an unknown one */
    CHECK_CONTAINS(a.body, "Unknown channel_id");
    int before = agent_count();
    snprintf(args, sizeof(args), "{\"q\":\"x\",\"channel_id\":\"%s\"}", chan_id);
    char t2body[512];
    snprintf(t2body, sizeof(t2body),
             "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"ask\",\"arguments\":%s}}",
             args);
    post("/mcp", (const char *[]){"Authorization: Bearer k2", NULL}, t2body, &a);
    CHECK_INT_EQ(error_code(&a), -32602); /* t2 has no tool "ask" either way */
    CHECK_INT_EQ(agent_count(), before);
    TEST_PASS("2026-07-28: open_channel, two calls with its channel_id share turns; an unknown "
              "or another tenant's channel_id is -32602");

    /* 6. No reply in time. */
    call("k1", "ask_slow", "{\"q\":\"never\"}", NULL, 0, &a);
    CHECK_INT_EQ(error_code(&a), -32003);
    CHECK_CONTAINS(a.body, "Agent reply timeout");
    TEST_PASS("an agent that never replies: -32003 Agent reply timeout");

    /* 7. Agent down. */
    call("k1", "ask_down", "{\"q\":\"x\"}", NULL, 0, &a);
    CHECK_INT_EQ(a.status, 200);
    result_text(&a, text, sizeof(text), &is_err);
    CHECK_INT_EQ(is_err, 1);
    CHECK_CONTAINS(text, "the agent could not be reached (error id e_");
    CHECK(strstr(text, "127.0.0.1") == NULL); /* the host goes to the worker's log only */
    CHECK(strstr(text, "pw") == NULL);
    TEST_PASS("an agent that is down: an isError result with an error id (no host, no "
              "credentials)");

    /* 8. Turns bounded in count (3) and bytes (2048). */
    post("/mcp/system",
         (const char *[]){"Authorization: Bearer k1", "MCP-Protocol-Version: " NAMES_PROTO_MODERN,
                          "Mcp-Method: tools/call", "Mcp-Name: open_channel", NULL},
         body, &a);
    o = cJSON_Parse(a.body);
    snprintf(chan_id, sizeof(chan_id), "%s",
             jstr(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "result"),
                                                   "structuredContent"),
                  "channel_id"));
    cJSON_Delete(o);
    for (int i = 0; i < 5; i++) {
        snprintf(args, sizeof(args), "{\"q\":\"n%d\",\"channel_id\":\"%s\"}", i, chan_id);
        call("k1", "ask", args, NULL, 1, &a);
        snprintf(why, sizeof(why), "turns=%d q=n%d", i < 3 ? i : 3, i);
        CHECK_STR_EQ(result_text(&a, text, sizeof(text), NULL), why);
    }
    const cJSON *last = agent_msg(agent_count() - 1);
    const cJSON *t0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(last, "turns"), 0);
    CHECK_STR_EQ(jstr(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(t0, "in"),
                                                       "arguments"),
                      "q"),
                 "n1");
    char pad[700];
    memset(pad, 'x', 600);
    pad[600] = '\0';
    post("/mcp/system",
         (const char *[]){"Authorization: Bearer k1", "MCP-Protocol-Version: " NAMES_PROTO_MODERN,
                          "Mcp-Method: tools/call", "Mcp-Name: open_channel", NULL},
         body, &a);
    o = cJSON_Parse(a.body);
    snprintf(chan_id, sizeof(chan_id), "%s",
             jstr(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "result"),
                                                   "structuredContent"),
                  "channel_id"));
    cJSON_Delete(o);
    char bigargs[1024];
    for (int i = 0; i < 4; i++) {
        snprintf(bigargs, sizeof(bigargs), "{\"q\":\"b%d\",\"pad\":\"%s\",\"channel_id\":\"%s\"}",
                 i, pad, chan_id);
        call("k1", "ask", bigargs, NULL, 1, &a);
    }
    CHECK_CONTAINS(result_text(&a, text, sizeof(text), NULL), "turns=2 q=b3");
    redisContext *rc = redisConnect("127.0.0.1", fx.redis_port);
    CHECK(rc && !rc->err);
    redisReply *r =
        redisCommand(rc, "LRANGE " NAMES_KEY_CHAN "%s" NAMES_SUFFIX_TURNS " 0 -1", chan_id);
    CHECK(r && r->type == REDIS_REPLY_ARRAY);
    size_t total = 0;
    for (size_t i = 0; i < r->elements; i++)
        total += r->element[i]->len;
    CHECK_INT_EQ((long)r->elements, 2);
    CHECK(total <= 2048);
    freeReplyObject(r);
    r = redisCommand(rc, "PTTL " NAMES_KEY_CHAN "%s" NAMES_SUFFIX_TURNS "", chan_id);
    CHECK(r && r->type == REDIS_REPLY_INTEGER && r->integer > 0);
    freeReplyObject(r);
    redisFree(rc);
    TEST_PASS("a channel keeps at most MCPQ_CHANNEL_MAX_TURNS turns and MCPQ_CHANNEL_MAX_BYTES "
              "bytes, oldest dropped first, with a TTL");

    CHECK_INT_EQ(fx_stop_pid(wrk, 10000), 0);
    CHECK_INT_EQ(fx_stop_pid(ing, 10000), 0);
    MHD_stop_daemon(agent);
    for (int i = 0; i < nmsgs; i++)
        cJSON_Delete(msgs[i].body);
    fx_stop(&fx);
    curl_global_cleanup();
    return 0;
}
