/* Tests common/prom.c: the one bucket table (µs observations placed at the 100 µs and 60 s
 * boundaries), sums in seconds with µs precision, label escaping, and the process_* values
 * read from /proc/self. */
#include "check.h"
#include "prom.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *render(const char *name, const char *labels, const prom_hist_t *h)
{
    util_buf_t b;
    util_buf_init(&b, (size_t)1 << 20);
    CHECK_INT_EQ(prom_histogram(&b, name, labels, h), 0);
    return b.data ? b.data : strdup("");
}

static void test_buckets(void)
{
    prom_hist_t *h = calloc(1, sizeof(*h));
    char *text = render("x_seconds", "", h);
    /* No observation: written all zero, so a rate sees the first one. */
    CHECK_CONTAINS(text, "x_seconds_bucket{le=\"0.0001\"} 0\n");
    CHECK_CONTAINS(text, "x_seconds_bucket{le=\"+Inf\"} 0\n");
    CHECK_CONTAINS(text, "x_seconds_sum 0.000000\nx_seconds_count 0\n");
    CHECK_INT_EQ(prom_hist_count(h), 0);
    free(text);
    prom_observe_us(h, 100);      /* exactly 100 µs: le="0.0001" */
    prom_observe_us(h, 101);      /* just above: le="0.00025" */
    prom_observe_us(h, -5);       /* a negative duration counts as 0 */
    prom_observe_us(h, 60000000); /* exactly 60 s: le="60" */
    prom_observe_us(h, 60000001); /* above the largest bound: +Inf only */
    text = render("x_seconds", "", h);
    CHECK_CONTAINS(text, "x_seconds_bucket{le=\"0.0001\"} 2\n");
    CHECK_CONTAINS(text, "x_seconds_bucket{le=\"0.00025\"} 3\n");
    CHECK_CONTAINS(text, "x_seconds_bucket{le=\"30\"} 3\n");
    CHECK_CONTAINS(text, "x_seconds_bucket{le=\"60\"} 4\n");
    CHECK_CONTAINS(text, "x_seconds_bucket{le=\"+Inf\"} 5\n");
    CHECK_CONTAINS(text, "x_seconds_sum 120.000202\n"); /* 100+101+0+60e6+60e6+1 µs */
    CHECK_CONTAINS(text, "x_seconds_count 5\n");
    CHECK_INT_EQ(prom_hist_count(h), 5);
    /* Every bound of the design, in order, le="+Inf" last. */
    const char *le[] = {PROM_BUCKETS_LE, "+Inf"};
    const char *at = text;
    for (size_t i = 0; i < sizeof(le) / sizeof(le[0]); i++) {
        char want[64];
        snprintf(want, sizeof(want), "le=\"%s\"}", le[i]);
        const char *p = strstr(at, want);
        CHECK(p != NULL);
        at = p;
    }
    CHECK_INT_EQ(PROM_NBUCKET, 18);
    free(text);
    free(h);
    TEST_PASS("buckets 100 us to 60 s: boundaries inclusive, negative as 0, above 60 s in +Inf");
}

