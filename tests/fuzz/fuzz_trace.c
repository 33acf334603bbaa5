/*
 * fuzz_trace.c - libFuzzer driver for W3C trace context from clients (common/trace.c:
 * trace_parse of a traceparent header or params._meta.traceparent, trace_state_ok of a
 * tracestate).
 *
 * Input: the whole input is the header value (a NUL inside ends it, as for a C string).
 *
 * Checked: a refusal clears the context; an accepted traceparent is 55 characters of a
 * version other than ff (longer only for a later version, followed by '-'), its ids are
 * lowercase hex and not all zero, and trace_format() of what was parsed gives back the input's
 * ids and flags under version 00; a child keeps the trace-id and flags with a new non-zero
 * span; trace_state_ok accepts exactly 1..TRACE_STATE_MAX printable ASCII bytes.
 */
#include "err.h"
#include "fuzz.h"
#include "trace.h"

#include <string.h>

static int all_lowhex_nonzero(const char *s, size_t n)
{
    int nz = 0;
    for (size_t i = 0; i < n; i++) {
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
        nz |= s[i] != '0';
    }
    return nz;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    size_t n = strlen(s);

    trace_ctx_t t;
    memset(&t, 0x77, sizeof(t));
    int rc = trace_parse(s, &t);
    FUZZ_CHECK(rc == 0 || rc == MCPQ_EINVAL);
    if (rc != 0) {
        static const trace_ctx_t zero;
        FUZZ_CHECK(memcmp(&t, &zero, sizeof(t)) == 0);
    } else {
        FUZZ_CHECK(n >= TRACE_PARENT_LEN && strncmp(s, "ff", 2) != 0);
        FUZZ_CHECK(n == TRACE_PARENT_LEN ||
                   (strncmp(s, "00", 2) != 0 && s[TRACE_PARENT_LEN] == '-'));
        FUZZ_CHECK(all_lowhex_nonzero(t.trace_id, TRACE_ID_HEX) &&
                   strlen(t.trace_id) == TRACE_ID_HEX);
        FUZZ_CHECK(all_lowhex_nonzero(t.span_id, TRACE_SPAN_HEX) &&
                   strlen(t.span_id) == TRACE_SPAN_HEX);
        char out[TRACE_PARENT_LEN + 1];
        trace_format(&t, out);
        FUZZ_CHECK(strlen(out) == TRACE_PARENT_LEN && strncmp(out, "00-", 3) == 0);
        FUZZ_CHECK(memcmp(out + 3, s + 3, TRACE_PARENT_LEN - 3) == 0);
        trace_ctx_t c;
        if (trace_child(&t, &c) == 0) {
            FUZZ_CHECK(strcmp(c.trace_id, t.trace_id) == 0 && c.flags == t.flags);
            FUZZ_CHECK(all_lowhex_nonzero(c.span_id, TRACE_SPAN_HEX));
        }
    }

    int printable = n >= 1 && n <= TRACE_STATE_MAX;
    for (size_t i = 0; i < n && printable; i++)
        printable = s[i] >= 0x20 && s[i] <= 0x7e;
    FUZZ_CHECK(trace_state_ok(s) == printable);
    free(s);
    return 0;
}
