/* Tests ingress/core/keycache.c: a value put is found again by its exact bytes only; wrong,
 * shorter, longer and overlong values are not; a value replaces what shared its slot; two
 * caches (two registry snapshots) share nothing. And the registry's use of it
 * (ing_registry_auth_key_value): a key opens its entry from the first request on, a wrong
 * value never does however often it comes, and a snapshot without the key refuses it even
 * after the old snapshot cached it. */
#include "check.h"
#include "keycache.h"
#include "registry.h"

#include <openssl/sha.h>
#include <stdio.h>
#include <string.h>

static void test_cache(void)
{
    static const int a = 1, b = 2;
    ing_keycache_t *kc = ing_keycache_new();
    CHECK(kc != NULL);
    CHECK(ing_keycache_get(kc, "key-a", 5) == NULL);
    ing_keycache_put(kc, "key-a", 5, &a);
    CHECK(ing_keycache_get(kc, "key-a", 5) == &a);
    CHECK(ing_keycache_get(kc, "key-b", 5) == NULL);  /* last byte differs */
    CHECK(ing_keycache_get(kc, "key-", 4) == NULL);   /* a prefix */
    CHECK(ing_keycache_get(kc, "key-aa", 6) == NULL); /* longer */
    CHECK(ing_keycache_get(kc, "", 0) == NULL);
    ing_keycache_put(kc, "key-b", 5, &b);
    CHECK(ing_keycache_get(kc, "key-b", 5) == &b);

    /* More values than slots, of one length, many differing only in their last byte: each one
     * found is the one put for it, never the value that shares its slot. */
    enum { MANY = 4 * ING_KEYCACHE_SLOTS };
    static int tags[MANY];
    char v[32];
    for (int i = 0; i < MANY; i++) {
        int n = snprintf(v, sizeof(v), "value-%04d", i);
        ing_keycache_put(kc, v, (size_t)n, &tags[i]);
    }
    int found = 0, wrong = 0;
    for (int i = 0; i < MANY; i++) {
        int n = snprintf(v, sizeof(v), "value-%04d", i);
        const void *w = ing_keycache_get(kc, v, (size_t)n);
        wrong += w != NULL && w != &tags[i];
        found += w == &tags[i];
    }
    CHECK_INT_EQ(wrong, 0);
    CHECK(found > 0 && found <= ING_KEYCACHE_SLOTS);

    /* Overlong values are never kept. */
    char big[ING_KEYCACHE_MAX_KEY + 1];
    memset(big, 'x', sizeof(big));
    ing_keycache_put(kc, big, sizeof(big), &a);
    CHECK(ing_keycache_get(kc, big, sizeof(big)) == NULL);
    ing_keycache_put(kc, big, ING_KEYCACHE_MAX_KEY, &b);
    CHECK(ing_keycache_get(kc, big, ING_KEYCACHE_MAX_KEY) == &b);

    /* Another cache knows nothing of the first. */
    ing_keycache_t *other = ing_keycache_new();
    CHECK(ing_keycache_get(other, "key-b", 5) == NULL);
    ing_keycache_free(other);
    ing_keycache_free(kc);
    ing_keycache_free(NULL);
    CHECK(ing_keycache_get(NULL, "key-a", 5) == NULL);
    ing_keycache_put(NULL, "key-a", 5, &a);
    TEST_PASS("keycache");
}

/* A registry of one tenant with one API key whose value is key. */
static ing_registry_t *registry_with(const char *key, long long rev)
{
    unsigned char sha[SHA256_DIGEST_LENGTH];
    char hex[2 * SHA256_DIGEST_LENGTH + 1];
    SHA256((const unsigned char *)key, strlen(key), sha);
    for (int i = 0; i < SHA256_DIGEST_LENGTH; i++)
        snprintf(hex + 2 * i, 3, "%02x", sha[i]);
    char doc[512];
    int n = snprintf(doc, sizeof(doc),
                     "{\"id\":\"acme\",\"api_keys\":[{\"id\":\"k1\","
                     "\"sha256\":\"%s\"}]}",
                     hex);
    const char *fields[] = {"tenant:acme", doc};
    const size_t lens[] = {strlen(fields[0]), (size_t)n};
    char err[256];
    ing_registry_t *reg = ing_registry_build(fields, lens, 2, rev, err, sizeof(err));
    if (!reg)
        fprintf(stderr, "registry: %s\n", err);
    return reg;
}

static void test_registry_keys(void)
{
    ing_registry_t *reg = registry_with("acme-key", 1);
    CHECK(reg != NULL);
    for (int i = 0; i < 3; i++) { /* the first from SHA-256, the others from the cache */
        const ing_apikey_t *k = ing_registry_auth_key_value(reg, "acme-key", 8);
        CHECK(k != NULL);
        CHECK_STR_EQ(k->id, "k1");
        CHECK_STR_EQ(k->tenant->id, "acme");
        CHECK(ing_registry_auth_key_value(reg, "acme-kez", 8) == NULL);
        CHECK(ing_registry_auth_key_value(reg, "acme-ke", 7) == NULL);
    }
    /* The key rotated: the new snapshot refuses the old value, cached by the old snapshot. */
    ing_registry_t *next = registry_with("acme-key-2", 2);
    CHECK(next != NULL);
    CHECK(ing_registry_auth_key_value(next, "acme-key", 8) == NULL);
    CHECK(ing_registry_auth_key_value(next, "acme-key-2", 10) != NULL);
    CHECK(ing_registry_auth_key_value(reg, "acme-key", 8) != NULL);
    ing_registry_unref(reg);
    ing_registry_unref(next);
    TEST_PASS("registry API key values");
}

int main(void)
{
    test_cache();
    test_registry_keys();
    return 0;
}
