#include "log.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* Set once by log_init() before threads start; read-only afterwards. */
static const char *log_component = "mcpq";
static log_level_t log_min = LOG_INFO;

static const char *const level_names[] = {"debug", "info", "warn", "error"};

void log_init(const char *component, const char *min_level)
{
    log_component = component;
    if (min_level) {
        for (int i = 0; i < 4; i++)
            if (strcmp(min_level, level_names[i]) == 0)
                log_min = (log_level_t)i;
    }
}

int log_enabled(log_level_t level)
{
    return level >= log_min;
}

static void log_write(log_level_t level, const char *msg, va_list ap)
{
    struct timeval tv;
    struct tm tm;
    char ts[64];

    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    snprintf(ts, sizeof(ts), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(tv.tv_usec / 1000));

    cJSON *o = cJSON_CreateObject();
    if (!o)
        return;
    cJSON_AddStringToObject(o, "ts", ts);
    cJSON_AddStringToObject(o, "level", level_names[level]);
    cJSON_AddStringToObject(o, "component", log_component);
    cJSON_AddStringToObject(o, "msg", msg);
    for (;;) {
        const char *k = va_arg(ap, const char *);
        if (!k)
            break;
        const char *v = va_arg(ap, const char *);
        if (v)
            cJSON_AddStringToObject(o, k, v);
    }
    char *line = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!line)
        return;
    size_t n = strlen(line);
    /* One write per line so concurrent threads never interleave within a line. */
    char *buf = malloc(n + 2);
    if (buf) {
        memcpy(buf, line, n);
        buf[n] = '\n';
        ssize_t w = write(STDERR_FILENO, buf, n + 1);
        (void)w;
        free(buf);
    }
    cJSON_free(line);
}

void log_event(log_level_t level, const char *msg, ...)
{
    if (level < log_min)
        return;
    va_list ap;
    va_start(ap, msg);
    log_write(level, msg, ap);
    va_end(ap);
}

static void log_plain(log_level_t level, const char *msg, ...)
{
    va_list ap;
    va_start(ap, msg);
    log_write(level, msg, ap);
    va_end(ap);
}

void log_msgf(log_level_t level, const char *fmt, ...)
{
    if (level < log_min)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    log_plain(level, msg, (char *)NULL);
}
