/*
 * Registry changes reach every replica and the clients listening (docs/protocol.md,
 * ingress/http/listen.h) on a real stack: redis-server, mcpq-devbroker, two ingress replicas A and
 * B on the same Redis, and a worker. The registry is changed the way the admin API does it:
 * HSET of a tool document into {mcpq}:registry, INCR {mcpq}:registry:rev, PUBLISH
 * mcpq:registry:changed.
 *   - GET /mcp: 405 without Accept: text/event-stream and under 2026-07-28, 400 without a
 *     session, 404 with an unknown one, 401 without credentials, 409 for a second stream of
 *     the session on the same replica; initialize and server/discover say listChanged: true;
 *   - a legacy GET stream on A and a 2026-07-28 subscriptions/listen stream on B (acknowledged
 *     first, with the honoured filter; one that honours nothing ends at once with its result);
 *   - a change to another tenant's tools notifies neither stream;
 *   - a new tool of the streams' tenant shows in tools/list on both replicas (polled every
 *     50 ms for up to LIST_WAIT_MS, a bound for a busy machine; how long it took is printed,
 *     not asserted) and both streams get notifications/tools/list_changed
 *     (the 2026-07-28 one with its subscriptionId);
 *   - a call started before its tool's new version is published finishes on the old version
 *     (the executor travels in the job envelope); the next call runs the new one;
 *   - resources (docs/protocol.md "Resource subscriptions"): the legacy session subscribes to
 *     a static resource through replica B (resources/subscribe) while its GET stream is on A;
 *     the subscriptions/listen stream on B names it in resourceSubscriptions (an unknown uri
 *     is left out of the acknowledgement); a new version of the resource published through
 *     B's admin API sends each stream notifications/resources/updated exactly once (both
 *     replicas swap snapshots, one announces); a PUBLISH on mcpq:resource:updated, as a worker
 *     does, reaches both, another tenant's or a malformed one neither; after resources/
 *     unsubscribe the GET stream hears no more; a new resource and a new prompt send
 *     notifications/resources/list_changed and notifications/prompts/list_changed;
 *   - keep-alive comments; a client closing its stream, DELETE of the session on the other replica
 * (its GET stream ends), and SIGTERM of B (its subscriptions/listen stream gets the listen result).
 */
#include "check.h"
#include "names.h"
#include "fixture.h"

#include <curl/curl.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define T_KEY "Authorization: Bearer t-key"
#define O_KEY "Authorization: Bearer o-key"
#define LEGACY_V "MCP-Protocol-Version: " NAMES_PROTO_2025_06_18
#define MODERN_V "MCP-Protocol-Version: " NAMES_PROTO_MODERN
#define META                                                                                       \
    "\"_meta\":{\"" NAMES_META_PROTOCOL_VERSION "\":\"" NAMES_PROTO_MODERN "\","                   \
    "\"io.modelcontextprotocol/clientInfo\":{\"name\":\"itest\",\"version\":\"1\"},"               \
    "\"io.modelcontextprotocol/clientCapabilities\":{}}"
#define LIST_CHANGED "\"method\":\"notifications/tools/list_changed\""
#define LEGACY_FRAME                                                                               \
    "event: message\ndata: "                                                                       \
    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n"

#define ADMIN_TOKEN "listchanged-admin-token-0123456789"
#define NOTES "file:///notes.txt"
#define UPDATED "\"method\":\"notifications/resources/updated\""
#define UPDATED_LEGACY                                                                             \
    "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/updated\",\"params\":{"       \
    "\"uri\":\"" NOTES "\"}}\n\n"
#define UPDATED_MODERN                                                                             \
    "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/updated\",\"params\":{"       \
    "\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":\"sub-1\"},\"uri\":\"" NOTES "\"}}\n\n"

static fx_stack_t fx;
static redisContext *redis;

/* ---- plain exchanges ---- */

/* A GET answered at once: its status and body. */
static long http_get(int port, const char *const headers[], char *body, size_t size)
{
    fx_stream_t s;
    fx_stream_open(&s, port, "/mcp", NULL, headers);
    CHECK(fx_stream_wait_done(&s, 5000));
    fx_stream_close(&s);
    snprintf(body, size, "%.*s", (int)(size - 1), s.buf);
    return s.status;
}

static void post(int port, const char *const headers[], const char *body, fx_reply_t *r)
{
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/mcp", port);
    CHECK_INT_EQ(fx_http_post(url, headers, body, r), 0);
}

