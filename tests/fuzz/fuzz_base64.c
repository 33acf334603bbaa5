/*
 * fuzz_base64.c - libFuzzer driver for the tree's one base64 decoder (common/util.c
 * util_b64_decode) and the mirrored header values built on it (ingress/mcp/era.c ing_era_hdr_decode:
 * Mcp-Name and Mcp-Param-* in plain or `=?base64?...?=` form).
 *
 * Input layout: byte 0 picks the flags (bit 0 UTIL_B64_URL, bit 1 UTIL_B64_PAD, bit 2
 * UTIL_B64_NOPAD) and bits 3-7 the output size (0..31); the rest is the text to decode.
 *
 * Checked: nothing is written outside the output buffer (guard bytes on both sides); an
 * accepted string is the one canonical encoding of its bytes (re-encoding the output gives
 * the input back, with padding exactly as the flags allow); a refusal is MCPQ_EINVAL. For
 * ing_era_hdr_decode: guards hold, an accepted value has no NUL inside, a plain value comes back
 * unchanged, and an encoded one is the strict decoding of its middle part.
 */
#include "era.h"
#include "err.h"
#include "fuzz.h"
#include "util.h"

#include <openssl/evp.h>
#include <string.h>

#define GUARD 16
#define GB 0x5a

/* Standard base64 with padding of in[0..n) (EVP_EncodeBlock), or base64url unpadded. */
static void encode(const unsigned char *in, size_t n, int url, char *out)
{
    if (url) {
        util_b64url_encode(in, n, out);
        return;
    }
    EVP_EncodeBlock((unsigned char *)out, in, (int)n);
}

static void check_b64(const char *s, size_t n, int flags, size_t size)
{
    unsigned char buf[GUARD + 32 + GUARD];
    memset(buf, GB, sizeof(buf));
    size_t len = (size_t)-1;
    int rc = util_b64_decode(s, n, flags, buf + GUARD, size, &len);
    for (size_t i = 0; i < GUARD; i++)
        FUZZ_CHECK(buf[i] == GB && buf[GUARD + size + i] == GB);
    FUZZ_CHECK(rc == 0 || rc == MCPQ_EINVAL);
    if (rc != 0)
        return;
    FUZZ_CHECK(len <= size);
    char again[64 + 4];
    int url = flags & UTIL_B64_URL;
    encode(buf + GUARD, len, url, again);
    size_t pad = 0;
    while (pad < n && s[n - 1 - pad] == '=')
        pad++;
    if (url) { /* util_b64url_encode never pads */
        FUZZ_CHECK(strlen(again) == n - pad && memcmp(again, s, n - pad) == 0);
        for (size_t i = n - pad; i < n; i++)
            FUZZ_CHECK(s[i] == '=');
    } else if (pad || (flags & UTIL_B64_PAD)) {
        FUZZ_CHECK(strlen(again) == n && memcmp(again, s, n) == 0);
    } else { /* unpadded: the padded encoding less its '=' */
        size_t k = strlen(again);
        while (k && again[k - 1] == '=')
            k--;
        FUZZ_CHECK(k == n && memcmp(again, s, n) == 0);
    }
    FUZZ_CHECK(!(pad && (flags & UTIL_B64_NOPAD)));
}

static void check_hdr(const char *raw, size_t out_size)
{
    char buf[GUARD + 4200 + GUARD];
    memset(buf, GB, sizeof(buf));
    int rc = ing_era_hdr_decode(raw, buf + GUARD, out_size);
    for (size_t i = 0; i < GUARD; i++)
        FUZZ_CHECK((unsigned char)buf[i] == GB && (unsigned char)buf[GUARD + out_size + i] == GB);
    FUZZ_CHECK(rc == 0 || rc == MCPQ_EINVAL);
    if (rc != 0)
        return;
    const char *out = buf + GUARD;
    size_t k = strnlen(out, out_size);
    FUZZ_CHECK(k < out_size); /* NUL-terminated inside the buffer */
    size_t n = strlen(raw), head = strlen("=?base64?");
    if (n >= head + 2 && strncmp(raw, "=?base64?", head) == 0 && strcmp(raw + n - 2, "?=") == 0) {
        unsigned char dec[4200];
        size_t len = 0;
        FUZZ_CHECK(
            util_b64_decode(raw + head, n - head - 2, UTIL_B64_PAD, dec, sizeof(dec), &len) == 0);
        FUZZ_CHECK(len == k && memcmp(dec, out, k) == 0); /* and so no NUL inside */
    } else {
        FUZZ_CHECK(strcmp(out, raw) == 0);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 4200)
        return 0;
    int flags = data[0] & 7;
    if ((flags & UTIL_B64_PAD) && (flags & UTIL_B64_NOPAD))
        flags &= ~UTIL_B64_NOPAD; /* contradictory: the decoder need not define it */
    size_t out_size = (size_t)(data[0] >> 3) + 1;
    char *s = malloc(size);
    if (!s)
        return 0;
    memcpy(s, data + 1, size - 1);
    s[size - 1] = '\0';
    check_b64(s, size - 1, flags, out_size > 32 ? 32 : out_size);
    /* The header forms: as it came, and wrapped in the encoded form. */
    check_hdr(s, out_size * 128);
    char *wrapped = malloc(size + 16);
    if (wrapped) {
        snprintf(wrapped, size + 16, "=?base64?%s?=", s);
        check_hdr(wrapped, out_size * 128);
        free(wrapped);
    }
    free(s);
    return 0;
}
