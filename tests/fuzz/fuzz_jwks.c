/*
 * fuzz_jwks.c - libFuzzer driver for JWKS documents (common/jwt.c jwt_keyset_parse,
 * jwt_keyset_count, jwt_keyset_has_kid, and jwt_verify against the keys it built).
 *
 * Input layout: the whole input is the document (any bytes, the length given to
 * jwt_keyset_parse). The seed corpus holds the key set two tokens below were signed for
 * (an EdDSA token with kid d1, an ES256 token without kid; private keys thrown away after
 * signing) and variants of it.
 *
 * Checked: a refusal has a reason; an accepted set came from at most JWT_JWKS_MAX bytes of a
 * JSON object whose "keys" array has 1..JWT_KEYS_MAX entries, and holds 1..that many keys;
 * a kid the set has is the kid of one of those entries; jwt_verify answers one of its four
 * codes, and JWT_OK only when the document carries the very public key (x) that signed.
 */
#include "fuzz.h"
#include "jwt.h"

#include <string.h>

static const char ed_token[] =
    "eyJhbGciOiJFZERTQSIsInR5cCI6IkpXVCIsImtpZCI6ImQxIn0.eyJpc3MiOiJodHRwczovL2lkcC5leGFtcGxl"
    "Iiwic3ViIjoiYWxpY2UiLCJhdWQiOlsiYXBpOi8vbWNwcSIsIngiXSwiZXhwIjoxNzAwMDAwNjAwLCJpYXQiOjE3"
    "MDAwMDAwMDAsIm5iZiI6MTY5OTk5OTk5MH0.hifZD6-hX4fUVCXO7ghIv6hHFn35ZK5_T_mKlNtzYfn346lEN78F"
    "zu10yXd6M7PPesOU7kYoCLXG6tiXGlihBA";
static const char es_token[] =
    "eyJhbGciOiJFUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJodHRwczovL2lkcC5leGFtcGxlIiwic3ViIjoiYWx"
    "pY2UiLCJhdWQiOlsiYXBpOi8vbWNwcSIsIngiXSwiZXhwIjoxNzAwMDAwNjAwLCJpYXQiOjE3MDAwMDAwMDAsIm5"
    "iZiI6MTY5OTk5OTk5MH0.Jn3FOoM1suZkAjpvs7KDhFS1j34vX-DXzHJFNFm15b8bhtaNjuTLnz6FybO6Y53SZ_v"
    "xXp6Mky8maH_sCSVCmw";

/* x of the Ed25519 key (kid d1) and of the P-256 key that signed the tokens. */
static const char ed_x[] = "fWbAWy5reeISbveGBHmUnBQaKq7iUleLvkoj7SSNzcI";
static const char es_x[] = "kJx4Z003NvsoV1ES7ojRHHAsjjKxuibscyJ0-fPq76U";

/* 1 when an entry of keys has member name equal to value. */
static int has_member(const cJSON *keys, const char *name, const char *value)
{
    const cJSON *k;
    cJSON_ArrayForEach(k, keys)
    {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(k, name);
        if (cJSON_IsString(v) && strcmp(v->valuestring, value) == 0)
            return 1;
    }
    return 0;
}

/* jwt_verify of token against ks; JWT_OK only when the document has the signer's x. */
static void check_token(const jwt_keyset_t *ks, const cJSON *keys, const char *token, const char *x)
{
    jwt_t *t = NULL;
    FUZZ_CHECK(jwt_parse(token, strlen(token), &t, NULL) == JWT_OK);
    const char *why = NULL;
    int rc = jwt_verify(t, ks, &why);
    FUZZ_CHECK(rc == JWT_OK || rc == JWT_EALG || rc == JWT_EKID || rc == JWT_ESIG);
    FUZZ_CHECK(rc == JWT_OK ? has_member(keys, "x", x) : why && why[0]);
    jwt_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    const char *why = NULL;
    jwt_keyset_t *ks = jwt_keyset_parse(s, size, &why);
    if (!ks) {
        FUZZ_CHECK(why && why[0] && jwt_keyset_count(NULL) == 0);
        free(s);
        return 0;
    }
    FUZZ_CHECK(size <= JWT_JWKS_MAX && memchr(s, '\0', size) == NULL);
    cJSON *doc = cJSON_Parse(s);
    const cJSON *keys = cJSON_GetObjectItemCaseSensitive(doc, "keys");
    FUZZ_CHECK(cJSON_IsObject(doc) && cJSON_IsArray(keys));
    size_t n = (size_t)cJSON_GetArraySize(keys);
    FUZZ_CHECK(n >= 1 && n <= JWT_KEYS_MAX);
    FUZZ_CHECK(jwt_keyset_count(ks) >= 1 && jwt_keyset_count(ks) <= n);
    const char *kids[] = {"d1", "e1", "r1", ""};
    for (size_t i = 0; i < sizeof(kids) / sizeof(kids[0]); i++)
        FUZZ_CHECK(!jwt_keyset_has_kid(ks, kids[i]) || has_member(keys, "kid", kids[i]));
    check_token(ks, keys, ed_token, ed_x);
    check_token(ks, keys, es_token, es_x);
    cJSON_Delete(doc);
    jwt_keyset_free(ks);
    free(s);
    return 0;
}