/* 1 when tools/list of the key's default server names tool (and, if given, has text). */
static int listed(int port, const char *key, const char *tool, const char *text)
{
    const char *h[] = {key, NULL};
    fx_reply_t r;
    post(port, h, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", &r);
    char name[160];
    snprintf(name, sizeof(name), "\"name\":\"%s\"", tool);
    return r.status == 200 && strstr(r.body, name) && (!text || strstr(r.body, text));
}

/* How long a registry change may take to reach both replicas' tools/list and their streams:
 * generous, because on a loaded machine slow is not wrong. The design's "within a second"
 * (docs/protocol.md, "List changes") is printed as measured, not asserted. */
#define LIST_WAIT_MS 20000

/* Polls tools/list on both replicas every 50 ms until both show it: the ms it took from
 * t0, or -1 after LIST_WAIT_MS. */
static long long until_listed(const int ports[2], const char *key, const char *tool,
                              const char *text, long long t0, long long ms_at[2])
{
    ms_at[0] = ms_at[1] = -1;
    for (;;) {
        for (int i = 0; i < 2; i++)
            if (ms_at[i] < 0 && listed(ports[i], key, tool, text))
                ms_at[i] = fx_now_ms() - t0;
        if (ms_at[0] >= 0 && ms_at[1] >= 0)
            return ms_at[0] > ms_at[1] ? ms_at[0] : ms_at[1];
        if (fx_now_ms() - t0 >= LIST_WAIT_MS)
            return -1;
        fx_sleep_ms(50);
    }
}

/* The admin API's way: the document, the revision, the wake-up (unless quiet: then the
 * replicas' revision poll alone must find the change). */
static void registry_write(const char *field, const char *doc, int quiet)
{
    redisReply *r = redisCommand(redis, "HSET " NAMES_KEY_REGISTRY " %s %s", field, doc);
    CHECK(r != NULL && r->type == REDIS_REPLY_INTEGER);
    freeReplyObject(r);
    r = redisCommand(redis, "INCR " NAMES_KEY_REGISTRY_REV);
    CHECK(r != NULL && r->type == REDIS_REPLY_INTEGER);
    long long rev = r->integer;
    freeReplyObject(r);
    if (quiet)
        return;
    r = redisCommand(redis, "PUBLISH " NAMES_CHAN_REGISTRY_CHANGED " %lld", rev);
    CHECK(r != NULL && r->type == REDIS_REPLY_INTEGER);
    CHECK(r->integer >= 2); /* both replicas are subscribed */
    freeReplyObject(r);
}

static void registry_put(const char *field, const char *doc)
{
    registry_write(field, doc, 0);
}

/* 1 when a line of the log at path holds both a and b. */
static int log_has(const char *path, const char *a, const char *b)
{
    FILE *f = fopen(path, "r");
    char line[8192];
    int found = 0;
    while (f && !found && fgets(line, sizeof(line), f))
        found = strstr(line, a) && strstr(line, b);
    if (f)
        fclose(f);
    return found;
}

typedef struct call {
    int port;
    fx_reply_t r;
} call_t;

static void *slow_call(void *arg)
{
    call_t *c = arg;
    const char *h[] = {T_KEY, NULL};
    post(c->port, h,
         "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"slow\","
         "\"arguments\":{\"ms\":2500}}}",
         &c->r);
    return NULL;
}

/* The notes resource's versions, the first published in the config file; CONFIG(notes) is the
 * config with the notes resource notes. */
#define NOTES_V1                                                                                   \
    "{\"version\": \"1\", \"uri\": \"" NOTES                                                       \
    "\", \"mimeType\": \"text/plain\", \"text\": \"first\"}"
#define NOTES_V2                                                                                   \
    "{\"version\": \"2\", \"uri\": \"" NOTES                                                       \
    "\", \"mimeType\": \"text/plain\", \"text\": \"second\"}"
#define NOTES_DOC(published, versions)                                                             \
    " {\"tenant\": \"t\", \"server\": \"default\", \"name\": \"notes\", \"kind\": \"resource\","   \
    "  \"published\": \"" published "\", \"versions\": [" versions "]}"
#define CONFIG(notes)                                                                              \
    "{\"tenants\": [{\"id\": \"t\", \"api_keys\": [{\"id\": \"k\", \"key\": \"t-key\"}]},"         \
    "  {\"id\": \"o\", \"api_keys\": [{\"id\": \"k\", \"key\": \"o-key\"}]}],"                     \
    " \"servers\": [{\"tenant\": \"t\", \"name\": \"default\"},"                                   \
    "  {\"tenant\": \"o\", \"name\": \"default\"}],"                                               \
    " \"tools\": [{\"tenant\": \"t\", \"server\": \"default\", \"name\": \"echo\","                \
    "  \"published\": \"1\", \"versions\": [{\"version\": \"1\", \"inputSchema\": {\"type\": "     \
    "  \"object\"}, \"executor\": {\"type\": \"builtin\", \"name\": \"echo\"}}]},"                 \
    " {\"tenant\": \"t\", \"server\": \"default\", \"name\": \"slow\", \"published\": \"1\","      \
    "  \"versions\": [{\"version\": \"1\", \"description\": \"sleeps (v1)\", \"inputSchema\":"     \
    "  {\"type\": \"object\"}, \"executor\": {\"type\": \"builtin\", \"name\": \"sleep\"}}]},"     \
    " {\"tenant\": \"o\", \"server\": \"default\", \"name\": \"oecho\", \"published\": \"1\","     \
    "  \"versions\": [{\"version\": \"1\", \"inputSchema\": {\"type\": \"object\"},"               \
    "  \"executor\": {\"type\": \"builtin\", \"name\": \"echo\"}}]}," notes "]}"

static const char config[] = CONFIG(NOTES_DOC("1", NOTES_V1));

/* The start of an answer's body, for the log. */
typedef struct sink {
    char buf[4096];
    size_t len;
} sink_t;

static size_t sink_data(char *p, size_t size, size_t n, void *arg)
{
    sink_t *s = arg;
    size_t k = size * n, room = sizeof(s->buf) - 1 - s->len, c = k < room ? k : room;
    memcpy(s->buf + s->len, p, c);
    s->len += c;
    s->buf[s->len] = '\0';
    return k;
}

/* PUT /admin/v1/config of body on port (the admin API): its status. */
static long admin_put_config(int port, const char *body)
{
    char url[200];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/admin/v1/config", port);
    CURL *c = curl_easy_init();
    struct curl_slist *hl = curl_slist_append(NULL, "Authorization: Bearer " ADMIN_TOKEN);
    hl = curl_slist_append(hl, "Content-Type: application/json");
    sink_t sink = {.len = 0};
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "PUT");
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
    CHECK_INT_EQ(curl_easy_perform(c), CURLE_OK);
    long st = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
    if (st != 200)
        fprintf(stderr, "PUT /admin/v1/config: %ld %s\n", st, sink.buf);
    curl_easy_cleanup(c);
    curl_slist_free_all(hl);
    return st;
}

