/*
 * Integration test of common/whq.c against a real redis-server: the deliveries an event
 * creates (one per subscribed webhook, every field, the body byte for byte, the due and
 * index sets, the retention), events nobody subscribes to, unknown and malformed tenants,
 * and common/lua/lib_whq.lua prepended to another script the way the task model uses it.
 */
#include "check.h"
#include "names.h"
#include "err.h"
#include "fixture.h"
#include "kv.h"
#include "sch.h"
#include "rscript.h"
#include "whq.h"

#include <stdlib.h>
#include <string.h>

static fx_stack_t fx;
static redisContext *rc;

static const char tenant_doc[] =
    "{\"id\":\"acme\",\"default_server\":\"default\",\"webhooks\":["
    "{\"id\":\"w-done\",\"url\":\"http://127.0.0.1:9/a\",\"secret\":\"whsec_x\","
    "\"events\":[\"task.completed\",\"task.terminated\"]},"
    "{\"id\":\"w-run\",\"url\":\"http://127.0.0.1:9/b\",\"secret\":\"whsec_x\","
    "\"events\":[\"task.running\"]},"
    "{\"id\":\"w-all\",\"url\":\"http://127.0.0.1:9/c\",\"secret\":\"whsec_x\","
    "\"events\":[\"task.running\",\"task.completed\",\"task.terminated\",\"task.cancelled\"]}]}";

/* Spacing and escapes that cjson.encode would change: the body must keep them. */
static const char data[] = "{\"TaskId\":\"t-1\", \"TaskStatus\":\"complete\",\"tool\":\"echo\","
                           "\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"h\\u00e9 "
                           "1.50\"}],\"isError\":false}}";

static redisReply *cmd(const char *fmt, const char *a, const char *b)
{
    redisReply *r = redisCommand(rc, fmt, a, b);
    CHECK(r != NULL);
    return r;
}

static char *hget(const char *id, const char *field)
{
    static char buf[4096];
    redisReply *r = redisCommand(rc, "HGET " NAMES_KEY_WH_DELIVERY "%s %s", id, field);
    CHECK(r != NULL);
    if (r->type != REDIS_REPLY_STRING) {
        freeReplyObject(r);
        return NULL;
    }
    snprintf(buf, sizeof(buf), "%s", r->str);
    freeReplyObject(r);
    return buf;
}

static void test_event(kv_pool_t *kv)
{
    char err[256];
    redisReply *t0 = redisCommand(rc, "TIME");
    long long before = atoll(t0->element[0]->str) * 1000;
    freeReplyObject(t0);
    CHECK_INT_EQ(whq_event(kv, "acme", "task.completed", "t-1", data, err, sizeof(err)), 2);
    redisReply *idx = redisCommand(rc, "ZRANGE " NAMES_KEY_WH_INDEX "acme 0 -1 WITHSCORES");
    CHECK_INT_EQ(idx->elements, 4);
    const char *hooks[] = {"w-done", "w-all"};
    for (int i = 0; i < 2; i++) {
        char id[128];
        /* Equal scores sort by id: _1 then _2, the webhooks in config order. */
        snprintf(id, sizeof(id), "%s", idx->element[2 * i]->str);
        CHECK(strncmp(id, "msg_", 4) == 0 && strlen(id) == 4 + 24 + 2);
        CHECK(id[4 + 24] == '_' && id[4 + 24 + 1] == (char)('1' + i));
        CHECK(strncmp(id, idx->element[0]->str, 4 + 24) == 0); /* one id base per event */
        CHECK_STR_EQ(hget(id, "id"), id);
        CHECK_STR_EQ(hget(id, "tenant"), "acme");
        CHECK_STR_EQ(hget(id, "webhook"), hooks[i]);
        CHECK_STR_EQ(hget(id, "event"), "task.completed");
        CHECK_STR_EQ(hget(id, "task"), "t-1");
        CHECK_STR_EQ(hget(id, "attempts"), "0");
        CHECK_STR_EQ(hget(id, "status"), "pending");
        CHECK_STR_EQ(hget(id, "last_status"), "");
        CHECK_STR_EQ(hget(id, "last_error"), "");
        CHECK_STR_EQ(hget(id, "log"), "[]");
        CHECK(hget(id, "url") == NULL && hget(id, "secret") == NULL);
        const char *score = idx->element[2 * i + 1]->str;
        CHECK_STR_EQ(hget(id, "created_ms"), score);
        CHECK_STR_EQ(hget(id, "next_ms"), score);
        long long created = atoll(score);
        CHECK(created >= before && created < before + 60000);
        redisReply *due = cmd("ZSCORE " NAMES_KEY_WH_DUE " %s", id, NULL);
        CHECK_STR_EQ(due->str, score);
        freeReplyObject(due);
        redisReply *ttl = cmd("TTL " NAMES_KEY_WH_DELIVERY "%s", id, NULL);
        CHECK(ttl->integer > WHQ_RETENTION_S - 60 && ttl->integer <= WHQ_RETENTION_S);
        freeReplyObject(ttl);
        /* The body: type, timestamp, then data byte for byte. */
        const char *body = hget(id, "body");
        const char *pre = "{\"type\":\"task.completed\",\"timestamp\":\"";
        CHECK(strncmp(body, pre, strlen(pre)) == 0);
        const char *ts = body + strlen(pre);
        CHECK(strlen(ts) > 24 && ts[4] == '-' && ts[10] == 'T' && ts[23] == 'Z');
        char tail[1024];
        snprintf(tail, sizeof(tail), "\",\"data\":%s}", data);
        CHECK_STR_EQ(ts + 24, tail);
        cJSON *doc = cJSON_Parse(body);
        CHECK(doc != NULL);
        CHECK_INT_EQ(sch_validate(sch_builtin("webhook.schema.json"), doc, "$", err, sizeof(err)),
                     0);
        cJSON_Delete(doc);
    }
    freeReplyObject(idx);
    TEST_PASS("an event creates one delivery per subscribed webhook, body passed through");

    CHECK_INT_EQ(
        whq_event(kv, "acme", "task.cancelled", "t-2", "{\"TaskId\":\"t-2\"}", err, sizeof(err)),
        1);
    CHECK_INT_EQ(
        whq_event(kv, "acme", "task.running", "t-2", "{\"TaskId\":\"t-2\"}", err, sizeof(err)), 2);
    CHECK_INT_EQ(whq_event(kv, "nobody", "task.running", "t-2", "{}", err, sizeof(err)), 0);
    redisReply *r = redisCommand(rc, "HSET " NAMES_KEY_REGISTRY " tenant:plain {\"id\":\"plain\"}");
    freeReplyObject(r);
    CHECK_INT_EQ(whq_event(kv, "plain", "task.running", "t", "{}", err, sizeof(err)), 0);
    r = redisCommand(rc, "HSET " NAMES_KEY_REGISTRY " tenant:broken {not json");
    freeReplyObject(r);
    CHECK_INT_EQ(whq_event(kv, "broken", "task.running", "t", "{}", err, sizeof(err)), 0);
    r = redisCommand(rc, "ZCARD " NAMES_KEY_WH_DUE);
    CHECK_INT_EQ(r->integer, 5);
    freeReplyObject(r);
    TEST_PASS("only subscribers get deliveries; unknown, plain and malformed tenants get none");
}

