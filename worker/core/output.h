/*
 * output.h - executor output into an MCP CallToolResult (docs/executors.md).
 *
 * Every executor's raw output is untrusted: a process's stdout, an HTTP service's body.
 * These pure functions turn it into a CallToolResult the ingress can pass to a client:
 * JSON that is a CallToolResult (an object with a "content" array) passes through, other
 * JSON becomes structuredContent plus its compact text, anything else becomes one text
 * block. Text that is not UTF-8 is repaired (U+FFFD), so a result is always valid JSON.
 *
 * Each function returns a new cJSON object the caller owns, or NULL on ENOMEM.
 * Pure functions, thread-safe.
 */
#ifndef MCPQ_WORKER_OUTPUT_H
#define MCPQ_WORKER_OUTPUT_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* Bytes of an HTTP error body quoted in the error text. */
#define WRK_OUTPUT_ERROR_QUOTE 1024

/* {"content":[{"type":"text","text":<text>}],"isError":<is_error>}; text is repaired. */
cJSON *wrk_output_text(const char *text, size_t len, int is_error);

/* The same with a printf-style message. */
cJSON *wrk_output_errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* 1 when v is an object whose "content" member is an array. */
int wrk_output_is_result(const cJSON *v);

/* Any JSON value as text (its compact JSON) plus structuredContent (the value when an
 * object, else {"result": value}); never passed through. */
cJSON *wrk_output_structured(const cJSON *value);

/* A JSON value an executor answered with: a CallToolResult passes through (a copy);
 * anything else becomes text (its compact JSON) plus structuredContent (the value when an
 * object, else {"result": value}). */
cJSON *wrk_output_from_json(const cJSON *value);

/* exec, exit status 0: stdout that is a CallToolResult passes through unchanged, anything
 * else is one text block with the trailing newline removed. */
cJSON *wrk_output_from_stdout(const char *out, size_t len);

/* exec, failed (exit status != 0 or killed by a signal): isError with stdout, else the
 * stderr tail, else "exit status N" / "killed by signal N" (signo > 0). */
cJSON *wrk_output_from_failure(const char *out, size_t out_len, const char *err_tail,
                               size_t tail_len, int exit_status, int signo);

/* http: status and Content-Type (may be NULL) of a completed exchange and its body.
 * 2xx JSON (when the type names JSON or is absent) → wrk_output_from_json; 2xx other →
 * text; otherwise isError "HTTP <status>: <first WRK_OUTPUT_ERROR_QUOTE bytes of body>". */
cJSON *wrk_output_from_http(long status, const char *content_type, const char *body, size_t len);

#endif
