/*
 * Tests ingress/core/resupd.c against a real redis-server: which registry snapshot swaps
 * announce a static resource's change on the resource channel (names.h), and that replicas
 * swapping the same change announce it once between them. Snapshots are built from registry
 * fields as the refresh thread reads them; a subscriber counts the messages.
 *   - the first load (no old snapshot) and a swap that changes nothing announce nothing;
 *   - a new published version or a new text of a static resource: one message
 *     {"tenant","server","uri"} for the first replica, none for a second replica making the
 *     same swap, none for a replica still behind (an older revision);
 *   - a flip back to an earlier content is a change again;
 *   - a new resource, a deleted one and an executor-backed one announce nothing (the list
 *     changed, or a worker announces).
 */
#include "check.h"
#include "fixture.h"
#include "names.h"

#include "registry.h"
#include "resupd.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

static fx_stack_t fx;

#define TENANT                                                                                     \
    "tenant:t", "{\"id\":\"t\"}", "server:t:default", "{\"tenant\":\"t\",\"name\":\"default\"}"
#define NOTES(published, versions)                                                                 \
    "tool:t:notes",                                                                                \
        "{\"kind\":\"resource\",\"tenant\":\"t\",\"server\":\"default\",\"name\":\"notes\","       \
        "\"published\":\"" published "\",\"versions\":[" versions "]}"
#define V(id, text) "{\"version\":\"" id "\",\"uri\":\"file:///notes\",\"text\":\"" text "\"}"
#define LIVE                                                                                       \
    "tool:t:live",                                                                                 \
        "{\"kind\":\"resource\",\"tenant\":\"t\",\"server\":\"default\",\"name\":\"live\","        \
        "\"published\":\"1\",\"versions\":[{\"version\":\"1\",\"uri\":\"worker://live\","          \
        "\"executor\":{\"type\":\"builtin\",\"name\":\"echo\"}}]}"

/* A snapshot at revision rev of n fields and documents. */
static ing_registry_t *snap(long long rev, const char *const *f, size_t n)
{
    size_t lens[16];
    char err[256];
    CHECK(n <= 16);
    for (size_t i = 0; i < n; i++)
        lens[i] = strlen(f[i]);
    ing_registry_t *reg = ing_registry_build(f, lens, n, rev, err, sizeof(err));
    if (!reg)
        fprintf(stderr, "snapshot: %s\n", err);
    CHECK(reg != NULL);
    return reg;
}
#define SNAP(rev, ...)                                                                             \
    snap(rev, (const char *const[]){__VA_ARGS__},                                                  \
         sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *))

/* The messages the subscriber got within wait_ms, appended to out ("|"-separated): how many. */
static int drain(redisContext *sub, int wait_ms, char *out, size_t size)
{
    int n = 0;
    struct timeval tv = {wait_ms / 1000, (wait_ms % 1000) * 1000};
    redisSetTimeout(sub, tv);
    for (;;) {
        redisReply *r = NULL;
        if (redisGetReply(sub, (void **)&r) != REDIS_OK || !r)
            break;
        if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
            strcmp(r->element[0]->str, "message") == 0) {
            size_t len = strlen(out);
            snprintf(out + len, size - len, "%s|", r->element[2]->str);
            n++;
        }
        freeReplyObject(r);
    }
    /* A timeout leaves the context in error: a new one for the next drain. */
    return n;
}

static redisContext *subscriber(void)
{
    redisContext *c = redisConnect("127.0.0.1", fx.redis_port);
    CHECK(c != NULL && !c->err);
    redisReply *r = redisCommand(c, "SUBSCRIBE " NAMES_CHAN_RESOURCE_UPDATED);
    CHECK(r != NULL && r->type == REDIS_REPLY_ARRAY);
    freeReplyObject(r);
    return c;
}

/* Runs ing_resupd_publish(old, reg) on c and returns how many messages a subscriber saw
 * (their text in got). */
static int swap(redisContext *c, const ing_registry_t *old, const ing_registry_t *reg,
                int expect_rc, char *got, size_t size)
{
    redisContext *sub = subscriber();
    got[0] = '\0';
    CHECK_INT_EQ(ing_resupd_publish(c, old, reg), expect_rc);
    int n = drain(sub, 300, got, size);
    redisFree(sub);
    return n;
}

int main(void)
{
    if (fx_start(&fx, 1) < 0)
        return 1;
    redisContext *c = redisConnect("127.0.0.1", fx.redis_port);
    CHECK(c != NULL && !c->err);
    char got[2048];
    ing_registry_t *r1 = SNAP(1, TENANT, NOTES("1", V("1", "first")), LIVE);
    ing_registry_t *r1b = SNAP(2, TENANT, NOTES("1", V("1", "first") "," V("2", "second")), LIVE);
    ing_registry_t *r3 = SNAP(3, TENANT, NOTES("2", V("1", "first") "," V("2", "second")));
    ing_registry_t *r4 = SNAP(4, TENANT, NOTES("1", V("1", "first") "," V("2", "second")));
    ing_registry_t *r5 = SNAP(5, TENANT);
    ing_registry_t *r6 = SNAP(6, TENANT, NOTES("1", V("1", "first")));

    CHECK_INT_EQ(swap(c, NULL, r1, 0, got, sizeof(got)), 0);
    CHECK_INT_EQ(swap(c, r1, r1b, 0, got, sizeof(got)), 0);
    TEST_PASS("the first load and a swap that changes no published content announce nothing");

    CHECK_INT_EQ(swap(c, r1b, r3, 1, got, sizeof(got)), 1);
    CHECK_STR_EQ(got, "{\"tenant\":\"t\",\"server\":\"default\",\"uri\":\"file:///notes\"}|");
    CHECK_INT_EQ(swap(c, r1b, r3, 0, got, sizeof(got)), 0); /* a second replica, same swap */
    CHECK_INT_EQ(swap(c, r1, r3, 0, got, sizeof(got)), 0);  /* another path to the same state */
    TEST_PASS("a new published version: one message for the fleet, whichever replica swaps "
              "first");

    CHECK_INT_EQ(swap(c, r3, r4, 1, got, sizeof(got)), 1);  /* back to the first content */
    CHECK_INT_EQ(swap(c, r1b, r3, 0, got, sizeof(got)), 0); /* a replica behind: older revision */
    TEST_PASS("a flip back to earlier content is a change; a replica still behind announces "
              "nothing");

    CHECK_INT_EQ(swap(c, r4, r5, 0, got, sizeof(got)), 0); /* deleted */
    CHECK_INT_EQ(swap(c, r5, r6, 0, got, sizeof(got)), 0); /* new */
    TEST_PASS("a deleted or new resource, and an executor-backed one, announce nothing");

    redisReply *r = redisCommand(c, "TTL " NAMES_KEY_RESSTATE "t:default");
    CHECK(r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer > 0);
    freeReplyObject(r);
    ing_registry_unref(r1);
    ing_registry_unref(r1b);
    ing_registry_unref(r3);
    ing_registry_unref(r4);
    ing_registry_unref(r5);
    ing_registry_unref(r6);
    redisFree(c);
    fx_stop(&fx);
    return 0;
}