/* The task model's way: prepend the source, define more locals, call it in the script. */
static void test_prepended(void)
{
    char script[8192];
    snprintf(script, sizeof(script),
             "%s\n"
             "local function now_ms() return 42 end\n"
             "local function iso(ms) return 'never used' end\n"
             "local n = whq_enqueue(ARGV[1], 'task.terminated', 't-3', ARGV[2],\n"
             "  '2026-01-01T00:00:00Z', tonumber(ARGV[3]), 'base' .. ARGV[4])\n"
             "redis.call('SET', 'state-changed', 'yes')\n"
             "return n\n",
             rscript_text(rscript_get("lib_whq")));
    redisReply *t = redisCommand(rc, "TIME");
    long long now = atoll(t->element[0]->str) * 1000;
    freeReplyObject(t);
    char nows[32], old[32];
    snprintf(nows, sizeof(nows), "%lld", now);
    snprintf(old, sizeof(old), "%lld", now - (long long)WHQ_RETENTION_S * 1000 - 5000);
    /* An event older than the retention drops out of the index at the next event. */
    redisReply *r =
        redisCommand(rc, "EVAL %s 0 %s %s %s %s", script, "acme", "{\"x\":1}", old, "0");
    CHECK(r && r->type == REDIS_REPLY_INTEGER);
    CHECK_INT_EQ(r->integer, 2);
    freeReplyObject(r);
    r = redisCommand(rc, "ZSCORE " NAMES_KEY_WH_INDEX "acme msg_base0_1");
    CHECK_STR_EQ(r->str, old);
    freeReplyObject(r);
    r = redisCommand(rc, "EVAL %s 0 %s %s %s %s", script, "acme", "{\"x\":2}", nows, "1");
    CHECK(r && r->type == REDIS_REPLY_INTEGER);
    CHECK_INT_EQ(r->integer, 2);
    freeReplyObject(r);
    CHECK_STR_EQ(hget("msg_base1_1", "body"),
                 "{\"type\":\"task.terminated\",\"timestamp\":\"2026-01-01T00:00:00Z\","
                 "\"data\":{\"x\":2}}");
    CHECK_STR_EQ(hget("msg_base1_2", "webhook"), "w-all");
    CHECK_STR_EQ(hget("msg_base1_1", "created_ms"), nows);
    r = redisCommand(rc, "ZSCORE " NAMES_KEY_WH_DUE " msg_base1_2");
    CHECK_STR_EQ(r->str, nows);
    freeReplyObject(r);
    r = redisCommand(rc, "ZSCORE " NAMES_KEY_WH_INDEX "acme msg_base0_1");
    CHECK(r->type == REDIS_REPLY_NIL);
    freeReplyObject(r);
    r = redisCommand(rc, "GET state-changed");
    CHECK_STR_EQ(r->str, "yes");
    freeReplyObject(r);
    TEST_PASS("prepended to another script: the caller's clock, iso time and id base are used; "
              "index entries past the retention are trimmed");
}

int main(void)
{
    char err[256];
    if (fx_start(&fx, 1) < 0)
        return 1;
    mcpq_settings_t set = {.redis_url = fx.redis_url};
    kv_target_t *kvt = kv_target_new(&set, err, sizeof(err));
    CHECK(kvt != NULL);
    rc = kv_connect(kvt, 2000, err, sizeof(err));
    CHECK(rc != NULL);
    redisReply *r = redisCommand(rc, "HSET " NAMES_KEY_REGISTRY " tenant:acme %s", tenant_doc);
    CHECK(r && r->type == REDIS_REPLY_INTEGER);
    freeReplyObject(r);
    kv_pool_t *kv = kv_pool_new(kvt, 2000, 2);
    test_event(kv);
    test_prepended();
    kv_pool_free(kv);
    kv_target_free(kvt);
    redisFree(rc);
    fx_stop(&fx);
    return 0;
}
