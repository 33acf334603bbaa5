#include "trace.h"

#include "err.h"
#include "util.h"

#include <stdio.h>
#include <string.h>

static int lowhex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* n lowercase hex digits at s, not all zero: 1 (nonzero set) or 0. */
static int hex_field(const char *s, size_t n, int *nonzero)
{
    *nonzero = 0;
    for (size_t i = 0; i < n; i++) {
        if (!lowhex(s[i]))
            return 0;
        if (s[i] != '0')
            *nonzero = 1;
    }
    return 1;
}

static int hexval(char c)
{
    return c <= '9' ? c - '0' : c - 'a' + 10;
}

int trace_parse(const char *tp, trace_ctx_t *out)
{
    int nz;
    memset(out, 0, sizeof(*out));
    if (!tp)
        return MCPQ_EINVAL;
    size_t len = strnlen(tp, TRACE_PARENT_LEN + 1);
    if (len < TRACE_PARENT_LEN || !hex_field(tp, 2, &nz) || strncmp(tp, "ff", 2) == 0)
        return MCPQ_EINVAL;
    int v00 = strncmp(tp, "00", 2) == 0;
    /* Version 00 is exactly 55 characters; a later one may carry more after a "-". */
    if (len > TRACE_PARENT_LEN && (v00 || tp[TRACE_PARENT_LEN] != '-'))
        return MCPQ_EINVAL;
    if (tp[2] != '-' || tp[35] != '-' || tp[52] != '-')
        return MCPQ_EINVAL;
    if (!hex_field(tp + 3, TRACE_ID_HEX, &nz) || !nz)
        return MCPQ_EINVAL;
    if (!hex_field(tp + 36, TRACE_SPAN_HEX, &nz) || !nz)
        return MCPQ_EINVAL;
    if (!hex_field(tp + 53, 2, &nz))
        return MCPQ_EINVAL;
    memcpy(out->trace_id, tp + 3, TRACE_ID_HEX);
    memcpy(out->span_id, tp + 36, TRACE_SPAN_HEX);
    out->flags = (unsigned char)(hexval(tp[53]) << 4 | hexval(tp[54]));
    return 0;
}

/* A random span id that is not all zeros. */
static int span_new(char out[TRACE_SPAN_HEX + 1])
{
    for (;;) {
        if (util_random_hex(out, TRACE_SPAN_HEX / 2) < 0)
            return MCPQ_EIO;
        if (strspn(out, "0") != TRACE_SPAN_HEX)
            return 0;
    }
}

int trace_new(trace_ctx_t *out)
{
    memset(out, 0, sizeof(*out));
    do {
        if (util_random_hex(out->trace_id, TRACE_ID_HEX / 2) < 0)
            return MCPQ_EIO;
    } while (strspn(out->trace_id, "0") == TRACE_ID_HEX);
    out->flags = 0x01;
    return span_new(out->span_id);
}

int trace_child(const trace_ctx_t *parent, trace_ctx_t *out)
{
    if (parent != out)
        *out = *parent;
    return span_new(out->span_id);
}

int trace_start(const char *in, trace_ctx_t *out)
{
    trace_ctx_t parent;
    if (in && trace_parse(in, &parent) == 0)
        return trace_child(&parent, out);
    return trace_new(out);
}

void trace_format(const trace_ctx_t *t, char out[TRACE_PARENT_LEN + 1])
{
    snprintf(out, TRACE_PARENT_LEN + 1, "00-%.32s-%.16s-%02x", t->trace_id, t->span_id,
             (unsigned)t->flags);
}

int trace_state_ok(const char *ts)
{
    if (!ts)
        return 0;
    size_t n = strnlen(ts, TRACE_STATE_MAX + 1);
    if (n == 0 || n > TRACE_STATE_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)ts[i] < 0x20 || (unsigned char)ts[i] > 0x7e)
            return 0;
    return 1;
}
