/*
 * api.h - what the tenant REST endpoints under /v1 share (webhook deliveries, files): the
 * front door (Origin and Host allow-lists, API key or HMAC app signing, the per-key/per-app
 * rate limit, exactly as for /mcp) and the `{"error": ...}` JSON answers.
 *
 * Thread-safe: everything here works on the request it is given.
 */
#ifndef MCPQ_ING_API_H
#define MCPQ_ING_API_H

#include "frontdoor.h"
#include "req.h"

#include <cjson/cJSON.h>

/*
 * The front door for a tenant (frontdoor.h), as for /mcp, after the body limit (413 when
 * req->too_big). The caller's tenant
 * (req->tenant is set too) with *reg holding a registry reference the caller drops
 * (ing_registry_unref, also when NULL is returned), or NULL with resp filled (413, 403, 401 with
 * WWW-Authenticate, 429 with Retry-After, 503).
 */
const ing_tenant_t *ing_api_front(ing_req_t *req, ing_registry_t **reg, ing_resp_t *resp);
/* The same keeping the door (door->reg is the reference the caller drops, door->who the
 * caller, for access.h's checks). */
const ing_tenant_t *ing_api_front_door(ing_req_t *req, ing_door_t *door, ing_resp_t *resp);

/* Fills resp with a refusal of the front door (frontdoor.h) as {"error": why}: its status,
 * its challenge (WWW-Authenticate), Retry-After and retryAfterMs for 429. */
void ing_api_refused(const ing_door_t *door, ing_resp_t *resp);

/* Fills resp with status and {"error": msg}. */
void ing_api_error(ing_resp_t *resp, int status, const char *msg);

/* The request's body as JSON, read by the same strict parser as /mcp (rpc.h rpc_parse:
 * UTF-8, no NUL or lone surrogate, no duplicate member names, bounded depth), or NULL with
 * resp filled (400 saying what is wrong). Owned by the caller. */
cJSON *ing_api_json(ing_req_t *req, ing_resp_t *resp);

/* Fills resp with status and o rendered (o is consumed; NULL or no memory: 500). */
void ing_api_body(ing_resp_t *resp, int status, cJSON *o);

/*
 * A document embedded in the binary (openapi.h, console.h), len bytes of text (no NUL inside):
 * its ETag (the SHA-256 of the bytes, cut to 20 hex digits) into resp->etag, then 304 with no
 * body when the request's If-None-Match names it (quoted, weak, bare or *; a quoted tag missing
 * its closing quote names nothing), else 200 with a copy of the bytes as content_type. Headers
 * the caller added to resp are kept. Out of memory: 500.
 */
void ing_api_static(ing_req_t *req, ing_resp_t *resp, const unsigned char *bytes, size_t len,
                    const char *content_type);

#endif
