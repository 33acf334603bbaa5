/* Tests worker/core/output.c: executor output into CallToolResult. */
#include "check.h"
#include "output.h"

#include <stdlib.h>
#include <string.h>

/* Compact JSON of a result (freed by the caller), checking it is valid JSON again. */
static char *js(cJSON *v)
{
    CHECK(v != NULL);
    char *s = cJSON_PrintUnformatted(v);
    cJSON_Delete(v);
    CHECK(s != NULL);
    cJSON *back = cJSON_Parse(s);
    CHECK(back != NULL);
    cJSON_Delete(back);
    return s;
}

static void check_out(cJSON *v, const char *want)
{
    char *s = js(v);
    CHECK_STR_EQ(s, want);
    free(s);
}

static void test_text(void)
{
    check_out(wrk_output_text("hi", 2, 0),
              "{\"content\":[{\"type\":\"text\",\"text\":\"hi\"}],\"isError\":false}");
    check_out(wrk_output_text("a\0b", 3, 1),
              "{\"content\":[{\"type\":\"text\",\"text\":\"a\xef\xbf\xbd"
              "b\"}],\"isError\":true}");
    check_out(wrk_output_text(NULL, 5, 0),
              "{\"content\":[{\"type\":\"text\",\"text\":\"\"}],\"isError\":false}");
    check_out(wrk_output_errorf("exit status %d", 3),
              "{\"content\":[{\"type\":\"text\",\"text\":\"exit status 3\"}],\"isError\":true}");
    TEST_PASS("text blocks");
}

static void test_stdout(void)
{
    const char *ctr = "{\"content\":[{\"type\":\"text\",\"text\":\"report ready\"}],"
                      "\"structuredContent\":{\"report\":\"ok\",\"rows\":3},\"isError\":false}\n";
    check_out(wrk_output_from_stdout(ctr, strlen(ctr)),
              "{\"content\":[{\"type\":\"text\",\"text\":\"report ready\"}],"
              "\"structuredContent\":{\"report\":\"ok\",\"rows\":3},\"isError\":false}");
    /* Passed through unchanged: no isError added. */
    const char *img = "{\"content\":[{\"type\":\"image\",\"data\":\"iVBO\",\"mimeType\":"
                      "\"image/png\"}]}";
    check_out(wrk_output_from_stdout(img, strlen(img)), img);
    check_out(wrk_output_from_stdout("Progress test completed\n", 24),
              "{\"content\":[{\"type\":\"text\",\"text\":\"Progress test completed\"}],"
              "\"isError\":false}");
    check_out(wrk_output_from_stdout("two\nlines\r\n", 11),
              "{\"content\":[{\"type\":\"text\",\"text\":\"two\\nlines\"}],\"isError\":false}");
    /* JSON that is not a CallToolResult is text, as printed (stdout is the tool's answer). */
    check_out(wrk_output_from_stdout("{\"a\":1}\n", 8),
              "{\"content\":[{\"type\":\"text\",\"text\":\"{\\\"a\\\":1}\"}],\"isError\":false}");
    check_out(wrk_output_from_stdout("{\"content\":\"x\"}", 15),
              "{\"content\":[{\"type\":\"text\",\"text\":\"{\\\"content\\\":\\\"x\\\"}\"}],"
              "\"isError\":false}");
    /* Trailing garbage after a CallToolResult: text. */
    const char *tg = "{\"content\":[]} extra";
    check_out(wrk_output_from_stdout(tg, strlen(tg)),
              "{\"content\":[{\"type\":\"text\",\"text\":\"{\\\"content\\\":[]} extra\"}],"
              "\"isError\":false}");
    /* Invalid UTF-8 inside JSON strings: not passed through, repaired as text. */
    const char *bad = "{\"content\":[{\"type\":\"text\",\"text\":\"\xc0\xaf\"}]}";
    char *s = js(wrk_output_from_stdout(bad, strlen(bad)));
    CHECK_CONTAINS(s, "\xef\xbf\xbd");
    free(s);
    check_out(wrk_output_from_stdout("", 0),
              "{\"content\":[{\"type\":\"text\",\"text\":\"\"}],\"isError\":false}");
    TEST_PASS("exec stdout");
}

static void test_failure(void)
{
    const char *msg = "This tool intentionally returns an error for testing\n";
    check_out(wrk_output_from_failure(msg, strlen(msg), "tail", 4, 1, 0),
              "{\"content\":[{\"type\":\"text\",\"text\":\"This tool intentionally returns an "
              "error for testing\"}],\"isError\":true}");
    check_out(wrk_output_from_failure(" \n", 2, "Traceback\nboom\n", 15, 1, 0),
              "{\"content\":[{\"type\":\"text\",\"text\":\"Traceback\\nboom\"}],"
              "\"isError\":true}");
    check_out(wrk_output_from_failure(NULL, 0, NULL, 0, 42, 0),
              "{\"content\":[{\"type\":\"text\",\"text\":\"exit status 42\"}],\"isError\":true}");
    check_out(wrk_output_from_failure("", 0, "", 0, 0, 9),
              "{\"content\":[{\"type\":\"text\",\"text\":\"killed by signal 9\"}],"
              "\"isError\":true}");
    TEST_PASS("exec failures");
}

