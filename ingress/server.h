/*
 * server.h - the ingress's HTTP server (libmicrohttpd 0.9.75).
 *
 * A fixed pool of MCPQ_THREADS epoll threads serves every connection; a tools/call waiting
 * for its result is suspended (MHD_suspend_connection) and holds no thread. Routes:
 * POST/DELETE /mcp and /mcp/{server} (mcp.h), GET of them (the legacy notification stream,
 * listen.h), GET /healthz, /readyz, /metrics, /admin/... (admin.h),
 * /v1/webhooks/... (webhook.h) and /v1/files/... (files.h; a PUT of a signed upload URL is
 * checked when its headers arrive and its body streamed to disk, not buffered).
 * Other bodies are buffered up to a limit the headers earn (MCPQ_PREAUTH_BODY_BYTES until they
 * name a known credential, then MCPQ_MAX_BODY_BYTES), all of them together up to
 * MCPQ_MAX_BODY_MEMORY_BYTES (then 503); see server.c "request bodies".
 *
 * With MCPQ_OPS_LISTEN set, a second server (one thread) serves the operations routes
 * (/healthz, /readyz, /metrics, /admin) and MCPQ_LISTEN only the clients' routes; a route
 * asked of the other listener is 404 (server.c "listeners"). Both share the process context.
 * Only the MCPQ_LISTEN server is quiesced and counted during the drain: probes and scrapes
 * keep being answered (/readyz 503) until the process stops.
 */
#ifndef MCPQ_ING_HTTP_H
#define MCPQ_ING_HTTP_H

#include "ctx.h"

#include <stddef.h>

/* 0 when MCPQ_LISTEN and MCPQ_OPS_LISTEN (when set) are listen addresses (util_parse_listen),
 * else MCPQ_EINVAL with errstr naming the setting. */
int ing_server_check(const mcpq_settings_t *set, char *errstr, size_t errstr_size);
/* Starts the server on MCPQ_LISTEN and, when set, the operations listener on MCPQ_OPS_LISTEN
 * (ctx->listen_addr and ctx->ops_addr: where they are bound). 0, or MCPQ_EINVAL / MCPQ_EIO
 * with errstr naming the setting. */
int ing_server_start(ing_ctx_t *ctx, char *errstr, size_t errstr_size);
/* Stops accepting new connections (graceful shutdown, step one). */
void ing_server_quiesce(ing_ctx_t *ctx);
/* Open connections (suspended ones included); 0 once stopped. Thread-safe. */
unsigned ing_server_connections(ing_ctx_t *ctx);
void ing_server_stop(ing_ctx_t *ctx);

#endif
