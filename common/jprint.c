#include "jprint.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *data;
    size_t len, cap;
    int failed; /* out of memory or past JPRINT_MAX_BYTES: everything later is dropped */
} out_t;

static void jprint_put(out_t *o, const char *s, size_t n)
{
    if (o->failed)
        return;
    if (o->len + n + 1 > o->cap) { /* + 1: the NUL */
        size_t cap = o->cap ? o->cap : 256;
        while (cap < o->len + n + 1)
            cap *= 2;
        char *d = cap <= JPRINT_MAX_BYTES ? cJSON_malloc(cap) : NULL;
        if (!d) {
            o->failed = 1;
            return;
        }
        if (o->len)
            memcpy(d, o->data, o->len);
        cJSON_free(o->data);
        o->data = d;
        o->cap = cap;
    }
    memcpy(o->data + o->len, s, n);
    o->len += n;
}

/* Nonzero for the bytes that end a run of plain text: those JSON escapes (below 0x20, '"',
 * '\\') and the NUL that ends the string. */
static const unsigned char special[256] = {[0] = 2, [1 ... 0x1f] = 1, ['"'] = 1, ['\\'] = 1};

void jprint_string(const char *s, jprint_put_fn put, void *ctx)
{
    static const char hex[] = "0123456789abcdef";
    put(ctx, "\"", 1);
    const char *run = s ? s : "";
    for (s = run;; s++) {
        while (!special[(unsigned char)*s])
            s++;
        unsigned char c = (unsigned char)*s;
        if (!c)
            break;
        put(ctx, run, (size_t)(s - run));
        run = s + 1;
        char esc[6] = {'\\', (char)c, '0', '0', 0, 0};
        size_t n = 2;
        switch (c) {
        case '\b':
            esc[1] = 'b';
            break;
        case '\f':
            esc[1] = 'f';
            break;
        case '\n':
            esc[1] = 'n';
            break;
        case '\r':
            esc[1] = 'r';
            break;
        case '\t':
            esc[1] = 't';
            break;
        case '"':
        case '\\':
            break;
        default:
            esc[1] = 'u';
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            n = 6;
        }
        put(ctx, esc, n);
    }
    put(ctx, run, (size_t)(s - run));
    put(ctx, "\"", 1);
}

static void put_cb(void *ctx, const char *s, size_t n)
{
    jprint_put(ctx, s, n);
}

static void jprint_put_string(out_t *o, const char *s)
{
    jprint_string(s, put_cb, o);
}

/* cJSON's test of a number read back: equal within the larger one's DBL_EPSILON. */
static int same_double(double a, double b)
{
    double max = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
    return fabs(a - b) <= max * DBL_EPSILON;
}

static void put_number(out_t *o, double d)
{
    char buf[32];
    int n;
    if (isnan(d) || isinf(d)) {
        jprint_put(o, "null", 4);
        return;
    }
    if (d == floor(d) && fabs(d) < 1e15) { /* "%1.15g" of it is its digits */
        long long v = (long long)d;
        char *p = buf + sizeof(buf);
        unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
        do {
            *--p = (char)('0' + u % 10);
            u /= 10;
        } while (u);
        if (v < 0 || (v == 0 && signbit(d)))
            *--p = '-';
        jprint_put(o, p, (size_t)(buf + sizeof(buf) - p));
        return;
    }
    n = snprintf(buf, sizeof(buf), "%1.15g", d);
    if (!same_double(strtod(buf, NULL), d))
        n = snprintf(buf, sizeof(buf), "%1.17g", d);
    jprint_put(o, buf, n > 0 ? (size_t)n : 0);
}

static void put_item(out_t *o, const cJSON *item, int depth);

static void put_children(out_t *o, const cJSON *item, int object, int depth)
{
    jprint_put(o, object ? "{" : "[", 1);
    for (const cJSON *c = item->child; c && !o->failed; c = c->next) {
        if (c != item->child)
            jprint_put(o, ",", 1);
        if (object) {
            jprint_put_string(o, c->string);
            jprint_put(o, ":", 1);
        }
        put_item(o, c, depth + 1);
    }
    jprint_put(o, object ? "}" : "]", 1);
}

static void put_item(out_t *o, const cJSON *item, int depth)
{
    if (depth > CJSON_NESTING_LIMIT) {
        o->failed = 1;
        return;
    }
    switch (item->type & 0xFF) {
    case cJSON_NULL:
        jprint_put(o, "null", 4);
        break;
    case cJSON_False:
        jprint_put(o, "false", 5);
        break;
    case cJSON_True:
        jprint_put(o, "true", 4);
        break;
    case cJSON_Number:
        put_number(o, item->valuedouble);
        break;
    case cJSON_String:
        jprint_put_string(o, item->valuestring);
        break;
    case cJSON_Raw:
        if (item->valuestring)
            jprint_put(o, item->valuestring, strlen(item->valuestring));
        else
            o->failed = 1;
        break;
    case cJSON_Array:
        put_children(o, item, 0, depth);
        break;
    case cJSON_Object:
        put_children(o, item, 1, depth);
        break;
    default:
        o->failed = 1;
    }
}

/* The text of o, NUL-terminated, or NULL (freed) when o failed. */
static char *buf_end(out_t *o)
{
    jprint_put(o, "", 0); /* room for the NUL */
    char *text = o->failed ? NULL : o->data;
    if (text)
        text[o->len] = '\0';
    else
        cJSON_free(o->data);
    *o = (out_t){0};
    return text;
}

char *jprint_unformatted(const cJSON *item)
{
    if (!item)
        return NULL;
    out_t o = {0};
    put_item(&o, item, 0);
    return buf_end(&o);
}
