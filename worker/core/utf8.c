#include "utf8.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Length of the well-formed sequence at s[0..len), or 0 when it is not one (or is NUL). */
static size_t seq_len(const unsigned char *s, size_t len)
{
    unsigned c = s[0];
    if (c == 0)
        return 0;
    if (c < 0x80)
        return 1;
    size_t n;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0; /* overlong */
        else if (c == 0xED)
            hi = 0x9F; /* surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90; /* overlong */
        else if (c == 0xF4)
            hi = 0x8F; /* above U+10FFFF */
    } else {
        return 0;
    }
    if (len < n)
        return 0;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return n;
}

int wrk_utf8_valid(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        if (p[i] >= 0x01 && p[i] < 0x80) {
            i++;
            continue;
        }
        size_t n = seq_len(p + i, len - i);
        if (n == 0)
            return 0;
        i += n;
    }
    return 1;
}

size_t wrk_utf8_cut(const char *s, size_t len, size_t max)
{
    if (len <= max)
        return len;
    size_t n = max;
    /* Back off over continuation bytes to the start of the sequence that crosses max. */
    size_t back = 0;
    while (n > 0 && back < 3 && ((unsigned char)s[n] & 0xC0) == 0x80) {
        n--;
        back++;
    }
    return ((unsigned char)s[n] & 0xC0) == 0x80 ? max : n;
}

char *wrk_utf8_sanitize(const char *s, size_t len)
{
    /* Each bad byte grows to 3 bytes at most. */
    if (len > (SIZE_MAX - 1) / 3)
        return NULL;
    char *out = malloc(len * 3 + 1);
    if (!out)
        return NULL;
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, o = 0;
    while (i < len) {
        size_t n = seq_len(p + i, len - i);
        if (n == 0) {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
        } else {
            memcpy(out + o, p + i, n);
            o += n;
            i += n;
        }
    }
    out[o] = '\0';
    return out;
}