static void test_sum_and_labels(void)
{
    prom_hist_t *h = calloc(1, sizeof(*h));
    prom_observe_us(h, 1);       /* 1 µs */
    prom_observe_us(h, 1234567); /* 1.234567 s */
    char *text = render("y_seconds", "method=\"ping\",tenant=\"a\"", h);
    CHECK_CONTAINS(text, "y_seconds_bucket{method=\"ping\",tenant=\"a\",le=\"0.0001\"} 1\n");
    CHECK_CONTAINS(text, "y_seconds_sum{method=\"ping\",tenant=\"a\"} 1.234568\n");
    CHECK_CONTAINS(text, "y_seconds_count{method=\"ping\",tenant=\"a\"} 2\n");
    free(text);
    free(h);

    char out[64];
    prom_label_escape("a\\b\"c\nd", out, sizeof(out));
    CHECK_STR_EQ(out, "a\\\\b\\\"c\\nd");
    prom_label_escape("\"\"\"\"", out, 6); /* cut between escapes, never inside one */
    CHECK_STR_EQ(out, "\\\"\\\"");
    prom_label_escape(NULL, out, sizeof(out));
    CHECK_STR_EQ(out, "");

    /* A family: HELP and TYPE once, one series per value; skip_empty leaves out the empty one. */
    prom_hist_t *hs = calloc(2, sizeof(*hs));
    prom_observe_us(&hs[1], 300);
    const char *values[] = {"empty", "used"};
    util_buf_t b;
    util_buf_init(&b, (size_t)1 << 20);
    CHECK_INT_EQ(prom_histograms(&b, "z_seconds", "Help.", "kind", values, hs, 2, 1), 0);
    CHECK_CONTAINS(b.data, "# HELP z_seconds Help.\n# TYPE z_seconds histogram\n");
    CHECK_CONTAINS(b.data, "z_seconds_bucket{kind=\"used\",le=\"0.0005\"} 1\n");
    CHECK(strstr(b.data, "kind=\"empty\"") == NULL);
    free(b.data);
    util_buf_init(&b, (size_t)1 << 20);
    CHECK_INT_EQ(prom_histograms(&b, "z_seconds", "Help.", "kind", values, hs, 2, 0), 0);
    CHECK_CONTAINS(b.data, "z_seconds_count{kind=\"empty\"} 0\n");
    free(b.data);
    free(hs);
    prom_label_escape("", out, sizeof(out));
    CHECK_STR_EQ(out, "");
    TEST_PASS("sum in seconds with microsecond precision; label values escaped; families");
}

static void test_process(void)
{
    prom_proc_t a, b;
    CHECK_INT_EQ(prom_proc_read(&a), 0);
    CHECK(a.rss > 0);
    CHECK(a.vsize >= a.rss);
    CHECK(a.open_fds >= 3); /* stdin, stdout, stderr */
    CHECK(a.max_fds == -1 || a.max_fds >= a.open_fds);
    int fd = open("/proc/self/stat", O_RDONLY);
    CHECK(fd >= 0);
    CHECK_INT_EQ(prom_proc_read(&b), 0);
    CHECK_INT_EQ(b.open_fds, a.open_fds + 1);
    close(fd);
    /* Busy until the CPU time read from /proc moved (bounded: 10 s of work at most). */
    volatile unsigned long long x = 0;
    for (int round = 0; round < 1000 && b.cpu_seconds <= a.cpu_seconds; round++) {
        for (int i = 0; i < 10000000; i++)
            x += (unsigned long long)i;
        CHECK_INT_EQ(prom_proc_read(&b), 0);
    }
    CHECK(b.cpu_seconds > a.cpu_seconds);

    util_buf_t out;
    util_buf_init(&out, (size_t)1 << 20);
    CHECK_INT_EQ(prom_process(&out, "test", 1700000000123, "0.9.75"), 0);
    CHECK_CONTAINS(out.data, "mcpq_build_info{version=\"");
    CHECK_CONTAINS(out.data, "\",binary=\"test\",librdkafka=\"");
    CHECK_CONTAINS(out.data, "\",libmicrohttpd=\"0.9.75\",hiredis=\"");
    CHECK_CONTAINS(out.data, "\",openssl=\"");
    CHECK_CONTAINS(out.data, "process_start_time_seconds 1700000000.123\n");
    CHECK_CONTAINS(out.data, "# TYPE process_cpu_seconds_total counter\n");
    CHECK_CONTAINS(out.data, "process_resident_memory_bytes ");
    CHECK_CONTAINS(out.data, "process_virtual_memory_bytes ");
    CHECK_CONTAINS(out.data, "process_open_fds ");
    free(out.data);
    TEST_PASS("process_*: rss > 0, cpu grows after a busy loop, open fds grows after an open");
}

int main(void)
{
    test_buckets();
    test_sum_and_labels();
    test_process();
    return 0;
}
