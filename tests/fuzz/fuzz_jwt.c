/*
 * fuzz_jwt.c - libFuzzer driver for bearer tokens (common/jwt.c): jwt_looks_like, jwt_parse,
 * jwt_verify against a fixed key set (an RSA-2048, an EC P-256 with "alg":"ES256" and an
 * Ed25519 key, kids r1, e1, d1), jwt_check_time and jwt_check_aud.
 *
 * Input layout: the whole input is the token (any bytes, the length given to jwt_parse).
 * The seed corpus holds tokens signed by the private halves of those keys (thrown away after
 * signing), all over the same payload.
 *
 * Checked: jwt_parse accepts only what jwt.h describes (at most JWT_TOKEN_MAX bytes, two dots,
 * only base64url characters, an alg; a refusal has a reason and no token), and what it accepts
 * jwt_looks_like accepts; jwt_verify answers one of its four codes, and JWT_OK only for an
 * accepted alg, a kid of the set (when the token has one) and the signed payload of the
 * corpus (no input can forge a signature); the time and audience checks answer their codes,
 * JWT_OK only when exp is a number and aud holds the audience.
 */
#include "fuzz.h"
#include "jwt.h"

#include <string.h>

static const char jwks[] =
    "{\"keys\":[{\"kid\":\"r1\",\"kty\":\"RSA\",\"n\":\"w7_"
    "owgNNrF97C2BFWzFNtT0c56E7NSAWaImnyiNoGCa-Z7Ze5J"
    "wS7ogu3Li1JJMgOCHdqC4LfZl2p4oQY_oePwW6zwn7MLDLGcVWAb2wkg_wXPpaLlqCMnJ8pp0PzBflEA88c2RgAw"
    "0UD5SMi1afJpK44vcZ6qzF6IyKZSXs0fBOttg8E3Jc5k-J654UlP45Dh3iVpDMV_5L9-mBfJ2pPXIJP_RtB6eKWD"
    "24Rm0WQvwAU9lHeomHHoE1oRj0YjZGl6JlorX3G0Z1By6MaFAG6GIfUFCw_RsAgwSDH0mCZ3-Sl3mx4iAm0mbq-w"
    "6EXXIma9YPIJZQNChngUf_R0QBiw\",\"e\":\"AQAB\"},{\"alg\":\"ES256\",\"kid\":\"e1\",\"kty\":"
    "\"EC\",\"crv\":\"P-"
    "256\",\"x\":\"kJx4Z003NvsoV1ES7ojRHHAsjjKxuibscyJ0-fPq76U\",\"y\":\"l1UXPJWz6a_"
    "f5gJLkup7Mok56jRA"
    "6QXV9d-ERnGfbZg\"},{\"kid\":\"d1\",\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":"
    "\"fWbAWy5reeISbveGBHmUnBQaK"
    "q7iUleLvkoj7SSNzcI\"}]}";

/* The payload segment every seed token signs. */
static const char signed_payload[] =
    "eyJpc3MiOiJodHRwczovL2lkcC5leGFtcGxlIiwic3ViIjoiYWxpY2UiLCJhdWQiOlsiYXBpOi8vbWNwcSIsIngiXSwiZX"
    "hwIjoxNzAwMDAwNjAwLCJpYXQiOjE3MDAwMDAwMDAsIm5iZiI6MTY5OTk5OTk5MH0";

static jwt_keyset_t *keys(void)
{
    static jwt_keyset_t *ks;
    if (!ks) { /* kept for the process's life, like libFuzzer's other state */
        ks = jwt_keyset_parse(jwks, strlen(jwks), NULL);
        FUZZ_CHECK(ks && jwt_keyset_count(ks) == 3);
    }
    return ks;
}

static void check_shape(const char *s, size_t n)
{
    size_t dots = 0;
    FUZZ_CHECK(n > 0 && n <= JWT_TOKEN_MAX);
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        dots += c == '.';
        FUZZ_CHECK(c == '.' || c == '-' || c == '_' || (c >= 'A' && c <= 'Z') ||
                   (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'));
    }
    FUZZ_CHECK(dots == 2);
}

static void check_verify(const jwt_t *t, const char *s)
{
    const char *why = NULL;
    int rc = jwt_verify(t, keys(), &why);
    FUZZ_CHECK(rc == JWT_OK || rc == JWT_EALG || rc == JWT_EKID || rc == JWT_ESIG);
    if (rc != JWT_OK) {
        FUZZ_CHECK(why && why[0]);
        return;
    }
    const char *alg = jwt_alg(t), *kid = jwt_kid(t);
    FUZZ_CHECK(strcmp(alg, "RS256") == 0 || strcmp(alg, "PS256") == 0 ||
               strcmp(alg, "ES256") == 0 || strcmp(alg, "EdDSA") == 0);
    FUZZ_CHECK(!kid || jwt_keyset_has_kid(keys(), kid));
    const char *p = strchr(s, '.') + 1;
    FUZZ_CHECK(strncmp(p, signed_payload, strlen(signed_payload)) == 0 &&
               p[strlen(signed_payload)] == '.');
}

static void check_claims(const jwt_t *t)
{
    const long long nows[] = {0, 1700000000LL, 4000000000000000000LL};
    for (size_t i = 0; i < sizeof(nows) / sizeof(nows[0]); i++) {
        const char *why = NULL;
        int rc = jwt_check_time(t, nows[i], 60, &why);
        FUZZ_CHECK(rc == JWT_OK || rc == JWT_EEXPIRED || rc == JWT_ENOTYET || rc == JWT_EMALFORMED);
        FUZZ_CHECK(rc == JWT_OK ? cJSON_IsNumber(cJSON_GetObjectItem(jwt_claims(t), "exp"))
                                : why && why[0]);
    }
    const char *auds[] = {"api://mcpq"};
    int rc = jwt_check_aud(t, auds, 1);
    FUZZ_CHECK(rc == JWT_OK || rc == JWT_EAUD);
    if (rc == JWT_OK) {
        const cJSON *aud = cJSON_GetObjectItemCaseSensitive(jwt_claims(t), "aud"), *a;
        int found = cJSON_IsString(aud) && strcmp(aud->valuestring, auds[0]) == 0;
        if (cJSON_IsArray(aud)) {
            cJSON_ArrayForEach(a, aud)
            {
                found |= cJSON_IsString(a) && strcmp(a->valuestring, auds[0]) == 0;
            }
        }
        FUZZ_CHECK(found);
    }
    FUZZ_CHECK(jwt_check_aud(t, NULL, 0) == JWT_OK);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    jwt_t *t = NULL;
    const char *why = NULL;
    int rc = jwt_parse(s, size, &t, &why);
    int looks = jwt_looks_like(s);
    FUZZ_CHECK(rc == JWT_OK || rc == JWT_EMALFORMED);
    if (rc != JWT_OK) {
        FUZZ_CHECK(t == NULL && why && why[0]);
        free(s);
        return 0;
    }
    check_shape(s, size);
    FUZZ_CHECK(looks == 1);
    FUZZ_CHECK(jwt_alg(t)[0] && cJSON_IsObject(jwt_claims(t)));
    check_verify(t, s);
    check_claims(t);
    jwt_free(t);
    free(s);
    return 0;
}
