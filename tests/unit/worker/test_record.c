/* Tests worker/core/record.c: the result record. */
#include "check.h"
#include "record.h"

#include <stdlib.h>
#include <string.h>

static void test_ok(void)
{
    cJSON *res =
        cJSON_Parse("{\"content\":[{\"type\":\"text\",\"text\":\"hi\"}],\"isError\":false}");
    wrk_record_t r = {.job_id = "j_1",
                      .tenant = "acme",
                      .tool = "echo",
                      .status = WRK_STATUS_OK,
                      .result = res,
                      .worker = "worker-0",
                      .attempt = 1,
                      .started_ms = 1767225600000LL,
                      .finished_ms = 1767225600123LL,
                      .picked_us = 1767225599999001LL,
                      .exec_us = 1767225600000021LL,
                      .finished_us = 1767225600123456LL};
    size_t len = 0;
    char *s = wrk_record_build(&r, &len);
    /* Unix µs (16 digits) come out whole, not rounded to a double's shortest form. */
    CHECK_STR_EQ(s, "{\"v\":1,\"job_id\":\"j_1\",\"tenant\":\"acme\",\"tool\":\"echo\","
                    "\"status\":\"ok\",\"result\":{\"content\":[{\"type\":\"text\",\"text\":"
                    "\"hi\"}],\"isError\":false},\"worker\":\"worker-0\",\"attempt\":1,"
                    "\"started_ms\":1767225600000,\"finished_ms\":1767225600123,"
                    "\"finished_us\":1767225600123456,\"picked_us\":1767225599999001,"
                    "\"exec_us\":1767225600000021}");
    CHECK_INT_EQ(len, strlen(s));
    free(s);
    /* The record borrowed the result: it is still whole. */
    CHECK(cJSON_IsArray(cJSON_GetObjectItem(res, "content")));
    cJSON_Delete(res);
    TEST_PASS("ok record");
}

/* Timestamps are printed as their digits, a round one too (a cJSON number item prints
 * 1767225600000000 as 1.7672256e+15). */
static void test_round_timestamps(void)
{
    wrk_record_t r = {.job_id = "j_3",
                      .status = WRK_STATUS_ERROR,
                      .err_msg = "x",
                      .worker = "w",
                      .started_ms = 1767225600000LL,
                      .finished_ms = 1767225600000LL,
                      .picked_us = 1767225600000000LL,
                      .finished_us = 1767225600120000LL};
    size_t len;
    char *s = wrk_record_build(&r, &len);
    CHECK_CONTAINS(s, "\"started_ms\":1767225600000,\"finished_ms\":1767225600000,"
                      "\"finished_us\":1767225600120000,\"picked_us\":1767225600000000}");
    cJSON *back = cJSON_Parse(s);
    CHECK_INT_EQ((long long)cJSON_GetNumberValue(cJSON_GetObjectItem(back, "picked_us")),
                 1767225600000000LL);
    cJSON_Delete(back);
    free(s);
    TEST_PASS("round timestamps come out as digits");
}

static void test_errors(void)
{
    wrk_record_t r = {.job_id = "j_2",
                      .status = WRK_STATUS_TIMEOUT,
                      .err_code = WRK_ERR_TIMEOUT,
                      .err_msg = "Agent reply timeout",
                      .worker = "w",
                      .started_ms = 1,
                      .finished_ms = 2};
    size_t len;
    char *s = wrk_record_build(&r, &len);
    CHECK_STR_EQ(s, "{\"v\":1,\"job_id\":\"j_2\",\"tenant\":\"\",\"tool\":\"\","
                    "\"status\":\"timeout\",\"error\":{\"code\":-32003,\"message\":"
                    "\"Agent reply timeout\"},\"worker\":\"w\",\"attempt\":1,\"started_ms\":1,"
                    "\"finished_ms\":2}");
    free(s);
    r.status = WRK_STATUS_ERROR;
    r.err_code = WRK_ERR_INTERNAL;
    r.err_msg = "malformed job envelope: \"x\"";
    s = wrk_record_build(&r, &len);
    CHECK_CONTAINS(s, "\"status\":\"error\",\"error\":{\"code\":-32603,\"message\":"
                      "\"malformed job envelope: \\\"x\\\"\"}");
    free(s);
    CHECK_STR_EQ(wrk_record_status_name(WRK_STATUS_OK), "ok");
    CHECK_STR_EQ(wrk_record_status_name(WRK_STATUS_TIMEOUT), "timeout");
    CHECK_STR_EQ(wrk_record_status_name(WRK_STATUS_ERROR), "error");
    TEST_PASS("timeout and error records");
}

/* The cancelled entry's data from the value of {mcpq}:cancel:<id>. */
static void check_cancelled(const char *value, const char *want)
{
    size_t len = 0;
    char *s = wrk_record_cancelled(value, value ? strlen(value) : 0, &len);
    CHECK_STR_EQ(s, want);
    CHECK_INT_EQ(len, strlen(s));
    free(s);
}

static void test_cancelled(void)
{
    check_cancelled("{\"reason\":\"user pressed stop\"}", "{\"reason\":\"user pressed stop\"}");
    check_cancelled("{\"reason\": \"say \\\"hi\\\"\", \"by\": 3}",
                    "{\"reason\":\"say \\\"hi\\\"\"}");
    /* Anything else: the default reason. */
    const char *dflt = "{\"reason\":\"" WRK_CANCEL_REASON_DEFAULT "\"}";
    check_cancelled(NULL, dflt);
    check_cancelled("", dflt);
    check_cancelled("1", dflt);
    check_cancelled("plain text", dflt);
    check_cancelled("{\"reason\":7}", dflt);
    check_cancelled("{\"reason\":\"\"}", dflt);
    check_cancelled("[\"reason\"]", dflt);
    check_cancelled("{\"reason\":\"x\"} trailing", dflt);
    /* Not UTF-8: repaired, so the entry stays valid JSON. */
    check_cancelled("{\"reason\":\"a\xff\"}", "{\"reason\":\"a\xef\xbf\xbd\"}");
    /* Long reasons are cut, never inside a character. */
    enum { N = WRK_CANCEL_REASON_MAX + 100 };
    static char big[N + 32], want[N + 32];
    int n = snprintf(big, sizeof(big), "{\"reason\":\"");
    for (int i = 0; i < N / 2; i++) {
        big[n++] = '\xc3'; /* U+00E9, two bytes */
        big[n++] = '\xa9';
    }
    snprintf(big + n, sizeof(big) - (size_t)n, "\"}");
    n = snprintf(want, sizeof(want), "{\"reason\":\"");
    for (int i = 0; i < WRK_CANCEL_REASON_MAX / 2; i++) {
        want[n++] = '\xc3';
        want[n++] = '\xa9';
    }
    snprintf(want + n, sizeof(want) - (size_t)n, "\"}");
    check_cancelled(big, want);
    TEST_PASS("cancelled entry data");
}

int main(void)
{
    test_ok();
    test_round_timestamps();
    test_errors();
    test_cancelled();
    return 0;
}
