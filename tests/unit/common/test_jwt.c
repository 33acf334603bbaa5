/* Tests common/jwt.c: tokens signed here with keys generated here (RSA-2048, RSA-1024, EC P-256,
 * EC P-384, Ed25519), published as a JWKS, then parsed, verified and checked. */
#include "check.h"
#include "jwt.h"
#include "util.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOW 1700000000LL
#define TOKEN_CAP (64 * 1024)

static EVP_PKEY *rsa2048, *rsa2048b, *rsa1024, *ec256, *ec384, *ed25519;
static jwt_keyset_t *keys;

/* ---- signing side ------------------------------------------------------------------------ */

static void b64url(const unsigned char *in, size_t n, char *out)
{
    util_b64url_encode(in, n, out);
}

/* A JWK member "name":"<base64url of the BIGNUM param>". */
static void jwk_bn(EVP_PKEY *pkey, const char *param, const char *name, char *out, size_t size)
{
    BIGNUM *bn = NULL;
    CHECK(EVP_PKEY_get_bn_param(pkey, param, &bn) == 1);
    unsigned char bin[1024];
    int n = BN_bn2bin(bn, bin);
    char enc[1400];
    b64url(bin, (size_t)n, enc);
    snprintf(out, size, "\"%s\":\"%s\"", name, enc);
    BN_free(bn);
}

/* The public JWK of pkey, with extra members (e.g. "\"alg\":\"RS256\",") put first. */
static void jwk_of(EVP_PKEY *pkey, const char *kid, const char *extra, char *out, size_t size)
{
    char a[1500] = "", b[1500] = "", kidm[128] = "";
    if (kid)
        snprintf(kidm, sizeof(kidm), "\"kid\":\"%s\",", kid);
    if (EVP_PKEY_is_a(pkey, "RSA")) {
        jwk_bn(pkey, OSSL_PKEY_PARAM_RSA_N, "n", a, sizeof(a));
        jwk_bn(pkey, OSSL_PKEY_PARAM_RSA_E, "e", b, sizeof(b));
        snprintf(out, size, "{%s%s\"kty\":\"RSA\",%s,%s}", extra, kidm, a, b);
    } else if (EVP_PKEY_is_a(pkey, "EC")) {
        unsigned char pt[133];
        size_t len = 0;
        char x[100], y[100], crv[16];
        CHECK(EVP_PKEY_get_octet_string_param(pkey, OSSL_PKEY_PARAM_PUB_KEY, pt, sizeof(pt),
                                              &len) == 1);
        CHECK(pt[0] == 4);
        size_t c = (len - 1) / 2;
        b64url(pt + 1, c, x);
        b64url(pt + 1 + c, c, y);
        snprintf(crv, sizeof(crv), "%s", c == 32 ? "P-256" : "P-384");
        snprintf(out, size, "{%s%s\"kty\":\"EC\",\"crv\":\"%s\",\"x\":\"%s\",\"y\":\"%s\"}", extra,
                 kidm, crv, x, y);
    } else {
        unsigned char raw[32];
        size_t len = sizeof(raw);
        char x[64];
        CHECK(EVP_PKEY_get_raw_public_key(pkey, raw, &len) == 1);
        b64url(raw, len, x);
        snprintf(out, size, "{%s%s\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"%s\"}", extra, kidm,
                 x);
    }
}

/* The raw JWS signature of in under alg with pkey into sig: its length. */
static size_t sign_raw(EVP_PKEY *pkey, const char *alg, const char *in, unsigned char *sig)
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_PKEY_CTX *pctx = NULL;
    int eddsa = strcmp(alg, "EdDSA") == 0;
    CHECK(EVP_DigestSignInit(md, &pctx, eddsa ? NULL : EVP_sha256(), NULL, pkey) == 1);
    if (strncmp(alg, "PS256", 5) == 0) { /* "PS256/0": a salt of 0 bytes instead of 32 */
        CHECK(EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) == 1);
        CHECK(EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, alg[5] ? 0 : RSA_PSS_SALTLEN_DIGEST) == 1);
    }
    unsigned char der[1100];
    size_t len = sizeof(der);
    CHECK(EVP_DigestSign(md, der, &len, (const unsigned char *)in, strlen(in)) == 1);
    EVP_MD_CTX_free(md);
    if (strcmp(alg, "ES256") != 0) {
        memcpy(sig, der, len);
        return len;
    }
    /* DER ECDSA-Sig-Value -> r || s, each padded to the field size (32, or 48 for P-384) */
    const unsigned char *p = der;
    ECDSA_SIG *es = d2i_ECDSA_SIG(NULL, &p, (long)len);
    CHECK(es != NULL);
    int c = EVP_PKEY_get_bits(pkey) / 8;
    CHECK(BN_bn2binpad(ECDSA_SIG_get0_r(es), sig, c) == c);
    CHECK(BN_bn2binpad(ECDSA_SIG_get0_s(es), sig + c, c) == c);
    ECDSA_SIG_free(es);
    return (size_t)(2 * c);
}

