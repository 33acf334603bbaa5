/*
 * jwt.c - compact JWS parsing, JWKS keys and signature, time and audience checks (jwt.h).
 *
 * Keys become EVP_PKEYs through OpenSSL 3's provider API only (EVP_PKEY_fromdata for RSA and
 * EC, EVP_PKEY_new_raw_public_key for Ed25519); signatures are checked with EVP_DigestVerify.
 */
#include "jwt.h"

#include "util.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define JWT_SIG_MAX 1024 /* bytes of a signature: RSA-8192 */
#define JWT_RSA_MIN_BITS 2048
#define JWT_RSA_MAX_BITS 8192
#define JWT_KID_MAX 256 /* bytes of a JWK kid we keep */

struct jwt {
    char *signing_input; /* header "." payload, as received: what was signed */
    size_t signing_len;
    unsigned char sig[JWT_SIG_MAX];
    size_t sig_len;
    cJSON *header;
    cJSON *claims;
    const char *alg; /* borrowed from header */
    const char *kid; /* borrowed from header, or NULL */
};

/* The key types a JWK can be, each serving its algs. */
enum jwt_kty { KTY_RSA, KTY_EC256, KTY_ED25519 };

typedef struct jwt_key {
    enum jwt_kty kty;
    char kid[JWT_KID_MAX + 1]; /* "" when the JWK has none */
    int has_kid;
    char alg[8]; /* the JWK's "alg", "" when absent */
    EVP_PKEY *pkey;
} jwt_key_t;

struct jwt_keyset {
    jwt_key_t keys[JWT_KEYS_MAX];
    size_t n;
};

/* ---- base64url and the compact form ---------------------------------------------------- */

/* Decodes an unpadded base64url segment into a malloc'd NUL-terminated buffer. */
static unsigned char *b64url_dup(const char *s, size_t n, size_t *len)
{
    size_t cap = n / 4 * 3 + 3;
    unsigned char *buf = malloc(cap + 1);
    if (!buf)
        return NULL;
    if (util_b64_decode(s, n, UTIL_B64_URL | UTIL_B64_NOPAD, buf, cap, len) < 0) {
        free(buf);
        return NULL;
    }
    buf[*len] = '\0';
    return buf;
}

/* 1 when two members of obj have the same name (RFC 7515 section 4: refuse or take the last;
 * we refuse, so no two readers of one token can see different claims). */
static int has_duplicate(const cJSON *obj)
{
    for (const cJSON *a = obj->child; a; a = a->next)
        for (const cJSON *b = a->next; b; b = b->next)
            if (strcmp(a->string, b->string) == 0)
                return 1;
    return 0;
}

/* Decodes a base64url segment holding a JSON object; NULL when it is anything else. */
static cJSON *segment_object(const char *s, size_t n)
{
    size_t len;
    unsigned char *text = b64url_dup(s, n, &len);
    if (!text)
        return NULL;
    cJSON *obj = NULL;
    if (memchr(text, '\0', len) == NULL) {
        const char *end = NULL;
        /* len + 1: cJSON wants the NUL inside the length to check that nothing follows. */
        obj = cJSON_ParseWithLengthOpts((const char *)text, len + 1, &end, 1);
        if (obj && (!cJSON_IsObject(obj) || has_duplicate(obj))) {
            cJSON_Delete(obj);
            obj = NULL;
        }
    }
    free(text);
    return obj;
}

/* Splits token[0..len) at its two dots: 0 with the segment ends set, or -1 when the token has
 * another number of segments or a byte that is neither base64url nor a dot. */
static int split3(const char *token, size_t len, size_t *dot1, size_t *dot2)
{
    size_t dots[2], nd = 0;
    for (size_t i = 0; i < len; i++) {
        char c = token[i];
        if (c == '.') {
            if (nd == 2)
                return -1;
            dots[nd++] = i;
        } else if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                     c == '-' || c == '_')) {
            return -1;
        }
    }
    if (nd != 2 || dots[0] == 0 || dots[1] == dots[0] + 1)
        return -1;
    *dot1 = dots[0];
    *dot2 = dots[1];
    return 0;
}

