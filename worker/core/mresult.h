/*
 * mresult.h - a job's CallToolResult into the result of the MCP method it answers
 * (docs/executors.md, "Methods").
 *
 * Executors other than mcp know only tools/call: they answer a CallToolResult whatever the
 * job's method. This is the one place that turns it into the method's result, so that an
 * exec script or an HTTP service can serve a resource, a prompt or completions:
 *   - resources/read: each text item becomes {uri, mimeType, text} (the job's arguments.uri
 *     and the envelope's mime_type, left out when absent), each image or audio item
 *     {uri, mimeType (the item's), blob (its data)}, an embedded resource item its resource
 *     as it is; other items are dropped. Result {"contents": [...]}.
 *   - prompts/get: each content item becomes a message {"role": "user", "content": item}.
 *     Result {"messages": [...]}.
 *   - completion/complete: the text items' lines (CR LF or LF, empty lines skipped) are the
 *     values, at most WRK_MRESULT_MAX_VALUES of them, with "total" (all lines) and "hasMore".
 *   - resources/subscribe, resources/unsubscribe: {} (the executor ran; nothing to say).
 *   - mcpq/catalog: an error (only the mcp executor can list an upstream).
 * A result with "isError": true is an error for every method but tools/call: its text items joined
 * by
 * "\n" (cut to WRK_MRESULT_MESSAGE_MAX bytes) are the message, code WRK_MRESULT_ERR_CODE.
 *
 * Pure functions, thread-safe.
 */
#ifndef MCPQ_WORKER_MRESULT_H
#define MCPQ_WORKER_MRESULT_H

#include "envelope.h"

#include <cjson/cJSON.h>
#include <stddef.h>

#define WRK_MRESULT_MAX_VALUES 100   /* CompleteResult.completion.values (the MCP maximum) */
#define WRK_MRESULT_MESSAGE_MAX 1024 /* bytes of an error message */
#define WRK_MRESULT_ERR_CODE -32603  /* the executor failed: JSON-RPC internal error */

/* The result of env's method for the CallToolResult call (borrowed; a valid one, see
 * wrk_output_is_result). tools/call: a copy, isError or not. Returns a new object the caller owns,
 * or NULL with *code and msg (NUL-terminated, at most msg_size bytes) set when the job ends with an
 * error (isError, catalog, out of memory). */
cJSON *wrk_mresult_from_call(const wrk_envelope_t *env, const cJSON *call, int *code, char *msg,
                             size_t msg_size);

#endif