/* PUBLISH of payload on mcpq:resource:updated, as a worker does: how many replicas heard. */
static long long publish_updated(const char *payload)
{
    redisReply *r = redisCommand(redis, "PUBLISH " NAMES_CHAN_RESOURCE_UPDATED " %s", payload);
    CHECK(r != NULL && r->type == REDIS_REPLY_INTEGER);
    long long n = r->integer;
    freeReplyObject(r);
    return n;
}

/* Waits until the ingress logs at log_a and log_b both say they loaded the registry's current
 * revision. */
static void until_loaded(const char *log_a, const char *log_b)
{
    redisReply *r = redisCommand(redis, "GET " NAMES_KEY_REGISTRY_REV);
    CHECK(r != NULL && r->type == REDIS_REPLY_STRING);
    char rev[64];
    snprintf(rev, sizeof(rev), "\"revision\":\"%s\"", r->str);
    freeReplyObject(r);
    for (long long until = fx_now_ms() + LIST_WAIT_MS;
         !log_has(log_a, "\"msg\":\"registry loaded\"", rev) ||
         !log_has(log_b, "\"msg\":\"registry loaded\"", rev);
         fx_sleep_ms(50))
        CHECK(fx_now_ms() < until);
}

#define NOTES_MSG(tenant, uri)                                                                     \
    "{\"tenant\":\"" tenant "\",\"server\":\"default\",\"uri\":\"" uri "\"}"

/* The resource steps (see the top of the file): the session sess has its GET stream legacy on
 * replica pa; modern, on pb, listens to NOTES; log_a and log_b are the replicas' logs. */