/* The header rules of jwt_parse: alg a string, kid a string when present, no crit. */
static int header_check(jwt_t *t, const char **why)
{
    const cJSON *alg = cJSON_GetObjectItemCaseSensitive(t->header, "alg");
    const cJSON *kid = cJSON_GetObjectItemCaseSensitive(t->header, "kid");
    if (!cJSON_IsString(alg) || !alg->valuestring[0]) {
        *why = "token header has no alg";
        return JWT_EMALFORMED;
    }
    if (kid && !cJSON_IsString(kid)) {
        *why = "token header kid is not a string";
        return JWT_EMALFORMED;
    }
    if (cJSON_GetObjectItemCaseSensitive(t->header, "crit")) {
        *why = "token header has unsupported crit parameters";
        return JWT_EMALFORMED;
    }
    t->alg = alg->valuestring;
    t->kid = kid ? kid->valuestring : NULL;
    return JWT_OK;
}

/* Fills t from the three segments of token (split at d1 and d2). */
static int parse_segments(jwt_t *t, const char *token, size_t len, size_t d1, size_t d2,
                          const char **why)
{
    t->header = segment_object(token, d1);
    if (!t->header) {
        *why = "token header is not a base64url JSON object";
        return JWT_EMALFORMED;
    }
    int rc = header_check(t, why);
    if (rc < 0)
        return rc;
    t->claims = segment_object(token + d1 + 1, d2 - d1 - 1);
    if (!t->claims) {
        *why = "token payload is not a base64url JSON object";
        return JWT_EMALFORMED;
    }
    if (util_b64_decode(token + d2 + 1, len - d2 - 1, UTIL_B64_URL | UTIL_B64_NOPAD, t->sig,
                        sizeof(t->sig), &t->sig_len) < 0) {
        *why = "token signature is not base64url or too long";
        return JWT_EMALFORMED;
    }
    t->signing_input = malloc(d2 + 1);
    if (!t->signing_input) {
        *why = "out of memory";
        return JWT_EMALFORMED;
    }
    memcpy(t->signing_input, token, d2);
    t->signing_input[d2] = '\0';
    t->signing_len = d2;
    return JWT_OK;
}

int jwt_parse(const char *token, size_t len, jwt_t **out, const char **why)
{
    const char *dummy;
    if (!why)
        why = &dummy;
    *out = NULL;
    size_t d1, d2;
    if (!token || len == 0 || len > JWT_TOKEN_MAX) {
        *why = "token empty or too long";
        return JWT_EMALFORMED;
    }
    if (split3(token, len, &d1, &d2) < 0) {
        *why = "token is not three base64url segments";
        return JWT_EMALFORMED;
    }
    jwt_t *t = calloc(1, sizeof(*t));
    if (!t) {
        *why = "out of memory";
        return JWT_EMALFORMED;
    }
    int rc = parse_segments(t, token, len, d1, d2, why);
    if (rc < 0) {
        jwt_free(t);
        return rc;
    }
    *out = t;
    return JWT_OK;
}

int jwt_looks_like(const char *token)
{
    if (!token)
        return 0;
    size_t len = strnlen(token, JWT_TOKEN_MAX + 1), d1, d2;
    if (len == 0 || len > JWT_TOKEN_MAX || split3(token, len, &d1, &d2) < 0)
        return 0;
    cJSON *header = segment_object(token, d1);
    cJSON_Delete(header);
    return header != NULL;
}

const char *jwt_alg(const jwt_t *t)
{
    return t->alg;
}

const char *jwt_kid(const jwt_t *t)
{
    return t->kid;
}

const cJSON *jwt_claims(const jwt_t *t)
{
    return t->claims;
}

const char *jwt_iss(const jwt_t *t)
{
    const cJSON *iss = cJSON_GetObjectItemCaseSensitive(t->claims, "iss");
    return cJSON_IsString(iss) ? iss->valuestring : NULL;
}

void jwt_free(jwt_t *t)
{
    if (!t)
        return;
    cJSON_Delete(t->header);
    cJSON_Delete(t->claims);
    free(t->signing_input);
    free(t);
}

