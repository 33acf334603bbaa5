/*
 * federate.h - federation (docs/executors.md, "Federation"): a server entry of the config with
 *   "federate": {"url": ..., "headers": {...}}          an HTTP upstream, or
 *   "federate": {"command": ..., "args": [...], "env": {...}, "cwd": ..., "limits": {...}}
 *                                                       a stdio upstream run on the workers,
 * plus "prefix" (default "<server>_"), "timeout_ms" and "pin", imports everything the upstream
 * MCP server lists into that server as registry objects of every kind:
 *   tools               named prefix + the upstream name; title, description, inputSchema,
 *                       outputSchema and annotations copied; executor mcp with "tool";
 *   resources           kind "resource", named prefix + the upstream name made valid (every
 *                       character outside [A-Za-z0-9_.-] becomes '_'), uri kept as the upstream
 *                       has it; title, description, mimeType, annotations, size copied;
 *   resource templates  kind "resource_template", named as resources, uriTemplate kept;
 *   prompts             kind "prompt", named as tools; title, description, arguments copied;
 *                       executor mcp with "prompt": <upstream name>.
 * Every object's executor is {"type": "mcp", <the upstream's members>} (so reads, prompts/get
 * and completion/complete are jobs that the worker sends upstream), one published version, and
 * the member "federated": true, which marks it as this server's import. An object whose name
 * cannot be made valid (1-50 of [A-Za-z0-9_.-], a letter first), that collides with an object
 * of the tenant that is not this server's import (made by the config or the admin API, or by
 * another federated server) or with one imported before it, a tool whose schemas the gateway
 * cannot use, a resource uri that is empty, longer than KINDS_URI_MAX or listed twice, and a
 * template kinds_template_check refuses (kinds.h) are skipped with a log line.
 *
 * One background thread does the imports, for the federated servers of the registry (whatever
 * wrote them; ing_federate_start). For each it publishes a `mcpq/catalog` job
 * (docs/internals.md, "Kafka": the envelope's "method") with the upstream as the job's executor
 * through the ingress's producer (signed like every job), and polls the job's result record
 * ({mcpq}:result:<job_id>, every FED_POLL_MS, bounded by the job's deadline plus
 * FED_RESULT_SLACK_MS). Polling the key is the simplest correct choice here: the thread blocks
 * anyway, no call waits on it, and the record is durable (the reply stream would need the
 * pending table's reader to hand over an entry nobody parked for). The worker holds the
 * upstream session (HTTP) or process (stdio), which then also serves the calls.
 *
 * Each import is one read-modify-write of the registry (regstore.h, compare-and-set, retried):
 * new objects are created, an object whose definition changed gets a new published version
 * (fed_definition_changed in federate.c; every imported tool's document then passes
 * fed_tool_check, where a pinned upstream's check belongs), and this server's earlier imports
 * that the upstream no longer lists are deleted (pruning; objects
 * without "federated": true are never touched). A failed import (no worker answered, the
 * upstream failed) changes nothing, is logged and retried with backoff (1 s doubling to 60 s);
 * a successful one is repeated every MCPQ_FEDERATE_REFRESH_MS.
 *
 * Thread safety: start/stop from the main thread; ing_federate_plan is pure.
 */
#ifndef MCPQ_ING_FEDERATE_H
#define MCPQ_ING_FEDERATE_H

#include "ctx.h"

#include <cjson/cJSON.h>

#define FED_CATALOG_TIMEOUT_MS 30000 /* the catalog job's timeout without federate.timeout_ms */
#define FED_POLL_MS 100
#define FED_SCAN_MS 1000 /* how often the registry's revision is looked at */
#define FED_RESULT_SLACK_MS 5000
#define FED_VERSIONS_KEPT 5 /* versions an imported object keeps (the newest) */

typedef struct ing_federate ing_federate_t;

/* Starts the import thread. It follows the registry's federated servers (whatever wrote them:
 * the config file, its watcher, the admin API): each FED_SCAN_MS it reads the registry's
 * revision and, when it moved, the servers, so a new or changed `federate` is imported at once
 * and a removed one is no longer refreshed (what it imported stays). It publishes through
 * ctx->producer and reads Redis through ctx->kvt, both of which must outlive it. NULL on
 * failure (logged). */
ing_federate_t *ing_federate_start(ing_ctx_t *ctx);
/* Stops and joins the thread (a catalog job in flight is abandoned at the next poll). NULL is
 * a no-op. */
void ing_federate_stop(ing_federate_t *f);

/* What ing_federate_plan decided, by kind, for the log line. */
typedef struct ing_federate_counts {
    int tools, resources, templates, prompts; /* imported (new, changed or unchanged) */
    int created, updated, deleted, skipped;
} ing_federate_counts_t;

/*
 * The registry changes that import catalog (the `mcpq/catalog` result: "tools", "resources",
 * "resourceTemplates", "prompts", each optional) into server (the config's server entry: tenant,
 * name, federate), given docs, the stored registry documents (field -> document, as
 * ing_regstore_state_t.docs). Returns a new object field -> document to write (createTime and
 * updateTime set from now) or JSON null to delete, holding only what changes; NULL on ENOMEM or
 * a server entry without tenant, name or federate. Logs what it skips; counts may be NULL.
 */
cJSON *ing_federate_plan(const cJSON *server, const cJSON *catalog, const cJSON *docs,
                         const char *now, ing_federate_counts_t *counts);

#endif