/* header_json.payload_json signed with pkey under alg (pkey NULL: empty signature). */
static char *make_token(const char *header, const char *payload, EVP_PKEY *pkey, const char *alg)
{
    char *tok = malloc(TOKEN_CAP);
    CHECK(tok != NULL);
    b64url((const unsigned char *)header, strlen(header), tok);
    strcat(tok, ".");
    b64url((const unsigned char *)payload, strlen(payload), tok + strlen(tok));
    strcat(tok, ".");
    if (pkey) {
        tok[strlen(tok) - 1] = '\0';
        unsigned char sig[1100];
        size_t n = sign_raw(pkey, alg, tok, sig);
        strcat(tok, ".");
        b64url(sig, n, tok + strlen(tok));
    }
    return tok;
}

/* A token of alg with kid (NULL: none) over payload. */
static char *token_for(EVP_PKEY *pkey, const char *alg, const char *kid, const char *payload)
{
    char header[256];
    if (kid)
        snprintf(header, sizeof(header), "{\"alg\":\"%s\",\"typ\":\"JWT\",\"kid\":\"%s\"}", alg,
                 kid);
    else
        snprintf(header, sizeof(header), "{\"alg\":\"%s\",\"typ\":\"JWT\"}", alg);
    return make_token(header, payload, pkey, alg);
}

static const char *payload_ok =
    "{\"iss\":\"https://idp.example\",\"sub\":\"alice\",\"aud\":\"api://mcpq\","
    "\"exp\":1700000600,\"iat\":1700000000,\"nbf\":1699999990}";

/* ---- verifying side ---------------------------------------------------------------------- */

/* Parses and verifies token against ks: the jwt_verify code (or the jwt_parse code). */
static int verify_with(const char *tok, const jwt_keyset_t *ks)
{
    jwt_t *t = NULL;
    const char *why = NULL;
    int rc = jwt_parse(tok, strlen(tok), &t, &why);
    if (rc == JWT_OK) {
        rc = jwt_verify(t, ks, &why);
        CHECK(rc == JWT_OK || (why != NULL && why[0]));
    } else {
        CHECK(why != NULL && why[0] && t == NULL);
    }
    jwt_free(t);
    return rc;
}

static int verify(const char *tok)
{
    return verify_with(tok, keys);
}

static void setup_keys(void)
{
    rsa2048 = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
    rsa2048b = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
    rsa1024 = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)1024);
    ec256 = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    ec384 = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-384");
    ed25519 = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    CHECK(rsa2048 && rsa2048b && rsa1024 && ec256 && ec384 && ed25519);
    static char jwks[32768];
    char k[6][3000];
    jwk_of(rsa2048, "r1", "\"use\":\"sig\",", k[0], sizeof(k[0]));
    jwk_of(rsa1024, "weak", "", k[1], sizeof(k[1]));
    jwk_of(ec256, "e1", "\"alg\":\"ES256\",", k[2], sizeof(k[2]));
    jwk_of(ec384, "p384", "", k[3], sizeof(k[3]));
    jwk_of(ed25519, "d1", "", k[4], sizeof(k[4]));
    jwk_of(rsa2048b, "r2", "", k[5], sizeof(k[5]));
    snprintf(jwks, sizeof(jwks), "{\"keys\":[%s,%s,%s,%s,%s,%s]}", k[0], k[1], k[2], k[3], k[4],
             k[5]);
    const char *why = NULL;
    keys = jwt_keyset_parse(jwks, strlen(jwks), &why);
    CHECK(keys != NULL);
    /* RSA-1024 and P-384 are not kept */
    CHECK_INT_EQ(jwt_keyset_count(keys), 4);
    CHECK(jwt_keyset_has_kid(keys, "r1") && jwt_keyset_has_kid(keys, "r2"));
    CHECK(jwt_keyset_has_kid(keys, "e1") && jwt_keyset_has_kid(keys, "d1"));
    CHECK(!jwt_keyset_has_kid(keys, "weak") && !jwt_keyset_has_kid(keys, "p384"));
    CHECK(!jwt_keyset_has_kid(keys, NULL) && !jwt_keyset_has_kid(NULL, "r1"));
    TEST_PASS("JWKS of RSA-2048, EC P-256, Ed25519 kept; RSA-1024 and P-384 skipped");
}

