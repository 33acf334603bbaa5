/*
 * Tests ingress/mcp/subscribe.c: the legacy resources/subscribe and resources/unsubscribe of a
 * session, driven through ing_mcp_post with synthetic requests (tests/handlers/harness.h)
 * against a real Redis. What a client sees: `{}` for a published resource and for a uri a
 * resource template matches, and again for one subscribed already; -32002 with data.uri for
 * an unknown uri and for a resource the caller's access rules hide; -32602 without a uri and
 * for one subscription past MCPQ_MAX_RESOURCE_SUBSCRIPTIONS, naming the limit; -32600
 * without a session; -32601 under 2026-07-28 (subscriptions/listen replaced it);
 * unsubscribing answers `{}` (a uri never subscribed too); a subscription to a resource a worker
 * serves is a job the worker answers, and a 2026-07-28 subscriptions/listen naming it sends the
 * same job once its stream is acknowledged (no reply stream: nobody waits), none for a static
 * resource; every subscribe job of one uri carries the Kafka key ["t","default","<uri>"] (one
 * partition, one worker) with its own job id in the header. What the next replica relies on:
 * the subscriptions in {mcpq}:rsubs:<session> with the session's TTL, gone with the session.
 */
#include "check.h"
#include "harness.h"

#include "listen.h"
#include "mcp.h"
#include "names.h"
#include "rpc.h"

#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE_KEY "none-key-0123456789"

static const char config[] =
    "{\"tenants\": [{\"id\": \"t\", \"api_keys\": ["
    "   {\"id\": \"k\", \"key\": \"" HX_API_KEY "\", \"scopes\": [\"docs\"]},"
    "   {\"id\": \"k-none\", \"key\": \"" NONE_KEY "\"}]}],"
    " \"servers\": [{\"tenant\": \"t\", \"name\": \"default\"}],"
    " \"tools\": ["
    "  {\"tenant\": \"t\", \"server\": \"default\", \"name\": \"readme\", \"kind\": \"resource\","
    "   \"published\": \"1\", \"versions\": [{\"version\": \"1\", \"uri\": \"file:///readme.md\","
    "    \"mimeType\": \"text/markdown\", \"text\": \"hello\"}]},"
    "  {\"tenant\": \"t\", \"server\": \"default\", \"name\": \"secret\", \"kind\": \"resource\","
    "   \"access\": {\"scopes\": [\"docs\"]}, \"published\": \"1\", \"versions\": [{\"version\": "
    "    \"1\", \"uri\": \"file:///secret.md\", \"text\": \"hush\"}]},"
    "  {\"tenant\": \"t\", \"server\": \"default\", \"name\": \"item\","
    "   \"kind\": \"resource_template\", \"published\": \"1\", \"versions\": [{\"version\": \"1\","
    "    \"uriTemplate\": \"test://items/{id}\", \"text\": \"item {id}\"}]},"
    "  {\"tenant\": \"t\", \"server\": \"default\", \"name\": \"live\", \"kind\": \"resource\","
    "   \"published\": \"1\", \"versions\": [{\"version\": \"1\", \"uri\": \"worker://live\","
    "    \"executor\": {\"type\": \"builtin\", \"name\": \"echo\"}}]},"
    "  {\"tenant\": \"t\", \"server\": \"default\", \"name\": \"broken\", \"kind\": \"resource\","
    "   \"published\": \"1\", \"versions\": [{\"version\": \"1\", \"uri\": \"worker://broken\","
    "    \"executor\": {\"type\": \"builtin\", \"name\": \"fail\"}}]}]}";

static hx_t h;

/* A request of method with params (JSON text) under version, with the session sid (may be
 * NULL) and the API key key (NULL: the test key). */
static void rpc(hx_ex_t *e, const char *version, const char *sid, const char *key,
                const char *method, const char *params)
{
    char body[4096], authz[128];
    snprintf(body, sizeof(body), "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"%s\",\"params\":%s}",
             method, params);
    snprintf(authz, sizeof(authz), "Bearer %s", key ? key : HX_API_KEY);
    const char *hdrs[] = {"MCP-Protocol-Version",
                          version,
                          "Authorization",
                          authz,
                          strcmp(version, "2026-07-28") == 0 ? "Mcp-Method" : "Mcp-Session-Id",
                          strcmp(version, "2026-07-28") == 0 ? method : sid,
                          NULL};
    if (!sid && strcmp(version, "2026-07-28") != 0)
        hdrs[4] = NULL;
    hx_mcp(&h, e, NULL, body, hdrs);
}

