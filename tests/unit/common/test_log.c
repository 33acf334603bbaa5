/* Tests common/log.c: the request id check, the request id a thread's log context adds to its
 * lines, and lines with typed fields (log_event_json). The lines are read back from stderr,
 * pointed at a file. */
#include "check.h"
#include "log.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path[] = "/tmp/mcpq-test-log-XXXXXX";
static int saved_err = -1, finished;

/* On a failed check (whose message went to the file too): the file on the real stderr. */
static void dump_on_failure(void)
{
    char buf[8192];
    FILE *f = finished ? NULL : fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof(buf), f) : 0;
    if (f)
        fclose(f);
    if (n && write(saved_err, buf, n) < 0)
        return;
}

/* The last line written to stderr, parsed (caller frees). */
static cJSON *last_line(void)
{
    static char buf[65536];
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    CHECK(n > 0 && buf[n - 1] == '\n');
    buf[n - 1] = '\0';
    char *line = strrchr(buf, '\n');
    cJSON *j = cJSON_Parse(line ? line + 1 : buf);
    CHECK(j != NULL);
    return j;
}

static const char *field(const cJSON *j, const char *k)
{
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, k));
    return s ? s : "(absent)";
}

static void check_valid(void)
{
    char id[200];
    CHECK(log_request_id_valid("r-abc.123_XYZ~!"));
    CHECK(log_request_id_valid("a"));
    memset(id, '~', 128);
    id[128] = '\0';
    CHECK(log_request_id_valid(id));
    id[128] = '~';
    id[129] = '\0';
    CHECK(!log_request_id_valid(id)); /* 129 bytes */
    CHECK(!log_request_id_valid(NULL));
    CHECK(!log_request_id_valid(""));
    CHECK(!log_request_id_valid("has space"));
    CHECK(!log_request_id_valid("tab\there"));
    CHECK(!log_request_id_valid("nl\n"));
    CHECK(!log_request_id_valid("del\x7f"));
    CHECK(!log_request_id_valid("caf\xc3\xa9")); /* not ASCII */
    TEST_PASS("a request id is 1..128 bytes of 0x21-0x7e, anything else is refused");
}

static void check_context(void)
{
    log_ctx_set_request("r-1");
    log_event(LOG_INFO, "plain", "k", "v", (char *)NULL);
    cJSON *j = last_line();
    CHECK_STR_EQ(field(j, "request_id"), "r-1");
    CHECK_STR_EQ(field(j, "trace_id"), "(absent)"); /* no trace in the context */
    cJSON_Delete(j);

    log_ctx_set("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
    log_event(LOG_INFO, "own", "request_id", "mine", (char *)NULL);
    j = last_line();
    CHECK_STR_EQ(field(j, "request_id"), "mine"); /* a line's own is kept */
    CHECK_STR_EQ(field(j, "trace_id"), "4bf92f3577b34da6a3ce929d0e0e4736");
    cJSON_Delete(j);
    TEST_PASS("a context's request id is on its lines, never over a line's own");

    log_ctx_t saved;
    log_ctx_push(NULL, NULL, &saved);
    log_event(LOG_INFO, "nested", (char *)NULL);
    j = last_line();
    CHECK_STR_EQ(field(j, "request_id"), "(absent)");
    cJSON_Delete(j);
    log_ctx_restore(&saved);
    log_event(LOG_INFO, "outer", (char *)NULL);
    j = last_line();
    CHECK_STR_EQ(field(j, "request_id"), "r-1");
    cJSON_Delete(j);
    log_ctx_clear();
    log_event(LOG_INFO, "cleared", (char *)NULL);
    j = last_line();
    CHECK_STR_EQ(field(j, "request_id"), "(absent)");
    CHECK_STR_EQ(field(j, "trace_id"), "(absent)");
    cJSON_Delete(j);
    TEST_PASS("push starts a context without the request id; restore and clear");
}

static void check_json(void)
{
    log_ctx_set_request("r-2");
    cJSON *f = cJSON_CreateObject();
    cJSON_AddStringToObject(f, "method", "GET");
    cJSON_AddNumberToObject(f, "status", 404);
    cJSON_AddBoolToObject(f, "aborted", 1);
    log_event_json(LOG_INFO, "access", f);
    cJSON *j = last_line();
    CHECK_STR_EQ(field(j, "msg"), "access");
    CHECK_STR_EQ(field(j, "level"), "info");
    CHECK_STR_EQ(field(j, "method"), "GET");
    CHECK_STR_EQ(field(j, "request_id"), "r-2");
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(j, "status");
    CHECK(cJSON_IsNumber(st) && st->valueint == 404);
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "aborted")));
    cJSON_Delete(j);
    log_event(LOG_INFO, "marker", (char *)NULL);
    log_event_json(LOG_DEBUG, "below the level", cJSON_CreateObject()); /* freed, not written */
    log_event_json(LOG_INFO, "nothing", NULL);
    j = last_line();
    CHECK_STR_EQ(field(j, "msg"), "nothing");
    cJSON_Delete(j);
    log_ctx_clear();
    TEST_PASS("log_event_json keeps numbers and booleans, honours the level");
}

