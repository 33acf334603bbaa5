/*
 * v1.h - the front door of the tenant APIs under /v1 (webhook deliveries, whapi.c; channel
 * messages, channels.c): the same origin check, authentication (API key or HMAC app
 * signing, auth.h) and rate limit as /mcp, and JSON error bodies {"error": "..."}.
 * Thread-safe.
 */
#ifndef MCPQ_ING_V1_H
#define MCPQ_ING_V1_H

#include "ingress.h"
#include "registry.h"

#include <cjson/cJSON.h>

/* Origin, auth and rate limit, as for /mcp: the caller's tenant (*reg referenced: release it
 * with ing_registry_unref even on failure), or NULL with resp filled (403, 401, 429, 503).
 * Sets req->tenant. */
const ing_tenant_t *ing_v1_front(ing_req_t *req, ing_registry_t **reg, ing_resp_t *resp);

/* resp becomes {"error": msg} with status. */
void ing_v1_error(ing_resp_t *resp, int status, const char *msg);
/* resp becomes o (consumed) as JSON with status. */
void ing_v1_json(ing_resp_t *resp, int status, cJSON *o);

#endif