/* ---- JWKS --------------------------------------------------------------------------------- */

/* A JWK member as base64url bytes of 1..max bytes into out: the length, or -1. */
static long jwk_bytes(const cJSON *jwk, const char *name, unsigned char *out, size_t max)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(jwk, name);
    size_t len;
    if (!cJSON_IsString(v) ||
        util_b64_decode(v->valuestring, strlen(v->valuestring), UTIL_B64_URL | UTIL_B64_NOPAD, out,
                        max, &len) < 0 ||
        len == 0)
        return -1;
    return (long)len;
}

/* An EVP_PKEY of type name from the params built in bld; NULL when OpenSSL refuses them. */
static EVP_PKEY *pkey_fromdata(const char *name, OSSL_PARAM_BLD *bld)
{
    EVP_PKEY *pkey = NULL;
    OSSL_PARAM *params = OSSL_PARAM_BLD_to_param(bld);
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, name, NULL);
    if (!params || !ctx || EVP_PKEY_fromdata_init(ctx) != 1 ||
        EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) != 1)
        pkey = NULL;
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
    return pkey;
}

/* RSA from n and e: 2048..8192 bits, e odd and at least 3 (at most 64 bits). */
static EVP_PKEY *rsa_key(const cJSON *jwk)
{
    unsigned char n[JWT_RSA_MAX_BITS / 8 + 1], e[8];
    long nlen = jwk_bytes(jwk, "n", n, sizeof(n)), elen = jwk_bytes(jwk, "e", e, sizeof(e));
    if (nlen < 0 || elen < 0 || !(e[elen - 1] & 1) || (elen == 1 && e[0] < 3))
        return NULL;
    EVP_PKEY *pkey = NULL;
    BIGNUM *bn_n = BN_bin2bn(n, (int)nlen, NULL), *bn_e = BN_bin2bn(e, (int)elen, NULL);
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    int bits = bn_n ? BN_num_bits(bn_n) : 0;
    if (bld && bn_e && bits >= JWT_RSA_MIN_BITS && bits <= JWT_RSA_MAX_BITS &&
        OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn_n) == 1 &&
        OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, bn_e) == 1)
        pkey = pkey_fromdata("RSA", bld);
    OSSL_PARAM_BLD_free(bld);
    BN_free(bn_n);
    BN_free(bn_e);
    return pkey;
}

/* EC P-256 from x and y (32 bytes each); the point must lie on the curve. */
static EVP_PKEY *ec256_key(const cJSON *jwk)
{
    unsigned char x[33], y[33], pt[65];
    if (jwk_bytes(jwk, "x", x, sizeof(x)) != 32 || jwk_bytes(jwk, "y", y, sizeof(y)) != 32)
        return NULL;
    pt[0] = POINT_CONVERSION_UNCOMPRESSED;
    memcpy(pt + 1, x, 32);
    memcpy(pt + 33, y, 32);
    EVP_PKEY *pkey = NULL;
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    if (bld && OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, "P-256", 0) == 1 &&
        OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, pt, sizeof(pt)) == 1)
        pkey = pkey_fromdata("EC", bld);
    OSSL_PARAM_BLD_free(bld);
    EVP_PKEY_CTX *chk = pkey ? EVP_PKEY_CTX_new_from_pkey(NULL, pkey, NULL) : NULL;
    if (pkey && (!chk || EVP_PKEY_public_check(chk) != 1)) {
        EVP_PKEY_free(pkey);
        pkey = NULL;
    }
    EVP_PKEY_CTX_free(chk);
    return pkey;
}

/* Ed25519 from x (32 bytes). */
static EVP_PKEY *ed25519_key(const cJSON *jwk)
{
    unsigned char x[33];
    if (jwk_bytes(jwk, "x", x, sizeof(x)) != 32)
        return NULL;
    return EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, x, 32);
}

/* The key type of a JWK by kty and crv, and whether its "alg" (when any) is one it serves:
 * 0 with *kty set, or -1 for a key this module does not use. */