/* A 2025-06-18 session of key: its id into sid. */
static void session(const char *key, char *sid, size_t n)
{
    hx_ex_t e;
    rpc(&e, NAMES_PROTO_2025_06_18, NULL, key, "initialize",
        "{\"protocolVersion\":\"" NAMES_PROTO_2025_06_18 "\",\"capabilities\":{},"
        "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}");
    CHECK_INT_EQ(hx_rpc_code(&e), 0);
    CHECK(e.resp.session_id[0] != '\0');
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(hx_rpc_result(&e), "capabilities"), "resources");
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "subscribe")));
    snprintf(sid, n, "%s", e.resp.session_id);
    hx_ex_free(&e);
}

/* resources/subscribe (on) or unsubscribe of uri in session sid: the JSON-RPC error code (0:
 * a result, which must be {}). */
static int sub(const char *sid, const char *key, int on, const char *uri)
{
    hx_ex_t e;
    char params[2400];
    snprintf(params, sizeof(params), "{\"uri\":\"%s\"}", uri);
    rpc(&e, NAMES_PROTO_2025_06_18, sid, key, on ? "resources/subscribe" : "resources/unsubscribe",
        params);
    int code = hx_rpc_code(&e);
    if (code == 0) {
        char *r = cJSON_PrintUnformatted(hx_rpc_result(&e));
        CHECK_STR_EQ(r, "{}");
        cJSON_free(r);
    }
    hx_ex_free(&e);
    return code;
}

/* 1 when the session's subscription set holds "default <uri>". */
static int stored(const char *sid, const char *uri)
{
    char member[2100];
    snprintf(member, sizeof(member), "default %s", uri);
    redisReply *r = hx_redis(&h, "SISMEMBER " NAMES_KEY_RSUBS "%s %b", sid, member, strlen(member));
    CHECK(r && r->type == REDIS_REPLY_INTEGER);
    int hit = (int)r->integer;
    freeReplyObject(r);
    return hit;
}

static void test_subscribe(void)
{
    char sid[80];
    session(NULL, sid, sizeof(sid));
    CHECK_INT_EQ(sub(sid, NULL, 1, "file:///readme.md"), 0);
    CHECK(stored(sid, "file:///readme.md"));
    CHECK_INT_EQ(sub(sid, NULL, 1, "file:///readme.md"), 0); /* again: still {} */
    CHECK_INT_EQ(sub(sid, NULL, 1, "test://items/42"), 0);   /* a template's match */
    CHECK(stored(sid, "test://items/42"));
    redisReply *r = hx_redis(&h, "TTL " NAMES_KEY_RSUBS "%s", sid);
    CHECK(r && r->type == REDIS_REPLY_INTEGER && r->integer > 0 &&
          r->integer <= h.set.session_ttl_s);
    freeReplyObject(r);
    /* Any request of the session refreshes their TTL with the session's. */
    freeReplyObject(hx_redis(&h, "EXPIRE " NAMES_KEY_RSUBS "%s 100", sid));
    hx_ex_t ping;
    rpc(&ping, NAMES_PROTO_2025_06_18, sid, NULL, "ping", "{}");
    CHECK_INT_EQ(hx_rpc_code(&ping), 0);
    hx_ex_free(&ping);
    r = hx_redis(&h, "TTL " NAMES_KEY_RSUBS "%s", sid);
    CHECK(r && r->type == REDIS_REPLY_INTEGER && r->integer > 100);
    freeReplyObject(r);
    TEST_PASS("resources/subscribe: {} for a resource and a template's uri (again: {}); kept in "
              "Redis with the session's TTL, refreshed by the session's requests");

    CHECK_INT_EQ(sub(sid, NULL, 0, "file:///readme.md"), 0);
    CHECK(!stored(sid, "file:///readme.md"));
    CHECK(stored(sid, "test://items/42"));
    CHECK_INT_EQ(sub(sid, NULL, 0, "file:///never.md"), 0);
    TEST_PASS("resources/unsubscribe: {}, the subscription gone; a uri never subscribed: {}");

    /* The session's end takes its subscriptions with it. */
    hx_ex_t e;
    const char *hdrs[] = {"Authorization", "Bearer " HX_API_KEY, "Mcp-Session-Id", sid, NULL};
    hx_ex_init(&h, &e, "DELETE", "/mcp", NULL, 0, hdrs);
    ing_mcp_delete(&e.req, NULL, &e.resp);
    CHECK_INT_EQ(e.resp.status, 200);
    hx_ex_free(&e);
    r = hx_redis(&h, "EXISTS " NAMES_KEY_RSUBS "%s", sid);
    CHECK_INT_EQ(r->integer, 0);
    freeReplyObject(r);
    TEST_PASS("DELETE of the session deletes its subscriptions");
}

