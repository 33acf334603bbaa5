/*
 * notify.h - the JSON-RPC notifications a call's client sees while its tool runs
 * (docs/executors.md): notifications/progress and notifications/message, built from the
 * worker's reply-stream entries (docs/internals.md), and the logging levels that filter them.
 */
#ifndef MCPQ_ING_NOTIFY_H
#define MCPQ_ING_NOTIFY_H

#include <stddef.h>

/* Index of an MCP logging level ("debug" 0 ... "emergency" 7), or -1 when s is none. */
int ing_notify_level_index(const char *s);
/* The level names in order, for error messages. */
extern const char *const ing_notify_levels[8];

/* notifications/progress for token_json (rendered JSON) from a `progress` entry's data
 * ({"progress", "total", "message"}); malloc'd JSON or NULL when data is unusable. */
char *ing_notify_progress(const char *token_json, const char *data, size_t len);

/* notifications/message from a `log` entry's data ({"level", "data"}) when its level is at
 * or above min_level; logger names the tool. malloc'd JSON or NULL (filtered or unusable). */
char *ing_notify_log(const char *data, size_t len, int min_level, const char *logger);

#endif
