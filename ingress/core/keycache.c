#include "keycache.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t len; /* 0: empty */
    const void *what;
    char key[ING_KEYCACHE_MAX_KEY];
} slot_t;

struct ing_keycache {
    pthread_mutex_t mu;
    uint64_t k0, k1; /* the SipHash key */
    slot_t slots[ING_KEYCACHE_SLOTS];
};

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

static void sip_round(uint64_t v[4])
{
    v[0] += v[1];
    v[1] = ROTL(v[1], 13) ^ v[0];
    v[0] = ROTL(v[0], 32);
    v[2] += v[3];
    v[3] = ROTL(v[3], 16) ^ v[2];
    v[0] += v[3];
    v[3] = ROTL(v[3], 21) ^ v[0];
    v[2] += v[1];
    v[1] = ROTL(v[1], 17) ^ v[2];
    v[2] = ROTL(v[2], 32);
}

static void sip_block(uint64_t v[4], uint64_t m)
{
    v[3] ^= m;
    sip_round(v);
    sip_round(v);
    v[0] ^= m;
}

/* SipHash-2-4 of in (len bytes) under (k0, k1), the words read little-endian. */
static uint64_t siphash(uint64_t k0, uint64_t k1, const unsigned char *in, size_t len)
{
    uint64_t v[4] = {k0 ^ 0x736f6d6570736575ULL, k1 ^ 0x646f72616e646f6dULL,
                     k0 ^ 0x6c7967656e657261ULL, k1 ^ 0x7465646279746573ULL};
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t m = 0;
        for (int j = 7; j >= 0; j--)
            m = (m << 8) | in[i + (size_t)j];
        sip_block(v, m);
    }
    uint64_t last = (uint64_t)(len & 0xff) << 56;
    for (size_t j = 0; i + j < len; j++)
        last |= (uint64_t)in[i + j] << (8 * j);
    sip_block(v, last);
    v[2] ^= 0xff;
    for (int r = 0; r < 4; r++)
        sip_round(v);
    return v[0] ^ v[1] ^ v[2] ^ v[3];
}

ing_keycache_t *ing_keycache_new(void)
{
    ing_keycache_t *kc = calloc(1, sizeof(*kc));
    unsigned char k[16];
    if (!kc || RAND_bytes(k, sizeof(k)) != 1) {
        free(kc);
        return NULL;
    }
    memcpy(&kc->k0, k, 8);
    memcpy(&kc->k1, k + 8, 8);
    OPENSSL_cleanse(k, sizeof(k));
    pthread_mutex_init(&kc->mu, NULL);
    return kc;
}

void ing_keycache_free(ing_keycache_t *kc)
{
    if (!kc)
        return;
    pthread_mutex_destroy(&kc->mu);
    OPENSSL_cleanse(kc, sizeof(*kc));
    free(kc);
}

static slot_t *slot_of(ing_keycache_t *kc, uint64_t hash)
{
    return &kc->slots[hash % ING_KEYCACHE_SLOTS];
}

const void *ing_keycache_get(ing_keycache_t *kc, const char *key, size_t len)
{
    if (!kc || len == 0 || len > ING_KEYCACHE_MAX_KEY)
        return NULL;
    uint64_t h = siphash(kc->k0, kc->k1, (const unsigned char *)key, len);
    const void *what = NULL;
    pthread_mutex_lock(&kc->mu);
    const slot_t *s = slot_of(kc, h);
    /* The hash only picks the slot; the value decides, compared in constant time. */
    if (s->len == len && CRYPTO_memcmp(s->key, key, len) == 0)
        what = s->what;
    pthread_mutex_unlock(&kc->mu);
    return what;
}

void ing_keycache_put(ing_keycache_t *kc, const char *key, size_t len, const void *what)
{
    if (!kc || !what || len == 0 || len > ING_KEYCACHE_MAX_KEY)
        return;
    uint64_t h = siphash(kc->k0, kc->k1, (const unsigned char *)key, len);
    pthread_mutex_lock(&kc->mu);
    slot_t *s = slot_of(kc, h);
    OPENSSL_cleanse(s->key, sizeof(s->key));
    memcpy(s->key, key, len);
    s->len = len;
    s->what = what;
    pthread_mutex_unlock(&kc->mu);
}