static void test_errors(void)
{
    char sid[80], sid_none[80];
    session(NULL, sid, sizeof(sid));
    hx_ex_t e;
    rpc(&e, NAMES_PROTO_2025_06_18, sid, NULL, "resources/subscribe", "{\"uri\":\"file:///x\"}");
    CHECK_INT_EQ(hx_rpc_code(&e), -32002);
    CHECK_STR_EQ(hx_rpc_message(&e), "Resource not found");
    CHECK_STR_EQ(hx_str(&e, "error.data.uri"), "file:///x");
    hx_ex_free(&e);
    CHECK_INT_EQ(sub(sid, NULL, 1, "test://items/a/b"), -32002); /* {id} matches no '/' */
    rpc(&e, NAMES_PROTO_2025_06_18, sid, NULL, "resources/subscribe", "{}");
    CHECK_INT_EQ(hx_rpc_code(&e), RPC_INVALID_PARAMS);
    CHECK_CONTAINS(hx_rpc_message(&e), "params.uri");
    hx_ex_free(&e);
    rpc(&e, NAMES_PROTO_2025_06_18, sid, NULL, "resources/subscribe", "{\"uri\":42}");
    CHECK_INT_EQ(hx_rpc_code(&e), RPC_INVALID_PARAMS);
    hx_ex_free(&e);
    TEST_PASS("resources/subscribe: an unknown uri is -32002 with data.uri; no uri -32602");

    session(NONE_KEY, sid_none, sizeof(sid_none));
    CHECK_INT_EQ(sub(sid_none, NONE_KEY, 1, "file:///secret.md"), -32002);
    CHECK_INT_EQ(sub(sid, NULL, 1, "file:///secret.md"), 0);
    TEST_PASS("a resource the caller's access rules hide is not found for it");

    rpc(&e, NAMES_PROTO_2025_06_18, NULL, NULL, "resources/subscribe",
        "{\"uri\":\"file:///readme.md\"}");
    CHECK_INT_EQ(hx_rpc_code(&e), RPC_INVALID_REQUEST);
    CHECK_CONTAINS(hx_rpc_message(&e), "needs a session");
    hx_ex_free(&e);
    rpc(&e, "2026-07-28", NULL, NULL, "resources/subscribe",
        "{\"uri\":\"file:///readme.md\",\"_meta\":{\"" NAMES_META_PROTOCOL_VERSION
        "\":\"2026-07-28\"}}");
    CHECK_INT_EQ(hx_rpc_code(&e), RPC_METHOD_NOT_FOUND);
    hx_ex_free(&e);
    TEST_PASS("without a session -32600; under 2026-07-28 resources/subscribe is -32601");
}

