/*
 * stderrline.h - the exec executor's stderr protocol (docs/executors.md, "exec"): splitting the
 * byte stream into bounded lines and parsing each line.
 *
 *   progress <done> [<total>] [message]   → a progress entry {"progress","total","message"}
 *   log <level> [message]                 → a log entry {"level","data"}
 *   anything else                         → kept as error text (the stderr tail)
 *
 * Numbers are decimal (digits with an optional fraction); <total> is optional (the
 * conformance fixture prints "progress 0 100", and "progress 5 files copied" carries
 * no total). Levels are the MCP logging levels (debug, info, notice, warning, error,
 * critical, alert, emergency), with "warn", "err" and "fatal" mapped to theirs.
 *
 * Pure functions, thread-safe on distinct buffers.
 */
#ifndef MCPQ_WORKER_STDERRLINE_H
#define MCPQ_WORKER_STDERRLINE_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* Longest line kept; the rest of a longer line is dropped. */
#define WRK_LINE_MAX 8192

typedef enum { WRK_LINE_OTHER = 0, WRK_LINE_PROGRESS, WRK_LINE_LOG } wrk_stderrline_kind_t;

typedef struct wrk_line {
    wrk_stderrline_kind_t kind;
    double progress, total;
    int has_total;
    const char *level; /* LOG: a static MCP level name */
    const char *msg;   /* points into the parsed line; NULL when absent */
    size_t msg_len;
} wrk_stderrline_t;

/* Classifies line[0..len) (no newline). Always succeeds; unknown shapes are OTHER. */
void wrk_stderrline_parse(const char *line, size_t len, wrk_stderrline_t *out);

/* The reply-stream data of a PROGRESS or LOG line as a new cJSON object (message text
 * repaired to UTF-8); NULL for OTHER or on ENOMEM. */
cJSON *wrk_stderrline_to_json(const wrk_stderrline_t *l);

/* Splits a byte stream into lines of at most WRK_LINE_MAX bytes ('\r' before '\n' dropped).
 * A line longer than that is cut at the limit and the rest of it is skipped. */
typedef void (*wrk_stderrline_fn)(const char *line, size_t len, void *arg);

typedef struct wrk_stderrline_buf {
    char buf[WRK_LINE_MAX];
    size_t len;
    int skipping; /* inside the dropped rest of an overlong line */
} wrk_stderrline_buf_t;

/* An empty splitter in caller-owned lb (nothing to free). */
void wrk_stderrline_buf_init(wrk_stderrline_buf_t *lb);
/* Feeds data; calls fn once per complete line. */
void wrk_stderrline_buf_feed(wrk_stderrline_buf_t *lb, const char *data, size_t len,
                             wrk_stderrline_fn fn, void *arg);
/* End of stream: a last line without newline is delivered. */
void wrk_stderrline_buf_finish(wrk_stderrline_buf_t *lb, wrk_stderrline_fn fn, void *arg);

#endif
