/*
 * cors.h - browser clients (docs/authorization.md "Browser clients"): Cross-Origin Resource
 * Sharing on the clients' plane (the MCP endpoints, the REST API under /v1, the metadata
 * documents), driven by the Origin allow-list the front door enforces (MCPQ_ALLOWED_ORIGINS;
 * empty: localhost and 127.0.0.1 on any port). An allowed Origin is echoed, never `*`, and no
 * Access-Control-Allow-Credentials is sent: browser clients authenticate with headers
 * (Authorization, X-Api-Key, signatures), not cookies. A disallowed Origin gets no CORS
 * header at all (and 403 from the front door).
 *
 * Thread-safe: works on the request it is given.
 */
#ifndef MCPQ_ING_CORS_H
#define MCPQ_ING_CORS_H

#include "req.h"

/* The response headers a browser script may read besides the safelisted ones. */
#define ING_CORS_EXPOSE "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate, Retry-After, ETag"

/* The methods a preflight allows. */
#define ING_CORS_METHODS "GET, POST, PUT, DELETE"

/* req's Origin header when it is present and allowed (the front door's rule, Host included),
 * else NULL. Valid for the request's lifetime. */
const char *ing_cors_origin(const ing_req_t *req);

/*
 * 1 when req is a CORS preflight (OPTIONS with Origin and Access-Control-Request-Method),
 * with its answer in *resp: 204 with Access-Control-Allow-Methods, -Allow-Headers (the
 * requested headers when every one is a header the ingress reads, Mcp-Param-* included; else
 * the fixed list) and -Max-Age for an allowed Origin; 403 with a JSON error for any other
 * (the caller adds the Access-Control-Allow-Origin of an allowed one, as on every answer).
 * 0 for any other request (resp untouched).
 */
int ing_cors_preflight(const ing_req_t *req, ing_resp_t *resp);

#endif