static int jwk_type(const cJSON *jwk, enum jwt_kty *kty)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(jwk, "kty");
    const cJSON *crv = cJSON_GetObjectItemCaseSensitive(jwk, "crv");
    const char *c = cJSON_IsString(crv) ? crv->valuestring : "";
    if (!cJSON_IsString(v))
        return -1;
    if (strcmp(v->valuestring, "RSA") == 0)
        *kty = KTY_RSA;
    else if (strcmp(v->valuestring, "EC") == 0 && strcmp(c, "P-256") == 0)
        *kty = KTY_EC256;
    else if (strcmp(v->valuestring, "OKP") == 0 && strcmp(c, "Ed25519") == 0)
        *kty = KTY_ED25519;
    else
        return -1;
    const cJSON *use = cJSON_GetObjectItemCaseSensitive(jwk, "use");
    if (use && (!cJSON_IsString(use) || strcmp(use->valuestring, "sig") != 0))
        return -1;
    const cJSON *alg = cJSON_GetObjectItemCaseSensitive(jwk, "alg");
    if (!alg)
        return 0;
    if (!cJSON_IsString(alg))
        return -1;
    const char *a = alg->valuestring;
    if (*kty == KTY_RSA)
        return strcmp(a, "RS256") == 0 || strcmp(a, "PS256") == 0 ? 0 : -1;
    if (*kty == KTY_EC256)
        return strcmp(a, "ES256") == 0 ? 0 : -1;
    return strcmp(a, "EdDSA") == 0 ? 0 : -1;
}

/* One JWK into key: 0, or -1 when it is skipped. */
static int jwk_load(const cJSON *jwk, jwt_key_t *key)
{
    enum jwt_kty kty;
    if (!cJSON_IsObject(jwk) || jwk_type(jwk, &kty) < 0)
        return -1;
    const cJSON *kid = cJSON_GetObjectItemCaseSensitive(jwk, "kid");
    if (kid && (!cJSON_IsString(kid) || strlen(kid->valuestring) > JWT_KID_MAX))
        return -1;
    memset(key, 0, sizeof(*key));
    key->kty = kty;
    if (kid) {
        key->has_kid = 1;
        memcpy(key->kid, kid->valuestring, strlen(kid->valuestring) + 1);
    }
    const cJSON *alg = cJSON_GetObjectItemCaseSensitive(jwk, "alg");
    if (alg) /* one of RS256, PS256, ES256, EdDSA (jwk_type) */
        memcpy(key->alg, alg->valuestring, strlen(alg->valuestring) + 1);
    if (kty == KTY_RSA)
        key->pkey = rsa_key(jwk);
    else if (kty == KTY_EC256)
        key->pkey = ec256_key(jwk);
    else
        key->pkey = ed25519_key(jwk);
    return key->pkey ? 0 : -1;
}

