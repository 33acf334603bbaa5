#include "output.h"

#include "utf8.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

cJSON *wrk_output_text(const char *text, size_t len, int is_error)
{
    char *clean = wrk_utf8_sanitize(text ? text : "", text ? len : 0);
    if (!clean)
        return NULL;
    cJSON *res = cJSON_CreateObject();
    cJSON *content = cJSON_AddArrayToObject(res, "content");
    cJSON *block = cJSON_CreateObject();
    if (!res || !content || !block) {
        cJSON_Delete(block);
        goto fail;
    }
    cJSON_AddItemToArray(content, block);
    if (!cJSON_AddStringToObject(block, "type", "text") ||
        !cJSON_AddStringToObject(block, "text", clean) ||
        !cJSON_AddBoolToObject(res, "isError", is_error ? 1 : 0))
        goto fail;
    free(clean);
    return res;
fail:
    free(clean);
    cJSON_Delete(res);
    return NULL;
}

cJSON *wrk_output_errorf(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    size_t len = (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1;
    return wrk_output_text(msg, wrk_utf8_cut(msg, len, len), 1);
}

int wrk_output_is_result(const cJSON *v)
{
    return cJSON_IsObject(v) && cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(v, "content"));
}

cJSON *wrk_output_structured(const cJSON *value)
{
    char *text = cJSON_PrintUnformatted(value);
    if (!text)
        return NULL;
    cJSON *res = wrk_output_text(text, strlen(text), 0);
    free(text);
    if (!res)
        return NULL;
    cJSON *sc;
    if (cJSON_IsObject(value)) {
        sc = cJSON_Duplicate(value, 1);
    } else {
        sc = cJSON_CreateObject();
        cJSON *copy = cJSON_Duplicate(value, 1);
        if (!sc || !copy || !cJSON_AddItemToObject(sc, "result", copy)) {
            cJSON_Delete(copy);
            cJSON_Delete(sc);
            sc = NULL;
        }
    }
    if (!sc) {
        cJSON_Delete(res);
        return NULL;
    }
    /* Keep the documented key order: content, structuredContent, isError. */
    cJSON *is_error = cJSON_DetachItemFromObjectCaseSensitive(res, "isError");
    cJSON_AddItemToObject(res, "structuredContent", sc);
    cJSON_AddItemToObject(res, "isError", is_error);
    return res;
}

cJSON *wrk_output_from_json(const cJSON *value)
{
    if (wrk_output_is_result(value))
        return cJSON_Duplicate(value, 1);
    return wrk_output_structured(value);
}

/* Parses buf as one JSON document when it is valid UTF-8 with nothing but whitespace after
 * it; NULL otherwise. */
static cJSON *parse_whole(const char *buf, size_t len)
{
    if (len == 0 || !wrk_utf8_valid(buf, len))
        return NULL;
    const char *end = NULL;
    cJSON *v = cJSON_ParseWithLengthOpts(buf, len, &end, 0);
    if (!v)
        return NULL;
    for (; end < buf + len; end++) {
        if (*end != ' ' && *end != '\t' && *end != '\n' && *end != '\r') {
            cJSON_Delete(v);
            return NULL;
        }
    }
    return v;
}

static size_t trim_newline(const char *s, size_t len)
{
    if (len > 0 && s[len - 1] == '\n')
        len--;
    if (len > 0 && s[len - 1] == '\r')
        len--;
    return len;
}

cJSON *wrk_output_from_stdout(const char *out, size_t len)
{
    cJSON *v = parse_whole(out, len);
    if (v && wrk_output_is_result(v))
        return v;
    cJSON_Delete(v);
    return wrk_output_text(out, trim_newline(out, len), 0);
}

static int blank(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r')
            return 0;
    return 1;
}

cJSON *wrk_output_from_failure(const char *out, size_t out_len, const char *err_tail,
                               size_t tail_len, int exit_status, int signo)
{
    if (out && !blank(out, out_len))
        return wrk_output_text(out, trim_newline(out, out_len), 1);
    if (err_tail && !blank(err_tail, tail_len))
        return wrk_output_text(err_tail, trim_newline(err_tail, tail_len), 1);
    if (signo > 0)
        return wrk_output_errorf("killed by signal %d", signo);
    return wrk_output_errorf("exit status %d", exit_status);
}

static int type_is_json(const char *content_type)
{
    if (!content_type || !*content_type)
        return 1;
    /* application/json, application/problem+json, text/json; parameters ignored. */
    size_t n = strcspn(content_type, ";");
    for (size_t i = 0; i + 4 <= n; i++)
        if (strncasecmp(content_type + i, "json", 4) == 0)
            return 1;
    return 0;
}

cJSON *wrk_output_from_http(long status, const char *content_type, const char *body, size_t len)
{
    if (!body)
        len = 0;
    if (status >= 200 && status < 300) {
        if (type_is_json(content_type)) {
            cJSON *v = parse_whole(body, len);
            if (v) {
                cJSON *res = wrk_output_from_json(v);
                cJSON_Delete(v);
                return res;
            }
        }
        return wrk_output_text(body, len, 0);
    }
    size_t q = wrk_utf8_cut(body, len, WRK_OUTPUT_ERROR_QUOTE);
    size_t head_len = 32;
    char *text = malloc(head_len + q + 1);
    if (!text)
        return NULL;
    int n = snprintf(text, head_len, "HTTP %ld", status);
    if (n < 0 || (size_t)n >= head_len)
        n = 0;
    if (q > 0 && !blank(body, q)) {
        memcpy(text + n, ": ", 2);
        memcpy(text + n + 2, body, q);
        n += 2 + (int)q;
    }
    cJSON *res = wrk_output_text(text, (size_t)n, 1);
    free(text);
    return res;
}