static void test_valid(void)
{
    struct {
        EVP_PKEY **pkey;
        const char *alg, *kid;
    } cases[] = {{&rsa2048, "RS256", "r1"}, {&rsa2048, "PS256", "r1"}, {&rsa2048b, "RS256", "r2"},
                 {&ec256, "ES256", "e1"},   {&ed25519, "EdDSA", "d1"}, {&rsa2048b, "PS256", NULL},
                 {&ec256, "ES256", NULL},   {&ed25519, "EdDSA", NULL}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *tok = token_for(*cases[i].pkey, cases[i].alg, cases[i].kid, payload_ok);
        jwt_t *t = NULL;
        const char *why = NULL;
        CHECK_INT_EQ(jwt_parse(tok, strlen(tok), &t, &why), JWT_OK);
        CHECK_STR_EQ(jwt_alg(t), cases[i].alg);
        CHECK(cases[i].kid ? strcmp(jwt_kid(t), cases[i].kid) == 0 : jwt_kid(t) == NULL);
        CHECK_STR_EQ(jwt_iss(t), "https://idp.example");
        CHECK_STR_EQ(cJSON_GetObjectItem(jwt_claims(t), "sub")->valuestring, "alice");
        CHECK_INT_EQ(jwt_verify(t, keys, &why), JWT_OK);
        CHECK_INT_EQ(jwt_check_time(t, NOW, 60, &why), JWT_OK);
        CHECK(jwt_looks_like(tok));
        jwt_free(t);
        free(tok);
    }
    TEST_PASS("RS256, PS256, ES256, EdDSA verify, with and without kid");
}

/* Flips one base64url character of tok at i (to another one of the same low bits). */
static void flip(char *tok, size_t i)
{
    tok[i] = tok[i] == 'A' ? 'Q' : 'A';
}

static void test_tampered(void)
{
    const char *algs[] = {"RS256", "PS256", "ES256", "EdDSA"};
    EVP_PKEY *pk[] = {rsa2048, rsa2048, ec256, ed25519};
    const char *kids[] = {"r1", "r1", "e1", "d1"};
    const char *payload2 = /* alice -> alicf: one byte */
        "{\"iss\":\"https://idp.example\",\"sub\":\"alicf\",\"aud\":\"api://mcpq\","
        "\"exp\":1700000600,\"iat\":1700000000,\"nbf\":1699999990}";
    for (int i = 0; i < 4; i++) {
        char *tok = token_for(pk[i], algs[i], kids[i], payload_ok);
        char *other = token_for(pk[i], algs[i], kids[i], payload2);
        char *sig = strrchr(tok, '.');
        /* a flipped signature byte */
        char *bad = strdup(tok);
        flip(bad, (size_t)(sig - tok) + 10);
        CHECK_INT_EQ(verify(bad), JWT_ESIG);
        /* another payload (one byte changed) under the first signature */
        char spliced[TOKEN_CAP];
        size_t hp = (size_t)(strrchr(other, '.') - other);
        memcpy(spliced, other, hp);
        strcpy(spliced + hp, sig);
        CHECK_INT_EQ(verify(spliced), JWT_ESIG);
        CHECK_INT_EQ(verify(other), JWT_OK);
        /* a signature one byte short or long */
        strcpy(bad, tok);
        bad[strlen(bad) - 4] = '\0';
        CHECK(verify(bad) != JWT_OK);
        free(bad);
        free(tok);
        free(other);
    }
    /* PS256 is PSS with a 32-byte salt: another salt length does not verify */
    char *tok = make_token("{\"alg\":\"PS256\",\"kid\":\"r1\"}", payload_ok, rsa2048, "PS256/0");
    CHECK_INT_EQ(verify(tok), JWT_ESIG);
    free(tok);
    TEST_PASS("flipped signature byte, changed payload, PSS salt length fail (JWT_ESIG)");
}

static void test_alg_refused(void)
{
    /* alg none with an empty signature, in any spelling */
    const char *nones[] = {"none", "None", "NONE", "nOnE"};
    for (int i = 0; i < 4; i++) {
        char header[64];
        snprintf(header, sizeof(header), "{\"alg\":\"%s\"}", nones[i]);
        char *tok = make_token(header, payload_ok, NULL, NULL);
        CHECK_INT_EQ(verify(tok), JWT_EALG);
        free(tok);
    }
    /* HS256 keyed with the RSA public key's PEM: the alg confusion attack */
    BIO *bio = BIO_new(BIO_s_mem());
    CHECK(PEM_write_bio_PUBKEY(bio, rsa2048) == 1);
    char *pem = NULL;
    long pem_len = BIO_get_mem_data(bio, &pem);
    const char *hdrs[] = {"{\"alg\":\"HS256\",\"kid\":\"r1\"}", "{\"alg\":\"HS256\"}",
                          "{\"alg\":\"HS384\",\"kid\":\"r1\"}", "{\"alg\":\"HS512\"}"};
    for (int i = 0; i < 4; i++) {
        char *tok = make_token(hdrs[i], payload_ok, NULL, NULL);
        unsigned char mac[64];
        unsigned int mac_len = 0;
        CHECK(HMAC(EVP_sha256(), pem, (int)pem_len, (const unsigned char *)tok, strlen(tok) - 1,
                   mac, &mac_len) != NULL);
        tok[strlen(tok) - 1] = '\0';
        strcat(tok, ".");
        b64url(mac, mac_len, tok + strlen(tok));
        CHECK_INT_EQ(verify(tok), JWT_EALG);
        free(tok);
    }
    BIO_free(bio);
    /* other algs, even of a key type we have */
    const char *others[] = {"RS384", "RS512", "PS384", "ES384", "ES512", "Ed25519", "rs256", ""};
    for (int i = 0; i < 8; i++) {
        char *tok = token_for(rsa2048, "RS256", "r1", payload_ok);
        char header[64], *p = strchr(tok, '.');
        snprintf(header, sizeof(header), "{\"alg\":\"%s\",\"kid\":\"r1\"}", others[i]);
        char *re = make_token(header, payload_ok, NULL, NULL);
        strcpy(strrchr(re, '.'), strrchr(p, '.'));
        CHECK(verify(re) == (others[i][0] ? JWT_EALG : JWT_EMALFORMED));
        free(re);
        free(tok);
    }
    TEST_PASS("alg none, HS256/384/512 keyed with the RSA public PEM, other algs: refused");
}

