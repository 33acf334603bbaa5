#include "stderrline.h"

#include "utf8.h"

#include <stdlib.h>
#include <string.h>

static int is_space(char c)
{
    return c == ' ' || c == '\t';
}

/* Next whitespace-separated token of s[*pos..len): its start and length; 0 when none. */
static size_t next_token(const char *s, size_t len, size_t *pos, const char **tok)
{
    size_t i = *pos;
    while (i < len && is_space(s[i]))
        i++;
    size_t start = i;
    while (i < len && !is_space(s[i]))
        i++;
    *tok = s + start;
    *pos = i;
    return i - start;
}

/* A decimal number: 1..15 digits, optionally '.' and 1..15 digits. */
static int parse_number(const char *s, size_t n, double *out)
{
    char tmp[40];
    size_t i = 0, intd = 0, frac = 0;
    while (i < n && s[i] >= '0' && s[i] <= '9') {
        i++;
        intd++;
    }
    if (intd == 0 || intd > 15)
        return 0;
    if (i < n && s[i] == '.') {
        i++;
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            i++;
            frac++;
        }
        if (frac == 0 || frac > 15)
            return 0;
    }
    if (i != n)
        return 0;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    *out = strtod(tmp, NULL);
    return 1;
}

static const char *level_name(const char *s, size_t n)
{
    static const char *const levels[] = {"debug", "info",     "notice", "warning",
                                         "error", "critical", "alert",  "emergency"};
    static const struct {
        const char *alias, *level;
    } aliases[] = {{"warn", "warning"}, {"err", "error"}, {"fatal", "critical"}};
    for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++)
        if (strlen(levels[i]) == n && memcmp(levels[i], s, n) == 0)
            return levels[i];
    for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
        if (strlen(aliases[i].alias) == n && memcmp(aliases[i].alias, s, n) == 0)
            return aliases[i].level;
    return NULL;
}

/* The rest of the line after pos, leading blanks skipped; NULL when empty. */
static void rest_of_line(const char *s, size_t len, size_t pos, wrk_stderrline_t *out)
{
    while (pos < len && is_space(s[pos]))
        pos++;
    size_t end = len;
    while (end > pos && is_space(s[end - 1]))
        end--;
    out->msg = end > pos ? s + pos : NULL;
    out->msg_len = end > pos ? end - pos : 0;
}

void wrk_stderrline_parse(const char *line, size_t len, wrk_stderrline_t *out)
{
    memset(out, 0, sizeof(*out));
    out->kind = WRK_LINE_OTHER;
    if (!line)
        return;
    size_t pos = 0;
    const char *tok;
    size_t n = next_token(line, len, &pos, &tok);
    if (n == 8 && memcmp(tok, "progress", 8) == 0) {
        const char *t1;
        size_t n1 = next_token(line, len, &pos, &t1);
        if (!parse_number(t1, n1, &out->progress))
            return;
        size_t after_done = pos;
        const char *t2;
        size_t n2 = next_token(line, len, &pos, &t2);
        if (n2 > 0 && parse_number(t2, n2, &out->total)) {
            out->has_total = 1;
            rest_of_line(line, len, pos, out);
        } else {
            rest_of_line(line, len, after_done, out);
        }
        out->kind = WRK_LINE_PROGRESS;
    } else if (n == 3 && memcmp(tok, "log", 3) == 0) {
        const char *t1;
        size_t n1 = next_token(line, len, &pos, &t1);
        out->level = n1 ? level_name(t1, n1) : NULL;
        if (!out->level)
            return;
        rest_of_line(line, len, pos, out);
        out->kind = WRK_LINE_LOG;
    }
}

cJSON *wrk_stderrline_to_json(const wrk_stderrline_t *l)
{
    if (l->kind == WRK_LINE_OTHER)
        return NULL;
    char *msg = NULL;
    if (l->msg) {
        msg = wrk_utf8_sanitize(l->msg, l->msg_len);
        if (!msg)
            return NULL;
    }
    cJSON *o = cJSON_CreateObject();
    int ok = o != NULL;
    if (ok && l->kind == WRK_LINE_PROGRESS) {
        ok = cJSON_AddNumberToObject(o, "progress", l->progress) != NULL;
        if (ok && l->has_total)
            ok = cJSON_AddNumberToObject(o, "total", l->total) != NULL;
        if (ok && msg)
            ok = cJSON_AddStringToObject(o, "message", msg) != NULL;
    } else if (ok) {
        ok = cJSON_AddStringToObject(o, "level", l->level) != NULL &&
             cJSON_AddStringToObject(o, "data", msg ? msg : "") != NULL;
    }
    free(msg);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

void wrk_stderrline_buf_init(wrk_stderrline_buf_t *lb)
{
    lb->len = 0;
    lb->skipping = 0;
}

static void emit(wrk_stderrline_buf_t *lb, wrk_stderrline_fn fn, void *arg)
{
    size_t n = lb->len;
    if (n > 0 && lb->buf[n - 1] == '\r')
        n--;
    fn(lb->buf, n, arg);
    lb->len = 0;
}

void wrk_stderrline_buf_feed(wrk_stderrline_buf_t *lb, const char *data, size_t len,
                             wrk_stderrline_fn fn, void *arg)
{
    while (len > 0) {
        const char *nl = memchr(data, '\n', len);
        size_t chunk = nl ? (size_t)(nl - data) : len;
        if (!lb->skipping) {
            size_t room = WRK_LINE_MAX - lb->len;
            size_t take = chunk < room ? chunk : room;
            memcpy(lb->buf + lb->len, data, take);
            lb->len += take;
            if (take < chunk || (!nl && lb->len == WRK_LINE_MAX)) {
                /* Overlong: deliver what fits, drop the rest up to the newline. */
                emit(lb, fn, arg);
                lb->skipping = 1;
            }
        }
        if (!nl)
            return;
        if (lb->skipping)
            lb->skipping = 0;
        else
            emit(lb, fn, arg);
        data = nl + 1;
        len -= chunk + 1;
    }
}

void wrk_stderrline_buf_finish(wrk_stderrline_buf_t *lb, wrk_stderrline_fn fn, void *arg)
{
    if (lb->len > 0 && !lb->skipping)
        emit(lb, fn, arg);
    lb->len = 0;
    lb->skipping = 0;
}