jwt_keyset_t *jwt_keyset_parse(const char *json, size_t len, const char **why)
{
    const char *dummy;
    if (!why)
        why = &dummy;
    if (!json || len > JWT_JWKS_MAX || memchr(json, '\0', len)) {
        *why = "key set missing or too big";
        return NULL;
    }
    const char *end = NULL;
    cJSON *doc = cJSON_ParseWithLengthOpts(json, len, &end, 0);
    while (doc && end < json + len && (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n'))
        end++;
    if (doc && end != json + len) { /* something after the document */
        cJSON_Delete(doc);
        doc = NULL;
    }
    const cJSON *keys = cJSON_GetObjectItemCaseSensitive(doc, "keys");
    jwt_keyset_t *ks = NULL;
    if (!cJSON_IsObject(doc) || !cJSON_IsArray(keys)) {
        *why = "key set is not a JSON object with a keys array";
        goto out;
    }
    if (cJSON_GetArraySize(keys) > JWT_KEYS_MAX) {
        *why = "key set has too many keys";
        goto out;
    }
    ks = calloc(1, sizeof(*ks));
    if (!ks) {
        *why = "out of memory";
        goto out;
    }
    const cJSON *jwk;
    cJSON_ArrayForEach(jwk, keys)
    {
        if (jwk_load(jwk, &ks->keys[ks->n]) == 0)
            ks->n++;
    }
    if (ks->n == 0) {
        *why = "key set has no usable signing key";
        jwt_keyset_free(ks);
        ks = NULL;
    }
out:
    cJSON_Delete(doc);
    return ks;
}

size_t jwt_keyset_count(const jwt_keyset_t *ks)
{
    return ks ? ks->n : 0;
}

int jwt_keyset_has_kid(const jwt_keyset_t *ks, const char *kid)
{
    if (!ks || !kid)
        return 0;
    for (size_t i = 0; i < ks->n; i++)
        if (ks->keys[i].has_kid && strcmp(ks->keys[i].kid, kid) == 0)
            return 1;
    return 0;
}

void jwt_keyset_free(jwt_keyset_t *ks)
{
    if (!ks)
        return;
    for (size_t i = 0; i < ks->n; i++)
        EVP_PKEY_free(ks->keys[i].pkey);
    free(ks);
}

/* ---- signatures --------------------------------------------------------------------------- */

enum jwt_alg { ALG_RS256, ALG_PS256, ALG_ES256, ALG_EDDSA };

/* The algs accepted and the key type each needs; -1 for every other alg. */
static int alg_lookup(const char *name, enum jwt_alg *alg, enum jwt_kty *kty)
{
    static const struct {
        const char *name;
        enum jwt_alg alg;
        enum jwt_kty kty;
    } algs[] = {{"RS256", ALG_RS256, KTY_RSA},
                {"PS256", ALG_PS256, KTY_RSA},
                {"ES256", ALG_ES256, KTY_EC256},
                {"EdDSA", ALG_EDDSA, KTY_ED25519}};
    for (size_t i = 0; i < sizeof(algs) / sizeof(algs[0]); i++) {
        if (strcmp(name, algs[i].name) == 0) {
            *alg = algs[i].alg;
            *kty = algs[i].kty;
            return 0;
        }
    }
    return -1;
}

/* The DER ECDSA-Sig-Value of a JWS ES256 signature (r || s, 32 bytes each) into der (at least
 * 80 bytes): its length, or -1. */
static int es256_der(const unsigned char *raw, size_t n, unsigned char *der)
{
    if (n != 64)
        return -1;
    ECDSA_SIG *sig = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(raw, 32, NULL), *s = BN_bin2bn(raw + 32, 32, NULL);
    int len = -1;
    if (sig && r && s && ECDSA_SIG_set0(sig, r, s) == 1) {
        r = s = NULL; /* now owned by sig */
        if (i2d_ECDSA_SIG(sig, NULL) <= 80)
            len = i2d_ECDSA_SIG(sig, &der);
    }
    BN_free(r);
    BN_free(s);
    ECDSA_SIG_free(sig);
    return len;
}

/* 1 when t's signature verifies with pkey under alg, else 0. */
static int sig_ok(const jwt_t *t, enum jwt_alg alg, EVP_PKEY *pkey)
{
    unsigned char der[80];
    const unsigned char *sig = t->sig;
    size_t sig_len = t->sig_len;
    if (alg == ALG_ES256) {
        int n = es256_der(t->sig, t->sig_len, der);
        if (n < 0)
            return 0;
        sig = der;
        sig_len = (size_t)n;
    }
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_PKEY_CTX *pctx = NULL;
    int ok = md && EVP_DigestVerifyInit(md, &pctx, alg == ALG_EDDSA ? NULL : EVP_sha256(), NULL,
                                        pkey) == 1;
    if (ok && alg == ALG_PS256)
        ok = EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) == 1 &&
             EVP_PKEY_CTX_set_rsa_mgf1_md(pctx, EVP_sha256()) == 1 &&
             EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) == 1;
    else if (ok && alg == ALG_RS256)
        ok = EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) == 1;
    ok = ok && EVP_DigestVerify(md, sig, sig_len, (const unsigned char *)t->signing_input,
                                t->signing_len) == 1;
    EVP_MD_CTX_free(md);
    return ok;
}