static void test_key_type(void)
{
    /* RS256 naming the EC key's kid (signed with the RSA key): the key does not fit */
    char *tok = token_for(rsa2048, "RS256", "e1", payload_ok);
    CHECK_INT_EQ(verify(tok), JWT_EALG);
    free(tok);
    /* ES256 naming an RSA kid, EdDSA naming the EC kid */
    tok = token_for(ec256, "ES256", "r1", payload_ok);
    CHECK_INT_EQ(verify(tok), JWT_EALG);
    free(tok);
    tok = token_for(ed25519, "EdDSA", "e1", payload_ok);
    CHECK_INT_EQ(verify(tok), JWT_EALG);
    free(tok);
    /* e1 says "alg":"ES256"; r1 none: RS and PS both fit it */
    const char *why = NULL;
    char jwk[3000], jwks[4000];
    jwk_of(rsa2048, "r1", "\"alg\":\"RS256\",", jwk, sizeof(jwk));
    snprintf(jwks, sizeof(jwks), "{\"keys\":[%s]}", jwk);
    jwt_keyset_t *rs_only = jwt_keyset_parse(jwks, strlen(jwks), &why);
    CHECK(rs_only != NULL);
    tok = token_for(rsa2048, "PS256", "r1", payload_ok);
    CHECK_INT_EQ(verify_with(tok, rs_only), JWT_EALG);
    free(tok);
    tok = token_for(rsa2048, "PS256", NULL, payload_ok);
    CHECK_INT_EQ(verify_with(tok, rs_only), JWT_EKID);
    free(tok);
    tok = token_for(rsa2048, "RS256", NULL, payload_ok);
    CHECK_INT_EQ(verify_with(tok, rs_only), JWT_OK);
    free(tok);
    /* an EdDSA token against a set with no Ed25519 key */
    tok = token_for(ed25519, "EdDSA", NULL, payload_ok);
    CHECK_INT_EQ(verify_with(tok, rs_only), JWT_EKID);
    CHECK_INT_EQ(verify_with(tok, NULL), JWT_EKID);
    free(tok);
    jwt_keyset_free(rs_only);
    TEST_PASS("a key of the wrong type or JWK alg for the token's alg is refused");
}

static void test_kid(void)
{
    char *tok = token_for(rsa2048, "RS256", "rotated-away", payload_ok);
    CHECK_INT_EQ(verify(tok), JWT_EKID);
    free(tok);
    /* keys not kept: their kid is unknown */
    tok = token_for(rsa1024, "RS256", "weak", payload_ok);
    CHECK_INT_EQ(verify(tok), JWT_EKID);
    free(tok);
    tok = token_for(ec384, "ES256", "p384", payload_ok);
    CHECK_INT_EQ(verify(tok), JWT_EKID);
    free(tok);
    /* without kid: every RSA key is tried, the 1024-bit one is not among them */
    tok = token_for(rsa1024, "RS256", NULL, payload_ok);
    CHECK_INT_EQ(verify(tok), JWT_ESIG);
    free(tok);
    tok = token_for(ec384, "ES256", NULL, payload_ok);
    CHECK_INT_EQ(verify(tok), JWT_ESIG); /* 96-byte signature */
    free(tok);
    /* a right kid with another key of the same type's signature */
    tok = token_for(rsa2048b, "RS256", "r1", payload_ok);
    CHECK_INT_EQ(verify(tok), JWT_ESIG);
    free(tok);
    TEST_PASS("unknown kid: JWT_EKID; no kid: keys of the alg's type tried");
}

/* A token of the given segment texts (already base64url). */
static int parse_code(const char *tok, size_t len)
{
    jwt_t *t = NULL;
    const char *why = NULL;
    int rc = jwt_parse(tok, len, &t, &why);
    CHECK(rc == JWT_OK ? t != NULL : (t == NULL && why && why[0]));
    jwt_free(t);
    return rc;
}

