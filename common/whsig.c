#include "whsig.h"

#include "err.h"
#include "util.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/core_names.h>
#include <openssl/params.h>
#include <stdio.h>
#include <string.h>

#define WHSIG_PREFIX "whsec_"
#define WHSIG_KEY_MAX 256

/* Standard base64 (padding optional) of 1..key_size bytes into key; its length or -1. */
static int b64_decode(const char *s, unsigned char *key, size_t key_size)
{
    size_t len = 0;
    if (util_b64_decode(s, strlen(s), 0, key, key_size, &len) < 0 || len == 0)
        return -1;
    return (int)len;
}

int whsig_sign(const char *secret, const char *id, long long timestamp, const void *body,
               size_t len, char *out, size_t out_size)
{
    size_t pl = strlen(WHSIG_PREFIX);
    if (!secret || strncmp(secret, WHSIG_PREFIX, pl) != 0 || out_size < WHSIG_LEN)
        return MCPQ_EINVAL;
    unsigned char key[WHSIG_KEY_MAX];
    int keylen = b64_decode(secret + pl, key, sizeof(key));
    if (keylen < 0)
        return MCPQ_EINVAL;

    char ts[32];
    int tslen = snprintf(ts, sizeof(ts), "%lld", timestamp);
    int rc = MCPQ_EIO;
    unsigned char mac[EVP_MAX_MD_SIZE];
    size_t maclen = 0;
    char digest[] = "SHA256";
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                           OSSL_PARAM_construct_end()};
    EVP_MAC *mac_alg = EVP_MAC_fetch(NULL, "HMAC", NULL);
    EVP_MAC_CTX *h = mac_alg ? EVP_MAC_CTX_new(mac_alg) : NULL;
    if (!h || !EVP_MAC_init(h, key, (size_t)keylen, params) ||
        !EVP_MAC_update(h, (const unsigned char *)id, strlen(id)) ||
        !EVP_MAC_update(h, (const unsigned char *)".", 1) ||
        !EVP_MAC_update(h, (const unsigned char *)ts, (size_t)tslen) ||
        !EVP_MAC_update(h, (const unsigned char *)".", 1) || !EVP_MAC_update(h, body, len) ||
        !EVP_MAC_final(h, mac, &maclen, sizeof(mac)))
        goto out;
    memcpy(out, "v1,", 3);
    EVP_EncodeBlock((unsigned char *)out + 3, mac, (int)maclen);
    rc = 0;
out:
    EVP_MAC_CTX_free(h);
    EVP_MAC_free(mac_alg);
    OPENSSL_cleanse(key, sizeof(key));
    return rc;
}

int whsig_sign_all(const char *const *secrets, size_t n, const char *id, long long timestamp,
                   const void *body, size_t len, char *out, size_t out_size)
{
    if (!secrets || n == 0 || n > WHSIG_MAX_SECRETS || out_size < n * WHSIG_LEN)
        return MCPQ_EINVAL;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        if (i)
            out[at++] = ' ';
        int rc = whsig_sign(secrets[i], id, timestamp, body, len, out + at, out_size - at);
        if (rc < 0)
            return rc;
        at += strlen(out + at);
    }
    return 0;
}