static void test_limit(void)
{
    char sid[80];
    session(NULL, sid, sizeof(sid));
    CHECK_INT_EQ(sub(sid, NULL, 1, "test://items/1"), 0);
    CHECK_INT_EQ(sub(sid, NULL, 1, "test://items/2"), 0);
    CHECK_INT_EQ(sub(sid, NULL, 1, "test://items/3"), 0);
    hx_ex_t e;
    rpc(&e, NAMES_PROTO_2025_06_18, sid, NULL, "resources/subscribe",
        "{\"uri\":\"test://items/4\"}");
    CHECK_INT_EQ(hx_rpc_code(&e), RPC_INVALID_PARAMS);
    CHECK_CONTAINS(hx_rpc_message(&e), "at most 3 resources");
    hx_ex_free(&e);
    CHECK(!stored(sid, "test://items/4"));
    CHECK_INT_EQ(sub(sid, NULL, 1, "test://items/2"), 0); /* one held already: fine */
    CHECK_INT_EQ(sub(sid, NULL, 0, "test://items/1"), 0);
    CHECK_INT_EQ(sub(sid, NULL, 1, "test://items/4"), 0); /* room again */
    TEST_PASS("MCPQ_MAX_RESOURCE_SUBSCRIPTIONS: one more is -32602 naming the limit; after an "
              "unsubscribe there is room");
}

/* A resource a worker serves: the subscription is recorded and the worker told (a job); its
 * answer is the client's. */
static void test_worker(void)
{
    pid_t w = fx_spawn_worker(&h.fx, "w1", NULL);
    CHECK(w > 0);
    char sid[80];
    session(NULL, sid, sizeof(sid));
    hx_ex_t e;
    rpc(&e, NAMES_PROTO_2025_06_18, sid, NULL, "resources/subscribe",
        "{\"uri\":\"worker://live\"}");
    CHECK(e.parked);
    CHECK_INT_EQ(hx_mcp_wait(&h, &e, 30000), 0);
    CHECK_INT_EQ(hx_rpc_code(&e), 0);
    char *r = cJSON_PrintUnformatted(hx_rpc_result(&e));
    CHECK_STR_EQ(r, "{}");
    cJSON_free(r);
    hx_ex_free(&e);
    CHECK(stored(sid, "worker://live"));
    rpc(&e, NAMES_PROTO_2025_06_18, sid, NULL, "resources/unsubscribe",
        "{\"uri\":\"worker://live\"}");
    CHECK(!e.parked); /* no job: other sessions may still watch it through the worker */
    CHECK_INT_EQ(hx_rpc_code(&e), 0);
    hx_ex_free(&e);
    CHECK(!stored(sid, "worker://live"));
    rpc(&e, NAMES_PROTO_2025_06_18, sid, NULL, "resources/subscribe",
        "{\"uri\":\"worker://broken\"}");
    CHECK(e.parked);
    CHECK_INT_EQ(hx_mcp_wait(&h, &e, 30000), 0);
    CHECK(hx_rpc_code(&e) != 0);
    printf("# a failing worker's subscribe: %d %s\n", hx_rpc_code(&e), hx_rpc_message(&e));
    hx_ex_free(&e);
    CHECK_INT_EQ(fx_stop_pid(w, 10000), 0);
    TEST_PASS("a resource a worker serves: resources/subscribe runs as a job (answered {} by "
              "the worker, its error when it fails); unsubscribe answers at once");
}

/* subscriptions/listen's resourceSubscriptions that cannot be honoured are refused before a
 * stream opens. */
static void test_listen_filter(void)
{
    static const char *const bad[] = {
        "\"resourceSubscriptions\":\"file:///readme.md\"",
        "\"resourceSubscriptions\":[1]",
        "\"resourceSubscriptions\":[\"\"]",
        "\"resourceSubscriptions\":[\"test://items/1\",\"test://items/2\",\"test://items/3\","
        "\"test://items/4\"]",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char params[600];
        snprintf(params, sizeof(params),
                 "{\"notifications\":{%s},\"_meta\":{\"" NAMES_META_PROTOCOL_VERSION
                 "\":\"2026-07-28\"}}",
                 bad[i]);
        hx_ex_t e;
        rpc(&e, "2026-07-28", NULL, NULL, "subscriptions/listen", params);
        CHECK(!e.parked);
        CHECK_INT_EQ(hx_rpc_code(&e), RPC_INVALID_PARAMS);
        CHECK_CONTAINS(hx_rpc_message(&e), "resourceSubscriptions");
        hx_ex_free(&e);
    }
    TEST_PASS("subscriptions/listen: resourceSubscriptions not an array of uris, or more than "
              "MCPQ_MAX_RESOURCE_SUBSCRIPTIONS of them, is -32602");
}