static int parse_json(const char *header, const char *payload)
{
    char *tok = make_token(header, payload, NULL, NULL);
    strcat(tok, "AAAA");
    int rc = parse_code(tok, strlen(tok));
    free(tok);
    return rc;
}

static void test_malformed(void)
{
    char *tok = token_for(rsa2048, "RS256", "r1", payload_ok);
    size_t n = strlen(tok);
    char buf[TOKEN_CAP];
    CHECK_INT_EQ(parse_code(tok, n), JWT_OK);
    /* two segments, four segments, empty header or payload */
    memcpy(buf, tok, n + 1);
    *strrchr(buf, '.') = '\0';
    CHECK_INT_EQ(parse_code(buf, strlen(buf)), JWT_EMALFORMED);
    CHECK(!jwt_looks_like(buf));
    snprintf(buf, sizeof(buf), "%s.AAAA", tok);
    CHECK_INT_EQ(parse_code(buf, strlen(buf)), JWT_EMALFORMED);
    CHECK(!jwt_looks_like(buf));
    snprintf(buf, sizeof(buf), ".%s", strchr(tok, '.'));
    CHECK_INT_EQ(parse_code(buf, strlen(buf)), JWT_EMALFORMED);
    CHECK_INT_EQ(parse_code("..", 2), JWT_EMALFORMED);
    CHECK_INT_EQ(parse_code("", 0), JWT_EMALFORMED);
    /* padding, characters outside base64url, a NUL inside (length covers it) */
    const char *bad_chars[] = {"=", "+", "/", " ", "\n", "%", "\x80"};
    for (size_t i = 0; i < sizeof(bad_chars) / sizeof(bad_chars[0]); i++) {
        memcpy(buf, tok, n + 1);
        buf[5] = bad_chars[i][0];
        CHECK_INT_EQ(parse_code(buf, n), JWT_EMALFORMED);
        snprintf(buf, sizeof(buf), "%s%s", tok, bad_chars[i]);
        CHECK_INT_EQ(parse_code(buf, n + 1), JWT_EMALFORMED);
    }
    memcpy(buf, tok, n + 1);
    buf[n - 3] = '\0';
    CHECK_INT_EQ(parse_code(buf, n), JWT_EMALFORMED);
    CHECK_INT_EQ(parse_code(tok, n + 1), JWT_EMALFORMED); /* the terminating NUL counted */
    /* a signature segment with non-zero unused bits ("AB" is one byte with 4 stray bits) */
    snprintf(buf, sizeof(buf), "%.*sAB", (int)(strrchr(tok, '.') - tok + 1), tok);
    CHECK_INT_EQ(parse_code(buf, strlen(buf)), JWT_EMALFORMED);
    /* too long: 16 KiB + 1 (a long payload claim), and exactly at the bound */
    char *big = malloc(TOKEN_CAP), *payload = malloc(TOKEN_CAP);
    int at_bound = 0;
    for (size_t len = 12000; len < 12400; len++) {
        snprintf(payload, TOKEN_CAP, "{\"x\":\"%0*d\"}", (int)len, 0);
        char *t2 = make_token("{\"alg\":\"RS256\"}", payload, NULL, NULL);
        size_t l2 = strlen(t2);
        if (l2 == JWT_TOKEN_MAX || l2 == JWT_TOKEN_MAX + 1)
            at_bound++;
        if (l2 == JWT_TOKEN_MAX || l2 == JWT_TOKEN_MAX + 1)
            CHECK_INT_EQ(parse_code(t2, l2), l2 == JWT_TOKEN_MAX ? JWT_OK : JWT_EMALFORMED);
        free(t2);
    }
    CHECK(at_bound >= 2);
    memset(big, 'A', TOKEN_CAP - 1);
    big[TOKEN_CAP - 1] = '\0';
    big[100] = big[200] = '.';
    CHECK_INT_EQ(parse_code(big, TOKEN_CAP - 1), JWT_EMALFORMED);
    CHECK(!jwt_looks_like(big));
    free(big);
    free(payload);
    free(tok);
    TEST_PASS("segments, padding, bad characters, NUL, stray bits, size bound");
}

