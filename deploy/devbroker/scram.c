#include "scram.h"

#include "err.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCRAM_ITERATIONS 4096
#define SCRAM_SALT "mcpq-devbroker-scram-salt" /* fixed: a test broker stores no credentials */
#define SCRAM_MSG_MAX 1024                     /* longer client messages are refused */
#define SCRAM_SNONCE_BYTES 18                  /* 24 base64 characters */

struct db_scram {
    const EVP_MD *md;
    const char *user, *password;
    int step;                  /* 0: expects client-first, 1: client-final, 2: over */
    char client_user[256];     /* as the client-first message named it */
    char nonce[SCRAM_MSG_MAX]; /* client nonce and server nonce */
    char client_first_bare[SCRAM_MSG_MAX];
    char server_first[SCRAM_MSG_MAX + 128];
};

/* The keys the server keeps for its user (RFC 5802 section 3). */
typedef struct keys {
    unsigned char stored[EVP_MAX_MD_SIZE], server[EVP_MAX_MD_SIZE];
    unsigned int len;
} keys_t;

static const EVP_MD *mech_md(const char *mech)
{
    if (mech && strcmp(mech, "SCRAM-SHA-256") == 0)
        return EVP_sha256();
    if (mech && strcmp(mech, "SCRAM-SHA-512") == 0)
        return EVP_sha512();
    return NULL;
}

int db_scram_known(const char *mech)
{
    return mech_md(mech) != NULL;
}

db_scram_t *db_scram_new(const char *mech, const char *user, const char *password)
{
    const EVP_MD *md = mech_md(mech);
    db_scram_t *s = md ? calloc(1, sizeof(*s)) : NULL;
    if (!s)
        return NULL;
    s->md = md;
    s->user = user;
    s->password = password;
    return s;
}

const char *db_scram_user(const db_scram_t *s)
{
    return s->client_user;
}

void db_scram_free(db_scram_t *s)
{
    if (!s)
        return;
    OPENSSL_cleanse(s, sizeof(*s));
    free(s);
}

/* ---- text ---- */

/* n bytes as base64 into out (NUL-terminated); -1 when out is too small. */
static int b64_encode(const unsigned char *in, size_t n, char *out, size_t size)
{
    if (4 * ((n + 2) / 3) + 1 > size)
        return -1;
    EVP_EncodeBlock((unsigned char *)out, in, (int)n);
    return 0;
}

/* The bytes of base64 text s into out: their number, or -1 when malformed or too long. */
static int b64_decode(const char *s, unsigned char *out, size_t size)
{
    size_t len = strlen(s);
    if (len == 0 || len % 4 != 0 || len / 4 * 3 > size)
        return -1;
    int n = EVP_DecodeBlock(out, (const unsigned char *)s, (int)len);
    if (n < 0)
        return -1;
    return n - (s[len - 1] == '=') - (s[len - 2] == '=');
}

/* The value of attribute name ("x=value" among msg's comma-separated fields) into val;
 * -1 when absent or longer than size - 1. */
static int attr_get(const char *msg, char name, char *val, size_t size)
{
    for (const char *p = msg; p; p = strchr(p, ',')) {
        if (*p == ',')
            p++;
        if (p[0] != name || p[1] != '=')
            continue;
        size_t n = strcspn(p + 2, ",");
        if (n >= size)
            return -1;
        memcpy(val, p + 2, n);
        val[n] = '\0';
        return 0;
    }
    return -1;
}

/* A saslname (',' sent as "=2C", '=' as "=3D") decoded into out; -1 when malformed. */
static int saslname_decode(const char *in, char *out, size_t size)
{
    size_t o = 0;
    for (const char *p = in; *p; p++) {
        char ch = *p;
        if (ch == '=') {
            if (strncmp(p, "=2C", 3) != 0 && strncmp(p, "=3D", 3) != 0)
                return -1;
            ch = p[1] == '2' ? ',' : '=';
            p += 2;
        }
        if (o + 1 >= size)
            return -1;
        out[o++] = ch;
    }
    out[o] = '\0';
    return 0;
}

/* ---- cryptography ---- */