static void test_json(void)
{
    cJSON *v = cJSON_Parse("{\"ok\":true,\"echo\":{\"q\":\"weather\"}}");
    check_out(
        wrk_output_from_json(v),
        "{\"content\":[{\"type\":\"text\",\"text\":\"{\\\"ok\\\":true,\\\"echo\\\":{\\\"q\\\":"
        "\\\"weather\\\"}}\"}],\"structuredContent\":{\"ok\":true,\"echo\":{\"q\":"
        "\"weather\"}},\"isError\":false}");
    cJSON_Delete(v);
    v = cJSON_Parse("[1,2]");
    check_out(wrk_output_from_json(v),
              "{\"content\":[{\"type\":\"text\",\"text\":\"[1,2]\"}],\"structuredContent\":"
              "{\"result\":[1,2]},\"isError\":false}");
    cJSON_Delete(v);
    v = cJSON_Parse("5");
    check_out(wrk_output_from_json(v),
              "{\"content\":[{\"type\":\"text\",\"text\":\"5\"}],\"structuredContent\":"
              "{\"result\":5},\"isError\":false}");
    cJSON_Delete(v);
    /* wrk_output_structured never passes through. */
    v = cJSON_Parse("{\"content\":[]}");
    check_out(wrk_output_structured(v),
              "{\"content\":[{\"type\":\"text\",\"text\":\"{\\\"content\\\":[]}\"}],"
              "\"structuredContent\":{\"content\":[]},\"isError\":false}");
    check_out(wrk_output_from_json(v), "{\"content\":[]}");
    cJSON_Delete(v);
    TEST_PASS("JSON values");
}

static void test_http(void)
{
    const char *ctr = "{\"content\":[{\"type\":\"text\",\"text\":\"5\"}],"
                      "\"structuredContent\":{\"sum\":5}}";
    check_out(wrk_output_from_http(200, "application/json", ctr, strlen(ctr)), ctr);
    check_out(wrk_output_from_http(201, NULL, "{\"a\":1}", 7),
              "{\"content\":[{\"type\":\"text\",\"text\":\"{\\\"a\\\":1}\"}],"
              "\"structuredContent\":{\"a\":1},\"isError\":false}");
    check_out(wrk_output_from_http(200, "application/problem+json; charset=utf-8", "true", 4),
              "{\"content\":[{\"type\":\"text\",\"text\":\"true\"}],\"structuredContent\":"
              "{\"result\":true},\"isError\":false}");
    check_out(wrk_output_from_http(200, "text/plain", "42", 2),
              "{\"content\":[{\"type\":\"text\",\"text\":\"42\"}],\"isError\":false}");
    check_out(wrk_output_from_http(200, "application/json", "not json", 8),
              "{\"content\":[{\"type\":\"text\",\"text\":\"not json\"}],\"isError\":false}");
    check_out(wrk_output_from_http(204, "application/json", NULL, 0),
              "{\"content\":[{\"type\":\"text\",\"text\":\"\"}],\"isError\":false}");
    check_out(wrk_output_from_http(500, "text/plain", "boom", 4),
              "{\"content\":[{\"type\":\"text\",\"text\":\"HTTP 500: boom\"}],\"isError\":true}");
    check_out(wrk_output_from_http(404, NULL, "", 0),
              "{\"content\":[{\"type\":\"text\",\"text\":\"HTTP 404\"}],\"isError\":true}");
    /* A 2xx CallToolResult that says isError keeps it. */
    const char *err = "{\"content\":[{\"type\":\"text\",\"text\":\"no\"}],\"isError\":true}";
    check_out(wrk_output_from_http(200, "application/json", err, strlen(err)), err);
    /* The error quote is bounded and cut on a character boundary. */
    size_t n = 5000;
    char *body = malloc(n);
    CHECK(body != NULL);
    for (size_t i = 0; i < n; i += 2)
        memcpy(body + i, "\xc3\xa9", 2);
    char *s = js(wrk_output_from_http(502, NULL, body, n));
    CHECK(strlen(s) < WRK_OUTPUT_ERROR_QUOTE + 128);
    CHECK(strstr(s, "\xef\xbf\xbd") == NULL);
    CHECK_CONTAINS(s, "HTTP 502: \xc3\xa9");
    free(s);
    free(body);
    TEST_PASS("http answers");
}

int main(void)
{
    test_text();
    test_stdout();
    test_failure();
    test_json();
    test_http();
    return 0;
}
