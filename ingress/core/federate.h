/*
 * federate.h - federation (docs/executors.md, "mcp"): a server entry of the config with
 *   "federate": {"url": ..., "headers": {...}, "prefix": "up_", "timeout_ms": 60000}
 * imports the tools of the upstream MCP server at url into that server. Each upstream tool
 * becomes a registry tool named prefix + its name (prefix defaults to "<server>_"), with
 * the upstream's title, description, inputSchema, outputSchema and annotations, one
 * published version "1", and the executor {"type": "mcp", "url", "tool": <upstream name>,
 * "headers"}. Tools whose name breaks the registry's rules (1-50 of [A-Za-z0-9_.-], a
 * letter first), that collide with a tool the config names in the tenant, or whose schemas
 * the gateway cannot use are skipped with a log line.
 *
 * One background thread does the imports with blocking libcurl requests (each bounded by
 * FED_REQUEST_TIMEOUT_MS): it speaks 2026-07-28 when the upstream answers server/discover,
 * else the legacy handshake, reads every tools/list page, and writes the tools (and the
 * server entry) to the registry in Redis. A failed import is logged and retried with
 * backoff (1 s doubling to 60 s); a successful one is repeated every MCPQ_FEDERATE_REFRESH_MS,
 * so tools the upstream adds appear (tools it drops stay until the registry is reseeded).
 *
 * With "pin": true on the federate object, each imported tool passes pin.h's check where it
 * is written (the regstore hook of the import's compare-and-set): a definition that is not
 * the approved one is quarantined; after the commit each newly quarantined tool is counted
 * (mcpq_tools_quarantined_total), logged (warn, old and new hash) and sent to the tenant's
 * webhooks as a tool.changed event (docs/webhooks.md). The replica whose commit wrote the
 * quarantine reports it; the others find it stored and report nothing.
 *
 * Thread safety: start/stop from the main thread.
 */
#ifndef MCPQ_ING_FEDERATE_H
#define MCPQ_ING_FEDERATE_H

#include "ctx.h"

#include <cjson/cJSON.h>

#define FED_REQUEST_TIMEOUT_MS 10000
#define FED_MAX_PAGES 100

typedef struct ing_federate ing_federate_t;

/* Starts the import thread for the federated servers of a normalized config (copied), with
 * ctx's settings, Redis, metrics and webhook queue (ctx outlives the thread); NULL when there
 * are none or on failure (logged). curl_global_init must have run. */
ing_federate_t *ing_federate_start(ing_ctx_t *ctx, const cJSON *config);
/* Stops and joins the thread (an import in flight ends within its request timeout).
 * NULL is a no-op. */
void ing_federate_stop(ing_federate_t *f);

/*
 * The registry tool documents for an upstream's tools (the concatenated tools/list
 * arrays): server is the config's server entry (tenant, name, federate), config_tools the
 * config's "tools" array (collisions). Returns a new array (possibly empty) or NULL on
 * ENOMEM. Pure; logs what it skips.
 */
cJSON *ing_federate_tools(const cJSON *server, const cJSON *upstream_tools,
                          const cJSON *config_tools);

#endif
