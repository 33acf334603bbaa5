/*
 * fuzz_output.c - libFuzzer driver for the worker's executor output parsers: worker/core/output.c
 * (CallToolResult from an exec child's stdout, an HTTP answer, a failed run) and
 * worker/executors/stderrline.c (the stderr stream split into lines, progress and log lines).
 *
 * Input layout: byte 0 picks the HTTP status, byte 1 the Content-Type (or none), byte 2
 * the exit status / signal and where the body splits into stdout and stderr tail for
 * wrk_output_from_failure, byte 3 seeds the chunk sizes the stderr stream is fed in (bit 7:
 * repeat the body to more than WRK_LINE_MAX bytes, so overlong lines are reached without a
 * large -max_len); the rest is the body, used as stdout, HTTP body and stderr alike.
 *
 * Checked: every result is a CallToolResult (an object with a "content" array) whose
 * printed JSON is UTF-8 and parses again; the lines the stderr stream is split into do not
 * depend on how it is chunked, are at most WRK_LINE_MAX bytes and hold no newline; parsed
 * progress and log lines have sane fields and their JSON is UTF-8.
 */
#include "fuzz.h"
#include "output.h"
#include "stderrline.h"
#include "utf8.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <string.h>

static const long statuses[] = {200, 201, 204, 299, 300, 301, 400, 404, 500,      502,
                                503, 199, 100, 0,   -1,  600, 999, 1,   LONG_MAX, LONG_MIN};
static const char *const content_types[] = {
    NULL,
    "",
    "application/json",
    "application/json; charset=utf-8",
    "text/plain",
    "text/plain; note=json",
    "application/problem+json",
    "TEXT/JSON",
    "json",
    "jso",
    "application/octet-stream",
    ";json",
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Consumes a result: it must be a CallToolResult that prints to UTF-8 JSON. */
static void check_result(cJSON *res)
{
    FUZZ_CHECK(res != NULL);
    FUZZ_CHECK(wrk_output_is_result(res));
    char *s = cJSON_PrintUnformatted(res);
    FUZZ_CHECK(s != NULL);
    FUZZ_CHECK(wrk_utf8_valid(s, strlen(s)));
    cJSON *back = cJSON_Parse(s);
    FUZZ_CHECK(back != NULL);
    cJSON_Delete(back);
    cJSON_free(s);
    cJSON_Delete(res);
}

/* Lines as the stderr reader sees them: a running hash of their bytes and lengths. */
typedef struct lines {
    uint64_t hash;
    size_t count;
} lines_t;

static void on_line(const char *line, size_t len, void *arg)
{
    lines_t *ls = arg;
    wrk_stderrline_t l;
    FUZZ_CHECK(len <= WRK_LINE_MAX);
    FUZZ_CHECK(!memchr(line, '\n', len));
    for (size_t i = 0; i < len; i++)
        ls->hash = (ls->hash ^ (unsigned char)line[i]) * 0x100000001b3ULL;
    ls->hash = (ls->hash ^ len) * 0x100000001b3ULL;
    ls->count++;

    wrk_stderrline_parse(line, len, &l);
    FUZZ_CHECK(!l.msg || (l.msg >= line && l.msg + l.msg_len <= line + len && l.msg_len > 0));
    cJSON *j = wrk_stderrline_to_json(&l);
    if (l.kind == WRK_LINE_OTHER) {
        FUZZ_CHECK(j == NULL);
        return;
    }
    if (l.kind == WRK_LINE_PROGRESS)
        FUZZ_CHECK(isfinite(l.progress) && l.progress >= 0 &&
                   (!l.has_total || (isfinite(l.total) && l.total >= 0)));
    else
        FUZZ_CHECK(l.level != NULL);
    FUZZ_CHECK(j != NULL);
    char *s = cJSON_PrintUnformatted(j);
    FUZZ_CHECK(s != NULL && wrk_utf8_valid(s, strlen(s)));
    cJSON_free(s);
    cJSON_Delete(j);
}

/* Feeds stream[0..len) to a fresh line buffer, in chunks of 1..64 bytes (seed != 0, from a
 * small LCG) or at once (seed == 0). */
static lines_t split_lines(wrk_stderrline_buf_t *lb, const char *stream, size_t len, unsigned seed)
{
    lines_t ls = {0xcbf29ce484222325ULL, 0};
    size_t off = 0;
    wrk_stderrline_buf_init(lb);
    while (off < len) {
        size_t n = len - off;
        if (seed) {
            seed = seed * 1103515245u + 12345u;
            size_t want = 1 + ((seed >> 16) & 63);
            n = want < n ? want : n;
        }
        wrk_stderrline_buf_feed(lb, stream + off, n, on_line, &ls);
        off += n;
    }
    wrk_stderrline_buf_finish(lb, on_line, &ls);
    return ls;
}

static void fuzz_lines(const char *body, size_t len, unsigned char ctl)
{
    wrk_stderrline_buf_t *lb = malloc(sizeof(*lb));
    char *big = NULL;
    const char *stream = body;
    size_t stream_len = len;
    FUZZ_CHECK(lb != NULL);
    if ((ctl & 0x80) && len > 0) {
        /* The body again and again, past WRK_LINE_MAX: overlong lines and their cut. */
        size_t reps = (WRK_LINE_MAX + 64) / len + 2;
        if (reps > 64)
            reps = 64;
        big = malloc(reps * len);
        FUZZ_CHECK(big != NULL);
        for (size_t i = 0; i < reps; i++)
            memcpy(big + i * len, body, len);
        stream = big;
        stream_len = reps * len;
    }
    lines_t whole = split_lines(lb, stream, stream_len, 0);
    lines_t chunked = split_lines(lb, stream, stream_len, (ctl & 0x7f) | 1u);
    FUZZ_CHECK(whole.count == chunked.count && whole.hash == chunked.hash);
    free(big);
    free(lb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char head[4] = {0, 0, 0, 0};
    size_t skip = size < sizeof(head) ? size : sizeof(head);
    memcpy(head, data, skip);
    /* The body in its own allocation of exactly its size: ASan sees reads past it. */
    size_t len = size - skip;
    char *body = calloc(len ? len : 1, 1);
    FUZZ_CHECK(body != NULL);
    if (len)
        memcpy(body, data + skip, len);

    check_result(wrk_output_from_stdout(body, len));
    check_result(wrk_output_from_http(statuses[head[0] % COUNT(statuses)],
                                      content_types[head[1] % COUNT(content_types)], body, len));
    check_result(wrk_output_from_http(200 + head[0] % 100, NULL, len ? body : NULL, len));

    size_t cut = len ? (size_t)head[2] * len / 255 : 0;
    int status = (int)(head[2] & 0x0f) - 1, signo = (int)(head[2] >> 4) - 1;
    check_result(wrk_output_from_failure(body, cut, body + cut, len - cut, status, signo));
    check_result(wrk_output_from_failure(NULL, 0, body, len, status, signo));
    check_result(wrk_output_from_failure(NULL, 0, NULL, 0, status, signo));

    fuzz_lines(body, len, head[3]);
    free(body);
    return 0;
}