/* A subscribe job as the job topic holds it. */
typedef struct rec {
    char key[256], job_id[64];
    int32_t partition;
    int reply; /* the envelope has a reply_to */
} rec_t;

/* The resources/subscribe jobs of uri on the job topic (read from its start by a group of its
 * own, so a worker's consumption hides nothing), into out (at most max): how many, once
 * `want` were read or after ms. */
static int subscribe_jobs(const char *uri, int want, rec_t *out, int max, int ms)
{
    rd_kafka_t *rk = hx_jobs_reader(&h, "test-subscribe-reader");
    int n = 0;
    for (long long until = fx_now_ms() + ms; n < want && fx_now_ms() < until;) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
        if (!m)
            continue;
        cJSON *env = m->err ? NULL : cJSON_ParseWithLength(m->payload, m->len);
        const char *method = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(env, "method"));
        const char *u = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(env, "arguments"), "uri"));
        rd_kafka_headers_t *hdrs = NULL;
        const void *v = NULL;
        size_t vlen = 0;
        if (method && strcmp(method, "resources/subscribe") == 0 && u && strcmp(u, uri) == 0 &&
            n < max) {
            rec_t *r = &out[n++];
            snprintf(r->key, sizeof(r->key), "%.*s", (int)m->key_len, (const char *)m->key);
            if (rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR &&
                rd_kafka_header_get_last(hdrs, NAMES_HDR_JOB_ID, &v, &vlen) ==
                    RD_KAFKA_RESP_ERR_NO_ERROR)
                snprintf(r->job_id, sizeof(r->job_id), "%.*s", (int)vlen, (const char *)v);
            r->partition = m->partition;
            r->reply = cJSON_GetObjectItemCaseSensitive(env, "reply_to") != NULL;
        }
        cJSON_Delete(env);
        rd_kafka_message_destroy(m);
    }
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return n;
}

/* A 2026-07-28 stream naming resources a worker serves tells the worker (a job nobody waits
 * for); every subscribe job of one uri has the same Kafka key, hence one partition. */
static void test_listen_jobs(void)
{
    hx_ex_t e;
    rpc(&e, "2026-07-28", NULL, NULL, "subscriptions/listen",
        "{\"notifications\":{\"resourceSubscriptions\":[\"worker://live\",\"file:///readme.md\"]},"
        "\"_meta\":{\"" NAMES_META_PROTOCOL_VERSION "\":\"2026-07-28\"}}");
    CHECK(e.req.has_call && e.req.listener); /* the stream is open */
    rec_t recs[4];
    /* test_worker's resources/subscribe, then the stream's */
    CHECK_INT_EQ(subscribe_jobs("worker://live", 2, recs, 4, 20000), 2);
    for (int i = 0; i < 2; i++) {
        CHECK_STR_EQ(recs[i].key, "[\"t\",\"default\",\"worker://live\"]");
        CHECK(strncmp(recs[i].job_id, "j_", 2) == 0);
    }
    CHECK(strcmp(recs[0].job_id, recs[1].job_id) != 0);
    CHECK_INT_EQ(recs[0].partition, recs[1].partition);
    CHECK_INT_EQ(recs[0].reply + recs[1].reply,
                 1); /* the legacy call's has one, not the stream's */
    /* static: no job (the stream's live one was published in the same call, before) */
    CHECK_INT_EQ(subscribe_jobs("file:///readme.md", 1, recs, 4, 3000), 0);
    void *lr = e.req.listener;
    hx_ex_free(&e); /* the call leaves the table, then the stream goes, as server.c does */
    ing_listen_remove(h.ctx.listen, lr);
    TEST_PASS("subscriptions/listen naming a resource a worker serves sends it a resources/"
              "subscribe job (no reply stream), none for a static one; every subscribe job of "
              "the uri has the Kafka key [tenant, server, uri] and its own job id");
}

int main(void)
{
    const char *args[] = {"--max-resource-subscriptions", "3", NULL};
    hx_start(&h, config, args);
    test_subscribe();
    test_errors();
    test_limit();
    test_listen_filter();
    test_worker();
    test_listen_jobs();
    hx_stop(&h);
    return TEST_EXIT();
}
