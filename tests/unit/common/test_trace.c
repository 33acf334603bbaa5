/* Tests common/trace.c: W3C traceparent parsing, new traces, children, tracestate. */
#include "check.h"
#include "err.h"
#include "trace.h"

#define T "4bf92f3577b34da6a3ce929d0e0e4736"
#define P "00f067aa0ba902b7"

static void invalid(const char *tp)
{
    trace_ctx_t t;
    CHECK_INT_EQ(trace_parse(tp, &t), MCPQ_EINVAL);
    CHECK_STR_EQ(t.trace_id, "");
}

int main(void)
{
    trace_ctx_t t, c;
    char out[TRACE_PARENT_LEN + 1];

    CHECK_INT_EQ(trace_parse("00-" T "-" P "-01", &t), 0);
    CHECK_STR_EQ(t.trace_id, T);
    CHECK_STR_EQ(t.span_id, P);
    CHECK_INT_EQ(t.flags, 1);
    trace_format(&t, out);
    CHECK_STR_EQ(out, "00-" T "-" P "-01");
    CHECK_INT_EQ(trace_parse("00-" T "-" P "-00", &t), 0);
    CHECK_INT_EQ(t.flags, 0);
    TEST_PASS("version 00 parses and renders back");

    invalid(NULL);
    invalid("");
    invalid("bogus");
    invalid("00-" T "-" P "-0");   /* short */
    invalid("00-" T "-" P "-01-"); /* version 00 is exactly 55 characters */
    invalid("00-" T "-" P "-01x");
    invalid("00-4BF92F3577B34DA6A3CE929D0E0E4736-" P "-01"); /* uppercase */
    invalid("00-" T "-00F067AA0BA902B7-01");
    invalid("00-00000000000000000000000000000000-" P "-01"); /* all-zero trace-id */
    invalid("00-" T "-0000000000000000-01");                 /* all-zero parent-id */
    invalid("ff-" T "-" P "-01");                            /* version ff */
    invalid("0g-" T "-" P "-01");
    invalid("00_" T "-" P "-01");
    invalid("00-" T "_" P "-01");
    invalid("00-" T "-" P "_01");
    invalid("00-" T "-" P "-zz");
    TEST_PASS("invalid traceparents are refused");

    /* A later version: the first 55 characters by the version 00 rules, then "-" or end. */
    CHECK_INT_EQ(trace_parse("cc-" T "-" P "-01", &t), 0);
    CHECK_INT_EQ(trace_parse("cc-" T "-" P "-01-what-comes-next", &t), 0);
    CHECK_STR_EQ(t.trace_id, T);
    trace_format(&t, out);
    CHECK_STR_EQ(out, "00-" T "-" P "-01");
    invalid("cc-" T "-" P "-01what");
    TEST_PASS("later versions are read by the version 00 rules");

    CHECK_INT_EQ(trace_new(&t), 0);
    trace_format(&t, out);
    CHECK_INT_EQ(strlen(out), TRACE_PARENT_LEN);
    CHECK_INT_EQ(trace_parse(out, &c), 0);
    CHECK_STR_EQ(c.trace_id, t.trace_id);
    CHECK_INT_EQ(c.flags, 1);
    trace_ctx_t t2;
    CHECK_INT_EQ(trace_new(&t2), 0);
    CHECK(strcmp(t.trace_id, t2.trace_id) != 0);
    TEST_PASS("a new trace is a valid, random traceparent");

    CHECK_INT_EQ(trace_parse("00-" T "-" P "-03", &t), 0);
    CHECK_INT_EQ(trace_child(&t, &c), 0);
    CHECK_STR_EQ(c.trace_id, T);
    CHECK(strcmp(c.span_id, P) != 0);
    CHECK_INT_EQ(c.flags, 3);
    CHECK_INT_EQ(trace_start("00-" T "-" P "-01", &c), 0);
    CHECK_STR_EQ(c.trace_id, T);
    CHECK(strcmp(c.span_id, P) != 0);
    CHECK_INT_EQ(trace_start("00-" T "-" P "-0x", &c), 0); /* ignored: a new trace */
    CHECK(strcmp(c.trace_id, T) != 0);
    CHECK_INT_EQ(trace_start(NULL, &c), 0);
    trace_format(&c, out);
    CHECK_INT_EQ(trace_parse(out, &t), 0);
    TEST_PASS("a child keeps the trace-id and flags with a new span id");

    CHECK(trace_state_ok("congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"));
    CHECK(!trace_state_ok(""));
    CHECK(!trace_state_ok(NULL));
    CHECK(!trace_state_ok("a=b\r\nX-Evil: 1"));
    CHECK(!trace_state_ok("a=\x7f"));
    char big[TRACE_STATE_MAX + 2];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    CHECK(!trace_state_ok(big));
    big[TRACE_STATE_MAX] = '\0';
    CHECK(trace_state_ok(big));
    TEST_PASS("tracestate is relayed only when short and printable");
    return 0;
}
