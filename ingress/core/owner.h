/*
 * owner.h - who may read or act on a task, a webhook delivery or an idempotent replay
 * (docs/security.md "Ownership model"). The one place that decides it; every path that reads or
 * acts on one calls it: MCP tasks/get, tasks/result, tasks/list, tasks/cancel, tasks/update
 * (mcptasks.c through mcpreq.h), the system server's task tools (system.c), the REST API's
 * /v1/tasks (tasksapi.c) and /v1/webhooks/deliveries (whapi.c), and idempotency keys
 * (idem.h, through the owner string).
 *
 * A task records its creator's principal as its owner string (ing_owner_of): "key:<id>" for
 * an API key, "app:<app id>" for an HMAC-signed app, "user:<user claim>" for an OAuth token
 * naming a user, "client:<client id>" for a token naming only its client. A caller may see a
 * task (and the webhook deliveries of it) when all three hold:
 *   - the task's tool is visible to it (access.h, the rules of tools/list);
 *   - its token's binding covers the task's server (ing_owner_bound; API keys and apps, and
 *     tokens for the whole tenant, cover every server);
 *   - it is the owner, or it holds the permission ING_OWNER_PERM_ALL.
 * A task without an owner (written before owners were recorded) is seen with the permission
 * only. Everyone else is answered exactly as for a missing task. The operator sees every
 * delivery through the admin API (admin.c), which does not come here.
 *
 * Pure: reads the principal and the registry snapshot it is given; thread-safe.
 */
#ifndef MCPQ_ING_OWNER_H
#define MCPQ_ING_OWNER_H

#include "access.h"

#include <cjson/cJSON.h>
#include <stddef.h>

/* The permission that shows every task and delivery of the caller's tenant (still filtered by
 * tool access and the token's binding); docs/authorization.md. */
#define ING_OWNER_PERM_ALL "tasks:all"

/* Room for an owner string: a kind, a colon and an id or claim (auth.h keeps claims short). */
#define ING_OWNER_MAX 600

/* who's owner string into out (n bytes): 0, or MCPQ_EINVAL (no principal, or one without an
 * id) or MCPQ_ETOOBIG, with out "" (n > 0). */
int ing_owner_of(const ing_principal_t *who, char *out, size_t n);

/*
 * The servers an OAuth token's aud (claims "aud": a string or an array) binds it to, into
 * out (n bytes) space-separated, or "" for the whole tenant: an aud value that is base, base
 * + "/", base + "/mcp" or base + "/mcp/", or one of audiences (the tenant's oauth.audiences),
 * binds the token to the whole tenant; each value base + "/mcp/<server>" adds that server;
 * other values are ignored. base may be NULL (no trusted base URL: only audiences count).
 * 0, MCPQ_ENOTFOUND when no value names this gateway (out ""), MCPQ_ETOOBIG (out "") when
 * the servers named do not fit in n and no value binds the whole tenant (one that does wins
 * wherever it stands in the array).
 */
int ing_owner_binding(const cJSON *claims, const char *base, const char *const *audiences,
                      size_t n_audiences, char *out, size_t n);

/* 1 when who may reach server's tasks by its token's binding (who->servers NULL: every
 * server). */
int ing_owner_bound(const ing_principal_t *who, const char *server);

/* 1 when who may see and act on a task or delivery of its tenant that owner created ("" or
 * NULL: no owner recorded) on tool of server, by the rules at the top. who NULL: 0. */
int ing_owner_may(const ing_registry_t *reg, const ing_principal_t *who, const char *owner,
                  const char *server, const char *tool);

#endif
