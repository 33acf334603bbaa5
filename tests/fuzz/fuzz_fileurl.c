/*
 * fuzz_fileurl.c - libFuzzer driver for the signatures of file URLs (ingress/core/files.c
 * ing_files_verify, ing_files_sign, ing_files_id_ok: the exp and sig query parameters of
 * /v1/files/<id>/content, which need no other credential).
 *
 * Input layout: fields separated by NUL or newline bytes: method, file id, exp, sig, and the
 * rest is the key (any bytes). A field the input ends before is NULL, as a missing query
 * parameter.
 *
 * Checked: a URL verifies (0 or MCPQ_ETIMEDOUT) only when sig is exactly the lowercase hex
 * HMAC-SHA256 of METHOD "\n" id "\n" exp-as-a-number under the key (computed here with
 * OpenSSL, independently of files.c), the id is well-formed and exp is a decimal number; it
 * is expired exactly when now is past exp; a signature for the other method never verifies;
 * every refusal is MCPQ_EINVAL.
 */
#include "err.h"
#include "files.h"
#include "fuzz.h"
#include "util.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <string.h>

enum { F_METHOD, F_ID, F_EXP, F_SIG, F_COUNT };

static void hmac_hex(const void *key, size_t keylen, const char *msg, char out[65])
{
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    HMAC(EVP_sha256(), key, (int)keylen, (const unsigned char *)msg, strlen(msg), mac, &len);
    util_hex(mac, len, out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy = NULL, *f[F_COUNT];
    size_t keylen = 0;
    const char *key = fuzz_fields(data, size, &copy, f, F_COUNT, &keylen);
    if (!key)
        return 0;
    const char *method = f[F_METHOD] && strcmp(f[F_METHOD], "PUT") == 0 ? "PUT" : "GET";
    const char *id = f[F_ID] ? f[F_ID] : "";
    long long now = 1700000000;

    int rc = ing_files_verify(key, keylen, method, id, f[F_EXP], f[F_SIG], now);
    FUZZ_CHECK(rc == 0 || rc == MCPQ_EINVAL || rc == MCPQ_ETIMEDOUT);
    long long e = -1;
    int exp_ok = f[F_EXP] && util_parse_ll(f[F_EXP], 0, 1LL << 40, &e) == 0;
    int want = 0;
    if (exp_ok && ing_files_id_ok(id) && f[F_SIG]) {
        char msg[512], mac[65];
        snprintf(msg, sizeof(msg), "%s\n%s\n%lld", method, id, e);
        hmac_hex(key, keylen, msg, mac);
        want = strcmp(mac, f[F_SIG]) == 0;
    }
    FUZZ_CHECK((rc != MCPQ_EINVAL) == want);
    if (want)
        FUZZ_CHECK(rc == (now > e ? MCPQ_ETIMEDOUT : 0));

    /* What files.c signs verifies, for that method only. */
    if (ing_files_id_ok(id)) {
        char sig[65], exp[24];
        long long at = (long long)(size * 7919);
        snprintf(exp, sizeof(exp), "%lld", at);
        ing_files_sign(key, keylen, method, id, at, sig);
        FUZZ_CHECK(ing_files_verify(key, keylen, method, id, exp, sig, at) == 0);
        const char *other = strcmp(method, "PUT") == 0 ? "GET" : "PUT";
        FUZZ_CHECK(ing_files_verify(key, keylen, other, id, exp, sig, at) == MCPQ_EINVAL);
    }
    free(copy);
    return 0;
}