/* StoredKey and ServerKey of the user's password. */
static int keys_derive(const db_scram_t *s, keys_t *k)
{
    unsigned char salted[EVP_MAX_MD_SIZE], client[EVP_MAX_MD_SIZE];
    int len = EVP_MD_size(s->md);
    unsigned int n = 0;
    int rc = MCPQ_EINVAL;
    if (PKCS5_PBKDF2_HMAC(s->password, (int)strlen(s->password), (const unsigned char *)SCRAM_SALT,
                          (int)strlen(SCRAM_SALT), SCRAM_ITERATIONS, s->md, len, salted) != 1)
        goto out;
    if (!HMAC(s->md, salted, len, (const unsigned char *)"Client Key", 10, client, &n) ||
        EVP_Digest(client, n, k->stored, &k->len, s->md, NULL) != 1 ||
        !HMAC(s->md, salted, len, (const unsigned char *)"Server Key", 10, k->server, &n))
        goto out;
    rc = 0;
out:
    OPENSSL_cleanse(salted, sizeof(salted));
    OPENSSL_cleanse(client, sizeof(client));
    return rc;
}

/* Checks proof (k->len bytes) against auth, the AuthMessage; on success writes the
 * server-final message to out. */
static int proof_check(const db_scram_t *s, const char *auth, const unsigned char *proof, char *out,
                       size_t out_size, char *why, size_t why_size)
{
    keys_t k;
    unsigned char sig[EVP_MAX_MD_SIZE], client[EVP_MAX_MD_SIZE], stored[EVP_MAX_MD_SIZE];
    char sig_b64[2 * EVP_MAX_MD_SIZE];
    unsigned int n = 0, m = 0;
    int rc = MCPQ_EINVAL;
    if (keys_derive(s, &k) < 0 ||
        !HMAC(s->md, k.stored, (int)k.len, (const unsigned char *)auth, strlen(auth), sig, &n)) {
        snprintf(why, why_size, "cannot derive the keys (OpenSSL)");
        goto out;
    }
    for (unsigned int i = 0; i < k.len; i++)
        client[i] = proof[i] ^ sig[i]; /* ClientKey = ClientProof XOR ClientSignature */
    if (EVP_Digest(client, k.len, stored, &m, s->md, NULL) != 1 ||
        CRYPTO_memcmp(stored, k.stored, k.len) != 0) {
        snprintf(why, why_size, "wrong password (the client proof does not match)");
        goto out;
    }
    if (!HMAC(s->md, k.server, (int)k.len, (const unsigned char *)auth, strlen(auth), sig, &n) ||
        b64_encode(sig, n, sig_b64, sizeof(sig_b64)) < 0 ||
        (size_t)snprintf(out, out_size, "v=%s", sig_b64) >= out_size) {
        snprintf(why, why_size, "cannot sign the server-final message");
        goto out;
    }
    rc = 1;
out:
    OPENSSL_cleanse(&k, sizeof(k));
    OPENSSL_cleanse(client, sizeof(client));
    return rc;
}

/* ---- the two client messages ---- */

