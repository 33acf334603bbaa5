/* Tests worker/executors/stderrline.c: the exec executor's stderr line splitter and parser. */
#include "check.h"
#include "stderrline.h"

#include <stdlib.h>
#include <string.h>

static wrk_stderrline_t parse(const char *s)
{
    wrk_stderrline_t l;
    wrk_stderrline_parse(s, strlen(s), &l);
    return l;
}

static char *json_of(const char *s)
{
    wrk_stderrline_t l = parse(s);
    cJSON *j = wrk_stderrline_to_json(&l);
    if (!j)
        return NULL;
    char *out = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return out;
}

static void check_json(const char *line, const char *want)
{
    char *got = json_of(line);
    CHECK_STR_EQ(got, want);
    free(got);
}

static void test_progress(void)
{
    check_json("progress 1 3 step 1", "{\"progress\":1,\"total\":3,\"message\":\"step 1\"}");
    check_json("progress 0 100", "{\"progress\":0,\"total\":100}");
    check_json("progress 50 100", "{\"progress\":50,\"total\":100}");
    check_json("progress 0.5 2.25 half   way  ",
               "{\"progress\":0.5,\"total\":2.25,\"message\":\"half   way\"}");
    check_json("progress 7", "{\"progress\":7}");
    check_json("progress 5 files copied", "{\"progress\":5,\"message\":\"files copied\"}");
    check_json("progress\t2\t4\tok", "{\"progress\":2,\"total\":4,\"message\":\"ok\"}");
    check_json("progress 1 3 caf\xc3\xa9",
               "{\"progress\":1,\"total\":3,\"message\":\"caf\xc3\xa9\"}");
    /* Bytes that are not UTF-8 are repaired, so the entry is valid JSON. */
    check_json("progress 1 3 a\xff", "{\"progress\":1,\"total\":3,\"message\":\"a\xef\xbf\xbd\"}");
    TEST_PASS("progress lines");
}

static void test_log(void)
{
    check_json("log info Tool execution started",
               "{\"level\":\"info\",\"data\":\"Tool execution started\"}");
    check_json("log warn disk \"almost\" full",
               "{\"level\":\"warning\",\"data\":\"disk \\\"almost\\\" full\"}");
    check_json("log error", "{\"level\":\"error\",\"data\":\"\"}");
    check_json("log emergency x", "{\"level\":\"emergency\",\"data\":\"x\"}");
    check_json("  log info  padded  ", "{\"level\":\"info\",\"data\":\"padded\"}");
    TEST_PASS("log lines");
}

static void test_other(void)
{
    const char *others[] = {"",
                            "progress",
                            "progress x 3",
                            "progress -1 3",
                            "progress 1e5 3",
                            "progress 1. 3",
                            "progress .5",
                            "progress 1234567890123456 1",
                            "progressive 1 2",
                            "Progress 1 2",
                            "log",
                            "log verbose hello",
                            "log INFO hello",
                            "Traceback (most recent call last):",
                            "This tool intentionally returns an error for testing"};
    for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
        wrk_stderrline_t l = parse(others[i]);
        CHECK_INT_EQ(l.kind, WRK_LINE_OTHER);
        CHECK(wrk_stderrline_to_json(&l) == NULL);
    }
    wrk_stderrline_t l;
    wrk_stderrline_parse(NULL, 0, &l);
    CHECK_INT_EQ(l.kind, WRK_LINE_OTHER);
    /* The parser honours len: no reading past it. */
    wrk_stderrline_parse("progress 12345", 10, &l);
    CHECK_INT_EQ(l.kind, WRK_LINE_PROGRESS);
    CHECK(l.progress == 1.0);
    TEST_PASS("other lines");
}

typedef struct lines {
    char got[16][WRK_LINE_MAX + 1];
    size_t len[16];
    int n;
} lines_t;

static void collect(const char *line, size_t len, void *arg)
{
    lines_t *ls = arg;
    CHECK(ls->n < 16);
    CHECK(len <= WRK_LINE_MAX);
    memcpy(ls->got[ls->n], line, len);
    ls->got[ls->n][len] = '\0';
    ls->len[ls->n++] = len;
}

static void test_linebuf(void)
{
    static wrk_stderrline_buf_t lb;
    static lines_t ls;
    memset(&ls, 0, sizeof(ls));
    wrk_stderrline_buf_init(&lb);
    const char *stream = "progress 1 3 a\r\nlog info b\n\npart";
    /* Byte by byte: the split must not depend on chunking. */
    for (size_t i = 0; i < strlen(stream); i++)
        wrk_stderrline_buf_feed(&lb, stream + i, 1, collect, &ls);
    CHECK_INT_EQ(ls.n, 3);
    wrk_stderrline_buf_feed(&lb, "ial\n", 4, collect, &ls);
    wrk_stderrline_buf_feed(&lb, "no newline", 10, collect, &ls);
    wrk_stderrline_buf_finish(&lb, collect, &ls);
    CHECK_INT_EQ(ls.n, 5);
    CHECK_STR_EQ(ls.got[0], "progress 1 3 a");
    CHECK_STR_EQ(ls.got[1], "log info b");
    CHECK_STR_EQ(ls.got[2], "");
    CHECK_STR_EQ(ls.got[3], "partial");
    CHECK_STR_EQ(ls.got[4], "no newline");

    /* An overlong line is cut at WRK_LINE_MAX and its rest skipped. */
    memset(&ls, 0, sizeof(ls));
    size_t big = WRK_LINE_MAX * 3 + 5;
    char *s = malloc(big + 16);
    CHECK(s != NULL);
    memset(s, 'x', big);
    memcpy(s + big, "\nnext\n", 6);
    wrk_stderrline_buf_feed(&lb, s, big + 6, collect, &ls);
    CHECK_INT_EQ(ls.n, 2);
    CHECK_INT_EQ(ls.len[0], WRK_LINE_MAX);
    CHECK_STR_EQ(ls.got[1], "next");
    /* Same in small chunks. */
    memset(&ls, 0, sizeof(ls));
    for (size_t i = 0; i < big + 6; i += 1000)
        wrk_stderrline_buf_feed(&lb, s + i, big + 6 - i < 1000 ? big + 6 - i : 1000, collect, &ls);
    CHECK_INT_EQ(ls.n, 2);
    CHECK_INT_EQ(ls.len[0], WRK_LINE_MAX);
    CHECK_STR_EQ(ls.got[1], "next");
    /* Exactly WRK_LINE_MAX bytes then a newline: one line, nothing skipped after. */
    memset(&ls, 0, sizeof(ls));
    memcpy(s + WRK_LINE_MAX, "\nafter\n", 7);
    wrk_stderrline_buf_feed(&lb, s, WRK_LINE_MAX + 7, collect, &ls);
    CHECK_INT_EQ(ls.n, 2);
    CHECK_INT_EQ(ls.len[0], WRK_LINE_MAX);
    CHECK_STR_EQ(ls.got[1], "after");
    free(s);
    TEST_PASS("line splitting with bounded lines");
}

int main(void)
{
    test_progress();
    test_log();
    test_other();
    test_linebuf();
    return 0;
}