/* Whether key can check a token of alg (needing key type kty). */
static int key_fits(const jwt_key_t *key, const char *alg, enum jwt_kty kty)
{
    return key->kty == kty && (!key->alg[0] || strcmp(key->alg, alg) == 0);
}

int jwt_verify(const jwt_t *t, const jwt_keyset_t *ks, const char **why)
{
    const char *dummy;
    if (!why)
        why = &dummy;
    enum jwt_alg alg;
    enum jwt_kty kty;
    if (alg_lookup(t->alg, &alg, &kty) < 0) {
        *why = "token alg is not accepted (RS256, PS256, ES256, EdDSA)";
        return JWT_EALG;
    }
    size_t named = 0, fitting = 0, n = ks ? ks->n : 0;
    for (size_t i = 0; i < n; i++) {
        const jwt_key_t *key = &ks->keys[i];
        if (t->kid && !(key->has_kid && strcmp(key->kid, t->kid) == 0))
            continue;
        named++;
        if (!key_fits(key, t->alg, kty))
            continue;
        fitting++;
        if (sig_ok(t, alg, key->pkey))
            return JWT_OK;
    }
    if (t->kid && named == 0) {
        *why = "token kid names no known key";
        return JWT_EKID;
    }
    if (fitting == 0) {
        *why = t->kid ? "token key does not fit its alg" : "no known key fits the token alg";
        return t->kid ? JWT_EALG : JWT_EKID;
    }
    *why = "token signature does not verify";
    return JWT_ESIG;
}

/* ---- claims ------------------------------------------------------------------------------- */

/* A NumericDate claim: 1 with *v set when present, 0 when absent, -1 when not a number. */
static int numeric_date(const jwt_t *t, const char *name, double *v)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(t->claims, name);
    if (!c)
        return 0;
    if (!cJSON_IsNumber(c) || !isfinite(c->valuedouble))
        return -1;
    *v = c->valuedouble;
    return 1;
}

int jwt_check_time(const jwt_t *t, long long now_s, int skew_s, const char **why)
{
    const char *dummy;
    if (!why)
        why = &dummy;
    double exp = 0, nbf = 0, iat = 0, now = (double)now_s, skew = skew_s > 0 ? skew_s : 0;
    int has_exp = numeric_date(t, "exp", &exp), has_nbf = numeric_date(t, "nbf", &nbf);
    int has_iat = numeric_date(t, "iat", &iat);
    if (has_exp < 0 || has_nbf < 0 || has_iat < 0) {
        *why = "token exp, nbf or iat is not a number";
        return JWT_EMALFORMED;
    }
    if (!has_exp) {
        *why = "token has no exp";
        return JWT_EEXPIRED;
    }
    if (now >= exp + skew) {
        *why = "token expired";
        return JWT_EEXPIRED;
    }
    if (has_nbf && now + skew < nbf) {
        *why = "token not valid yet (nbf)";
        return JWT_ENOTYET;
    }
    if (has_iat && iat > now + skew) {
        *why = "token issued in the future (iat)";
        return JWT_ENOTYET;
    }
    return JWT_OK;
}

static int aud_in(const char *aud, const char *const *auds, size_t naud)
{
    for (size_t i = 0; i < naud; i++)
        if (auds[i] && strcmp(aud, auds[i]) == 0)
            return 1;
    return 0;
}

int jwt_check_aud(const jwt_t *t, const char *const *auds, size_t naud)
{
    return jwt_claims_aud(t->claims, auds, naud);
}

int jwt_claims_aud(const cJSON *claims, const char *const *auds, size_t naud)
{
    if (naud == 0)
        return JWT_OK;
    const cJSON *aud = cJSON_GetObjectItemCaseSensitive(claims, "aud");
    if (cJSON_IsString(aud))
        return aud_in(aud->valuestring, auds, naud) ? JWT_OK : JWT_EAUD;
    const cJSON *a;
    if (cJSON_IsArray(aud)) {
        cJSON_ArrayForEach(a, aud)
        {
            if (cJSON_IsString(a) && aud_in(a->valuestring, auds, naud))
                return JWT_OK;
        }
    }
    return JWT_EAUD;
}