static int client_first(db_scram_t *s, const char *msg, char *out, size_t out_size, char *why,
                        size_t why_size)
{
    char raw[256], cnonce[SCRAM_MSG_MAX], ext[SCRAM_MSG_MAX], snonce[32], salt[64];
    unsigned char rnd[SCRAM_SNONCE_BYTES];
    if (strncmp(msg, "n,,", 3) != 0) {
        snprintf(why, why_size,
                 "the gs2 header must be \"n,,\" (no channel binding, no authorization id)");
        return MCPQ_EINVAL;
    }
    const char *bare = msg + 3;
    if (strncmp(bare, "n=", 2) != 0 || attr_get(bare, 'n', raw, sizeof(raw)) < 0 ||
        saslname_decode(raw, s->client_user, sizeof(s->client_user)) < 0 ||
        attr_get(bare, 'r', cnonce, sizeof(cnonce)) < 0 || !*cnonce ||
        attr_get(bare, 'm', ext, sizeof(ext)) == 0) {
        s->client_user[0] = '\0';
        snprintf(why, why_size, "malformed client-first message");
        return MCPQ_EINVAL;
    }
    if (strcmp(s->client_user, s->user) != 0) {
        snprintf(why, why_size, "unknown user");
        return MCPQ_EINVAL;
    }
    if (RAND_bytes(rnd, sizeof(rnd)) != 1 || b64_encode(rnd, sizeof(rnd), snonce, sizeof(snonce)) ||
        b64_encode((const unsigned char *)SCRAM_SALT, strlen(SCRAM_SALT), salt, sizeof(salt)) ||
        (size_t)snprintf(s->nonce, sizeof(s->nonce), "%s%s", cnonce, snonce) >= sizeof(s->nonce) ||
        (size_t)snprintf(s->server_first, sizeof(s->server_first), "r=%s,s=%s,i=%d", s->nonce, salt,
                         SCRAM_ITERATIONS) >= sizeof(s->server_first) ||
        (size_t)snprintf(out, out_size, "%s", s->server_first) >= out_size) {
        snprintf(why, why_size, "cannot make the server-first message");
        return MCPQ_EINVAL;
    }
    snprintf(s->client_first_bare, sizeof(s->client_first_bare), "%s", bare);
    return 0;
}

/* The client-final nonce must end with the server-first one, as Kafka (3.8.1 and later)
 * checks it rather than for equality: librdkafka before 2.6.1, 2.0.2 too, sends the client
 * nonce once more in front of it (docs/kafka.md "What was tested here"). */
static int nonce_ends(const char *got, const char *want)
{
    size_t g = strlen(got), w = strlen(want);
    return g >= w && strcmp(got + g - w, want) == 0;
}

static int client_final(db_scram_t *s, const char *msg, char *out, size_t out_size, char *why,
                        size_t why_size)
{
    char cb[16], nonce[SCRAM_MSG_MAX], auth[3 * SCRAM_MSG_MAX + 256];
    unsigned char proof[EVP_MAX_MD_SIZE + 3];
    const char *p = strstr(msg, ",p="); /* the proof: the last attribute */
    if (attr_get(msg, 'c', cb, sizeof(cb)) < 0 || strcmp(cb, "biws") != 0) {
        snprintf(why, why_size, "channel binding must be c=biws (base64 of \"n,,\")");
        return MCPQ_EINVAL;
    }
    if (attr_get(msg, 'r', nonce, sizeof(nonce)) < 0 || !nonce_ends(nonce, s->nonce)) {
        snprintf(why, why_size, "the nonce does not end with the server-first message's");
        return MCPQ_EINVAL;
    }
    if (!p || strchr(p + 1, ',') || b64_decode(p + 3, proof, sizeof(proof)) != EVP_MD_size(s->md)) {
        snprintf(why, why_size, "malformed client proof");
        return MCPQ_EINVAL;
    }
    /* AuthMessage = client-first-bare "," server-first "," client-final-without-proof */
    if ((size_t)snprintf(auth, sizeof(auth), "%s,%s,%.*s", s->client_first_bare, s->server_first,
                         (int)(p - msg), msg) >= sizeof(auth)) {
        snprintf(why, why_size, "client-final message too long");
        return MCPQ_EINVAL;
    }
    return proof_check(s, auth, proof, out, out_size, why, why_size);
}

int db_scram_step(db_scram_t *s, const uint8_t *in, size_t in_len, char *out, size_t out_size,
                  char *why, size_t why_size)
{
    char msg[SCRAM_MSG_MAX];
    int rc = MCPQ_EINVAL;
    out[0] = '\0';
    why[0] = '\0';
    if (in_len >= sizeof(msg) || memchr(in, '\0', in_len)) {
        snprintf(why, why_size, "message too long or not text");
        goto out;
    }
    memcpy(msg, in, in_len);
    msg[in_len] = '\0';
    if (s->step == 0)
        rc = client_first(s, msg, out, out_size, why, why_size);
    else if (s->step == 1)
        rc = client_final(s, msg, out, out_size, why, why_size);
    else
        snprintf(why, why_size, "a message after the exchange ended");
out:
    if (rc < 0)
        out[0] = '\0';
    s->step = rc < 0 ? 2 : s->step + 1;
    return rc;
}
