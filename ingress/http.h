/*
 * http.h - the ingress's HTTP server (libmicrohttpd 0.9.75).
 *
 * A fixed pool of MCPQ_THREADS epoll threads serves every connection; a tools/call waiting
 * for its result is suspended (MHD_suspend_connection) and holds no thread. Routes:
 * POST/DELETE /mcp and /mcp/{server} (mcp.h), GET of them (the legacy notification stream,
 * listen.h), GET /healthz, /readyz, /metrics,
 * /v1/webhooks/... (webhook.h) and /v1/files/... (files.h; a PUT of a signed upload URL is
 * checked when its headers arrive and its body streamed to disk, not buffered).
 * Other bodies are buffered up to a limit the headers earn (MCPQ_PREAUTH_BODY_BYTES until they
 * name a known credential, then MCPQ_MAX_BODY_BYTES), all of them together up to
 * MCPQ_MAX_BODY_MEMORY_BYTES (then 503); see http.c "request bodies".
 */
#ifndef MCPQ_ING_HTTP_H
#define MCPQ_ING_HTTP_H

#include "ingress.h"

#include <stddef.h>

int ing_http_start(ing_ctx_t *ctx, char *errstr, size_t errstr_size);
/* Stops accepting new connections (graceful shutdown, step one). */
void ing_http_quiesce(ing_ctx_t *ctx);
/* Open connections (suspended ones included); 0 once stopped. Thread-safe. */
unsigned ing_http_connections(ing_ctx_t *ctx);
void ing_http_stop(ing_ctx_t *ctx);

/* 1 while Kafka and Redis are reachable and the registry is loaded. */
int ing_http_ready(ing_ctx_t *ctx);

#endif