static void test_malformed_json(void)
{
    const char *p = payload_ok;
    CHECK_INT_EQ(parse_json("{\"alg\":\"RS256\"}", p), JWT_OK);
    CHECK_INT_EQ(parse_json("not json", p), JWT_EMALFORMED);
    CHECK_INT_EQ(parse_json("[\"alg\",\"RS256\"]", p), JWT_EMALFORMED);
    CHECK_INT_EQ(parse_json("\"RS256\"", p), JWT_EMALFORMED);
    CHECK_INT_EQ(parse_json("{\"alg\":\"RS256\"", p), JWT_EMALFORMED);
    CHECK_INT_EQ(parse_json("{\"alg\":\"RS256\"}x", p), JWT_EMALFORMED);
    CHECK_INT_EQ(parse_json("{}", p), JWT_EMALFORMED);             /* no alg */
    CHECK_INT_EQ(parse_json("{\"alg\":256}", p), JWT_EMALFORMED);  /* alg not a string */
    CHECK_INT_EQ(parse_json("{\"alg\":\"\"}", p), JWT_EMALFORMED); /* alg empty */
    CHECK_INT_EQ(parse_json("{\"alg\":\"RS256\",\"kid\":7}", p), JWT_EMALFORMED);
    CHECK_INT_EQ(parse_json("{\"alg\":\"RS256\",\"crit\":[\"b64\"],\"b64\":false}", p),
                 JWT_EMALFORMED);
    CHECK_INT_EQ(parse_json("{\"alg\":\"RS256\",\"alg\":\"none\"}", p), JWT_EMALFORMED);
    /* the payload: an object, no duplicate claim */
    const char *h = "{\"alg\":\"RS256\"}";
    CHECK_INT_EQ(parse_json(h, "[1,2,3]"), JWT_EMALFORMED);
    CHECK_INT_EQ(parse_json(h, "\"alice\""), JWT_EMALFORMED);
    CHECK_INT_EQ(parse_json(h, "null"), JWT_EMALFORMED);
    CHECK_INT_EQ(parse_json(h, "not json"), JWT_EMALFORMED);
    CHECK_INT_EQ(parse_json(h, "{\"sub\":\"a\",\"sub\":\"b\"}"), JWT_EMALFORMED);
    CHECK_INT_EQ(parse_json(h, "{\"sub\":\"a\"} {}"), JWT_EMALFORMED);
    CHECK_INT_EQ(parse_json(h, "{}"), JWT_OK);
    /* a NUL inside the decoded JSON */
    char *tok = make_token(h, "{\"sub\":\"a\"}", NULL, NULL);
    unsigned char raw[] = {'{', '"', 's', '"', ':', '"', 'a', 0, 'b', '"', '}'};
    char enc[32];
    b64url(raw, sizeof(raw), enc);
    snprintf(strchr(tok, '.') + 1, 64, "%s.AAAA", enc);
    CHECK_INT_EQ(parse_code(tok, strlen(tok)), JWT_EMALFORMED);
    free(tok);
    CHECK(!jwt_looks_like(NULL) && !jwt_looks_like("") && !jwt_looks_like("opaque-token-123"));
    CHECK(!jwt_looks_like("a.b.c"));
    tok = make_token("{\"alg\":\"x\"}", "[]", NULL, NULL);
    CHECK(jwt_looks_like(tok)); /* the header alone decides */
    free(tok);
    tok = make_token("[]", "{}", NULL, NULL);
    CHECK(!jwt_looks_like(tok));
    free(tok);
    TEST_PASS("header and payload must be JSON objects; alg, kid, crit, duplicates");
}

/* Parses a token (unsigned) of payload and runs the time check. */
static int time_code(const char *payload, long long now, int skew)
{
    char *tok = make_token("{\"alg\":\"RS256\"}", payload, NULL, NULL);
    jwt_t *t = NULL;
    const char *why = NULL;
    CHECK_INT_EQ(jwt_parse(tok, strlen(tok), &t, &why), JWT_OK);
    int rc = jwt_check_time(t, now, skew, &why);
    CHECK(rc == JWT_OK || (why && why[0]));
    jwt_free(t);
    free(tok);
    return rc;
}

static void test_time(void)
{
    const char *p = "{\"exp\":1000}";
    CHECK_INT_EQ(time_code(p, 999, 0), JWT_OK);
    CHECK_INT_EQ(time_code(p, 1000, 0), JWT_EEXPIRED);
    CHECK_INT_EQ(time_code(p, 1059, 60), JWT_OK);
    CHECK_INT_EQ(time_code(p, 1060, 60), JWT_EEXPIRED);
    CHECK_INT_EQ(time_code(p, NOW, 60), JWT_EEXPIRED);
    CHECK_INT_EQ(time_code("{\"exp\":1000.5}", 1000, 0), JWT_OK);
    CHECK_INT_EQ(time_code("{\"sub\":\"a\"}", 0, 60), JWT_EEXPIRED); /* exp required */
    CHECK_INT_EQ(time_code("{\"exp\":\"2000\"}", 0, 60), JWT_EMALFORMED);
    CHECK_INT_EQ(time_code("{\"exp\":null}", 0, 60), JWT_EMALFORMED);
    CHECK_INT_EQ(time_code("{\"exp\":1e400}", 0, 60), JWT_EMALFORMED);
    /* nbf: valid from nbf - skew */
    p = "{\"exp\":5000,\"nbf\":2000}";
    CHECK_INT_EQ(time_code(p, 2000, 0), JWT_OK);
    CHECK_INT_EQ(time_code(p, 1999, 0), JWT_ENOTYET);
    CHECK_INT_EQ(time_code(p, 1940, 60), JWT_OK);
    CHECK_INT_EQ(time_code(p, 1939, 60), JWT_ENOTYET);
    CHECK_INT_EQ(time_code("{\"exp\":5000,\"nbf\":true}", 3000, 60), JWT_EMALFORMED);
    /* iat not in the future beyond the skew */
    p = "{\"exp\":5000,\"iat\":2000}";
    CHECK_INT_EQ(time_code(p, 1940, 60), JWT_OK);
    CHECK_INT_EQ(time_code(p, 1939, 60), JWT_ENOTYET);
    CHECK_INT_EQ(time_code(p, 4000, 60), JWT_OK);
    CHECK_INT_EQ(time_code("{\"exp\":5000,\"iat\":\"x\"}", 3000, 60), JWT_EMALFORMED);
    TEST_PASS("exp required, nbf, iat, the skew boundaries");
}

