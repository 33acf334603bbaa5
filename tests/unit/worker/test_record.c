/* Tests worker/record.c: the result record. */
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
                      .finished_ms = 1767225600123LL};
    size_t len = 0;
    char *s = wrk_record_build(&r, &len);
    CHECK_STR_EQ(s, "{\"v\":1,\"job_id\":\"j_1\",\"tenant\":\"acme\",\"tool\":\"echo\","
                    "\"status\":\"ok\",\"result\":{\"content\":[{\"type\":\"text\",\"text\":"
                    "\"hi\"}],\"isError\":false},\"worker\":\"worker-0\",\"attempt\":1,"
                    "\"started_ms\":1767225600000,\"finished_ms\":1767225600123}");
    CHECK_INT_EQ(len, strlen(s));
    free(s);
    /* The record borrowed the result: it is still whole. */
    CHECK(cJSON_IsArray(cJSON_GetObjectItem(res, "content")));
    cJSON_Delete(res);
    TEST_PASS("ok record");
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
    CHECK_STR_EQ(wrk_status_name(WRK_STATUS_OK), "ok");
    CHECK_STR_EQ(wrk_status_name(WRK_STATUS_TIMEOUT), "timeout");
    CHECK_STR_EQ(wrk_status_name(WRK_STATUS_ERROR), "error");
    TEST_PASS("timeout and error records");
}

int main(void)
{
    test_ok();
    test_errors();
    return 0;
}
