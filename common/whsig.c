#include "whsig.h"

#include "err.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/core_names.h>
#include <openssl/params.h>
#include <stdio.h>
#include <string.h>

#define WHSIG_PREFIX "whsec_"
#define WHSIG_KEY_MAX 256

static int b64_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
           c == '/';
}

/* Strict standard base64 (padding optional) into key; its length or -1. */
static int b64_decode(const char *s, unsigned char *key, size_t key_size)
{
    size_t n = strlen(s), pad = 0;
    while (n > 0 && s[n - 1] == '=' && pad < 2) {
        n--;
        pad++;
    }
    if (n == 0 || n % 4 == 1)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (!b64_char(s[i]))
            return -1;
    /* EVP_DecodeBlock wants whole quanta: re-pad into a scratch buffer. */
    char padded[((WHSIG_KEY_MAX + 2) / 3) * 4 + 4];
    size_t full = (n + 3) / 4 * 4;
    if (full >= sizeof(padded) || full / 4 * 3 > key_size + 2)
        return -1;
    memcpy(padded, s, n);
    memset(padded + n, '=', full - n);
    padded[full] = '\0';
    unsigned char tmp[sizeof(padded)];
    int out = EVP_DecodeBlock(tmp, (const unsigned char *)padded, (int)full);
    if (out < 0)
        return -1;
    int real = out - (int)(full - n); /* EVP_DecodeBlock counts padding as zero bytes */
    if (real <= 0 || (size_t)real > key_size)
        return -1;
    memcpy(key, tmp, (size_t)real);
    OPENSSL_cleanse(tmp, sizeof(tmp));
    OPENSSL_cleanse(padded, sizeof(padded));
    return real;
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