static int aud_code(const char *payload, const char *const *auds, size_t n)
{
    char *tok = make_token("{\"alg\":\"RS256\"}", payload, NULL, NULL);
    jwt_t *t = NULL;
    CHECK_INT_EQ(jwt_parse(tok, strlen(tok), &t, NULL), JWT_OK);
    int rc = jwt_check_aud(t, auds, n);
    jwt_free(t);
    free(tok);
    return rc;
}

static void test_aud(void)
{
    const char *mine[] = {"https://gw.example/mcp/x", "api://mcpq"};
    CHECK_INT_EQ(aud_code("{\"aud\":\"api://mcpq\"}", mine, 2), JWT_OK);
    CHECK_INT_EQ(aud_code("{\"aud\":\"https://gw.example/mcp/x\"}", mine, 2), JWT_OK);
    CHECK_INT_EQ(aud_code("{\"aud\":\"api://other\"}", mine, 2), JWT_EAUD);
    CHECK_INT_EQ(aud_code("{\"aud\":\"API://MCPQ\"}", mine, 2), JWT_EAUD);
    CHECK_INT_EQ(aud_code("{\"aud\":\"https://gw.example/mcp/x/\"}", mine, 2), JWT_EAUD);
    CHECK_INT_EQ(aud_code("{\"aud\":[\"a\",\"api://mcpq\"]}", mine, 2), JWT_OK);
    CHECK_INT_EQ(aud_code("{\"aud\":[\"a\",\"b\"]}", mine, 2), JWT_EAUD);
    CHECK_INT_EQ(aud_code("{\"aud\":[]}", mine, 2), JWT_EAUD);
    CHECK_INT_EQ(aud_code("{\"aud\":[7,null,[\"api://mcpq\"]]}", mine, 2), JWT_EAUD);
    CHECK_INT_EQ(aud_code("{\"aud\":7}", mine, 2), JWT_EAUD);
    CHECK_INT_EQ(aud_code("{\"sub\":\"a\"}", mine, 2), JWT_EAUD);
    CHECK_INT_EQ(aud_code("{\"sub\":\"a\"}", NULL, 0), JWT_OK);
    CHECK_INT_EQ(aud_code("{\"aud\":\"api://mcpq\"}", mine + 1, 1), JWT_OK);
    CHECK_INT_EQ(aud_code("{\"aud\":\"api://mcpq\"}", mine, 1), JWT_EAUD);
    TEST_PASS("aud string or array, exact match");
}

static int jwks_count(const char *json)
{
    const char *why = NULL;
    jwt_keyset_t *ks = jwt_keyset_parse(json, strlen(json), &why);
    int n = ks ? (int)jwt_keyset_count(ks) : -1;
    CHECK(ks || (why && why[0]));
    jwt_keyset_free(ks);
    return n;
}