static void resources(int pa, int pb, const char *sess, fx_stream_t *legacy, fx_stream_t *modern,
                      const char *log_a, const char *log_b)
{
    const char *h_sess[] = {T_KEY, LEGACY_V, sess, NULL};
    fx_reply_t r;
    post(pb, h_sess,
         "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"resources/subscribe\",\"params\":{\"uri\":"
         "\"" NOTES "\"}}",
         &r);
    CHECK_INT_EQ(r.status, 200);
    CHECK_CONTAINS(r.body, "\"result\":{}");

    /* A new published version of the resource, through B's admin API (the config, applied). */
    long long t0 = fx_now_ms();
    CHECK_INT_EQ(admin_put_config(pb, CONFIG(NOTES_DOC("2", NOTES_V1 "," NOTES_V2))), 200);
    if (!fx_stream_wait(legacy, UPDATED_LEGACY, 1, LIST_WAIT_MS))
        fx_stream_dump(legacy, "GET stream");
    CHECK(fx_stream_wait(legacy, UPDATED_LEGACY, 1, 1));
    CHECK(fx_stream_wait(modern, UPDATED_MODERN, 1, LIST_WAIT_MS));
    printf("# notifications/resources/updated on both streams %lld ms after the publish\n",
           fx_now_ms() - t0);
    /* Both replicas swap to the new snapshot, each compares it with its old one: still one
     * announcement (the second replica's would follow its swap at once). */
    until_loaded(log_a, log_b);
    fx_sleep_ms(1000);
    CHECK_INT_EQ(fx_stream_count(legacy, UPDATED), 1);
    CHECK_INT_EQ(fx_stream_count(modern, UPDATED), 1);
    TEST_PASS("a static resource changed through replica B's admin API: the session subscribed "
              "through B gets notifications/resources/updated on its GET stream on A, the "
              "subscriptions/listen stream on B with its subscriptionId, each exactly once");

    /* As a worker announces an upstream's update; the others are not for these streams. */
    CHECK(publish_updated(NOTES_MSG("o", NOTES)) >= 2);
    CHECK(publish_updated(NOTES_MSG("t", "file:///other")) >= 2);
    CHECK(publish_updated("not json") >= 2);
    CHECK(publish_updated(NOTES_MSG("t", NOTES)) >= 2);
    CHECK(fx_stream_wait(legacy, UPDATED, 2, LIST_WAIT_MS));
    CHECK(fx_stream_wait(modern, UPDATED, 2, LIST_WAIT_MS));
    fx_sleep_ms(500);
    CHECK_INT_EQ(fx_stream_count(legacy, UPDATED), 2);
    CHECK_INT_EQ(fx_stream_count(modern, UPDATED), 2);
    TEST_PASS("a PUBLISH on the resource channel (a worker's) reaches both streams; another "
              "tenant's, another uri and a malformed message reach neither");

    /* Unsubscribed (through A this time): the GET stream hears no more. */
    post(pa, h_sess,
         "{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"resources/unsubscribe\",\"params\":{"
         "\"uri\":\"" NOTES "\"}}",
         &r);
    CHECK_CONTAINS(r.body, "\"result\":{}");
    CHECK(publish_updated(NOTES_MSG("t", NOTES)) >= 2);
    CHECK(fx_stream_wait(modern, UPDATED, 3, LIST_WAIT_MS));
    fx_sleep_ms(500);
    CHECK_INT_EQ(fx_stream_count(legacy, UPDATED), 2);
    TEST_PASS("after resources/unsubscribe the GET stream gets no more updates of the uri");

    /* A new resource and a new prompt: the lists changed. (The new content above changed the
     * list too: resources/list shows its size.) */
    const char *res_changed = "notifications/resources/list_changed";
    int n_legacy = fx_stream_count(legacy, res_changed),
        n_modern = fx_stream_count(modern, res_changed);
    CHECK(n_legacy >= 1 && n_modern >= 1);
    registry_put("tool:t:more",
                 "{\"tenant\":\"t\",\"server\":\"default\",\"name\":\"more\",\"kind\":"
                 "\"resource\",\"published\":\"1\",\"versions\":[{\"version\":\"1\",\"uri\":"
                 "\"file:///more.txt\",\"text\":\"more\"}]}");
    CHECK(fx_stream_wait(legacy, res_changed, n_legacy + 1, LIST_WAIT_MS));
    CHECK(fx_stream_wait(modern, res_changed, n_modern + 1, LIST_WAIT_MS));
    CHECK_CONTAINS(legacy->buf, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/"
                                "resources/list_changed\"}");
    CHECK_CONTAINS(modern->buf, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/"
                                "list_changed\",\"params\":{\"_meta\":{\"io.modelcontextprotocol/"
                                "subscriptionId\":\"sub-1\"}}}");
    CHECK_INT_EQ(fx_stream_count(modern, "notifications/prompts/list_changed"), 0);
    registry_put("tool:t:greet",
                 "{\"tenant\":\"t\",\"server\":\"default\",\"name\":\"greet\",\"kind\":"
                 "\"prompt\",\"published\":\"1\",\"versions\":[{\"version\":\"1\",\"messages\":"
                 "[{\"role\":\"user\",\"content\":{\"type\":\"text\",\"text\":\"hi\"}}]}]}");
    CHECK(fx_stream_wait(legacy, "notifications/prompts/list_changed", 1, LIST_WAIT_MS));
    CHECK(fx_stream_wait(modern, "notifications/prompts/list_changed", 1, LIST_WAIT_MS));
    CHECK_INT_EQ(fx_stream_count(modern, res_changed), n_modern + 1);
    CHECK_INT_EQ(fx_stream_count(legacy, LIST_CHANGED), 2); /* the tools list did not change */
    TEST_PASS("a new resource sends notifications/resources/list_changed, a new prompt "
              "notifications/prompts/list_changed, on both streams");
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (fx_start(&fx, 2) < 0)
        return 1;
    char cfg[300], log_a[300], log_b[300];
    snprintf(cfg, sizeof(cfg), "%s/listchanged.json", fx.dir);
    fx_write_file(cfg, config, 0600);
    int pa = fx_free_port(), pb = fx_free_port();
    while (pb == pa)
        pb = fx_free_port();
    /* A sends keep-alives every second, so a closed stream is noticed within one. */
    const char *env_a[] = {"MCPQ_LISTEN_KEEPALIVE_MS=1000", NULL};
    pid_t ia = fx_spawn_ingress(&fx, "ingress-a", pa, cfg, env_a, log_a, sizeof(log_a));
    const char *env_b[] = {"MCPQ_ADMIN_TOKEN=" ADMIN_TOKEN, NULL};
    pid_t ib = fx_spawn_ingress(&fx, "ingress-b", pb, cfg, env_b, log_b, sizeof(log_b));
    pid_t w = fx_spawn_worker(&fx, "worker", NULL);
    CHECK(ia > 0 && ib > 0 && w > 0);
    struct timeval tv = {5, 0};
    redis = redisConnectWithTimeout("127.0.0.1", fx.redis_port, tv);
    CHECK(redis != NULL && !redis->err);
    const int ports[2] = {pa, pb};

    /* 1. GET /mcp without a stream to open. */
    char body[8192];
    const char *h_json[] = {T_KEY, "Accept: application/json", NULL};
    CHECK_INT_EQ(http_get(pa, h_json, body, sizeof(body)), 405);
    const char *h_nosess[] = {T_KEY, "Accept: text/event-stream", LEGACY_V, NULL};
    CHECK_INT_EQ(http_get(pa, h_nosess, body, sizeof(body)), 400);
    CHECK_CONTAINS(body, "Mcp-Session-Id header required");
    const char *h_unknown[] = {T_KEY, "Accept: text/event-stream", LEGACY_V,
                               "Mcp-Session-Id: s_00000000000000000000000000000000", NULL};
    CHECK_INT_EQ(http_get(pa, h_unknown, body, sizeof(body)), 404);
    CHECK_CONTAINS(body, "-32001");
    const char *h_modern[] = {T_KEY, "Accept: text/event-stream", MODERN_V, NULL};
    CHECK_INT_EQ(http_get(pa, h_modern, body, sizeof(body)), 405);
    TEST_PASS("GET /mcp: 405 without Accept: text/event-stream or under 2026-07-28, 400 "
              "without a session, 404 for an unknown one");

    /* 2. A session on A; its capabilities. */
    fx_reply_t r;
    const char *h_init[] = {T_KEY, NULL};
    post(pa, h_init,
         "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
         "\"" NAMES_PROTO_2025_06_18
         "\",\"capabilities\":{},\"clientInfo\":{\"name\":\"itest\",\"version\":\"1\"}}"
         "}",
         &r);
    CHECK_INT_EQ(r.status, 200);
    CHECK_CONTAINS(r.body, "\"tools\":{\"listChanged\":true}");
    CHECK(r.session_id[0] != '\0');
    char sess[160];
    snprintf(sess, sizeof(sess), "Mcp-Session-Id: %s", r.session_id);
    const char *h_sess[] = {T_KEY, LEGACY_V, sess, NULL};
    post(pa, h_sess, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &r);
    CHECK_INT_EQ(r.status, 202);
    const char *h_noauth[] = {"Accept: text/event-stream", LEGACY_V, sess, NULL};
    CHECK_INT_EQ(http_get(pa, h_noauth, body, sizeof(body)), 401);

    /* 3. The legacy GET stream on A. */
    fx_stream_t legacy;
    const char *h_get[] = {T_KEY, "Accept: text/event-stream", LEGACY_V, sess, NULL};
    fx_stream_open(&legacy, pa, "/mcp", NULL, h_get);
    CHECK(fx_stream_wait(&legacy, ": listening", 1, 5000));
    CHECK_INT_EQ(legacy.status, 200);
    CHECK_CONTAINS(legacy.ctype, "text/event-stream");
    CHECK_INT_EQ(http_get(pa, h_get, body, sizeof(body)), 409);
    TEST_PASS("legacy GET stream open on replica A (initialize says listChanged: true; a second "
              "stream of the session is 409, no credentials 401)");

    /* 4. subscriptions/listen on B. */
    const char *h_listen[] = {T_KEY, "Accept: application/json, text/event-stream", MODERN_V,
                              "Mcp-Method: subscriptions/listen", NULL};
    post(pb, h_listen,
         "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"subscriptions/listen\",\"params\":{" META "}}",
         &r);
    CHECK_CONTAINS(r.body, "-32602");
    const char *h_json_only[] = {T_KEY, "Accept: application/json", MODERN_V,
                                 "Mcp-Method: subscriptions/listen", NULL};
    post(pb, h_json_only,
         "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"subscriptions/listen\",\"params\":{" META
         ",\"notifications\":{\"toolsListChanged\":true}}}",
         &r);
    CHECK_INT_EQ(r.status, 406);
    fx_stream_t none;
    fx_stream_open(
        &none, pb, "/mcp",
        "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"subscriptions/listen\",\"params\":{" META
        ",\"notifications\":{\"resourceSubscriptions\":[\"file:///nothing-here\"]}}}",
        h_listen);
    CHECK(fx_stream_wait_done(&none, 5000));
    CHECK_CONTAINS(none.buf, "\"notifications\":{}");
    CHECK_CONTAINS(none.buf, "\"id\":4,\"result\":{\"_meta\":{\"io.modelcontextprotocol/"
                             "subscriptionId\":4");
    fx_stream_close(&none);
    fx_stream_t modern;
    fx_stream_open(
        &modern, pb, "/mcp",
        "{\"jsonrpc\":\"2.0\",\"id\":\"sub-1\",\"method\":\"subscriptions/listen\","
        "\"params\":{" META ",\"notifications\":{\"toolsListChanged\":true,"
        "\"resourcesListChanged\":true,\"promptsListChanged\":true,\"resourceSubscriptions\":"
        "[\"file:///nothing-here\",\"" NOTES "\",\"" NOTES "\"]}}}",
        h_listen);
    if (!fx_stream_wait(&modern, "notifications/subscriptions/acknowledged", 1, 5000))
        fx_stream_dump(&modern, "subscriptions/listen");
    CHECK_INT_EQ(modern.status, 200);
    CHECK_CONTAINS(modern.ctype, "text/event-stream");
    CHECK_CONTAINS(modern.buf,
                   "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":"
                   "\"notifications/subscriptions/acknowledged\",\"params\":{\"_meta\":"
                   "{\"io.modelcontextprotocol/subscriptionId\":\"sub-1\"},"
                   "\"notifications\":{\"toolsListChanged\":true,\"resourcesListChanged\":"
                   "true,\"promptsListChanged\":true,\"resourceSubscriptions\":[\"" NOTES
                   "\"]}}}\n\n");
    const char *h_disc[] = {T_KEY, MODERN_V, "Mcp-Method: server/discover", NULL};
    post(pb, h_disc,
         "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"server/discover\",\"params\":{" META "}}", &r);
    CHECK_CONTAINS(r.body, "\"tools\":{\"listChanged\":true}");
    TEST_PASS(
        "subscriptions/listen on replica B: acknowledged first with the honoured subset (the "
        "three list_changed kinds, the resource it serves once, not an unknown uri); a filter "
        "honouring nothing ends at once with the listen result; no filter is -32602, no "
        "Accept: text/event-stream 406");

    /* 5. Another tenant's change notifies neither. */
    registry_put("tool:o:onew",
                 "{\"tenant\":\"o\",\"server\":\"default\",\"name\":\"onew\",\"published\":\"1\","
                 "\"versions\":[{\"version\":\"1\",\"inputSchema\":{\"type\":\"object\"},"
                 "\"executor\":{\"type\":\"builtin\",\"name\":\"echo\"}}]}");
    long long at[2];
    CHECK(until_listed(ports, O_KEY, "onew", NULL, fx_now_ms(), at) >= 0);
    fx_sleep_ms(500);
    CHECK_INT_EQ(fx_stream_count(&legacy, LIST_CHANGED), 0);
    CHECK_INT_EQ(fx_stream_count(&modern, LIST_CHANGED), 0);
    CHECK(!listed(pa, T_KEY, "onew", NULL));
    TEST_PASS("a change to another tenant's tools notifies neither stream");

    /* 6. A new tool of tenant t. */
    long long t0 = fx_now_ms();
    registry_put("tool:t:fresh",
                 "{\"tenant\":\"t\",\"server\":\"default\",\"name\":\"fresh\",\"published\":\"1\","
                 "\"versions\":[{\"version\":\"1\",\"description\":\"new\",\"inputSchema\":{"
                 "\"type\":\"object\"},\"executor\":{\"type\":\"builtin\",\"name\":\"echo\"}}]}");
    long long ms = until_listed(ports, T_KEY, "fresh", NULL, t0, at);
    printf("# new tool in tools/list: replica A %lld ms, replica B %lld ms\n", at[0], at[1]);
    CHECK(ms >= 0);
    CHECK(fx_stream_wait(&legacy, LEGACY_FRAME, 1, LIST_WAIT_MS));
    CHECK(fx_stream_wait(&modern, LIST_CHANGED, 1, LIST_WAIT_MS));
    printf("# notifications/tools/list_changed on both streams %lld ms after the change\n",
           fx_now_ms() - t0);
    CHECK_CONTAINS(modern.buf, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":"
                               "\"notifications/tools/list_changed\",\"params\":{\"_meta\":{"
                               "\"io.modelcontextprotocol/subscriptionId\":\"sub-1\"}}}\n\n");
    CHECK_INT_EQ(fx_stream_count(&legacy, LIST_CHANGED), 1);
    CHECK_INT_EQ(fx_stream_count(&modern, LIST_CHANGED), 1);
    TEST_PASS("a new tool is in tools/list on both replicas and both streams get "
              "notifications/tools/list_changed");

    /* 6b. Without the Pub/Sub wake-up (at-most-once: it may be lost), the revision poll. */
    t0 = fx_now_ms();
    registry_write("tool:t:quiet",
                   "{\"tenant\":\"t\",\"server\":\"default\",\"name\":\"quiet\",\"published\":"
                   "\"1\",\"versions\":[{\"version\":\"1\",\"inputSchema\":{\"type\":\"object\"},"
                   "\"executor\":{\"type\":\"builtin\",\"name\":\"echo\"}}]}",
                   1);
    ms = until_listed(ports, T_KEY, "quiet", NULL, t0, at);
    printf("# without PUBLISH: replica A %lld ms, replica B %lld ms\n", at[0], at[1]);
    CHECK(ms >= 0);
    CHECK(fx_stream_wait(&legacy, LIST_CHANGED, 2, LIST_WAIT_MS));
    CHECK(fx_stream_wait(&modern, LIST_CHANGED, 2, LIST_WAIT_MS));
    TEST_PASS("without PUBLISH the revision poll finds the change, and notifies");

    resources(pa, pb, sess, &legacy, &modern, log_a, log_b);

    /* 7. A call in flight keeps the version it started on. */
    call_t slow = {.port = pa};
    pthread_t th;
    CHECK_INT_EQ(pthread_create(&th, NULL, slow_call, &slow), 0);
    char wlog[300]; /* the call is in flight once the worker started its job */
    snprintf(wlog, sizeof(wlog), "%s/worker.log", fx.dir);
    for (long long until = fx_now_ms() + LIST_WAIT_MS;
         !log_has(wlog, "\"msg\":\"job start\"", "\"tool\":\"slow\""); fx_sleep_ms(20))
        CHECK(fx_now_ms() < until);
    t0 = fx_now_ms();
    registry_put("tool:t:slow",
                 "{\"tenant\":\"t\",\"server\":\"default\",\"name\":\"slow\",\"published\":\"2\","
                 "\"versions\":[{\"version\":\"1\",\"description\":\"sleeps (v1)\",\"inputSchema\":"
                 "{\"type\":\"object\"},\"executor\":{\"type\":\"builtin\",\"name\":\"sleep\"}},"
                 "{\"version\":\"2\",\"description\":\"echoes (v2)\",\"inputSchema\":{\"type\":"
                 "\"object\"},\"executor\":{\"type\":\"builtin\",\"name\":\"echo\"}}]}");
    ms = until_listed(ports, T_KEY, "slow", "echoes (v2)", t0, at);
    printf("# new version in tools/list: replica A %lld ms, replica B %lld ms\n", at[0], at[1]);
    CHECK(ms >= 0);
    call_t now = {.port = pb};
    slow_call(&now);
    CHECK_INT_EQ(now.r.status, 200);
    CHECK_CONTAINS(now.r.body, "{\\\"ms\\\":2500}"); /* v2 echoes its arguments */
    pthread_join(th, NULL);
    CHECK_INT_EQ(slow.r.status, 200);
    CHECK_CONTAINS(slow.r.body, "slept 2500 ms"); /* v1, which it was published as */
    CHECK(fx_stream_wait(&legacy, LIST_CHANGED, 3, LIST_WAIT_MS));
    CHECK(fx_stream_wait(&modern, LIST_CHANGED, 3, LIST_WAIT_MS));
    CHECK(
        fx_stream_wait(&legacy, ": keep-alive\n\n", 2, LIST_WAIT_MS)); /* A: 1 s without a frame */
    TEST_PASS("a call in flight finishes on the version it started on; the next runs the new one");

    /* 8. A client closing its stream. */
    fx_stream_t gone;
    fx_stream_open(
        &gone, pa, "/mcp",
        "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"subscriptions/listen\",\"params\":{" META
        ",\"notifications\":{\"toolsListChanged\":true}}}",
        h_listen);
    CHECK(fx_stream_wait(&gone, "acknowledged", 1, 5000));
    fx_stream_close(&gone);
    int closed = 0;
    for (long long until = fx_now_ms() + 5000; !closed && fx_now_ms() < until; fx_sleep_ms(50))
        closed = log_has(log_a, "\"msg\":\"notification stream closed\"", "\"by\":\"client\"");
    CHECK(closed);
    TEST_PASS("a client closing its stream is noticed at the next keep-alive and forgotten");

    /* 9. DELETE of the session on B ends its GET stream on A. */
    const char *h_del[] = {T_KEY, sess, NULL};
    CHECK(!atomic_load(&legacy.done));
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/mcp", pb);
    CURL *c = curl_easy_init();
    struct curl_slist *hl = NULL;
    for (int i = 0; h_del[i]; i++)
        hl = curl_slist_append(hl, h_del[i]);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "DELETE");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
    t0 = fx_now_ms();
    CHECK_INT_EQ(curl_easy_perform(c), CURLE_OK);
    long st = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
    CHECK_INT_EQ(st, 200);
    curl_easy_cleanup(c);
    curl_slist_free_all(hl);
    CHECK(fx_stream_wait_done(&legacy, 3000));
    printf("# GET stream on A ended %lld ms after DELETE on B\n", fx_now_ms() - t0);
    fx_stream_close(&legacy);
    TEST_PASS("DELETE of the session on replica B ends its GET stream on replica A");

    /* 10. SIGTERM of B ends its subscriptions/listen stream with the listen result. */
    CHECK_INT_EQ(fx_stop_pid(ib, 15000), 0);
    CHECK(fx_stream_wait_done(&modern, 3000));
    CHECK_CONTAINS(modern.buf, "data: {\"jsonrpc\":\"2.0\",\"id\":\"sub-1\",\"result\":{\"_meta\":"
                               "{\"io.modelcontextprotocol/subscriptionId\":\"sub-1\",");
    CHECK_CONTAINS(modern.buf, "\"resultType\":\"complete\"");
    fx_stream_close(&modern);
    TEST_PASS("SIGTERM: the subscriptions/listen stream ends with the listen result");

    CHECK_INT_EQ(fx_stop_pid(w, 10000), 0);
    CHECK_INT_EQ(fx_stop_pid(ia, 10000), 0);
    redisFree(redis);
    fx_stop(&fx);
    curl_global_cleanup();
    return 0;
}