/* The last line as written (without its newline; static buffer). */
static const char *last_raw(void)
{
    static char buf[65536];
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    CHECK(n > 0 && buf[n - 1] == '\n');
    buf[n - 1] = '\0';
    char *line = strrchr(buf, '\n');
    return line ? line + 1 : buf;
}

/* A line is the text cJSON_PrintUnformatted gives for the same members: every escape, a
 * value longer than the writer's stack buffer, and the trace tail. */
static void check_text(void)
{
    static char big[6000];
    memset(big, 'x', sizeof(big) - 1);
    const char *odd = "q\"b\\s/\b\f\n\r\t\x01\x1f\x7f caf\xc3\xa9 \xe2\x82\xac";
    log_ctx_set("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
    log_ctx_set_request("r-3");
    log_event(LOG_WARN, "odd \"msg\"\n", "k\"ey", odd, "skipped", (const char *)NULL, "big", big,
              "job_id", "j_1", (char *)NULL);
    const char *raw = last_raw();
    cJSON *got = cJSON_Parse(raw);
    CHECK(got != NULL);
    cJSON *want = cJSON_CreateObject();
    cJSON_AddStringToObject(want, "ts", field(got, "ts"));
    cJSON_AddStringToObject(want, "level", "warn");
    cJSON_AddStringToObject(want, "component", "test");
    cJSON_AddStringToObject(want, "msg", "odd \"msg\"\n");
    cJSON_AddStringToObject(want, "k\"ey", odd);
    cJSON_AddStringToObject(want, "big", big);
    cJSON_AddStringToObject(want, "job_id", "j_1");
    cJSON_AddStringToObject(want, "request_id", "r-3");
    cJSON_AddStringToObject(want, "trace_id", "4bf92f3577b34da6a3ce929d0e0e4736");
    cJSON_AddStringToObject(want, "span_id", "00f067aa0ba902b7");
    char *text = cJSON_PrintUnformatted(want);
    CHECK_STR_EQ(raw, text);
    free(text);
    cJSON_Delete(want);
    cJSON_Delete(got);

    cJSON *f = cJSON_CreateObject();
    cJSON_AddNumberToObject(f, "n", 1.5);
    cJSON_AddItemToObject(f, "o", cJSON_Parse("{\"a\":[1,\"\\u0001\"]}"));
    cJSON_AddStringToObject(f, "trace_id", "mine");
    log_event_json(LOG_ERROR, "typed", f);
    CHECK_STR_EQ(strstr(last_raw(), ",\"level\""),
                 ",\"level\":\"error\",\"component\":\"test\",\"msg\":\"typed\",\"n\":1.5,"
                 "\"o\":{\"a\":[1,\"\\u0001\"]},\"trace_id\":\"mine\",\"request_id\":\"r-3\"}");
    log_ctx_clear();
    TEST_PASS("lines are cJSON's text: escapes, long values, typed fields, the trace tail");
}

int main(void)
{
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    saved_err = dup(STDERR_FILENO);
    CHECK(saved_err >= 0 && dup2(fd, STDERR_FILENO) == STDERR_FILENO);
    close(fd);
    atexit(dump_on_failure);
    log_init("test", "info");
    check_valid();
    check_context();
    check_json();
    check_text();
    finished = 1;
    unlink(path);
    return 0;
}