static void test_jwks(void)
{
    char ed[200], ec[400], rsa[3000], buf[8192];
    jwk_of(ed25519, "d1", "", ed, sizeof(ed));
    jwk_of(ec256, "e1", "", ec, sizeof(ec));
    jwk_of(rsa2048, "r1", "", rsa, sizeof(rsa));
    snprintf(buf, sizeof(buf), "{\"keys\":[%s]}", ed);
    CHECK_INT_EQ(jwks_count(buf), 1);
    snprintf(buf, sizeof(buf), " {\"keys\":[%s,%s,%s]}\n", ed, ec, rsa);
    CHECK_INT_EQ(jwks_count(buf), 3);
    CHECK_INT_EQ(jwks_count("not json"), -1);
    CHECK_INT_EQ(jwks_count("{}"), -1);
    CHECK_INT_EQ(jwks_count("{\"keys\":{}}"), -1);
    CHECK_INT_EQ(jwks_count("[]"), -1);
    CHECK_INT_EQ(jwks_count("{\"keys\":[]}"), -1); /* no usable key */
    snprintf(buf, sizeof(buf), "{\"keys\":[%s]} x", ed);
    CHECK_INT_EQ(jwks_count(buf), -1);
    /* skipped: use enc, a refused or mismatched JWK alg, unknown kty/crv, bad material */
    char k[8][400];
    jwk_of(ed25519, "a", "\"use\":\"enc\",", k[0], sizeof(k[0]));
    jwk_of(ed25519, "b", "\"alg\":\"HS256\",", k[1], sizeof(k[1]));
    jwk_of(ed25519, "c", "\"alg\":\"ES256\",", k[2], sizeof(k[2]));
    jwk_of(ed25519, "d", "\"alg\":\"none\",", k[3], sizeof(k[3]));
    snprintf(k[4], sizeof(k[4]), "{\"kty\":\"oct\",\"kid\":\"h\",\"k\":\"c2VjcmV0\"}");
    snprintf(k[5], sizeof(k[5]), "{\"kty\":\"OKP\",\"crv\":\"Ed448\",\"x\":\"AAAA\"}");
    snprintf(k[6], sizeof(k[6]), "{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"AAAA\"}");
    /* a P-256 point off the curve: y changed */
    snprintf(k[7], sizeof(k[7]), "%s", ec);
    char *y = strstr(k[7], "\"y\":\"") + 5;
    y[3] = y[3] == 'A' ? 'B' : 'A';
    snprintf(buf, sizeof(buf), "{\"keys\":[%s,%s,%s,%s,%s,%s,%s,%s,7,\"x\",%s]}", k[0], k[1], k[2],
             k[3], k[4], k[5], k[6], k[7], ed);
    CHECK_INT_EQ(jwks_count(buf), 1);
    /* at most JWT_KEYS_MAX entries, at most JWT_JWKS_MAX bytes */
    char *many = malloc(JWT_JWKS_MAX + 16);
    size_t off = (size_t)snprintf(many, 64, "{\"keys\":[");
    for (int i = 0; i < JWT_KEYS_MAX; i++)
        off += (size_t)snprintf(many + off, 400, "%s%s", i ? "," : "", ed);
    strcpy(many + off, "]}");
    CHECK_INT_EQ(jwks_count(many), JWT_KEYS_MAX);
    snprintf(many + off, 400, ",%s]}", ed);
    CHECK_INT_EQ(jwks_count(many), -1);
    memset(many, ' ', JWT_JWKS_MAX + 1);
    memcpy(many, "{\"keys\":[", 9);
    memcpy(many + JWT_JWKS_MAX + 1 - 5 - strlen(ed), ed, strlen(ed));
    strcpy(many + JWT_JWKS_MAX + 1 - 5, "]}   ");
    many[JWT_JWKS_MAX + 1] = '\0';
    CHECK_INT_EQ(jwks_count(many), -1);
    many[JWT_JWKS_MAX] = '\0';
    CHECK_INT_EQ(jwks_count(many), 1);
    free(many);
    TEST_PASS("JWKS: enc, refused alg, unknown kty/crv, bad material skipped; bounds");
}

/* Random byte changes of valid tokens: parse and verify must never crash or succeed. */
static void test_mutations(void)
{
    char *toks[] = {token_for(rsa2048, "PS256", "r1", payload_ok),
                    token_for(ec256, "ES256", "e1", payload_ok),
                    token_for(ed25519, "EdDSA", NULL, payload_ok)};
    const char alphabet[] = "AQgw_-.=+/ \001z9";
    unsigned seed = 12345;
    int rejected = 0;
    for (int i = 0; i < 3000; i++) {
        char *tok = strdup(toks[i % 3]);
        size_t n = strlen(tok);
        for (int k = 0; k < 1 + i % 3; k++) {
            seed = seed * 1103515245u + 12345u;
            size_t at = (seed >> 8) % n;
            char c = alphabet[(seed >> 20) % (sizeof(alphabet) - 1)];
            if (tok[at] != c) {
                tok[at] = c;
                rejected++;
                CHECK(verify(tok) != JWT_OK);
                (void)jwt_looks_like(tok);
            }
        }
        free(tok);
    }
    CHECK(rejected > 2000);
    for (int i = 0; i < 3; i++)
        free(toks[i]);
    TEST_PASS("3000 mutated tokens refused without crash");
}

int main(void)
{
    setup_keys();
    test_valid();
    test_tampered();
    test_alg_refused();
    test_key_type();
    test_kid();
    test_malformed();
    test_malformed_json();
    test_time();
    test_aud();
    test_jwks();
    test_mutations();
    jwt_keyset_free(keys);
    EVP_PKEY_free(rsa2048);
    EVP_PKEY_free(rsa2048b);
    EVP_PKEY_free(rsa1024);
    EVP_PKEY_free(ec256);
    EVP_PKEY_free(ec384);
    EVP_PKEY_free(ed25519);
    return 0;
}
